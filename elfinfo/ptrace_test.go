//go:build linux

package elfinfo

// Helpers of the tests that stop real programs and take their threads' registers with
// ptrace (only package tracer calls ptrace in crashtui; these tests are the exception the
// brief allows: there is no other way to get registers). Arch-neutral: syscall.PtraceRegs
// is read by the regs_<arch>_test.go files.

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupStop stops every thread of the child pid with SIGSTOP and returns once the kernel
// says the group stop is complete (the parent's WUNTRACED wait reports it then).
func groupStop(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", pid, err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("wait for the group stop of %d: %v %#x", pid, err, ws)
	}
}

func groupCont(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %d: %v", pid, err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WCONTINUED, nil); err != nil {
		t.Fatalf("wait for %d to continue: %v", pid, err)
	}
}

func tids(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// ptraceSeize is PTRACE_SEIZE with no options (x/sys has no wrapper that takes none).
func ptraceSeize(tid int) error {
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, 0x4206, uintptr(tid), 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// threadRegs takes the registers of every thread of the group-stopped process pid: seizing a
// thread in a group stop makes it report that stop to its new tracer, and detaching leaves
// it in the group stop. Call from a goroutine locked to its OS thread.
func threadRegs(t *testing.T, pid int) map[int]syscall.PtraceRegs {
	t.Helper()
	out := map[int]syscall.PtraceRegs{}
	for _, tid := range tids(t, pid) {
		if err := ptraceSeize(tid); err != nil {
			t.Fatalf("seize %d: %v", tid, err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(tid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
			syscall.PtraceDetach(tid)
			t.Fatalf("wait for %d's stop: %v %#x", tid, err, ws)
		}
		var regs syscall.PtraceRegs
		err := syscall.PtraceGetRegs(tid, &regs)
		if derr := syscall.PtraceDetach(tid); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			t.Fatalf("registers of %d: %v", tid, err)
		}
		out[tid] = regs
	}
	return out
}

// startStopped starts cmd, waits for it to print a line "ready [WORD...]" and for its threads
// to reach the state ready(pid) accepts, and returns it group-stopped with the line's words
// after "ready". t.Cleanup kills and reaps it.
func startStopped(t *testing.T, cmd *exec.Cmd, ready func(pid int) bool) (int, []string) {
	t.Helper()
	pid, words := startReady(t, cmd)
	waitFor(t, func() bool { return ready(pid) }, "threads of "+cmd.Path+" in place")
	groupStop(t, pid)
	return pid, words
}

// startReady starts cmd and returns its pid once its first line said "ready", and the words
// after it; t.Cleanup kills and reaps it (closing a stdin pipe the caller made).
func startReady(t testing.TB, cmd *exec.Cmd) (int, []string) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		reapTraced(pid)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	words := strings.Fields(line)
	if err != nil || len(words) == 0 || words[0] != "ready" {
		t.Fatalf("%s printed %q (%v), want ready", cmd.Path, line, err)
	}
	return pid, words[1:]
}

// reapTraced reaps the threads of pid, killed, that a thread of this test process still
// traces: a traced thread that dies stays a zombie until its tracer waits for it, and its
// leader cannot be waited for until it is gone. A test's cleanup that detaches runs after
// its goroutine unlocked its thread, maybe on another one, and fails (ESRCH): then the
// leader's wait hung until the test's timeout. Any thread of the tracer's process may wait
// for it (__WALL, without __WNOTHREAD).
func reapTraced(pid int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil || len(ents) <= 1 {
			return // gone, or only its leader is left: cmd.Wait reaps it
		}
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil && tid != pid {
				var ws syscall.WaitStatus
				syscall.Wait4(tid, &ws, syscall.WALL|syscall.WNOHANG, nil)
			}
		}
	}
}

// waitFor polls cond (a state of /proc the test cannot wait on otherwise) with a deadline
// generous enough for a loaded machine; why, if given, says what was last seen.
func waitFor(t *testing.T, cond func() bool, what string, why ...func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			last := ""
			for _, w := range why {
				last += ": " + w()
			}
			t.Fatalf("timed out waiting for %s%s", what, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// threadState is the state letter of thread tid in /proc/TID/stat (R running, S sleeping,
// t ptrace-stopped, ...), or "gone".
func threadState(tid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if i := strings.LastIndexByte(string(b), ')'); err == nil && i >= 0 && i+2 < len(b) {
		return string(b[i+2])
	}
	return "gone"
}

// describeThread says what the kernel shows thread tid doing: its state, wait channel and
// /proc/TID/syscall, for a test that waited on it in vain.
func describeThread(tid int) string {
	wchan, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/wchan")
	sc, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/syscall")
	return "thread " + strconv.Itoa(tid) + " is in state " + threadState(tid) + ", wchan " + strconv.Quote(string(wchan)) +
		", syscall " + strconv.Quote(strings.TrimSpace(string(sc)))
}

// waitStop is the next ptrace stop of thread tid, traced by the calling (locked) thread.
// It fails the test, saying what the thread is doing, after two minutes without one: a
// generous deadline for a loaded TCG guest, so a stop that never comes is a failure that
// says why, never a guest silent until its harness stops it.
func waitStop(t *testing.T, tid int, what string) syscall.WaitStatus {
	t.Helper()
	var ws syscall.WaitStatus
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
		id, err := syscall.Wait4(tid, &ws, syscall.WALL|syscall.WNOHANG, nil)
		switch {
		case err != nil:
			t.Fatalf("thread %d, %s: wait: %v", tid, what, err)
		case id == tid && !ws.Stopped():
			t.Fatalf("thread %d, %s: ended (%#x)", tid, what, ws)
		case id == tid:
			return ws
		case time.Now().After(deadline):
			t.Fatalf("thread %d, %s: no stop in 2 minutes; %s", tid, what, describeThread(tid))
		}
	}
}

// letGo detaches thread tid from the stop ws, delivering its signal if ws is a
// signal-delivery-stop (an interrupt can be answered by one: a signal was already queued).
// A plain PTRACE_DETACH would discard it, and the Go runtime, which sends a thread no second
// SIGURG until its handler ran, would never preempt that thread again. SIGTRAP is never
// passed on: to these tests it is a syscall or single-step stop, not a signal.
func letGo(tid int, ws syscall.WaitStatus) {
	sig := 0
	if ws.Stopped() && int(ws)>>16 == 0 && ws.StopSignal() != syscall.SIGTRAP {
		sig = int(ws.StopSignal())
	}
	syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
}

// taskSyscalls reads /proc/PID/task/*/syscall: the syscall number each blocked thread is in,
// -1 for a running one.
func taskSyscalls(pid int) map[int]int {
	out := map[int]int{}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "syscall"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		nr := -1
		if len(f) > 0 && f[0] != "running" {
			nr, _ = strconv.Atoi(f[0])
		}
		out[tid] = nr
	}
	return out
}

func countNr(m map[int]int, nr int) int {
	n := 0
	for _, v := range m {
		if v == nr {
			n++
		}
	}
	return n
}

// procMem reads tracee memory through /proc/PID/mem (allowed: we are its tracer).
func procMem(t *testing.T, pid int) MemReader {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func(addr uint64, buf []byte) error {
		_, err := f.ReadAt(buf, int64(addr))
		return err
	}
}

func stackNames(fs []Frame) string {
	var n []string
	for _, f := range fs {
		n = append(n, f.Function)
	}
	return strings.Join(n, " < ")
}
