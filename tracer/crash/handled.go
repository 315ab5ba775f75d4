package crash

import (
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// Handled faults (kernel.md §C, "Did the app handler fix it?"). Spindle asks from inside the
// process after the application's handler returns; from outside, crashtui delivers the caught
// signal and follows the thread with PTRACE_SYSCALL until the rt_sigreturn that balances it,
// then lets it run on: a syscall, or no fault within stepVerdict, means the fault was repaired
// (a safepoint page made readable, a file extended under a SIGBUS), the same fault again means
// it was not (and with the default action restored it is a crash at the ORIGINAL site). A
// re-raise from inside the handler is a crash at the original site too.
//
// A fault whose handler returned without repairing it is then delivered as if no handler
// were installed (Spindle's rule, Options.LeaveUnrepaired to keep the old loop): the process
// dies of it as it would have without the handler, with a core by its own limit.

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
	steppedNS uint64         // its time on a CPU then (schedstat; 0: it could not be read)
	returned  bool           // the handler returned (or the watch ended): handled unless it faults again
	masked    bool           // the signal was blocked at the handler's first syscall
	syscalls  int
	tries     int  // times the same fault came straight back through the handler
	looping   bool // judged (LeaveUnrepaired): the handler never repairs it (reported as a crash)
	// unhandled: delivered as if no handler were installed (DeliverUnhandled); its next stop
	// is the same fault with the default action, or (repaired meanwhile) a syscall, where the
	// thread's own mask is put back.
	unhandled bool
	mask      uint64 // the thread's mask before it was delivered unhandled
}

// watched reports whether the thread is being followed stop by stop.
func (f *fault) watched() bool { return f.depth > 0 || f.sigret || f.stepping || f.unhandled }

// same reports whether a fault is this one again (same signal, pc and address).
func (f *fault) same(sig int, si tracer.Siginfo, pc uint64) bool {
	return sig == f.sig && pc == f.pc && si.Addr == f.addr && !si.UserSent()
}

// deliverCaught delivers a caught fatal signal and starts judging it.
func (c *Crashes) deliverCaught(l *tracer.Loop, s *tracer.SignalStop, si tracer.Siginfo) {
	sig, tid := s.Sig, s.TID()
	regs, err := s.Regs()
	if err != nil {
		return // gone; delivered
	}
	pc := regs.PC()
	f := c.faults[tid]
	if f != nil && f.looping {
		if f.same(sig, si, pc) {
			// Judged already (LeaveUnrepaired): a handler that never repairs this fault. The
			// process goes on doing what it would without crashtui (taking it again and
			// again): delivered, no longer followed.
			s.Unfollow()
			return
		}
		delete(c.faults, tid)
		f = nil
	}
	switch {
	case f != nil && f.depth > 0:
		f.depth++ // a caught fault inside the handler: one more frame to return through
	case f != nil && f.same(sig, si, pc):
		// Back with the handler still installed: the handler returned without repairing it.
		f.depth, f.returned = 1, false
		f.tries++
		if !c.opts.LeaveUnrepaired && !si.UserSent() {
			// Spindle's rule: delivered as if no handler were installed. Its next stop is the
			// same fault with the default action: a crash at the original site (Signal).
			f.depth, f.unhandled = 0, true
			f.mask, _ = s.Sigmask()
			s.DeliverUnhandled()
			return
		}
		if f.tries >= maxHandlerTries {
			// The same signal, pc and address, straight back through the handler
			// maxHandlerTries times: it will loop forever. A crash of that site; the signal
			// is delivered as it would have been.
			f.looping, f.depth = true, 0
			c.crashLooping(l, s, f, sig, si, regs)
			return
		}
	default:
		if f != nil && f.returned {
			c.emitHandled(l, f) // the thread went on past the old fault to a new one
		}
		p, _ := l.Process(s.PID())
		f = &fault{pid: s.PID(), tid: tid, sig: sig, pc: pc, addr: si.Addr, depth: 1}
		f.crash, f.unwound = c.describe(s.Thread, p, sig, si, regs)
		c.faults[tid] = f
	}
	f.sigret, f.stepping = false, false
	s.Follow()
}

// watchSignal handles a signal-delivery-stop of a thread whose caught fault is being judged.
// It returns false when the stop is a signal that Signal must judge as usual.
func (c *Crashes) watchSignal(l *tracer.Loop, s *tracer.SignalStop, f *fault) bool {
	if f.unhandled || f.stepping {
		f.stepping = false
		return false // the fault is back (as a crash now), a re-raised signal, or another came first
	}
	if f.depth > 0 && !fatalSignals[s.Sig] {
		if si, err := s.Siginfo(); err == nil && signalDisposition(s.PID(), s.TID(), s.Sig, si) == dispCaught {
			f.depth++ // its handler returns through rt_sigreturn too
		}
		s.Follow()
		return true
	}
	return false
}

// Syscall is the Watcher's: a syscall-stop of a thread whose caught fault is being judged.
func (c *Crashes) Syscall(l *tracer.Loop, s *tracer.SyscallStop) {
	f := c.faults[s.TID()]
	info := s.Info
	if f == nil || s.Err() != nil || !(info.Entry() || info.Exit()) {
		s.Unfollow()
		return
	}
	if f.unhandled {
		// It went on without the fault coming back: repaired after all (by another thread,
		// meanwhile). Its own mask back; the signal, queued while blocked, is delivered to
		// its handler as it would have been.
		f.unhandled = false
		if err := s.Thread.SetSigmask(f.mask); err != nil {
			l.EmitErr(s.PID(), "restore mask", err)
		}
		c.emitHandled(l, f)
		s.Unfollow()
		return
	}
	if f.stepping {
		// Past the faulting instruction to a syscall without faulting again: repaired.
		f.stepping = false
		c.emitHandled(l, f)
		s.Unfollow()
		return
	}
	if info.Entry() {
		f.syscalls++
		if f.depth > 0 && !f.sigret {
			// The kernel blocks the signal while its handler runs (unless SA_NODEFER). If it
			// was blocked at the handler's first syscall and is not any more, the handler
			// left through siglongjmp (which restores the mask) and the thread went on.
			blk, _, _ := procfs.SigMasks(s.PID(), s.TID())
			blocked := blk&(1<<(f.sig-1)) != 0
			if f.syscalls == 1 {
				f.masked = blocked
			} else if f.masked && !blocked {
				f.depth, f.returned = 0, true
				c.emitHandled(l, f)
				s.Unfollow()
				return
			}
		}
		if int(info.Nr) == c.sigret && f.depth > 0 {
			if f.depth--; f.depth == 0 {
				f.sigret = true
			}
		}
		if f.syscalls > maxWatchedSyscalls && !f.sigret {
			f.depth, f.returned = 0, true
			s.Unfollow()
			return
		}
		s.Follow()
		return
	}
	if !f.sigret {
		s.Follow()
		return
	}
	// Back from the handler: the registers are the interrupted context again.
	f.sigret, f.returned = false, true
	regs, err := s.Regs()
	if err != nil || regs.PC() != f.pc {
		// The handler moved the pc through its ucontext: repaired (Spindle's first test).
		c.emitHandled(l, f)
		s.Unfollow()
		return
	}
	// Run on with syscall-stops (never a single-step: the kernel does not clear a step flag
	// when a dead tracer's tracees are let go, and the thread would take a SIGTRAP): the same
	// fault again means not repaired; a syscall, or no fault within stepVerdict, means the
	// faulting instruction went through.
	f.stepping, f.steppedAt = true, time.Now()
	st, _ := procfs.ReadTaskSchedstat(f.pid, f.tid) // a thread that faulted has run: 0 is unread
	f.steppedNS = st.RunNS
	l.WantTick() // the verdict comes from Tick, if no stop says it first
	s.Follow()
}

// maxHandlerTries is how many times the same fault may come straight back through the
// process's handler before crashtui, leaving unrepaired faults alone (LeaveUnrepaired), calls
// the handler one that never repairs it.
const maxHandlerTries = 3

// crashLooping reports the crash of a fault whose handler returns without repairing it, at the
// original site, with how many times the handler was tried; it is grouped and cored like any
// crash. The process is not changed: it goes on looping as it would without crashtui.
func (c *Crashes) crashLooping(l *tracer.Loop, s *tracer.SignalStop, f *fault, sig int, si tracer.Siginfo, regs arch.Regs) {
	cr := f.crash
	cr.HandlerTries = f.tries
	p, _ := l.Process(s.PID())
	c.decide(l, s, p, &cr, f.unwound, sig, si, regs, time.Now())
	delete(c.crashed, s.PID()) // it goes on: a later, different crash is its own
	s.Unfollow()
}

// stepVerdict is how long a thread let run on after its handler returned may go without
// faulting again or making a syscall before its fault is called repaired, and stepRun how
// long it must have been on a CPU meanwhile: on a loaded machine a thread can wait for a CPU
// longer than stepVerdict, and one that never ran has not shown its fault gone (a write the
// handler did not repair was called handled so, beside two CPU hogs).
const (
	stepVerdict = 50 * time.Millisecond
	stepRun     = time.Millisecond
)

// ranOn says whether f's thread has been on a CPU for stepRun since it was let run on
// (where schedstat cannot be read, stepVerdict's wall-clock time alone decides).
func (f *fault) ranOn() bool {
	if f.steppedNS == 0 {
		return true
	}
	st, ok := procfs.ReadTaskSchedstat(f.pid, f.tid)
	return !ok || st.RunNS >= f.steppedNS+uint64(stepRun)
}

// Tick is the Watcher's: it calls repaired the faults whose thread ran on for stepVerdict,
// stepRun of it on a CPU, without the same fault coming back (a compute loop makes no
// syscall). The thread's next syscall-stop, if any, resumes it unfollowed (Syscall). It
// wants more ticks while a fault still waits for its verdict.
func (c *Crashes) Tick(l *tracer.Loop) bool {
	more := false
	for _, f := range c.faults {
		if f.stepping && time.Since(f.steppedAt) > stepVerdict && f.ranOn() {
			f.stepping = false
			c.emitHandled(l, f)
		}
		more = more || f.stepping
	}
	return more
}

// emitHandled reports a repaired fault and forgets it.
func (c *Crashes) emitHandled(l *tracer.Loop, f *fault) {
	if c.faults[f.tid] == f {
		delete(c.faults, f.tid)
	}
	c.mu.Lock()
	c.stats.Handled++
	c.mu.Unlock()
	cr := f.crash
	l.Emit(sessions.Handled{PID: cr.PID, TID: cr.TID, Rank: cr.Rank, Signal: cr.Signal, Code: cr.Code,
		Addr: cr.Addr, PC: cr.PC, Module: cr.Module, Offset: cr.Offset, Function: cr.Function})
}
