package checkpoint

import (
	"testing"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

// glibcSigpendingCases on ppc64le (TestGlibcSigpending). glibc 2.36 enters every syscall with
// `scv 0` when the TCB's copy of AT_HWCAP2 has PPC_FEATURE2_SCV (POWER9 and POWER10 under
// Linux 6.1) and with `sc` otherwise (POWER8): the instruction is glibc's choice here.
//
// The kernel holds, at the PTRACE_INTERRUPT stop: read ERESTARTSYS (512), sem_wait's
// FUTEX_WAIT_BITSET without a timeout ERESTARTSYS, nanosleep (clock_nanosleep) and poll
// ERESTART_RESTARTBLOCK (516: fs/select.c sets up a restart block for poll even without a
// timeout). What the program then sees:
//
//	          read          futex (sem_wait)            nanosleep   poll
//	correct   restarted: 1  restarted: 0 after sem_post EINTR       EINTR
//	naive     errno 512     glibc aborts (futex_fatal)  errno 516   errno 516
//	sc-only   as naive through scv (POWER9/10), as correct through sc (POWER8)
//
// On POWER8 (sc) correct and naive give the same table: a naive restore (trap=0, registers
// as they were) leaks the code through sc too (r3=512 with CR0.SO, which glibc's sc path
// turns into errno 512 exactly as its scv path does with r3=-512), and the correct fix-up
// works for both. sc-only is the old CRIU: its fix-up recognised only sc (trap 0xc00 with
// SO) and restored an scv thread as naive does, so it was right on POWER8 and the bug showed
// only where glibc switched to scv (checkpoint-restore/criu#2261).
func glibcSigpendingCases(t *testing.T) []sigpendingCase {
	insn := "sc"
	if ppcExpectSCV(t) {
		insn = "scv"
	}
	// The old CRIU on this CPU.
	scOnly := map[string][2]int{"read": {1, 0}, "nanosleep": {-1, arch.EINTR}, "poll": {-1, arch.EINTR}}
	if insn == "scv" {
		scOnly = map[string][2]int{"read": {-1, arch.ERESTARTSYS}, "nanosleep": {-1, arch.ERESTART_RESTARTBLOCK}, "poll": {-1, arch.ERESTART_RESTARTBLOCK}}
	}
	codes := map[string]string{"read": "ERESTARTSYS", "futex": "ERESTARTSYS", "nanosleep": "ERESTART_RESTARTBLOCK", "poll": "ERESTART_RESTARTBLOCK"}
	return []sigpendingCase{
		{
			name: "correct", policy: sessions.PolicyCorrect, insn: insn,
			args: []string{"-s", "30", "futex", "nanosleep", "poll"},
			code: codes,
			restore: map[string]arch.Action{
				"read": arch.ActRewind, "futex": arch.ActRewind, "nanosleep": arch.ActEINTR, "poll": arch.ActEINTR,
			},
			result: map[string][2]int{
				"read": {1, 0}, "futex": {0, 0}, "nanosleep": {-1, arch.EINTR}, "poll": {-1, arch.EINTR},
			},
		},
		{
			// Without the futex thread, whose abort would end the program before the others
			// report: every leaked code reaches the program as errno.
			name: "naive", policy: sessions.PolicyNaive, insn: insn,
			args: []string{"-s", "30", "nanosleep", "poll"},
			code: codes,
			result: map[string][2]int{
				"read": {-1, arch.ERESTARTSYS}, "nanosleep": {-1, arch.ERESTART_RESTARTBLOCK}, "poll": {-1, arch.ERESTART_RESTARTBLOCK},
			},
		},
		{
			name: "sc-only", policy: sessions.PolicySCOnly, insn: insn,
			args:   []string{"-s", "30", "nanosleep", "poll"},
			code:   codes,
			result: scOnly,
		},
		{
			// sem_wait gets -512 from the futex call and glibc treats it as impossible: seed
			// 002's "The futex facility returned an unexpected error code." and SIGABRT.
			name: "naive-futex", policy: sessions.PolicyNaive, insn: insn,
			args:  []string{"futex"},
			code:  codes,
			abort: glibcFutexFatal,
		},
	}
}
