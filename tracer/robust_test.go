package tracer

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/demo/restart/restarttest"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/access"
	"golang.org/x/sys/unix"
)

// Tests of the tracer on the processes that make ptrace hard: a vfork parent that cannot
// stop, a process whose leader called pthread_exit, a signal that races a measurement.

// lineReader collects a program's output lines.
type lineReader chan string

func readLines(r io.Reader) lineReader {
	ch := make(lineReader, 1024)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	return ch
}

func (ch lineReader) expect(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := patience.After(timeout)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before a %q line", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q line within %v", prefix, timeout)
		}
	}
}

// startProgram starts a demo program in its own process group with stdin and stdout pipes.
func startProgram(t *testing.T, name string) (*exec.Cmd, io.WriteCloser, lineReader) {
	t.Helper()
	cmd := exec.Command(demoProgram(t, name))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range pgroupMembers(cmd.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	return cmd, in, readLines(out)
}

func pgroupMembers(pgid int) []int {
	pids, _ := scanStat(func(s procStat) bool { return s.pgrp == pgid })
	return pids
}

// waitProc polls /proc (there is nothing to wait on) until cond holds for pid.
func waitProc(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := patience.New(10 * time.Second)
	for !cond() {
		if deadline.Passed() {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A vfork parent cannot stop until its child leaves; a measurement gives up on it,
// and when the child finally exits the parent must run on, not stay held.
func TestMeasureGivesUpOnAVforkParentWithoutHoldingIt(t *testing.T) {
	tr, pid, lines := tracedVforkParent(t)
	t.Cleanup(func() { tr.Close() })
	tr.Matrix(true) // gives up on the parent at once (an error event), measures the child
	lines.expect(t, "beat", 10*time.Second)
	if st, _ := readStat(pid); st.state == 't' {
		t.Errorf("the vfork parent is left in a tracing stop")
	}
}

// A process whose main thread called pthread_exit: the leader is a zombie that ptrace cannot
// seize, yet the process is alive. It is attached, measured, checkpointed and detached
// promptly, and its exit is reported when its last thread ends it.
func TestZombieLeaderProcess(t *testing.T) {
	cmd, in, lines := startProgram(t, "pthexit")
	pid := cmd.Process.Pid
	lines.expect(t, "ready", 5*time.Second)
	waitProc(t, "the leader to be a zombie", func() bool { st, _ := readStat(pid); return st.state == 'Z' })

	var evs []sessions.Event
	evch := make(chan sessions.Event, 1024)
	tr := New(Options{Emit: func(e sessions.Event) { evch <- e }})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	res, err := tr.Attach(Job{Kind: JobPID, ID: pid, Spec: "pid"})
	if err != nil || res.Processes != 1 || res.Threads != 1 {
		t.Fatalf("attach to a process with a zombie leader: %+v %v", res, err)
	}
	sw := patience.Start(5 * time.Second)
	if _, _, err := tr.Matrix(true); err != nil {
		t.Fatalf("matrix: %v", err)
	}
	if _, err := tr.Checkpoint("none", nil); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if d, over := sw.Stop(); over {
		t.Errorf("matrix and checkpoint took %v (load factor now %.1f): something waited on the zombie leader", d, patience.Factor())
	}
	// The worker still handles signals under tracing.
	syscall.Kill(pid, syscall.SIGUSR1)
	lines.expect(t, "usr1 1", 5*time.Second)
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
	cmd, _, lines := startProgram(t, "pthexit")
	pid := cmd.Process.Pid
	lines.expect(t, "ready", 5*time.Second)
	waitProc(t, "the leader to be a zombie", func() bool { st, _ := readStat(pid); return st.state == 'Z' })
	tr := New(Options{})
	if _, err := tr.Attach(Job{Kind: JobPID, ID: pid, Spec: "pid"}); err != nil {
		t.Fatal(err)
	}
	sw := patience.Start(3 * time.Second)
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d, over := sw.Stop(); over {
		t.Errorf("detach took %v (load factor now %.1f)", d, patience.Factor())
	}
	syscall.Kill(pid, syscall.SIGUSR1)
	lines.expect(t, "usr1 1", 5*time.Second)
	for _, tid := range listTasks(pid) {
		if tp := tracerOf(tid); tp != 0 {
			t.Errorf("thread %d still traced by %d", tid, tp)
		}
	}
}

// A signal that reaches its signal-delivery-stop just as a measurement interrupts the process
// is delivered: the measurement leaves that process predicted rather than lose the signal.
func TestSignalRacingAMeasurementIsDelivered(t *testing.T) {
	cmd, _, lines := startProgram(t, "usr1")
	pid := cmd.Process.Pid
	lines.expect(t, "ready", 5*time.Second)
	peer := exec.Command("sleep", "100")
	peer.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pid}
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Process.Kill(); peer.Wait() })
	tr := New(Options{})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(Job{Kind: JobPGID, ID: pid, Spec: "pgid"}); err != nil {
		t.Fatal(err)
	}
	// Inside one request the loop cannot drain: the process sits in its signal-delivery-stop
	// (state t) when the measurement's PTRACE_INTERRUPT is sent.
	err := tr.do(func() error {
		syscall.Kill(pid, syscall.SIGUSR1)
		waitProc(t, "the signal-delivery-stop", func() bool { st, _ := readStat(pid); return st.state == 't' })
		procs := readProcs(tr.jobPIDs())
		idx := -1
		for i, p := range procs {
			if p.PID == pid {
				idx = i
			}
		}
		var st MatrixStats
		tr.measureFrom(accessSystem(), procs, idx, map[[2]int]accessMeasurement{}, &st)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lines.expect(t, "usr1 1", 5*time.Second)
}

// aliases keep the test readable without importing access under another name.
var accessSystem = access.ReadSystem

type accessMeasurement = access.Measurement

// A job that forks a short-lived child every 2 ms: every child that joined is reported gone
// (no child is kept as a task that will never report anything), and detaching is prompt.
func TestForkStormIsFollowedAndDetachedPromptly(t *testing.T) {
	count := t.TempDir() + "/count"
	cmd := exec.Command(demoProgram(t, "forker"), count)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := readLines(out)
	lines.expect(t, "ready", 5*time.Second)
	pid := cmd.Process.Pid

	st := sessions.NewState()
	evch := make(chan sessions.Event, 1<<16)
	tr := New(Options{Emit: func(e sessions.Event) { evch <- e }})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	if _, err := tr.Attach(Job{Kind: JobPID, ID: pid, Spec: "pid"}); err != nil {
		t.Fatal(err)
	}
	forks := func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	start := forks()
	waitProc(t, "200 traced forks", func() bool { return forks() >= start+200 })
	syscall.Kill(pid, syscall.SIGUSR1)
	lines.expect(t, "quiet", 10*time.Second)
	// Every child has exited and been reaped by the forker: the tracer must know.
	waitProc(t, "every child reported gone", func() bool {
		var pids []int
		tr.do(func() error { pids = tr.jobPIDs(); return nil })
		return len(pids) == 1 && pids[0] == pid
	})
	sw := patience.Start(3 * time.Second)
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d, over := sw.Stop(); over {
		t.Errorf("detach took %v (load factor now %.1f)", d, patience.Factor())
	}
	close(evch)
	for e := range evch {
		st.Apply(e)
	}
	live, _ := st.Live()
	if live != 1 || len(st.Procs) < 200 {
		t.Errorf("state: %d processes seen, %d alive; want >= 200 seen and only the forker alive", len(st.Procs), live)
	}
	if tp := tracerOf(pid); tp != 0 {
		t.Errorf("forker still traced by %d", tp)
	}
}

// TestCloseReapsDyingProcess: a process that is dying when the tracer detaches (every thread
// past its PTRACE_EVENT_EXIT stop, its final status not yet waited for) is reaped by the
// tracer, so it reaches its parent and no longer names crashtui as its TracerPid. The tracer
// thread is still alive when this is checked (inside t.do), so the kernel's exit_ptrace
// cannot be what released it.
func TestCloseReapsDyingProcess(t *testing.T) {
	p := restarttest.Start(t, restarttest.Build(t), "sem")
	log := &eventLog{}
	tr := New(Options{Emit: log.emit})
	t.Cleanup(func() { tr.Close() })
	job, _ := ParseJob("pid:" + strconv.Itoa(p.PID))
	if _, err := tr.Attach(job); err != nil {
		t.Fatal(err)
	}
	var tracerPid int
	err := tr.do(func() error {
		for _, tk := range tr.procs[p.PID].tasks {
			tk.want = true
		}
		if err := unix.Kill(p.PID, unix.SIGTERM); err != nil {
			return err
		}
		// Hold every thread at its exit stop: pass the SIGTERM on and keep holding.
		atExit := func() bool {
			pr := tr.procs[p.PID]
			if pr == nil {
				return false
			}
			all := true
			for _, tk := range pr.tasks {
				switch tk.stopped {
				case stopExit:
				case running:
					all = false
				default:
					tr.resume(tk)
					tk.want = true
					all = false
				}
			}
			return all
		}
		if err := tr.pump(atExit, 10*time.Second, "threads did not reach their exit stops"); err != nil {
			return err
		}
		for _, tk := range tr.procs[p.PID].tasks {
			tr.resume(tk) // now exited: it never stops again
		}
		if err := tr.detachAll(); err != nil {
			return err
		}
		_, tracerPid = taskStatus(p.PID) // 0 once reaped
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tracerPid != 0 {
		t.Fatalf("dying process %d still traced by %d after detach", p.PID, tracerPid)
	}
	var exit *sessions.Exit
	for _, e := range log.events() {
		if x, ok := e.Body.(sessions.Exit); ok && x.PID == p.PID {
			exit = &x
		}
	}
	if exit == nil || exit.Signal != "SIGTERM" {
		t.Fatalf("exit event %+v, want the process's end by SIGTERM", exit)
	}
}

// TestDetachVforkParentPromptly: Close while a process waits in vfork for a child that sleeps
// 4 s returns at once (before, ~7 s of rounds), the child is detached, and the parent, once its
// child exits, runs on untraced.
func TestDetachVforkParentPromptly(t *testing.T) {
	tr, pid, lines := tracedVforkParent(t)
	// The child exists a moment before its parent blocks in the vfork wait.
	for deadline := patience.New(5 * time.Second); !inVfork(pid, pid) && !deadline.Passed(); {
		time.Sleep(time.Millisecond)
	}
	if !inVfork(pid, pid) {
		t.Fatalf("inVfork(%d) is false for a vfork parent (syscall %q)", pid, readFileString(procPath(pid, "syscall")))
	}
	sw := patience.Start(time.Second)
	if err := tr.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if d, over := sw.Stop(); over {
		t.Errorf("detach took %v with a vfork parent (load factor now %.1f; parent still in vfork: %v)", d, patience.Factor(), inVfork(pid, pid))
	}
	lines.expect(t, "beat", 10*time.Second)
	if _, tp := taskStatus(pid); tp != 0 {
		t.Errorf("the vfork parent is still traced by %d", tp)
	}
}

func readFileString(p string) string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }

// tracedVforkParent starts demo/c/vforker, attaches to it and returns once it waits in vfork
// for its child (which sleeps 4 s).
func tracedVforkParent(t *testing.T) (*Tracer, int, lineReader) {
	cmd, in, lines := startProgram(t, "vforker")
	pid := cmd.Process.Pid
	tr := New(Options{})
	if _, err := tr.Attach(Job{Kind: JobPGID, ID: pid, Spec: "pgid"}); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	in.Write([]byte("x"))
	waitProc(t, "the vfork child", func() bool {
		b, _ := os.ReadFile(procPath(pid, "task/"+strconv.Itoa(pid)+"/children"))
		return len(strings.TrimSpace(string(b))) > 0
	})
	return tr, pid, lines
}

// TestDetachReleasesEveryThreadAtOnce: Close leaves running threads running (the kernel
// detaches them as the loop's thread ends) and returns only once it has: right after it,
// no thread of a 12-process job, threads included, names crashtui as its tracer or is in a
// tracing stop, and a process stopped by SIGSTOP before the attach is still stopped.
func TestDetachReleasesEveryThreadAtOnce(t *testing.T) {
	pgid, pids := startJobN(t, 12)
	stopped := pids[len(pids)-1]
	if err := unix.Kill(stopped, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, stopped, 'T')
	tr := New(Options{})
	t.Cleanup(func() { tr.Close() })
	job := Job{Kind: JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}
	res, err := tr.Attach(job)
	if err != nil || res.Processes != len(pids) {
		t.Fatalf("attach: %+v %v", res, err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	threads := 0
	for _, pid := range pids {
		for _, tid := range listTasks(pid) {
			threads++
			if tp := taskStatusField(pid, tid, "TracerPid"); tp != "0" {
				t.Errorf("thread %d of %d: TracerPid %s right after Close", tid, pid, tp)
			}
			st, err := readStat(tid)
			if err != nil {
				t.Fatal(err)
			}
			if st.state == 't' {
				t.Errorf("thread %d of %d is in a tracing stop after Close", tid, pid)
			}
			if pid == stopped && st.state != 'T' {
				// Seized in its group-stop, it was woken to re-stop as traced; if Close came
				// before it had, the kernel's detach makes it stop again as it runs.
				start := time.Now()
				waitState(t, tid, 'T')
				t.Logf("thread %d of the stopped process: state %c right after Close, T after %v", tid, st.state, time.Since(start))
			} else if pid != stopped && st.state == 'T' {
				t.Errorf("thread %d of %d: stopped after Close, but was running before the attach", tid, pid)
			}
		}
	}
	if threads <= len(pids) {
		t.Fatalf("%d threads in %d processes: the job should have threads", threads, len(pids))
	}
	unix.Kill(stopped, unix.SIGCONT)
}

// waitState waits until pid's state letter is want.
func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	for deadline := patience.New(5 * time.Second); !deadline.Passed(); time.Sleep(time.Millisecond) {
		if st, err := readStat(pid); err == nil && st.state == want {
			return
		}
	}
	t.Fatalf("pid %d never reached state %c", pid, want)
}

// TestReleaseAndReacquire: Release lets go of every thread of one process and of nothing
// else, so that another tracer can take it; Reacquire takes every thread back.
func TestReleaseAndReacquire(t *testing.T) {
	pgid, pids := startJobN(t, 6)
	tr := New(Options{})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(Job{Kind: JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}); err != nil {
		t.Fatal(err)
	}
	// The job's threaded processes are the ones to release: pick one with threads.
	var victim int
	for _, p := range pids {
		if len(listTasks(p)) > 1 {
			victim = p
			break
		}
	}
	if victim == 0 {
		t.Fatal("the job has no threaded process")
	}
	tracers := func(pid int) (out []string) {
		for _, tid := range listTasks(pid) {
			out = append(out, taskStatusField(pid, tid, "TracerPid"))
		}
		return out
	}
	if err := tr.Release(victim); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(tr.self)
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
	for _, tid := range listTasks(victim) {
		if err := unix.PtraceSeize(tid); err != nil {
			t.Errorf("seize released thread %d: %v", tid, err)
		}
	}
	for _, tid := range listTasks(victim) {
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
	cmd, _, lines := startProgram(t, "epollwait")
	pid := cmd.Process.Pid
	lines.expect(t, "ready", 10*time.Second)
	tr := New(Options{})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(Job{Kind: JobPGID, ID: pid, Spec: "pgid"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tr.Release(pid); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < releasePatience {
		t.Errorf("Release took %v: the epoll_wait thread was not given %v to leave its call", d, releasePatience)
	}
	for _, tid := range listTasks(pid) {
		if tp := taskStatusField(pid, tid, "TracerPid"); tp != "0" {
			t.Errorf("thread %d: TracerPid %s after Release", tid, tp)
		}
	}
	lines.expect(t, "epoll_wait returned -1 errno Interrupted", 5*time.Second)
}
