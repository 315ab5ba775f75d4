package tracer

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// state is where a task is, as the engine sees it. Every task is in exactly one state, and
// each change of state is one of the functions below (or of inject.go for the injection
// states): nothing else writes task.state.
type state uint8

const (
	// running: resumed with PTRACE_CONT, or PTRACE_SYSCALL while a feature follows it
	// (task.follow). It stops when the kernel has something to report.
	running state = iota
	// listening: in a job-control stop the kernel keeps (PTRACE_LISTEN): the job's own
	// stop, not crashtui's; a SIGCONT or an interrupt makes it report again.
	listening
	// stopping: interrupted (PTRACE_INTERRUPT) for a holder; its stop is on its way. A
	// stopping task no one holds any more is resumed when that stop comes.
	stopping
	// held: in a ptrace-stop whose wait status was consumed: an interrupt, event, group or
	// exit stop (never a signal-delivery-stop), kept for its holders until they release it.
	held
	// peeked: in a stop whose wait status was peeked and not consumed (WNOWAIT): a
	// signal-delivery-stop, whose signal so stays the kernel's (if crashtui dies, the kernel
	// delivers it: kernel/signal.c ptrace_signal reads exit_code, which only a consuming wait
	// clears), or a syscall-stop seen while a callback ran. A feature decides a signal's fate
	// during one callback; a stop seen while a callback runs waits here, and the kernel
	// reports it again to the loop's next wait.
	peeked
	// injecting: running a system call crashtui injected, in its guard (inject.go).
	injecting
	// abandoned: its injected call outlived the injection (it blocked); its guard restores
	// it whenever the call returns, and the engine puts it back at its next stop.
	abandoned
	// exited: past PTRACE_EVENT_EXIT and resumed: it never stops again, it only dies.
	exited
)

var stateNames = [...]string{running: "running", listening: "listening", stopping: "stopping", held: "held",
	peeked: "peeked", injecting: "injecting", abandoned: "abandoned", exited: "exited"}

func (s state) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// task is one traced thread. Only the engine's files touch it.
type task struct {
	tid, pid int
	state    state
	// stop is the stop the task is in (held, peeked), as classified.
	stop stopInfo
	// holders counts the holds taken on it (Loop.Hold): while any, a stop it reaches is kept.
	holders int
	// interrupted: a PTRACE_INTERRUPT of ours has not yet brought its interrupt stop (the
	// kernel's JOBCTL_TRAP_STOP is pending): after a signal is delivered it stops again.
	interrupted bool
	// follow: it runs with PTRACE_SYSCALL, its syscall-stops told to the watcher (a fault
	// handler being followed, crash feature).
	follow bool
	// sysgood: PTRACE_O_TRACESYSGOOD is set on it, so its syscall-stops are SIGTRAP|0x80. Set
	// before the first PTRACE_SYSCALL; a new seize (Reacquire) starts without it.
	sysgood bool
	// exitCode is the PTRACE_EVENT_EXIT message, -1 until then.
	exitCode int
	// inj is the injection under way (injecting, and abandoned until its end is seen).
	inj *injectSession
	// early: its first stop came before its parent's fork or clone event (dispatch).
	early bool
	// inCall is the syscall it was blocked in when the engine last interrupted it (-1: none):
	// a nanosleep, poll or futex wait an interrupt ends with ERESTART_RESTARTBLOCK goes on as
	// restart_syscall, which /proc then shows; the call it resumes is this one (CallName).
	inCall int
}

type proc struct {
	pid, ppid int
	rank      sessions.Rank
	exe, comm string
	argv      []string
	uid       int
	tasks     map[int]*task
	launched  bool // started by crashtui run: we reap it
	// execed: a launched rank has left crashtui's gate shell for its command; it is announced
	// only then, so its process event never shows the gate (run --json is the same every time).
	execed    bool
	announced bool // its process event has been emitted
	// gen counts its execs: a feature's cache of its mappings is good for one generation.
	gen int
	// inherited: the image fields are current without reading /proc: a forked child's copied
	// from its parent, or read since the last exec.
	inherited bool
	// stale: it has exec'd and its Exec is not told yet (freshen); reading is the read of its
	// new image under way off the loop thread (execImage), nil once taken.
	stale   bool
	reading *imageRead
	// preStat is its stat line as the attach's scan of /proc read it: readImage takes ppid
	// and comm from it instead of reading them again.
	preStat *procfs.Stat
	// leader is true when crashtui traces the thread-group leader; a leader that was already
	// a zombie (pthread_exit) at attach cannot be seized, and the process then ends with its
	// last traced thread.
	leader bool
}

// The transitions. Each checks the state it leaves and says what went wrong in the
// task's terms; ESRCH (the task was killed while stopped) is not an error: its exit status
// follows.

// resume lets a task that is in a stop go, the way its stop wants: a group-stop is listened
// to (job control unchanged), an exit stop becomes exited, any other stop runs on (with
// PTRACE_SYSCALL while followed). A signal-delivery-stop is resumed with sig (0: the signal
// is suppressed). It is the only place a task leaves a stop but for an injection or a detach.
func (t *Tracer) resume(tk *task, sig int) error {
	if tk.state != held && tk.state != peeked {
		return fmt.Errorf("resume %d: it is %s, not in a stop", tk.tid, tk.state)
	}
	var err error
	next := running
	switch {
	case tk.state == held && tk.stop.class == classGroup:
		err = ptraceListen(tk.tid)
		next = listening
	case tk.state == held && tk.stop.class == classEvent && tk.stop.event == unix.PTRACE_EVENT_EXIT:
		err = ptraceResume(unix.PTRACE_CONT, tk.tid, 0)
		next = exited
	default:
		if tk.state != peeked {
			sig = 0 // only a signal-delivery-stop delivers one
		}
		req := unix.PTRACE_CONT
		if tk.follow && tk.sysgood {
			req = unix.PTRACE_SYSCALL
		}
		err = ptraceResume(req, tk.tid, sig)
	}
	tk.state, tk.stop = next, stopInfo{}
	t.resumed[t.resumedN%len(t.resumed)] = tk.tid
	t.resumedN++
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resume %d: %w", tk.tid, err)
	}
	return nil
}

// resumeReported is resume where nothing is left to do with a failure but tell it.
func (t *Tracer) resumeReported(tk *task, sig int, op string) {
	if err := t.resume(tk, sig); err != nil {
		t.emitErr(tk.pid, op, err)
	}
}

// interrupt asks a running or listening task to stop for a holder (PTRACE_INTERRUPT: a
// blocking syscall is left with its restart code). A task at a signal-delivery-stop keeps
// its state: the interrupt stays pending and brings it back to an interrupt stop once its
// signal is delivered.
func (t *Tracer) interrupt(tk *task) error {
	switch tk.state {
	case running, listening, peeked:
	default:
		return fmt.Errorf("interrupt %d: it is %s", tk.tid, tk.state)
	}
	if err := ptraceInterrupt(tk.tid); err != nil {
		return fmt.Errorf("interrupt %d: %w", tk.tid, err)
	}
	tk.interrupted = true
	if tk.state != peeked {
		tk.state = stopping
	}
	return nil
}

// keep makes the stop a task just reported its holders' (held): its wait status is consumed,
// which loses nothing at a stop that holds no signal, and lets the loop's next wait see the
// other tasks. Never for a signal-delivery-stop, whose signal the consuming would lose.
func (t *Tracer) keep(tk *task, si stopInfo) {
	consume(tk.tid)
	tk.state, tk.stop = held, si
}

// park leaves a task at the stop it just reported, its status unconsumed (a
// signal-delivery-stop always; a syscall-stop seen inside a callback).
func (t *Tracer) park(tk *task, si stopInfo) {
	tk.state, tk.stop = peeked, si
}

// release gives up one hold on each task; the last hold lets a held task go (resume). A
// task at a signal stays there (the loop decides it), a stopping one is resumed when its
// stop comes.
func (t *Tracer) release(tks []*task, op string) {
	for _, tk := range tks {
		if tk.holders > 0 {
			tk.holders--
		}
		if tk.holders == 0 && tk.state == held && t.tasks[tk.tid] == tk {
			t.resumeReported(tk, 0, op)
		}
	}
}
