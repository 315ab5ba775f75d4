package checkpoint

import (
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// TestCheckpointOutcome: what a thread did after the restore, as facts (views word them:
// views.TestThreadOutcomeWords).
func TestCheckpointOutcome(t *testing.T) {
	read := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "read", Nr: 0, Code: "ERESTARTSYS", Restore: "rewind"}
	sleep := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "clock_nanosleep", Nr: 230, Code: "ERESTART_RESTARTBLOCK", Restore: "eintr"}
	with := func(th sessions.Thread, policy sessions.Policy) sessions.Thread { th.Applied = policy; return th }
	type want struct {
		kind     sessions.OutcomeKind
		returned int64 // 0: nil
		next     string
		exited   bool
		again    bool
	}
	for _, tc := range []struct {
		name string
		th   sessions.Thread
		now  procSyscall
		want want
	}{
		{"none restarts read", with(read, "none"), procSyscall{in: true, nr: 0}, want{kind: sessions.OutcomeRestarted, next: "read", again: true}},
		{"correct rewinds read", with(read, "correct"), procSyscall{in: true, nr: 0}, want{kind: sessions.OutcomeRestarted, next: "read", again: true}},
		{"none restarts a sleep through restart_syscall", with(sleep, "none"), procSyscall{in: true, nr: 219}, want{kind: sessions.OutcomeRestarted, next: "restart_syscall", again: true}},
		{"naive leaks 512 even when the program retries", with(read, "naive"), procSyscall{in: true, nr: 0}, want{kind: sessions.OutcomeERESTARTLeaked, returned: -512, next: "read", again: true}},
		{"naive leaks 516", with(sleep, "naive"), procSyscall{gone: true}, want{kind: sessions.OutcomeERESTARTLeaked, returned: -516, exited: true}},
		{"sc-only is naive for scv", sessions.Thread{Arch: "ppc64le", InSyscall: true, Syscall: "read", Nr: 3, Insn: "scv", Code: "ERESTARTSYS", Restore: "rewind", Applied: "sc-only"},
			procSyscall{running: true}, want{kind: sessions.OutcomeERESTARTLeaked, returned: -512}},
		{"correct turns a restart block into EINTR", with(sleep, "correct"), procSyscall{running: true}, want{kind: sessions.OutcomeEINTR, returned: -4}},
		{"completed", with(read, "none"), procSyscall{running: true}, want{kind: sessions.OutcomeLeft}},
		{"left and exited", with(read, "none"), procSyscall{gone: true}, want{kind: sessions.OutcomeLeft, exited: true}},
		{"in another syscall", with(read, "none"), procSyscall{in: true, nr: 1}, want{kind: sessions.OutcomeLeft, next: "write"}},
		{"job-control stopped", with(read, "correct"), procSyscall{in: true, nr: 0, stopped: true}, want{kind: sessions.OutcomeJobStopped, next: "read", again: true}},
	} {
		got, ok := outcome(tc.th, tc.now)
		ret := int64(0)
		if got.Returned != nil {
			ret = *got.Returned
		}
		if !ok || got.OutcomeKind != tc.want.kind || ret != tc.want.returned || got.NextSyscall != tc.want.next ||
			(got.NextNr != nil) != (tc.want.next != "") || got.Exited != tc.want.exited || got.CalledAgain() != tc.want.again {
			t.Errorf("%s: ok %v kind %q returned %d next %q (nr %v) exited %v again %v; want %+v",
				tc.name, ok, got.OutcomeKind, ret, got.NextSyscall, got.NextNr, got.Exited, got.CalledAgain(), tc.want)
		}
		if got.Outcome != "" {
			t.Errorf("%s: the tracer wrote a sentence: %q", tc.name, got.Outcome)
		}
	}
	if got, ok := outcome(sessions.Thread{Applied: "naive"}, procSyscall{}); ok || got.OutcomeKind != "" {
		t.Errorf("not in a syscall: ok %v kind %q, want no outcome", ok, got.OutcomeKind)
	}
}

// TestProcSyscallOfGone: a thread whose syscall file cannot be read is gone, not running.
func TestProcSyscallOfGone(t *testing.T) {
	if got := procSyscallOf(procfs.Syscall{Gone: true, Nr: -2}); !got.gone || got.running || got.in {
		t.Errorf("a gone thread reads as %+v", got)
	}
}

// awaitOutcomes polls, rather than sleeping once: a thread the kernel puts back into its
// syscall (none, or correct with a rewind) but that has not been scheduled yet reads as
// running; it is read again until it is in the syscall. A naive thread and a thread that is
// gone are not waited for, and a thread that never comes back is given up at outcomeWait.
func TestAwaitOutcomesPolls(t *testing.T) {
	defer func(s, p, w time.Duration) { outcomeSettle, outcomePoll, outcomeWait = s, p, w }(outcomeSettle, outcomePoll, outcomeWait)
	outcomeSettle, outcomePoll, outcomeWait = time.Millisecond, time.Millisecond, 10*time.Second

	read := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "read", Nr: 0, Code: "ERESTARTSYS", Restore: "rewind"}
	th := func(tid int, policy sessions.Policy) sessions.Thread {
		r := read
		r.PID, r.TID, r.Applied = 1, tid, policy
		return r
	}
	threads := []sessions.Thread{th(10, "none"), th(11, "correct"), th(12, "naive"), th(13, "none")}
	reads := map[int]int{}
	// 10 and 11 are scheduled only on their 5th read; 12 runs on; 13 has exited.
	fake := func(pid, tid int) procSyscall {
		reads[tid]++
		switch {
		case tid == 13:
			return procSyscall{gone: true}
		case tid == 12 || reads[tid] < 5:
			return procSyscall{running: true}
		}
		return procSyscall{in: true, nr: 0}
	}
	now := awaitOutcomes(threads, fake)
	if reads[10] != 5 || reads[11] != 5 {
		t.Errorf("reads %v: want the expected-back threads read until they are in read (5 times)", reads)
	}
	for i, want := range []struct {
		kind   sessions.OutcomeKind
		exited bool
	}{{sessions.OutcomeRestarted, false}, {sessions.OutcomeRestarted, false}, {sessions.OutcomeERESTARTLeaked, false}, {sessions.OutcomeLeft, true}} {
		if got, _ := outcome(threads[i], now[i]); got.OutcomeKind != want.kind || got.Exited != want.exited {
			t.Errorf("thread %d: %q exited %v, want %q exited %v", threads[i].TID, got.OutcomeKind, got.Exited, want.kind, want.exited)
		}
	}

	// Nothing to wait for: one read each.
	reads = map[int]int{}
	awaitOutcomes([]sessions.Thread{th(12, "naive"), th(13, "none")}, fake)
	if reads[12] != 1 || reads[13] != 1 {
		t.Errorf("reads %v with nothing expected back, want one each", reads)
	}

	// A thread that never re-enters is given up at the deadline.
	outcomeWait = 30 * time.Millisecond
	reads = map[int]int{}
	sw := patience.Start(5 * time.Second)
	now = awaitOutcomes([]sessions.Thread{th(20, "none")}, func(pid, tid int) procSyscall {
		reads[tid]++
		return procSyscall{running: true}
	})
	if d, over := sw.Stop(); reads[20] < 2 || !now[0].running || over {
		t.Errorf("never-back thread: %d reads, %+v, given up after %v", reads[20], now[0], d)
	}
}
