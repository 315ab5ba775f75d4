package checkpoint

import (
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// glibcSigpendingCases on arm64 (TestGlibcSigpending). glibc enters with `svc #0`, and
// arm64's do_signal rewinds pc to the svc and puts back x0=orig_x0 before the ptrace stop, so
// the interrupted code is in no register and a restorer that writes the registers back
// unchanged is already correct: both policies leave them as they are, and every call goes on.
// (For ERESTART_RESTARTBLOCK the switch to restart_syscall comes after the stop: do_signal
// sets x8=__NR_restart_syscall on resume when pc is still at the rewound svc, so the thread
// event shows clock_nanosleep.)
//
//	          read          futex (sem_wait)            nanosleep                   poll (ppoll)
//	both      restarted: 1  restarted: 0 after sem_post restart_syscall: sleeps on  restarted: 1
//
// glibc has no poll(2) to call on arm64: poll() is ppoll, ERESTARTNOHAND, restarted like read.
func glibcSigpendingCases(t *testing.T) []sigpendingCase {
	var cases []sigpendingCase
	for _, p := range []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNaive} {
		cases = append(cases, sigpendingCase{
			name: string(p), policy: p, insn: "svc",
			// Short: the restarted sleep is waited out.
			args: []string{"-s", "3", "futex", "nanosleep", "poll"},
			result: map[string][2]int{
				"read": {1, 0}, "futex": {0, 0}, "nanosleep": {0, 0}, "poll": {1, 0},
			},
		})
	}
	return cases
}
