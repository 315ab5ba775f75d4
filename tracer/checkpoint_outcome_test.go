package tracer

import (
	"strings"
	"testing"

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
		{"naive leaks 512 even when the program retries", with(read, "naive"), procSyscall{in: true, nr: 0}, "returned ERESTARTSYS (512) to the program, the seed 002 bug; the program then called read again"},
		{"naive leaks 516", with(sleep, "naive"), procSyscall{gone: true}, "returned ERESTART_RESTARTBLOCK (516) to the program, the seed 002 bug; the thread then exited"},
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
