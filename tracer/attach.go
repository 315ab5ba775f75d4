package tracer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/access"
)

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// AttachResult says what an attach took hold of.
type AttachResult struct {
	Processes int
	Threads   int
	Refused   []error // per-process failures (EPERM: traced by someone else, another user...)
}

// Attach seizes every thread of every process the job names, re-scanning until no new thread
// or process appears, so that threads and children born during the attach are not missed.
// It returns ErrNoJob (wrapped) when nothing could be attached.
func (t *Tracer) Attach(job Job) (AttachResult, error) {
	var res AttachResult
	err := t.do(func() error {
		var err error
		res, err = t.attach(job)
		return err
	})
	return res, err
}

func (t *Tracer) attach(job Job) (AttachResult, error) {
	var res AttachResult
	refused := map[int]error{}
	skipped := map[int]bool{}
	for round := 0; ; round++ {
		pids, pipeline, stats, err := job.resolve(func(pid int) bool { return t.procs[pid] != nil || refused[pid] != nil })
		if err != nil {
			if round == 0 {
				return res, fmt.Errorf("%w: %v", ErrNoJob, err)
			}
			break
		}
		for pid, why := range pipeline {
			if !skipped[pid] {
				skipped[pid] = true
				t.emitErr(pid, "attach", fmt.Errorf("not traced: %s (crashtui's own pipeline)", why))
			}
		}
		added := 0
		for _, pid := range pids {
			if refused[pid] != nil {
				continue
			}
			n, err := t.seizeProcess(pid)
			if err != nil {
				refused[pid] = err
				continue
			}
			if p := t.procs[pid]; p != nil && !p.announced {
				if st, ok := stats[pid]; ok {
					p.preStat = &st // its ppid and comm, read by this round's scan
				}
			}
			added += n
		}
		if added == 0 || round > 100 {
			break
		}
	}
	for pid, err := range refused {
		if t.procs[pid] == nil && !errors.Is(err, unix.ESRCH) {
			res.Refused = append(res.Refused, err)
			t.emitErr(pid, "attach", err)
		}
	}
	for _, p := range t.procs {
		if len(p.tasks) == 0 {
			continue
		}
		t.announce(p)
		res.Processes++
		res.Threads += len(p.tasks)
	}
	if res.Processes == 0 {
		if len(res.Refused) > 0 {
			return res, fmt.Errorf("job %s: could not attach: %v", job, res.Refused[0])
		}
		return res, fmt.Errorf("job %s %w (its processes exited, or it never had any)", job, ErrNoJob)
	}
	return res, nil
}

// seizeProcess seizes every thread of pid, re-reading /proc/PID/task until no new thread
// appears. It returns how many threads it newly took.
func (t *Tracer) seizeProcess(pid int) (int, error) {
	added := 0
	for {
		tids := listTasks(pid)
		if len(tids) == 0 {
			if added == 0 && t.procs[pid] == nil {
				return 0, fmt.Errorf("seize %d: %w", pid, unix.ESRCH)
			}
			return added, nil
		}
		n := 0
		for _, tid := range tids {
			if t.tasks[tid] != nil {
				continue
			}
			err := ptraceSeize(tid)
			if errors.Is(err, unix.EPERM) {
				if st, serr := readStat(tid); serr == nil && (st.state == 'Z' || st.state == 'X') {
					continue // a leader that called pthread_exit: the kernel refuses to seize a zombie
				}
				if tracerOf(tid) == t.self {
					err = nil // the kernel attached it for us (a fork or clone of a seized thread)
				}
			}
			if errors.Is(err, unix.ESRCH) {
				continue // the thread exited meanwhile: normal
			}
			if err != nil {
				if added == 0 && n == 0 {
					return 0, fmt.Errorf("seize %d: %w%s", tid, err, seizeHint(tid, err))
				}
				continue
			}
			t.addTask(tid, pid)
			n++
		}
		added += n
		if n == 0 {
			return added, nil
		}
	}
}

func tracerOf(tid int) int {
	_, tracer := taskStatus(tid)
	return tracer
}

func seizeHint(tid int, err error) string {
	if !errors.Is(err, unix.EPERM) {
		return ""
	}
	if tp := tracerOf(tid); tp != 0 {
		return fmt.Sprintf(" (already traced by pid %d)", tp)
	}
	root := os.Geteuid() == 0
	switch yama := access.ReadSystem().Yama; {
	case yama == 3:
		return " (Yama ptrace_scope=3 forbids every ptrace attach, even root's, until reboot)"
	case yama == 2 && !root:
		return " (Yama ptrace_scope=2 lets only CAP_SYS_PTRACE attach: run as root)"
	case yama == 1 && !root:
		return " (Yama ptrace_scope=1 lets a process attach only to its descendants: run as root, or sysctl kernel.yama.ptrace_scope=0)"
	}
	return " (another user's process, or non-dumpable: run as root or the job's user)"
}

// ErrNoCommand means the command to run does not exist or is not executable (bad usage,
// unlike a failure to trace what was started).
var ErrNoCommand = errors.New("no such command")

// LaunchSpec describes `crashtui run`.
type LaunchSpec struct {
	N      int
	Argv   []string
	Env    []string // extra environment for every rank
	Stdout *os.File // ranks' stdout and stderr (nil: /dev/null)
	Stderr *os.File
}

// Launch starts N ranks of Argv in their own process group, traced from their first
// instruction: each rank is a /bin/sh that waits on a pipe, is seized, then execs the command,
// so the exec itself is a traced event and a rank that crashes at once is still caught.
// It returns the process group id.
// gateName is the gate shell's $0: a process whose argv[3] it is has not reached its command.
const gateName = "crashtui-rank"

func (t *Tracer) Launch(spec LaunchSpec) (int, error) {
	if spec.N <= 0 {
		spec.N = 1
	}
	if len(spec.Argv) == 0 {
		return 0, errors.New("run: no command")
	}
	if _, err := exec.LookPath(spec.Argv[0]); err != nil {
		return 0, fmt.Errorf("run: %w: %w", ErrNoCommand, err)
	}
	pgid := 0
	var started []int
	err := t.do(func() error {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer null.Close()
		out, errw := spec.Stdout, spec.Stderr
		if out == nil {
			out = null
		}
		if errw == nil {
			errw = null
		}
		var gates []*os.File
		defer func() {
			for _, g := range gates {
				g.Close()
			}
		}()
		for i := 0; i < spec.N; i++ {
			r, w, err := os.Pipe()
			if err != nil {
				return err
			}
			argv := append([]string{"/bin/sh", "-c", `read _ <&3; exec 3<&-; exec "$@"`, gateName}, spec.Argv...)
			env := append(os.Environ(), spec.Env...)
			env = append(env, "CRASHTUI_RANK="+strconv.Itoa(i), "CRASHTUI_SIZE="+strconv.Itoa(spec.N))
			attr := &os.ProcAttr{Env: env, Files: []*os.File{null, out, errw, r},
				Sys: &unix.SysProcAttr{Setpgid: true, Pgid: pgid}}
			p, err := os.StartProcess("/bin/sh", argv, attr)
			r.Close()
			if err != nil {
				w.Close()
				return fmt.Errorf("run rank %d: %w", i, err)
			}
			gates = append(gates, w)
			started = append(started, p.Pid)
			if pgid == 0 {
				pgid = p.Pid
			}
			if err := ptraceSeize(p.Pid); err != nil {
				// Never let a rank run untraced: end every rank started so far while they are
				// still waiting at their gates.
				for _, pid := range started {
					unix.Kill(pid, unix.SIGKILL)
				}
				return fmt.Errorf("run rank %d: seize %d: %w", i, p.Pid, err)
			}
			t.addTask(p.Pid, p.Pid)
			pr := t.procs[p.Pid]
			pr.launched, pr.rank = true, sessions.Rank(i)
		}
		return nil // closing the gates lets every rank exec
	})
	return pgid, err
}

// ---- holding threads stopped ----

// stopTask brings tk into a ptrace-stop and holds it there. Other wait statuses that arrive
// meanwhile are handled as usual.
func (t *Tracer) stopTask(tk *task, timeout time.Duration) error {
	if tk.stopped != running {
		tk.want = true
		return nil
	}
	if tk.exited {
		return fmt.Errorf("thread %d has exited and will not stop again", tk.tid)
	}
	tk.want = true
	if err := ptrace(unix.PTRACE_INTERRUPT, tk.tid, 0, 0); err != nil {
		tk.want = false
		return fmt.Errorf("interrupt %d: %w", tk.tid, err)
	}
	stopped := func() bool { return tk.stopped != running || t.tasks[tk.tid] == nil }
	// Almost every thread stops at once; only one that did not is looked at in /proc: a vfork
	// parent cannot stop before its child execs or exits, and is not waited for.
	err := t.pump(stopped, min(timeout, 100*time.Millisecond), "")
	if err != nil && inVfork(tk.pid, tk.tid) {
		err = fmt.Errorf("thread %d is a vfork parent: it cannot stop before its child execs or exits", tk.tid)
	} else if err != nil {
		err = t.pump(stopped, timeout, fmt.Sprintf("thread %d did not stop (uninterruptible sleep?)", tk.tid))
	}
	if err != nil {
		// Its stop may still come (the interrupt stays queued): it must then be resumed, not
		// held forever.
		tk.want = false
	}
	return err
}

// detachAll stops and detaches every tracee. Held signals are re-injected through
// PTRACE_DETACH's data argument; group-stopped tasks stay stopped (kernel/ptrace.c
// __ptrace_detach re-arms the group stop).
//
// A thread that runs as its own is not stopped at all: it is forgotten, and the kernel
// detaches it without a stop when the loop's thread ends (exit_ptrace, what a SIGKILL of
// crashtui does too: its registers, mask and pending signals are its own; syscall tracing is
// cleared; a job-control stop is re-armed). So detaching a job of any size stops none of its
// running threads, and an epoll_wait is never interrupted. Only held threads (a signal to
// re-inject with PTRACE_DETACH's data), threads crashtui resumed with PTRACE_SYSCALL (a fault
// handler followed, an injection not yet back) and, when the loop runs on the main thread
// (which never ends), every thread are stopped and detached one by one.
func (t *Tracer) detachAll() error {
	t.closing = true
	var firstErr error
	t.drain()
	if !t.onMain {
		for _, tk := range t.tasks {
			if tk.stopped == running && !tk.exited && !tk.want && tk.req != unix.PTRACE_SYSCALL && tk.inject == nil && tk.abandoned == nil {
				t.forgetDetached(tk)
			}
		}
	}
	// New children of held threads keep appearing for a round or two; a thread that does not
	// stop within a round is looked at in /proc: gone, or no longer ours, it is forgotten; a
	// live one (uninterruptible sleep, a vfork parent) is given a few more rounds, then left
	// to the kernel's exit_ptrace when crashtui exits (it is not harmed: it detaches it).
	deadline := time.Now().Add(8 * time.Second)
	for round := 0; len(t.tasks) > 0 && time.Now().Before(deadline); round++ {
		for _, tk := range t.tasks {
			tk.want = true
			if tk.stopped == running && !tk.exited {
				if round == 0 && !interruptible(tk) {
					// An interrupt would make its epoll_wait (semop, sigtimedwait…) fail
					// with EINTR: it is left to the kernel, which detaches it without a
					// stop when the loop's thread exits (exit_ptrace).
					t.forgetDetached(tk)
					continue
				}
				if err := ptrace(unix.PTRACE_INTERRUPT, tk.tid, 0, 0); errors.Is(err, unix.ESRCH) {
					continue
				}
			}
		}
		allHeld := func() bool {
			for _, tk := range t.tasks {
				if tk.stopped == running && !tk.exited {
					return false
				}
			}
			return true
		}
		// A vfork parent cannot stop before its child execs or exits, which may be never:
		// it is left to the kernel's exit_ptrace at once, not waited for.
		if t.pump(allHeld, 100*time.Millisecond, "") != nil {
			for _, tk := range t.tasks {
				if tk.stopped == running && !tk.exited && inVfork(tk.pid, tk.tid) {
					t.forgetDetached(tk)
				}
			}
		}
		if err := t.pump(allHeld, 2*time.Second, "some threads did not stop for detach"); err != nil {
			for _, tk := range t.tasks {
				if tk.stopped != running || tk.exited {
					continue
				}
				if _, tracer := taskStatus(tk.tid); tracer != t.self {
					t.forgetDetached(tk) // gone, or never really ours: nothing to detach
				}
			}
			if len(t.tasks) > 0 && time.Now().Add(2*time.Second).After(deadline) && firstErr == nil {
				firstErr = fmt.Errorf("%w: %s", err, t.lateThreads())
			}
		}
		dying := t.dyingProcs()
		for _, tk := range t.tasks {
			if tk.exited && tk.stopped == running {
				// Past its exit stop it never stops again and cannot be detached. If its
				// whole process is dying it is reaped below; otherwise (a zombie leader
				// whose threads live on) the kernel releases it when crashtui exits.
				if !dying[tk.pid] {
					t.forgetDetached(tk)
				}
				continue
			}
			if tk.stopped == running {
				continue
			}
			sig := 0
			if tk.stopped == stopSignal {
				sig = tk.sig
			}
			err := ptrace(unix.PTRACE_DETACH, tk.tid, 0, uintptr(sig))
			if err != nil && !errors.Is(err, unix.ESRCH) && firstErr == nil {
				firstErr = fmt.Errorf("detach %d: %w", tk.tid, err)
			}
			t.forgetDetached(tk)
		}
		t.reapDying(dying)
	}
	// Whatever is left is detached by the kernel when the loop's thread exits (exit_ptrace):
	// forget it, so the loop ends and its thread does exit.
	for _, tk := range t.tasks {
		t.forgetDetached(tk)
	}
	return firstErr
}

// lateThreads describes the threads that are running as far as the tracer knows: tid, the
// /proc state letter, the syscall they are in and their tracer.
func (t *Tracer) lateThreads() string {
	var out []string
	for _, tk := range t.tasks {
		if tk.stopped == running && !tk.exited {
			st := "?"
			if s, err := readStat(tk.tid); err == nil {
				st = string(s.state)
			}
			sc, _ := os.ReadFile(procPath(tk.tid, "syscall"))
			_, tp := taskStatus(tk.tid)
			out = append(out, fmt.Sprintf("%d (state %s, syscall %q, TracerPid %d)", tk.tid, st, strings.TrimSpace(string(sc)), tp))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// dyingProcs names the processes every thread of which is past its exit stop.
func (t *Tracer) dyingProcs() map[int]bool {
	dying := map[int]bool{}
	for pid, p := range t.procs {
		all := len(p.tasks) > 0
		for _, tk := range p.tasks {
			if !tk.exited || tk.stopped != running {
				all = false
				break
			}
		}
		if all {
			dying[pid] = true
		}
	}
	return dying
}

// reapDying waits, briefly, for the final wait status of every thread of a dying process.
// Until the tracer has waited for it, a traced zombie is held back from its parent and still
// shows crashtui as its TracerPid; it is reported as an Exit like any other end.
func (t *Tracer) reapDying(dying map[int]bool) {
	if len(dying) == 0 {
		return
	}
	reaped := func() bool {
		for pid := range dying {
			if t.procs[pid] != nil {
				return false
			}
		}
		return true
	}
	if t.pump(reaped, 2*time.Second, "dying threads were not reported") == nil {
		return
	}
	for pid := range dying {
		if p := t.procs[pid]; p != nil {
			for _, tk := range p.tasks {
				t.forgetDetached(tk)
			}
		}
	}
}

func (t *Tracer) forgetDetached(tk *task) {
	delete(t.tasks, tk.tid)
	if p := t.procs[tk.pid]; p != nil {
		delete(p.tasks, tk.tid)
		if len(p.tasks) == 0 {
			delete(t.procs, p.pid)
		}
	}
}

// SignalJob sends sig to every traced process, by pid. run and demo use it to end the ranks
// they started; attach never does.
func (t *Tracer) SignalJob(sig unix.Signal) error {
	return t.do(func() error {
		for pid := range t.procs {
			if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("signal %d: %w", pid, err)
			}
		}
		return nil
	})
}

// SignalProcess sends sig to one traced process by pid, with kill(2) as kill -SIG PID does:
// the TUI's K. A pid the tracer does not hold (it ended, was let go, or was never in the job)
// is refused: a traced process that exits is not reaped by its parent before the tracer has
// waited for it, so while it is in t.procs its pid cannot belong to anyone else. The signal
// reaches the process as any other does: crashtui re-injects it at its signal-delivery-stop,
// and a SIGSTOP's group-stop is kept with PTRACE_LISTEN.
func (t *Tracer) SignalProcess(pid int, sig unix.Signal) error {
	return t.do(func() error {
		if t.procs[pid] == nil {
			return fmt.Errorf("signal %d: not a traced process (it ended or was let go)", pid)
		}
		if err := unix.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
		return nil
	})
}
