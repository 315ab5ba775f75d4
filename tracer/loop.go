package tracer

import (
	"time"

	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// The engine as its features see it (doc.go has the contract). A feature runs its work on
// the loop thread through Tracer.Do, or as the Watcher's callbacks, and reaches the job
// through a Loop: its processes, holds on their threads, injected calls. Loop and Thread are
// valid only on the loop thread, until the function they were given to returns.

// Watcher is the feature that decides the stops the engine does not own (Options.Watcher):
// the crash feature. Its methods run on the loop thread while the thread waits; what takes
// longer than a stop should wait goes off the loop.
type Watcher interface {
	// Signal is told of each signal-delivery-stop. It decides the stop's fate with one of
	// s's methods; without one the signal is delivered.
	Signal(l *Loop, s *SignalStop)
	// Syscall is told of each syscall-stop of a thread it follows (SignalStop.Follow). It
	// decides with s.Follow (the default) or s.Unfollow.
	Syscall(l *Loop, s *SyscallStop)
	// TaskGone is told of a thread that died or was let go; ProcessGone of a process that
	// ended (ws is how it ended).
	TaskGone(l *Loop, pid, tid int)
	ProcessGone(l *Loop, pid int, ws unix.WaitStatus)
	// Tick runs every pollInterval or so, from when the watcher asks for it
	// (Loop.WantTick) until it says it wants no more (false).
	Tick(l *Loop) (more bool)
}

// WantTick asks for the Watcher's Tick until it answers false: the loop's idle wait then
// ends every pollInterval, as it does not otherwise (an idle tracer wakes no CPU).
func (l *Loop) WantTick() {
	if !l.t.ticking {
		l.t.ticking = true
		l.t.lastTick = time.Now()
	}
}

// Loop is a feature's handle on the engine, on the loop thread.
type Loop struct{ t *Tracer }

// Do runs fn on the loop thread with a Loop, and returns its error. The job's other stops
// are served while fn waits for a stop (Hold), not while it computes: keep it short, and do
// what needs no ptrace (unwinding, symbols, /proc) outside it.
func (t *Tracer) Do(fn func(l *Loop) error) error {
	return t.do(func() error { return fn(&Loop{t: t}) })
}

// Emit sends an event of the feature's, in order with the engine's, and hands it over at
// once with those queued before it: a feature's events are few (a crash, a matrix, a
// sample), and its reader may look at the process the event is about while it is still at
// its stop (a crash: the process waits at its signal until the watcher is done). The
// engine's own, a storm's worth of process, task, exec and exit events, go in batches
// (Tracer.emit).
func (l *Loop) Emit(b sessions.Body) {
	l.t.emit(b)
	l.t.flush()
}

// EmitErr sends an Error event: op failed for pid.
func (l *Loop) EmitErr(pid int, op string, err error) { l.t.emitErr(pid, op, err) }

// Closing says the tracer is detaching: nothing new should start.
func (l *Loop) Closing() bool { return l.t.closing }

// Process is what the engine knows of one traced process.
type Process struct {
	PID, PPID int
	Rank      sessions.Rank
	Exe, Comm string
	Argv      []string
	UID       int
	// TIDs are its traced threads, in order.
	TIDs []int
	// Gen counts its execs: what a feature caches of its mappings is good for one Gen.
	Gen int
	// Launched: crashtui started it (run).
	Launched bool
}

// Processes are the job's processes that have been announced (a process event emitted),
// by pid.
func (l *Loop) Processes() []Process {
	pids := make([]int, 0, len(l.t.procs))
	for pid, p := range l.t.procs {
		if p.announced && len(p.tasks) > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	out := make([]Process, 0, len(pids))
	for _, pid := range pids {
		p, _ := l.Process(pid)
		out = append(out, p)
	}
	return out
}

// Process is one traced process, if it is.
func (l *Loop) Process(pid int) (Process, bool) {
	p := l.t.procs[pid]
	if p == nil {
		return Process{}, false
	}
	tids := make([]int, 0, len(p.tasks))
	for tid := range p.tasks {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	return Process{PID: p.pid, PPID: p.ppid, Rank: p.rank, Exe: p.exe, Comm: p.comm, Argv: p.argv,
		UID: p.uid, TIDs: tids, Gen: p.gen, Launched: p.launched}, true
}

// Tasks is how many threads the tracer holds.
func (l *Loop) Tasks() int { return len(l.t.tasks) }

// Renamed tells the engine that a process's effective uid or name changed since it joined
// (setresuid, prctl(PR_SET_NAME): no ptrace event reports either, /proc does); it is
// announced again.
func (l *Loop) Renamed(pid, uid int, comm string) {
	p := l.t.procs[pid]
	if p == nil || !p.announced || (uid == p.uid && comm == p.comm) {
		return
	}
	p.uid, p.comm = uid, comm
	l.t.emit(sessions.Process{PID: p.pid, PPID: p.ppid, Rank: p.rank, Exe: p.exe, Comm: p.comm,
		Argv: p.argv, UID: p.uid, Threads: len(p.tasks)})
}

// Thread is a feature's handle on one traced thread.
type Thread struct {
	t  *Tracer
	tk *task
}

// Thread is the handle of a traced thread, if it is one.
func (l *Loop) Thread(tid int) (Thread, bool) {
	tk := l.t.tasks[tid]
	return Thread{t: l.t, tk: tk}, tk != nil
}

// TID is the thread's id, PID its process's.
func (th Thread) TID() int { return th.tk.tid }
func (th Thread) PID() int { return th.tk.pid }

// Alive says the thread is still traced.
func (th Thread) Alive() bool { return th.t.tasks[th.tk.tid] == th.tk }

// State is the engine's hold state of the thread ("running", "held", …), for tests and
// messages.
func (th Thread) State() string { return th.tk.state.String() }

// JobStopped says the thread is in a job-control stop of the job's own (a group-stop the
// engine holds or listens to), not in a stop of crashtui's: /proc shows both as 't'.
func (th Thread) JobStopped() bool {
	tk := th.tk
	return tk.state == listening || (tk.state == held && tk.stop.class == classGroup)
}

// StopKind is what kind of stop a held thread is in.
type StopKind int

const (
	NotStopped StopKind = iota
	// StopInterrupt: PTRACE_EVENT_STOP of an interrupt; resumed with signal 0.
	StopInterrupt
	// StopEvent: a fork, vfork, clone or exec event stop.
	StopEvent
	// StopGroup: a group-stop (job control); it stays stopped when let go.
	StopGroup
	// StopExit: PTRACE_EVENT_EXIT; it never returns to user space.
	StopExit
	// StopSignal: a signal-delivery-stop (only during the Watcher's Signal callback).
	StopSignal
	// StopSyscall: a syscall-stop of a followed thread.
	StopSyscall
)

// Stop is the kind of stop the thread is in (NotStopped if it runs).
func (th Thread) Stop() StopKind {
	tk := th.tk
	if tk.state != held && tk.state != peeked {
		return NotStopped
	}
	switch si := tk.stop; {
	case si.class == classSignal:
		return StopSignal
	case si.class == classSyscall:
		return StopSyscall
	case si.class == classGroup:
		return StopGroup
	case si.class == classInterrupt:
		return StopInterrupt
	case si.event == unix.PTRACE_EVENT_EXIT:
		return StopExit
	}
	return StopEvent
}

// StopSig is the signal of a signal-delivery-stop or group-stop, else 0.
func (th Thread) StopSig() int {
	if k := th.Stop(); k == StopSignal || k == StopGroup {
		return th.tk.stop.sig
	}
	return 0
}

var errNotStopped = errors.New("not in a ptrace-stop")

func (th Thread) stopped(op string) error {
	if !th.Alive() {
		return fmt.Errorf("%s %d: %w", op, th.tk.tid, unix.ESRCH)
	}
	if th.tk.state != held && th.tk.state != peeked {
		return fmt.Errorf("%s %d: %w (%s)", op, th.tk.tid, errNotStopped, th.tk.state)
	}
	return nil
}

// Regs reads the registers of a thread in a stop.
func (th Thread) Regs() (arch.Regs, error) {
	if err := th.stopped("getregs"); err != nil {
		return arch.Regs{}, err
	}
	return getRegs(th.tk.tid)
}

// SetRegs writes the registers of a held thread: a full snapshot of this architecture, as
// Regs returned it (possibly edited by arch.ApplyPolicy).
func (th Thread) SetRegs(r arch.Regs) error {
	if err := th.stopped("setregs"); err != nil {
		return err
	}
	return setRegs(th.tk.tid, r)
}

// Sigmask is the thread's blocked signals (PTRACE_GETSIGMASK), bit sig-1 each.
func (th Thread) Sigmask() (uint64, error) {
	if err := th.stopped("getsigmask"); err != nil {
		return 0, err
	}
	return getSigmask(th.tk.tid)
}

// Peek reads len(buf) bytes at addr with PTRACE_PEEKDATA: memory that /proc/PID/mem and
// process_vm_readv may not reach (Yama's ptrace_scope 3).
func (th Thread) Peek(addr uint64, buf []byte) error {
	if err := th.stopped("peekdata"); err != nil {
		return err
	}
	return peekBytes(th.tk.tid, addr, buf)
}

// RestartInsn reads the instruction bytes arch.Decode wants for r (arch.RestartInsnAt), nil
// when unreadable.
func (th Thread) RestartInsn(r arch.Regs) []byte {
	if th.stopped("peekdata") != nil {
		return nil
	}
	return restartInsn(th.tk.tid, r)
}

// Siginfo is the siginfo_t of the thread's signal-delivery-stop (PTRACE_GETSIGINFO).
func (th Thread) Siginfo() (Siginfo, error) {
	if err := th.stopped("getsiginfo"); err != nil {
		return Siginfo{}, err
	}
	return getSiginfo(th.tk.tid)
}

// fate is how a stop handed to the watcher ends.
type fate struct{ how fateKind }

type fateKind int

const (
	fateDeliver   fateKind = iota // resume with the signal (none at a syscall-stop)
	fateSuppress                  // resume without the signal
	fateFollow                    // deliver, then stop at each syscall (PTRACE_SYSCALL)
	fateUnfollow                  // deliver, no more syscall-stops
	fateUnhandled                 // deliver as if no handler were installed
)

// SignalStop is a signal-delivery-stop handed to the watcher. Its signal stays the kernel's
// (the status is not consumed) until the engine resumes the thread as decided.
type SignalStop struct {
	Thread
	Sig  int
	fate fate
}

// Deliver resumes the thread with its signal (what happens without a decision).
func (s *SignalStop) Deliver() { s.fate = fate{how: fateDeliver} }

// Suppress resumes the thread without its signal.
func (s *SignalStop) Suppress() { s.fate = fate{how: fateSuppress} }

// Follow delivers the signal and stops the thread at each system call after (PTRACE_SYSCALL:
// the watcher's Syscall is told), until a Syscall decision or a later signal unfollows it.
func (s *SignalStop) Follow() { s.fate = fate{how: fateFollow} }

// Unfollow delivers the signal and ends following the thread.
func (s *SignalStop) Unfollow() { s.fate = fate{how: fateUnfollow} }

// DeliverUnhandled delivers a synchronous fault as if the process had no handler for it: the
// signal is blocked, so the fault recurs at once and the kernel forces its default action
// (the process dies of it, with a core by its own limit). The fault's own next stop is told
// again, with the handler gone.
func (s *SignalStop) DeliverUnhandled() { s.fate = fate{how: fateUnhandled} }

// SyscallInfo is what PTRACE_GET_SYSCALL_INFO says of a syscall-stop.
type SyscallInfo struct {
	Op     uint8 // unix.PTRACE_SYSCALL_INFO_ENTRY or _EXIT
	IP, SP uint64
	Nr     uint64 // at entry
}

// Entry and Exit say which syscall-stop it is.
func (i SyscallInfo) Entry() bool { return i.Op == unix.PTRACE_SYSCALL_INFO_ENTRY }
func (i SyscallInfo) Exit() bool  { return i.Op == unix.PTRACE_SYSCALL_INFO_EXIT }

// SyscallStop is a syscall-stop of a followed thread, handed to the watcher.
type SyscallStop struct {
	Thread
	Info SyscallInfo
	err  error
	fate fate
}

// Err is why Info could not be read (nil when it was).
func (s *SyscallStop) Err() error { return s.err }

// Follow resumes it to its next syscall-stop (the default).
func (s *SyscallStop) Follow() { s.fate = fate{how: fateFollow} }

// Unfollow resumes it with PTRACE_CONT: no more syscall-stops.
func (s *SyscallStop) Unfollow() { s.fate = fate{how: fateUnfollow} }

// Tracer is the engine itself, for a feature's goroutine that must come back to the loop
// later (Do).
func (l *Loop) Tracer() *Tracer { return l.t }

// SetSigmask writes the blocked signals of a thread in a stop (PTRACE_SETSIGMASK).
func (th Thread) SetSigmask(mask uint64) error {
	if err := th.stopped("setsigmask"); err != nil {
		return err
	}
	return setSigmask(th.tk.tid, mask)
}

// RawThread is a thread the calling OS thread itself holds in a ptrace-stop (its own
// PTRACE_SEIZE or PTRACE_TRACEME, outside any Tracer): the register access the guest tests'
// own ptrace loops need, with the engine's primitives.
type RawThread struct{ PID, TID int }

// Regs reads its registers.
func (r RawThread) Regs() (arch.Regs, error) { return getRegs(r.TID) }

// SetRegs writes them.
func (r RawThread) SetRegs(regs arch.Regs) error { return setRegs(r.TID, regs) }

// RestartInsn reads the instruction bytes arch.Decode wants for regs, nil when unreadable.
func (r RawThread) RestartInsn(regs arch.Regs) []byte { return restartInsn(r.TID, regs) }

// CallName names the syscall sys (thread tid's, as /proc showed it) as the user should see
// it: a restart_syscall that crashtui's own interrupt caused (the thread was in nanosleep,
// poll or a futex wait, which the kernel resumes through restart_syscall) is named after
// the call it resumes, never after crashtui's artifact (issue 24 item 4). "" when sys is no
// syscall.
func (l *Loop) CallName(tid int, sys procfs.Syscall) string { return l.t.callName(tid, sys) }

// CallNames is CallName for callers off the loop: the calls the engine's interrupts left
// resumed as restart_syscall in pid, by thread.
func (t *Tracer) CallNames(pid int) map[int]string {
	out := map[int]string{}
	t.Do(func(l *Loop) error {
		if p := t.procs[pid]; p != nil {
			for tid, tk := range p.tasks {
				if tk.inCall >= 0 {
					out[tid] = arch.SyscallName(arch.Host(), tk.inCall)
				}
			}
		}
		return nil
	})
	return out
}

func (t *Tracer) callName(tid int, sys procfs.Syscall) string {
	if !sys.InSyscall() {
		return ""
	}
	if sys.Nr == restartSyscallNr() {
		if tk := t.tasks[tid]; tk != nil && tk.inCall >= 0 {
			return arch.SyscallName(arch.Host(), tk.inCall)
		}
	}
	if n := arch.SyscallName(arch.Host(), sys.Nr); n != "" {
		return n
	}
	return "#" + strconv.Itoa(sys.Nr)
}
