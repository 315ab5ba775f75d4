package tracer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// Holds: a feature asks the engine to bring threads to a stop and keep them there while it
// works (Loop.Hold), and the engine lets them go when it is done. A running thread is
// interrupted (PTRACE_INTERRUPT); a thread blocked in a call that an interrupt would make
// fail with EINTR is never interrupted unless the holder says so (HoldOptions.EINTR); a
// signal that arrives first is delivered first (the interrupt, still pending, brings the
// thread back once its handler is set up: what CRIU's compel_wait_task does), so no thread is
// ever held with a signal only crashtui knows of.

// EINTRPolicy says what Hold does with a thread blocked in a call an interrupt would end with
// EINTR (eintrCall).
type EINTRPolicy int

const (
	// LeaveBlocked never interrupts it: it is Late (the default).
	LeaveBlocked EINTRPolicy = iota
	// InterruptBlocked interrupts it once Patience has passed without it leaving the call
	// (a debugger it is handed to stops it anyway; a dying process's core).
	InterruptBlocked
)

// HoldOptions say how Hold brings threads to a stop.
type HoldOptions struct {
	// Timeout bounds the wait for all of them (0: 2 s). A thread in uninterruptible sleep
	// stops only when it leaves it.
	Timeout time.Duration
	// EINTR and Patience: a thread blocked in an EINTR call is given Patience to leave it by
	// itself, then left (LeaveBlocked) or interrupted (InterruptBlocked).
	EINTR    EINTRPolicy
	Patience time.Duration
	// AtInterrupt: the holder needs each thread at an interrupt stop (an injection may start
	// only there); a thread that stopped at an event stop instead is let go to the interrupt
	// that follows, one at a group-stop or its exit stop is Late.
	AtInterrupt bool
	// PIDs, when not nil, limit HoldJob to the threads of these processes (a checkpoint of
	// part of the job: the rest runs on untouched).
	PIDs []int
}

// LateWhy is why a thread was not held.
type LateWhy int

const (
	// LateTimeout: it did not stop within the timeout (uninterruptible sleep?).
	LateTimeout LateWhy = iota
	// LateEINTR: it is blocked in a call an interrupt would end with EINTR (Late.Syscall).
	LateEINTR
	// LateVfork: a vfork parent, which cannot stop before its child execs or exits.
	LateVfork
	// LateExited: past its exit stop; it never stops again.
	LateExited
	// LateBusy: inside an injected call, or held where the holder cannot use it.
	LateBusy
	// LateJobStop: in a job-control stop (AtInterrupt: no injection there).
	LateJobStop
)

// Late is a thread Hold did not hold, and why.
type Late struct {
	TID     int
	Why     LateWhy
	Syscall string // the call it is blocked in (LateEINTR)
}

func (l Late) String() string {
	switch l.Why {
	case LateEINTR:
		return fmt.Sprintf("%d (blocked in %s, which an interrupt would make fail with EINTR)", l.TID, l.Syscall)
	case LateVfork:
		return fmt.Sprintf("%d (a vfork parent: it cannot stop before its child execs or exits)", l.TID)
	case LateExited:
		return fmt.Sprintf("%d (past its exit)", l.TID)
	case LateBusy:
		return fmt.Sprintf("%d (busy in an injected call)", l.TID)
	case LateJobStop:
		return fmt.Sprintf("%d (job-control stopped)", l.TID)
	}
	return fmt.Sprintf("%d (did not stop in time: uninterruptible sleep?)", l.TID)
}

// Held is what a Hold holds: the threads in a stop, and those it could not hold.
type Held struct {
	Threads []Thread
	Late    []Late
}

// LateErr is an error naming the late threads (nil when none), for op.
func (h *Held) LateErr(op string) error {
	if len(h.Late) == 0 {
		return nil
	}
	names := make([]string, len(h.Late))
	for i, l := range h.Late {
		names[i] = l.String()
	}
	return fmt.Errorf("%s: %d thread(s) not stopped: %s", op, len(h.Late), strings.Join(names, ", "))
}

// vforkGrace is how long a hold waits for a thread before it looks whether it is a vfork
// parent, which cannot stop before its child execs or exits, and is not waited for.
const vforkGrace = 100 * time.Millisecond

// Hold brings the threads tids into a stop, runs fn with those it holds, and lets them go
// (each as its stop wants: running on, listened to at a group-stop, past its exit). Threads
// born while it waits are not among them. Inside a Watcher callback it waits only for these
// threads (the job's other stops wait); otherwise the job's other stops are served meanwhile.
func (l *Loop) Hold(tids []int, o HoldOptions, fn func(h *Held) error) error {
	t := l.t
	tks := make([]*task, 0, len(tids))
	var gone []Late
	for _, tid := range tids {
		if tk := t.tasks[tid]; tk != nil {
			tks = append(tks, tk)
		} else {
			gone = append(gone, Late{TID: tid, Why: LateExited})
		}
	}
	got, late := t.hold(tks, o)
	defer t.release(got, "release")
	h := &Held{Late: append(gone, late...)}
	for _, tk := range got {
		h.Threads = append(h.Threads, Thread{t: t, tk: tk})
	}
	return fn(h)
}

// hold takes a hold on each of tks and waits for them to stop. It returns those held (in a
// stop, one hold each, to be released) and those it could not hold (no hold kept).
func (t *Tracer) hold(tks []*task, o HoldOptions) (got []*task, late []Late) {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	start := time.Now()
	var waiting, gentle []*task
	take := func(tk *task) { tk.holders++; waiting = append(waiting, tk) }
	lateOf := func(tk *task, why LateWhy, call string) {
		late = append(late, Late{TID: tk.tid, Why: why, Syscall: call})
	}
	interrupt := func(tk *task) {
		if err := t.interrupt(tk); err != nil {
			tk.holders--
			lateOf(tk, LateExited, "") // ESRCH: no longer a tracee of ours; no stop will come
			waiting = slices.DeleteFunc(waiting, func(w *task) bool { return w == tk })
		}
	}
	for _, tk := range tks {
		switch tk.state {
		case held, stopping:
			take(tk)
		case peeked:
			take(tk)
			if t.callbacks == 0 {
				interrupt(tk) // pending until its signal is delivered by the next dispatch
			}
		case running, listening:
			if call, prone := t.eintrCall(tk); prone {
				switch {
				case o.Patience > 0:
					tk.holders++
					gentle = append(gentle, tk)
				case o.EINTR == InterruptBlocked:
					take(tk)
					interrupt(tk)
				default:
					lateOf(tk, LateEINTR, call)
				}
				continue
			}
			take(tk)
			interrupt(tk)
		case exited:
			lateOf(tk, LateExited, "")
		default: // injecting, abandoned
			lateOf(tk, LateBusy, "")
		}
	}
	if len(gentle) > 0 {
		// Each poll of the loop looks whether they are still in the call.
		t.waitUntil(gentle, func() bool {
			gentle = slices.DeleteFunc(gentle, func(tk *task) bool {
				if t.tasks[tk.tid] != tk {
					tk.holders--
					return true
				}
				if _, prone := t.eintrCall(tk); !prone || tk.state != running {
					waiting = append(waiting, tk)
					if tk.state == running || tk.state == listening {
						interrupt(tk)
					}
					return true
				}
				return false
			})
			return len(gentle) == 0
		}, min(o.Patience, o.Timeout))
		for _, tk := range gentle {
			if o.EINTR == InterruptBlocked {
				waiting = append(waiting, tk)
				interrupt(tk)
			} else {
				tk.holders--
				call, _ := t.eintrCall(tk)
				lateOf(tk, LateEINTR, call)
			}
		}
	}
	// Outside a callback a peeked task is still on its way: the loop delivers its signal, and
	// its pending interrupt brings it back held. Inside one it stays peeked: it is as stopped
	// as it will get.
	pending := func(tk *task) bool {
		return t.waitable(tk) || (t.callbacks == 0 && tk.state == peeked && t.tasks[tk.tid] == tk)
	}
	stopped := func() bool { return !slices.ContainsFunc(waiting, pending) }
	var vforks []*task
	if !t.waitUntil(waiting, stopped, min(vforkGrace, o.Timeout-time.Since(start))) {
		for _, tk := range waiting {
			if t.waitable(tk) && procfs.InVfork(tk.pid, tk.tid) {
				vforks = append(vforks, tk)
			}
		}
		waitingNow := slices.DeleteFunc(slices.Clone(waiting), func(tk *task) bool { return slices.Contains(vforks, tk) })
		t.waitUntil(waitingNow, func() bool { return !slices.ContainsFunc(waitingNow, pending) }, o.Timeout-time.Since(start))
	}
	for _, tk := range waiting {
		switch {
		case t.tasks[tk.tid] != tk:
			// Gone meanwhile: its hold goes with it.
			lateOf(tk, LateExited, "")
		case pending(tk):
			// Not stopped: its late stop is resumed by dispatch (no holder is left).
			tk.holders--
			why := LateTimeout
			if slices.Contains(vforks, tk) || procfs.InVfork(tk.pid, tk.tid) {
				why = LateVfork
			}
			lateOf(tk, why, "")
		case o.AtInterrupt && tk.state == held && tk.stop.class != classInterrupt:
			if tk.holders > 1 || tk.stop.class == classGroup || tk.stop.event == unix.PTRACE_EVENT_EXIT {
				why := LateBusy
				if tk.stop.class == classGroup {
					why = LateJobStop
				} else if tk.stop.event == unix.PTRACE_EVENT_EXIT {
					why = LateExited
				}
				tk.holders--
				if tk.holders == 0 {
					t.resumeReported(tk, 0, "resume")
				}
				lateOf(tk, why, "")
				continue
			}
			// At an event stop: on to the interrupt stop that follows.
			if ptraceInterrupt(tk.tid) == nil {
				tk.interrupted = true
				t.resumeReported(tk, 0, "resume")
				if tk.state == running {
					tk.state = stopping
				}
				one := []*task{tk}
				t.waitUntil(one, func() bool { return !t.waitable(tk) }, max(o.Timeout-time.Since(start), 50*time.Millisecond))
			}
			if t.tasks[tk.tid] == tk && tk.state == held && tk.stop.class == classInterrupt {
				got = append(got, tk)
			} else {
				if t.tasks[tk.tid] == tk {
					tk.holders--
				}
				lateOf(tk, LateTimeout, "")
			}
		default:
			got = append(got, tk)
		}
	}
	return got, late
}

// eintrNames are the calls that a PTRACE_INTERRUPT ends with EINTR whatever the handler
// (signal(7), "interfaces that are never restarted" and "can fail with EINTR after a stop";
// kernel.md D.2): epoll_wait measured on this kernel, io_uring_enter waiting for completions.
// Socket calls are among them whenever the socket has a timeout (SO_RCVTIMEO/SO_SNDTIMEO,
// sock_intr_errno), which /proc does not show: every socket call counts.
var eintrNames = map[string]bool{
	"epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true,
	"io_getevents": true, "io_pgetevents": true, "io_uring_enter": true,
	"semop": true, "semtimedop": true,
	"rt_sigtimedwait": true,
	"accept":          true, "accept4": true, "connect": true,
	"recv": true, "recvfrom": true, "recvmsg": true, "recvmmsg": true,
	"send": true, "sendto": true, "sendmsg": true, "sendmmsg": true,
}

// fdCalls take a file descriptor first: on a socket, they are socket calls (read on a
// socket with SO_RCVTIMEO fails with EINTR after a stop as recv does).
var fdCalls = map[string]bool{"read": true, "readv": true, "write": true, "writev": true,
	"pread64": true, "preadv": true, "preadv2": true, "pwrite64": true, "pwritev": true, "pwritev2": true}

// eintrCall says whether the running thread tk is blocked in a call an interrupt would end
// with EINTR, and which (a thread already stopped can always be held).
// It remembers the call the thread is in (task.inCall): every hold asks before it
// interrupts.
func (t *Tracer) eintrCall(tk *task) (string, bool) {
	if tk.state != running {
		return "", false
	}
	sys := procfs.ReadTaskSyscall(tk.pid, tk.tid)
	if sys.InSyscall() && sys.Nr != restartSyscallNr() {
		tk.inCall = sys.Nr
	}
	return eintrSyscall(tk.pid, sys)
}

// restartSyscallNr is restart_syscall's number on this machine.
var restartSyscallNr = sync.OnceValue(func() int {
	if nr, ok := arch.SyscallNumber(arch.Host(), "restart_syscall"); ok {
		return nr
	}
	return -1
})

// EINTRCall says whether thread tid of pid is blocked in a call that a ptrace interrupt
// would make fail with EINTR (eintrNames, or a read or write on a socket), and names it.
func EINTRCall(pid, tid int) (string, bool) {
	return eintrSyscall(pid, procfs.ReadTaskSyscall(pid, tid))
}

func eintrSyscall(pid int, sys procfs.Syscall) (string, bool) {
	if !sys.InSyscall() {
		return "", false
	}
	name := arch.SyscallName(arch.Host(), sys.Nr)
	switch {
	case eintrNames[name]:
		return name, true
	case fdCalls[name] && isSocket(pid, int(int32(sys.Args[0]))):
		return name + " on a socket", true
	}
	return "", false
}

// isSocket says whether fd of pid is a socket (its /proc link reads "socket:[ino]").
func isSocket(pid, fd int) bool {
	if fd < 0 {
		return false
	}
	return strings.HasPrefix(procfs.Readlink(procfs.Path(pid, "fd/"+fmt.Sprint(fd))), "socket:")
}

// HoldJob holds every thread of every process of the job (of o.PIDs, when given), and those
// born while it waits (a few rounds), runs fn and lets them go: the checkpoint's freeze.
func (l *Loop) HoldJob(o HoldOptions, fn func(h *Held) error) error {
	t := l.t
	all := &Held{}
	var got []*task
	defer func() { t.release(got, "release") }()
	seen := map[*task]bool{}
	var only map[int]bool
	if o.PIDs != nil {
		only = map[int]bool{}
		for _, pid := range o.PIDs {
			only[pid] = true
		}
	}
	for round := 0; round < 10; round++ {
		var fresh []*task
		for _, tk := range t.tasks {
			if !seen[tk] && (only == nil || only[tk.pid]) {
				seen[tk] = true
				fresh = append(fresh, tk)
			}
		}
		if len(fresh) == 0 {
			break
		}
		g, late := t.hold(fresh, o)
		got = append(got, g...)
		all.Late = append(all.Late, late...)
	}
	for _, tk := range got {
		all.Threads = append(all.Threads, Thread{t: t, tk: tk})
	}
	slices.SortFunc(all.Threads, func(a, b Thread) int {
		if a.tk.pid != b.tk.pid {
			return a.tk.pid - b.tk.pid
		}
		return a.tk.tid - b.tk.tid
	})
	return fn(all)
}
