package tracer_test

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/access"
	"github.com/crashtui/crashtui/tracer/checkpoint"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
	"golang.org/x/sys/unix"
)

// Tests of the tracer on the processes that make ptrace hard: a vfork parent that cannot
// stop, a process whose leader called pthread_exit, a signal that races a measurement.

// A vfork parent cannot stop until its child leaves; a measurement gives up on it,
// and when the child finally exits the parent must run on, not stay held.
func TestMeasureGivesUpOnAVforkParentWithoutHoldingIt(t *testing.T) {
	tr, pid, lines := tracedVforkParent(t)
	t.Cleanup(func() { tr.Close() })
	access.New(tr).Matrix(true) // gives up on the parent at once (an error event), measures the child
	lines.Expect(t, "beat", 10*time.Second)
	if st, _ := procfs.ReadStat(pid); st.State == 't' {
		t.Errorf("the vfork parent is left in a tracing stop")
	}
}

// A process whose main thread called pthread_exit: the leader is a zombie that ptrace cannot
// seize, yet the process is alive. It is attached, measured, checkpointed and detached
// promptly, and its exit is reported when its last thread ends it.
func TestZombieLeaderProcess(t *testing.T) {
	cmd, in, lines := tracertest.StartProgram(t, "pthexit")
	pid := cmd.Process.Pid
	lines.Expect(t, "ready", 5*time.Second)
	tracertest.WaitProc(t, "the leader to be a zombie", func() bool { st, _ := procfs.ReadStat(pid); return st.State == 'Z' })

	var evs []sessions.Event
	evch := make(chan sessions.Event, 1024)
	tr := tracer.New(tracer.Options{Emit: func(e sessions.Event) { evch <- e }})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	res, err := tr.Attach(tracer.Job{Kind: tracer.JobPID, ID: pid, Spec: "pid"})
	if err != nil || res.Processes != 1 || res.Threads != 1 {
		t.Fatalf("attach to a process with a zombie leader: %+v %v", res, err)
	}
	if _, _, err := access.New(tr).Matrix(true); err != nil {
		t.Fatalf("matrix: %v", err)
	}
	if _, err := checkpoint.New(tr).Run("none", nil); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	// The worker still handles signals under tracing.
	syscall.Kill(pid, syscall.SIGUSR1)
	lines.Expect(t, "usr1 1", 5*time.Second)
	// It ends the process (exit 7): the exit event comes from its last traced thread.
	in.Write([]byte("x"))
	select {
	case <-tr.JobDone():
	case <-patience.After(10 * time.Second):
		t.Fatal("the job never ended")
	}
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	close(evch)
	for e := range evch {
		evs = append(evs, e)
	}
	var exit *sessions.Exit
	for _, e := range evs {
		if x, ok := e.Body.(sessions.Exit); ok && x.PID == pid {
			exit = &x
		}
	}
	if exit == nil || exit.Code == nil || *exit.Code != 7 {
		t.Errorf("exit event %+v, want pid %d with code 7", exit, pid)
	}
}

// Detaching a process whose leader is a zombie is prompt and leaves the worker running.
func TestZombieLeaderDetach(t *testing.T) {
	cmd, _, lines := tracertest.StartProgram(t, "pthexit")
	pid := cmd.Process.Pid
	lines.Expect(t, "ready", 5*time.Second)
	tracertest.WaitProc(t, "the leader to be a zombie", func() bool { st, _ := procfs.ReadStat(pid); return st.State == 'Z' })
	tr := tracer.New(tracer.Options{})
	if _, err := tr.Attach(tracer.Job{Kind: tracer.JobPID, ID: pid, Spec: "pid"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	syscall.Kill(pid, syscall.SIGUSR1)
	lines.Expect(t, "usr1 1", 5*time.Second)
	for _, tid := range procfs.Tasks(pid) {
		if _, tp := procfs.TaskStatus(tid); tp != 0 {
			t.Errorf("thread %d still traced by %d", tid, tp)
		}
	}
}

// TestSignalsDuringMatrixAreDelivered: signals sent while the matrix is measured again and
// again (each measurement interrupts the process and injects into it) all reach the program's
// handler: a signal that comes first is delivered first, none is held by crashtui. Each is
// sent only after the handler counted the one before (signals of one kind merge while
// pending), so the count is exact.
func TestSignalsDuringMatrixAreDelivered(t *testing.T) {
	cmd, _, lines := tracertest.StartProgram(t, "usr1")
	pid := cmd.Process.Pid
	lines.Expect(t, "ready", 5*time.Second)
	peer := exec.Command("sleep", "100")
	peer.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pid}
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Process.Kill(); peer.Wait() })
	tr := tracertest.Attach(t, tracer.Options{}, tracertest.PGID(pid))
	x := access.New(tr)
	stop := make(chan struct{})
	measured := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				measured <- n
				return
			default:
			}
			if _, _, err := x.Matrix(true); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	const sent = 40
	for i := 1; i <= sent; i++ {
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if l := lines.Expect(t, "usr1 ", 10*time.Second); l != "usr1 "+strconv.Itoa(i) {
			t.Fatalf("signal %d: the handler says %q", i, l)
		}
	}
	close(stop)
	t.Logf("%d signals, each delivered once, during %d measured matrices", sent, <-measured)
}

// A job that forks a short-lived child every 2 ms: every child that joined is reported gone
// (no child is kept as a task that will never report anything), and detaching is prompt.
func TestForkStormIsFollowedAndDetachedPromptly(t *testing.T) {
	count := t.TempDir() + "/count"
	cmd := exec.Command(tracertest.DemoProgram(t, "forker"), count)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := tracertest.ReadLines(out)
	lines.Expect(t, "ready", 5*time.Second)
	pid := cmd.Process.Pid

	st := sessions.NewState()
	evch := make(chan sessions.Event, 1<<16)
	tr := tracer.New(tracer.Options{Emit: func(e sessions.Event) { evch <- e }})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	if _, err := tr.Attach(tracer.Job{Kind: tracer.JobPID, ID: pid, Spec: "pid"}); err != nil {
		t.Fatal(err)
	}
	forks := func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	start := forks()
	tracertest.WaitProc(t, "200 traced forks", func() bool { return forks() >= start+200 })
	syscall.Kill(pid, syscall.SIGUSR1)
	lines.Expect(t, "quiet", 10*time.Second)
	// Every child has exited and been reaped by the forker: the tracer must know.
	tracertest.WaitProc(t, "every child reported gone", func() bool {
		var procs []tracer.Process
		tr.Do(func(l *tracer.Loop) error { procs = l.Processes(); return nil })
		return len(procs) == 1 && procs[0].PID == pid
	})
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	close(evch)
	for e := range evch {
		st.Apply(e)
	}
	live, _ := st.Live()
	if live != 1 || len(st.Procs) < 200 {
		t.Errorf("state: %d processes seen, %d alive; want >= 200 seen and only the forker alive", len(st.Procs), live)
	}
	if _, tp := procfs.TaskStatus(pid); tp != 0 {
		t.Errorf("forker still traced by %d", tp)
	}
}

// TestDetachVforkParentPromptly: Close while a process waits in vfork for a child that sleeps
// 4 s returns at once (before, ~7 s of rounds), the child is detached, and the parent, once its
// child exits, runs on untraced.
func TestDetachVforkParentPromptly(t *testing.T) {
	tr, pid, lines := tracedVforkParent(t)
	// The child exists a moment before its parent blocks in the vfork wait.
	tracertest.WaitProc(t, "the vfork parent in its vfork", func() bool { return procfs.InVfork(pid, pid) })
	if err := tr.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	lines.Expect(t, "beat", 10*time.Second)
	if _, tp := procfs.TaskStatus(pid); tp != 0 {
		t.Errorf("the vfork parent is still traced by %d", tp)
	}
}

// tracedVforkParent starts demo/c/vforker, attaches to it and returns once it waits in vfork
// for its child (which sleeps 4 s).
func tracedVforkParent(t *testing.T) (*tracer.Tracer, int, tracertest.LineReader) {
	cmd, in, lines := tracertest.StartProgram(t, "vforker")
	pid := cmd.Process.Pid
	tr := tracer.New(tracer.Options{})
	if _, err := tr.Attach(tracer.Job{Kind: tracer.JobPGID, ID: pid, Spec: "pgid"}); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	in.Write([]byte("x"))
	tracertest.WaitProc(t, "the vfork child", func() bool {
		b, _ := os.ReadFile(procfs.Path(pid, "task/"+strconv.Itoa(pid)+"/children"))
		return len(strings.TrimSpace(string(b))) > 0
	})
	return tr, pid, lines
}

// TestDetachReleasesEveryThreadAtOnce: Close leaves running threads running (the kernel
// detaches them as the loop's thread ends) and returns only once it has: right after it,
// no thread of a 12-process job, threads included, names crashtui as its tracer or is in a
// tracing stop, and a process stopped by SIGSTOP before the attach is still stopped.
func TestDetachReleasesEveryThreadAtOnce(t *testing.T) {
	pgid, pids := tracertest.StartJobN(t, 12)
	stopped := pids[len(pids)-1]
	if err := unix.Kill(stopped, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	tracertest.WaitState(t, stopped, 'T')
	tr := tracer.New(tracer.Options{})
	t.Cleanup(func() { tr.Close() })
	job := tracer.Job{Kind: tracer.JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}
	res, err := tr.Attach(job)
	if err != nil || res.Processes != len(pids) {
		t.Fatalf("attach: %+v %v", res, err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	threads := 0
	for _, pid := range pids {
		for _, tid := range procfs.Tasks(pid) {
			threads++
			if tp := tracertest.TaskStatusField(pid, tid, "TracerPid"); tp != "0" {
				t.Errorf("thread %d of %d: TracerPid %s right after Close", tid, pid, tp)
			}
			st, err := procfs.ReadStat(tid)
			if err != nil {
				t.Fatal(err)
			}
			if st.State == 't' {
				t.Errorf("thread %d of %d is in a tracing stop after Close", tid, pid)
			}
			if pid == stopped && st.State != 'T' {
				// Seized in its group-stop, it was woken to re-stop as traced; if Close came
				// before it had, the kernel's detach makes it stop again as it runs.
				start := time.Now()
				tracertest.WaitState(t, tid, 'T')
				t.Logf("thread %d of the stopped process: state %c right after Close, T after %v", tid, st.State, time.Since(start))
			} else if pid != stopped && st.State == 'T' {
				t.Errorf("thread %d of %d: stopped after Close, but was running before the attach", tid, pid)
			}
		}
	}
	if threads <= len(pids) {
		t.Fatalf("%d threads in %d processes: the job should have threads", threads, len(pids))
	}
	unix.Kill(stopped, unix.SIGCONT)
}

// TestReleaseAndReacquire: Release lets go of every thread of one process and of nothing
// else, so that another tracer can take it; Reacquire takes every thread back.
func TestReleaseAndReacquire(t *testing.T) {
	pgid, pids := tracertest.StartJobN(t, 6)
	tr := tracer.New(tracer.Options{})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(tracer.Job{Kind: tracer.JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}); err != nil {
		t.Fatal(err)
	}
	// The job's threaded processes are the ones to release: pick one with threads.
	var victim int
	for _, p := range pids {
		if len(procfs.Tasks(p)) > 1 {
			victim = p
			break
		}
	}
	if victim == 0 {
		t.Fatal("the job has no threaded process")
	}
	tracers := func(pid int) (out []string) {
		for _, tid := range procfs.Tasks(pid) {
			out = append(out, tracertest.TaskStatusField(pid, tid, "TracerPid"))
		}
		return out
	}
	_, loop := procfs.TaskStatus(pids[0]) // the tracing thread
	self := strconv.Itoa(loop)
	if err := tr.Release(victim); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		want := self
		if p == victim {
			want = "0"
		}
		for i, tp := range tracers(p) {
			if tp != want {
				t.Errorf("process %d thread %d: TracerPid %s after releasing %d, want %s", p, i, tp, victim, want)
			}
		}
	}
	// Another tracer can seize it now: this test's own thread does, and lets go.
	runtime.LockOSThread()
	for _, tid := range procfs.Tasks(victim) {
		if err := unix.PtraceSeize(tid); err != nil {
			t.Errorf("seize released thread %d: %v", tid, err)
		}
	}
	for _, tid := range procfs.Tasks(victim) {
		unix.PtraceInterrupt(tid)
		var ws unix.WaitStatus
		unix.Wait4(tid, &ws, unix.WALL, nil)
		unix.PtraceDetach(tid)
	}
	runtime.UnlockOSThread()
	if err := tr.Reacquire(victim); err != nil {
		t.Fatal(err)
	}
	for i, tp := range tracers(victim) {
		if tp != self {
			t.Errorf("thread %d of %d: TracerPid %s after Reacquire, want %s", i, victim, tp, self)
		}
	}
	if err := tr.Release(pids[0] + 1<<22); err == nil {
		t.Error("released a process that is not traced")
	}
}

// TestReleaseWaitsForEpollWait: a thread in epoll_wait, which an interrupt ends with EINTR,
// is given releasePatience to leave it; still in it, it is interrupted (the debugger it is
// handed to stops it anyway), and released like the others.
func TestReleaseWaitsForEpollWait(t *testing.T) {
	cmd, _, lines := tracertest.StartProgram(t, "epollwait")
	pid := cmd.Process.Pid
	lines.Expect(t, "ready", 10*time.Second)
	tracertest.WaitBlocked(t, pid) // the worker's epoll_wait, not on its way to it
	tr := tracer.New(tracer.Options{})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(tracer.Job{Kind: tracer.JobPGID, ID: pid, Spec: "pgid"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tr.Release(pid); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("Release took %v: the epoll_wait thread was not given 200ms to leave its call", d)
	}
	for _, tid := range procfs.Tasks(pid) {
		if tp := tracertest.TaskStatusField(pid, tid, "TracerPid"); tp != "0" {
			t.Errorf("thread %d: TracerPid %s after Release", tid, tp)
		}
	}
	lines.Expect(t, "epoll_wait returned -1 errno Interrupted", 5*time.Second)
}
