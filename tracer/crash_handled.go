package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

// Handled faults (kernel.md §C, "Did the app handler fix it?"). Spindle asks from inside the
// process after the application's handler returns; from outside, crashtui delivers the caught
// signal and follows the thread with PTRACE_SYSCALL until the rt_sigreturn that balances it,
// then lets it run on: a syscall, or no fault within stepVerdict, means the fault was repaired
// (a safepoint page made readable, a file extended under a SIGBUS), the same fault again means
// it was not (and with the default action restored it is a crash at the ORIGINAL site). A
// re-raise from inside the handler is a crash at the original site too.

// maxWatchedSyscalls bounds how long a handler is followed syscall by syscall: one that
// siglongjmps out never reaches rt_sigreturn. After that the fault is judged lazily (handled
// unless the same fault comes back or the process dies of the signal).
const maxWatchedSyscalls = 256

// fault is a caught fault being judged, keyed by thread.
type fault struct {
	pid, tid  int
	sig       int
	pc, addr  uint64
	crash     sessions.Crash // the record at the original site, used if it turns into a crash
	unwound   *unwound       // what crash was described from, while its lines are pending
	depth     int            // handler frames not yet returned through rt_sigreturn
	sigret    bool           // the balancing rt_sigreturn was entered: its exit stop is next
	stepping  bool           // running on after the handler returned: does the same fault come back?
	steppedAt time.Time      // when it was let run on
	returned  bool           // the handler returned (or the watch ended): handled unless it faults again
	masked    bool           // the signal was blocked at the handler's first syscall
	syscalls  int
	tries     int  // times the same fault came straight back through the handler
	looping   bool // judged: the handler never repairs it (reported as a crash)
}

// watched reports whether the thread is being followed stop by stop.
func (f *fault) watched() bool { return f.depth > 0 || f.sigret || f.stepping }

// same reports whether a fault is this one again (same signal, pc and address).
func (f *fault) same(sig int, si siginfo, pc uint64) bool {
	return sig == f.sig && pc == f.pc && si.Addr == f.addr && !si.userSent()
}

// syscallInfo is the part of struct ptrace_syscall_info (include/uapi/linux/ptrace.h) used here.
type syscallInfo struct {
	op     uint8 // PTRACE_SYSCALL_INFO_{NONE,ENTRY,EXIT,SECCOMP}
	ip, sp uint64
	nr     uint64 // entry only
}

func decodeSyscallInfo(b []byte) syscallInfo {
	if len(b) < 32 {
		return syscallInfo{}
	}
	le := binary.LittleEndian
	return syscallInfo{op: b[0], ip: le.Uint64(b[8:]), sp: le.Uint64(b[16:]), nr: le.Uint64(b[24:])}
}

// resumeWatched resumes tk with req (PTRACE_SYSCALL or PTRACE_CONT) and sig.
// If someone else holds the thread (tk.want), it is left held for them with the signal to
// re-inject, and following it ends (the caller's fault is then judged lazily).
func (t *Tracer) resumeWatched(tk *task, req, sig int) bool {
	if tk.want {
		tk.sig = sig
		if sig == 0 && tk.stopped == stopSignal {
			tk.stopped = stopEvent // a syscall-stop or our step trap: resume without a signal
		}
		return false
	}
	err := ptraceResume(req, tk.tid, sig)
	tk.stopped, tk.sig, tk.req = running, 0, req
	if err != nil && !errors.Is(err, unix.ESRCH) {
		t.emitErr(tk.pid, "resume", fmt.Errorf("resume %d (request %#x): %w", tk.tid, req, err))
	}
	return true
}

// deliverCaught injects a caught fatal signal and starts judging it.
func (t *Tracer) deliverCaught(tk *task, sig int, si siginfo) {
	c := t.crash
	regs, err := rawRegs(tk.tid, c.arch)
	if err != nil {
		return // gone; the caller re-injects the signal
	}
	pc := regs.PC()
	f := c.faults[tk.tid]
	if f != nil && f.looping {
		if f.same(sig, si, pc) {
			// Judged already: a handler that never repairs this fault. The process goes on
			// doing what it would without crashtui (taking it again and again): handle()
			// delivers the signal with PTRACE_CONT, no longer followed.
			return
		}
		delete(c.faults, tk.tid)
		f = nil
	}
	switch {
	case f != nil && f.depth > 0:
		f.depth++ // a caught fault inside the handler: one more frame to return through
	case f != nil && f.same(sig, si, pc):
		f.depth, f.returned = 1, false // back with the handler still installed: judge again
		if f.tries++; f.tries >= maxHandlerTries {
			// The same signal, pc and address, straight back through the handler
			// maxHandlerTries times: it will loop forever. A crash of that site; handle()
			// delivers this signal as it would have been.
			f.looping, f.depth = true, 0
			t.crashLooping(tk, f, sig, si, regs)
			return
		}
	default:
		if f != nil && f.returned {
			t.emitHandled(f) // the thread went on past the old fault to a new one
		}
		f = &fault{pid: tk.pid, tid: tk.tid, sig: sig, pc: pc, addr: si.Addr, depth: 1}
		f.crash, f.unwound = t.describe(tk, sig, si, regs)
		c.faults[tk.tid] = f
	}
	f.sigret, f.stepping = false, false
	if !c.sysgood[tk.tid] {
		// Syscall-stops must be told from SIGTRAPs, and PTRACE_GET_SYSCALL_INFO only says
		// entry/exit when they come as SIGTRAP|0x80 (kernel/ptrace.c ptrace_get_syscall_info_op).
		if err := ptraceSetOptions(tk.tid, seizeOptions|unix.PTRACE_O_TRACESYSGOOD); err != nil {
			f.depth, f.returned = 0, true // judged lazily; the caller re-injects the signal
			return
		}
		c.sysgood[tk.tid] = true
	}
	if !t.resumeWatched(tk, unix.PTRACE_SYSCALL, sig) {
		f.depth, f.returned = 0, true
	}
}

// watchStop handles a stop of a thread whose caught fault is being judged. It returns false
// when the stop is a signal that onSignal must judge as usual.
func (t *Tracer) watchStop(tk *task, f *fault, sig int) bool {
	c := t.crash
	if info, err := getSyscallInfo(tk.tid); err == nil && (info.op == unix.PTRACE_SYSCALL_INFO_ENTRY || info.op == unix.PTRACE_SYSCALL_INFO_EXIT) {
		tk.sig = 0 // a syscall-stop, not a signal
		if f.stepping {
			// Past the faulting instruction to a syscall without faulting again: repaired.
			f.stepping = false
			t.emitHandled(f)
			t.resumeWatched(tk, unix.PTRACE_CONT, 0)
			return true
		}
		if info.op == unix.PTRACE_SYSCALL_INFO_ENTRY {
			f.syscalls++
			if f.depth > 0 && !f.sigret {
				// The kernel blocks the signal while its handler runs (unless SA_NODEFER). If it
				// was blocked at the handler's first syscall and is not any more, the handler
				// left through siglongjmp (which restores the mask) and the thread went on.
				blk, _, _ := sigMasks(tk.pid, tk.tid)
				blocked := blk&(1<<(f.sig-1)) != 0
				if f.syscalls == 1 {
					f.masked = blocked
				} else if f.masked && !blocked {
					f.depth, f.returned = 0, true
					t.emitHandled(f)
					t.resumeWatched(tk, unix.PTRACE_CONT, 0)
					return true
				}
			}
			if int(info.nr) == c.sigret && f.depth > 0 {
				if f.depth--; f.depth == 0 {
					f.sigret = true
				}
			}
			if f.syscalls > maxWatchedSyscalls && !f.sigret {
				f.depth, f.returned = 0, true
				t.resumeWatched(tk, unix.PTRACE_CONT, 0)
				return true
			}
			if !t.resumeWatched(tk, unix.PTRACE_SYSCALL, 0) {
				f.depth, f.sigret, f.returned = 0, false, true
			}
			return true
		}
		if !f.sigret {
			if !t.resumeWatched(tk, unix.PTRACE_SYSCALL, 0) {
				f.depth, f.returned = 0, true
			}
			return true
		}
		// Back from the handler: the registers are the interrupted context again.
		f.sigret, f.returned = false, true
		regs, err := rawRegs(tk.tid, c.arch)
		if err != nil || regs.PC() != f.pc {
			// The handler moved the pc through its ucontext: repaired (Spindle's first test).
			t.emitHandled(f)
			t.resumeWatched(tk, unix.PTRACE_CONT, 0)
			return true
		}
		// Run on with syscall-stops (never a single-step: the kernel does not clear a step
		// flag when a dead tracer's tracees are let go, and the thread would take a SIGTRAP):
		// the same fault again means not repaired; a syscall, or no fault within
		// stepVerdict, means the faulting instruction went through.
		f.stepping, f.steppedAt = t.resumeWatched(tk, unix.PTRACE_SYSCALL, 0), time.Now()
		return true
	}
	if f.stepping {
		f.stepping = false
		return false // the fault is back, a re-raised signal, or another signal came first
	}
	if f.depth > 0 && !fatalSignals[sig] {
		if si, err := getSiginfo(tk.tid); err == nil && signalDisposition(tk.pid, tk.tid, sig, si) == dispCaught {
			f.depth++ // its handler returns through rt_sigreturn too
		}
		if !t.resumeWatched(tk, unix.PTRACE_SYSCALL, sig) {
			f.depth, f.returned = 0, true
		}
		return true
	}
	return false
}

// maxHandlerTries is how many times the same fault may come straight back through the
// process's handler before crashtui calls the handler one that never repairs it (Spindle
// reports such a loop as a crash too).
const maxHandlerTries = 3

// crashLooping reports the crash of a fault whose handler returns without repairing it, at the
// original site, with how many times the handler was tried; it is grouped and cored like any
// crash. The process is not changed: it goes on looping as it would without crashtui.
func (t *Tracer) crashLooping(tk *task, f *fault, sig int, si siginfo, regs arch.Regs) {
	cr := f.crash
	cr.HandlerTries = f.tries
	t.decide(tk, &cr, f.unwound, sig, si, regs, time.Now())
}

// stepVerdict is how long a thread let run on after its handler returned may go without
// faulting again or making a syscall before its fault is called repaired.
const stepVerdict = 50 * time.Millisecond

// expireSteps calls repaired the faults whose thread ran on for stepVerdict without the same
// fault coming back (a compute loop makes no syscall). The thread's next syscall-stop, if any,
// resumes it untraced (onSignal).
func (t *Tracer) expireSteps() {
	for _, f := range t.crash.faults {
		if f.stepping && time.Since(f.steppedAt) > stepVerdict {
			f.stepping = false
			t.emitHandled(f)
		}
	}
}

// emitHandled reports a repaired fault and forgets it.
func (t *Tracer) emitHandled(f *fault) {
	c := t.crash
	if c.faults[f.tid] == f {
		delete(c.faults, f.tid)
	}
	c.stats.Handled++
	cr := f.crash
	t.emit(sessions.Handled{PID: cr.PID, TID: cr.TID, Rank: cr.Rank, Signal: cr.Signal, Code: cr.Code,
		Addr: cr.Addr, PC: cr.PC, Module: cr.Module, Offset: cr.Offset, Function: cr.Function})
}

// crashBeforeDetach is for handle() when the tracer is closing and holds a signal stop for
// PTRACE_DETACH: a syscall-stop of a thread whose fault was being followed is not a signal,
// and re-injecting it would fail (0x85: EIO, the thread stays stopped). It clears tk.sig.
func (t *Tracer) crashBeforeDetach(tk *task, sig int) {
	if sig == sigSyscallStop {
		tk.sig = 0
	}
}
