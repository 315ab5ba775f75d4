package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
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
