package tracer

import (
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

func TestCheckpointOutcome(t *testing.T) {
	read := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "read", Nr: 0, Code: "ERESTARTSYS", Restore: "rewind"}
	sleep := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "clock_nanosleep", Nr: 230, Code: "ERESTART_RESTARTBLOCK", Restore: "eintr"}
	with := func(th sessions.Thread, policy string) sessions.Thread { th.Applied = policy; return th }
	for _, tc := range []struct {
		name string
		th   sessions.Thread
		now  procSyscall
		want string
	}{
		{"none restarts read", with(read, "none"), procSyscall{in: true, nr: 0}, "back in read"},
		{"correct rewinds read", with(read, "correct"), procSyscall{in: true, nr: 0}, "back in read"},
		{"none restarts a sleep through restart_syscall", with(sleep, "none"), procSyscall{in: true, nr: 219}, "back in clock_nanosleep"},
		{"naive leaks 512 even when the program retries", with(read, "naive"), procSyscall{in: true, nr: 0}, "returned ERESTARTSYS (512) to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261); the program then called read again"},
		{"naive leaks 516", with(sleep, "naive"), procSyscall{gone: true}, "returned ERESTART_RESTARTBLOCK (516) to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261); the thread then exited"},
		{"correct turns a restart block into EINTR", with(sleep, "correct"), procSyscall{running: true}, "returned EINTR"},
		{"completed", with(read, "none"), procSyscall{running: true}, "left read"},
		{"not in a syscall", sessions.Thread{Applied: "naive"}, procSyscall{}, ""},
	} {
		got := outcome(tc.th, tc.now)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to contain %q", tc.name, got, tc.want)
		}
	}
}

func FuzzReadProcSyscallLine(f *testing.F) {
	f.Add("running")
	f.Add("0 0x3 0x7ffd 0x1 0x0 0x0 0x0 0x7ffd0 0x7f00")
	f.Add("-1 0x7ffd 0x7f00")
	f.Fuzz(func(t *testing.T, s string) { parseProcSyscall([]byte(s)) })
}

// awaitOutcomes polls, rather than sleeping once: a thread the kernel puts back into its
// syscall (none, or correct with a rewind) but that has not been scheduled yet reads as
// running; it is read again until it is in the syscall. A naive thread and a thread that is
// gone are not waited for, and a thread that never comes back is given up at outcomeWait.
func TestAwaitOutcomesPolls(t *testing.T) {
	defer func(s, p, w time.Duration) { outcomeSettle, outcomePoll, outcomeWait = s, p, w }(outcomeSettle, outcomePoll, outcomeWait)
	outcomeSettle, outcomePoll, outcomeWait = time.Millisecond, time.Millisecond, 10*time.Second

	read := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "read", Nr: 0, Code: "ERESTARTSYS", Restore: "rewind"}
	th := func(tid int, policy string) sessions.Thread {
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
	for i, want := range []string{"back in read", "back in read", "returned ERESTARTSYS", "left read and the thread exited"} {
		if got := outcome(threads[i], now[i]); !strings.Contains(got, want) {
			t.Errorf("thread %d: %q, want %q", threads[i].TID, got, want)
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
	start := time.Now()
	now = awaitOutcomes([]sessions.Thread{th(20, "none")}, func(pid, tid int) procSyscall {
		reads[tid]++
		return procSyscall{running: true}
	})
	if reads[20] < 2 || !now[0].running || time.Since(start) > 5*time.Second {
		t.Errorf("never-back thread: %d reads, %+v", reads[20], now[0])
	}
}
