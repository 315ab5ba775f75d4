package checkpoint

import (
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// After a simulated restore crashtui looks at what each thread did next. Every thread gets
// outcomeSettle to run on (with a leaked code, or out of its syscall: a naive sem_wait aborts
// within it, and the outcome then says so); a thread the kernel is
// expected to put back into its syscall (policy none, or correct with a rewind) is polled every
// outcomePoll until it is in one, gone or job-control stopped, for at most outcomeWait: on a
// loaded machine it may not have been scheduled yet, and a fixed delay then reported that it
// left its syscall when it had not run at all.
var (
	outcomeSettle = 300 * time.Millisecond
	outcomePoll   = 20 * time.Millisecond
	outcomeWait   = 2 * time.Second
)

// procSyscall is where a thread is after a restore: its /proc syscall file and whether it is
// job-control stopped.
type procSyscall struct {
	gone, running, in bool
	stopped           bool // job-control stopped: it has not run since the restore
	nr                int
}

func readProcSyscall(pid, tid int) procSyscall {
	ps := procSyscallOf(procfs.ReadTaskSyscall(pid, tid))
	if st, err := procfs.ReadStat(tid); err == nil && (st.State == 'T' || st.State == 't') {
		ps.stopped = true
	}
	return ps
}

func procSyscallOf(s procfs.Syscall) procSyscall {
	return procSyscall{gone: s.Gone, running: s.Running(), in: s.InSyscall(), nr: s.Nr}
}

// outcome completes th with what it did after the policy was applied: what the policy makes
// certain (a naive restore hands the ERESTART code to the program; a correct one turns a
// restart block into EINTR), then where the thread is now (the syscall it is in, or that it
// exited). Only threads stopped inside an interrupted syscall get one: ok is false for the
// others.
func outcome(th sessions.Thread, now procSyscall) (_ sessions.Thread, ok bool) {
	if !th.InSyscall || th.Code == "" {
		return th, false
	}
	th.Exited = now.gone
	if now.in {
		nr := now.nr
		th.NextNr, th.NextSyscall = &nr, arch.SyscallName(arch.Arch(th.Arch), nr)
	}
	returned := func(r int64) { th.Returned = &r }
	applied := arch.EffectivePolicy(sessions.Policy(th.Applied), arch.Arch(th.Arch), th.Insn)
	switch {
	case now.stopped:
		th.OutcomeKind = sessions.OutcomeJobStopped
	case applied == sessions.PolicyNaive:
		// As a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261).
		th.OutcomeKind = sessions.OutcomeERESTARTLeaked
		returned(-int64(restartErrno(th.Code)))
	case applied == sessions.PolicyCorrect && th.Restore == string(arch.ActEINTR):
		// As after a real restore: a restart block cannot be carried over.
		th.OutcomeKind = sessions.OutcomeEINTR
		returned(-arch.EINTR)
	case th.CalledAgain():
		th.OutcomeKind = sessions.OutcomeRestarted
	default:
		th.OutcomeKind = sessions.OutcomeLeft
	}
	return th, true
}

func restartErrno(code string) int {
	for _, e := range []int{arch.ERESTARTSYS, arch.ERESTARTNOINTR, arch.ERESTARTNOHAND, arch.ERESTART_RESTARTBLOCK} {
		if arch.ErrnoName(e) == code {
			return e
		}
	}
	return 0
}

// expectBack says whether the kernel should put th back into its syscall once resumed: the
// restore left the restart to the kernel (none) or rewound the call to run again (correct).
func expectBack(th sessions.Thread) bool {
	if !th.InSyscall || th.Code == "" {
		return false
	}
	applied := arch.EffectivePolicy(sessions.Policy(th.Applied), arch.Arch(th.Arch), th.Insn)
	return applied == sessions.PolicyNone || (applied == sessions.PolicyCorrect && th.Restore == string(arch.ActRewind))
}

// awaitOutcomes reads where each thread is now, after outcomeSettle and, for the threads
// expected back in their syscall, once each of them is settled (in a syscall, gone or
// stopped) or outcomeWait has passed. read is readProcSyscall (a parameter so that the polling
// itself is tested).
func awaitOutcomes(threads []sessions.Thread, read func(pid, tid int) procSyscall) []procSyscall {
	start := time.Now()
	time.Sleep(outcomeSettle)
	now := make([]procSyscall, len(threads))
	for {
		waiting := false
		for i, th := range threads {
			now[i] = read(th.PID, th.TID)
			if expectBack(th) && !now[i].in && !now[i].gone && !now[i].stopped {
				waiting = true
			}
		}
		if !waiting || time.Since(start) >= outcomeWait {
			return now
		}
		time.Sleep(outcomePoll)
	}
}

// observeOutcomes fills in each thread's outcome (see awaitOutcomes for when) and emits the
// completed thread events (the State keeps the latest per thread).
func (c *Checkpoints) observeOutcomes(threads []sessions.Thread) []sessions.Thread {
	if len(threads) == 0 {
		return threads
	}
	now := awaitOutcomes(threads, readProcSyscall)
	changed := false
	for i := range threads {
		if th, ok := outcome(threads[i], now[i]); ok {
			threads[i], changed = th, true
		}
	}
	if changed {
		c.e.Do(func(l *tracer.Loop) error {
			for _, th := range threads {
				if th.OutcomeKind != "" {
					l.Emit(th)
				}
			}
			return nil
		})
	}
	return threads
}
