package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tui/tuitest"
	"golang.org/x/sys/unix"
)

// TestHandoffToGDBAndBack is issue 22's fifth item at the engine: crashtui run -n 3 of the
// hung job, its matrix measured inside every rank; rank 1 (in pthread_barrier_wait) is handed
// to a real gdb, which attaches, reads every thread's stack and detaches; crashtui takes it
// back and measures the matrix again, three times. The rank must come back alive and
// unharmed: no crash, no SIGTRAP (before, the re-measurement killed it with SIGTRAP
// SI_KERNEL in pthread_barrier_wait, 4 of 4), still in its barrier.
func TestHandoffToGDBAndBack(t *testing.T) {
	needRoot(t)
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		t.Skip("gdb is not installed (make test installs it with apt-get)")
	}
	bin := buildC(t, "hang")
	var mu sync.Mutex
	var crashes, exits []string
	tr := newTracing(tracer.Options{Emit: func(e sessions.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch b := e.Body.(type) {
		case sessions.Crash:
			crashes = append(crashes, fmt.Sprintf("pid %d %s %s at %s", b.PID, b.Signal, b.Code, b.Function))
		case sessions.Exit:
			exits = append(exits, fmt.Sprintf("pid %d %+v", b.PID, b))
		}
	}}, crashOptions(&common{}))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.SignalJob(9)
		<-tr.JobDone()
		tr.Close()
		r.Close()
	})
	pgid, err := tr.Launch(tracer.LaunchSpec{N: 3, Argv: []string{bin}, Stdout: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(r)
	for ready := 0; ready < 3 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "ready") {
			ready++
		}
	}
	// Rank 1 is the process whose CRASHTUI_RANK is 1, once it waits in its barrier.
	rank1 := 0
	for deadline := patience.New(20 * time.Second); rank1 == 0; time.Sleep(10 * time.Millisecond) {
		for _, pid := range pgroupPIDs(pgid) {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains("\x00"+string(env), "\x00CRASHTUI_RANK=1\x00") && strings.HasPrefix(string(cmd), bin) {
				rank1 = pid
			}
		}
		if deadline.Passed() {
			t.Fatal("no rank 1 in the job")
		}
	}
	waitSyscall(t, rank1, rank1, "futex")
	if _, _, err := tr.access.Matrix(true); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		if err := tr.Release(rank1); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
		out, err := exec.Command(gdb, "-nx", "-batch", "-p", strconv.Itoa(rank1), "-ex", "thread apply all bt").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "pthread_barrier_wait") {
			t.Fatalf("round %d: gdb did not see the barrier (%v):\n%s", round, err, out)
		}
		if err := tr.Reacquire(rank1); err != nil {
			t.Fatalf("round %d: reacquire: %v", round, err)
		}
		m, st, err := tr.access.Matrix(true)
		if err != nil {
			t.Fatalf("round %d: matrix: %v", round, err)
		}
		if st.Injections == 0 || len(m.Cells) != 6 {
			t.Fatalf("round %d: %d injections, %d cells: nothing was measured", round, st.Injections, len(m.Cells))
		}
		mu.Lock()
		if len(crashes)+len(exits) > 0 {
			t.Fatalf("round %d: crashes %v, exits %v", round, crashes, exits)
		}
		mu.Unlock()
		if s := procState(rank1); s != "S" && s != "t" {
			t.Fatalf("round %d: rank 1 is in state %q", round, s)
		}
		waitSyscall(t, rank1, rank1, "futex")
	}
}

// waitKeysRead waits until the TUI has read every key typed so far (the pty's input queue is
// empty), so that the next key does not arrive in the same read as them.
func waitKeysRead(t *testing.T, scr *tuitest.Screen) {
	t.Helper()
	for dl := patience.New(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, err := unix.IoctlGetInt(int(scr.TTY.Fd()), unix.TIOCINQ); err != nil || n == 0 {
			return
		}
		if dl.Passed() {
			t.Fatalf("the TUI did not read the keys typed in %v", dl.Waited())
		}
	}
}

// gdbRound answers the y/n of a hand-off, and in gdb prints the stack and quits (y to detach),
// then waits for crashtui to take the process back. It returns the pid gdb attached to.
func gdbRound(t *testing.T, scr *tuitest.Screen) int {
	t.Helper()
	// The question names the pid; gdb's screen may still show an earlier round's output, so
	// what is waited for names it too.
	txt := scr.WaitFor(t, 5*time.Second, "to a debugger? y/n")
	var handed int
	if i := strings.LastIndex(txt, "Hand pid "); i < 0 || func() bool { _, err := fmt.Sscanf(txt[i:], "Hand pid %d", &handed); return err != nil }() {
		t.Fatalf("no pid in the question:\n%s", txt)
	}
	scr.Key(t, "y")
	scr.WaitFor(t, 30*time.Second, fmt.Sprintf("Attaching to process %d", handed))
	scr.Type("bt\r")
	scr.WaitFor(t, 10*time.Second, "in main")
	scr.Type("quit\r")
	scr.WaitFor(t, 10*time.Second, "(y or n)")
	scr.Type("y\r")
	scr.WaitFor(t, 30*time.Second, fmt.Sprintf("pid %d traced again", handed))
	return handed
}

// remeasure asks the Matrix tab for a measurement and waits until it is shown.
func remeasure(t *testing.T, scr *tuitest.Screen) {
	t.Helper()
	scr.Key(t, "2")
	waitKeysRead(t, scr)
	scr.Key(t, "m")
	scr.WaitFor(t, 30*time.Second, "measured")
}

// TestHandoffInThePty is issue 22's fifth item as a user drives it: crashtui run -n 3 of the
// hung job in its TUI (the matrix measured, as by default), Stacks, S, down to a rank, D, y,
// and in gdb bt, quit, y; crashtui takes the rank back and measures the matrix again: the
// rank lives on (before, the re-measurement killed it with SIGTRAP SI_KERNEL in
// pthread_barrier_wait, 4 of 4). Then the same from the Processes tab.
func TestHandoffInThePty(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb is not installed (make test installs it with apt-get)")
	}
	bin := buildC(t, "hang")
	scr := tuitest.Open(t, 120, 40)
	proc, _ := startTUI(t, scr, "run", "-n", "3", "--", bin)
	scr.WaitFor(t, 30*time.Second, "procs 3/3")
	alive := func(pid int, when string) {
		t.Helper()
		// Blocked again in its call: a rank just let go (by gdb, by the measurement's
		// injection) is R until the scheduler runs it back into the kernel.
		deadline := patience.New(10 * time.Second)
		for st := procState(pid); st != "S" && st != "t"; st = procState(pid) {
			if deadline.Passed() {
				t.Fatalf("%s: pid %d is in state %q", when, pid, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if txt := scr.Text(); !strings.Contains(txt, "crashes 0") {
			t.Fatalf("%s: a crash:\n%s", when, txt)
		}
	}
	scr.Key(t, "5")
	scr.Key(t, "S")
	scr.WaitFor(t, 20*time.Second, "recv_message", "barrier")
	scr.Type("jjjjj")
	waitKeysRead(t, scr)
	scr.Key(t, "D")
	handed := gdbRound(t, scr)
	remeasure(t, scr)
	alive(handed, "after the hand-off from Stacks and a new measurement")

	// From the Processes tab: the selected rank.
	scr.Key(t, "1")
	scr.Type("jj")
	waitKeysRead(t, scr)
	scr.Key(t, "D")
	handed2 := gdbRound(t, scr)
	remeasure(t, scr)
	alive(handed2, "after the hand-off from Processes and a new measurement")
	alive(handed, "the first one, after the second hand-off")
	quitTUI(t, scr, proc)
}

// TestCoreHandoffInThePty: from the Crashes tab, D opens gdb on the group's core (crashtui run
// --cores), the terminal is gdb's until it quits, and the TUI comes back.
func TestCoreHandoffInThePty(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb is not installed (make test installs it with apt-get)")
	}
	bin := buildC(t, "segv")
	cores := filepath.Join(t.TempDir(), "cores")
	scr := tuitest.Open(t, 120, 40)
	proc, _ := startTUI(t, scr, "run", "--cores", cores, "-n", "2", "--", bin)
	scr.WaitFor(t, 30*time.Second, "crashes 2")
	scr.Key(t, "3")
	scr.WaitFor(t, 10*time.Second, "crash_here")
	waitKeysRead(t, scr)
	scr.Key(t, "D")
	scr.WaitFor(t, 10*time.Second, "Open gdb on")
	scr.Key(t, "y")
	scr.WaitFor(t, 30*time.Second, "Core was generated by", "(gdb)")
	scr.Type("bt\r")
	scr.WaitFor(t, 10*time.Second, "crash_here")
	scr.Type("quit\r")
	scr.WaitFor(t, 30*time.Second, "crash_here", "Crashes")
	quitTUI(t, scr, proc)
}
