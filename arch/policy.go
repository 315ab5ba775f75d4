package arch

import (
	"fmt"

	"github.com/crashtui/crashtui/sessions"
)

// EffectivePolicy is what p (sessions.Policy: the restorers are the event vocabulary's) does
// to a thread of arch a interrupted at insn: sc-only is naive for scv and correct for
// everything else; the others are themselves.
func EffectivePolicy(p sessions.Policy, a Arch, insn string) sessions.Policy {
	if p != sessions.PolicySCOnly {
		return p
	}
	if a == PPC64LE && insn == "scv" {
		return sessions.PolicyNaive
	}
	return sessions.PolicyCorrect
}

// ApplyPolicy returns the registers to write back so that the thread, when resumed, behaves as
// if it had been checkpointed at this stop and restored by p. r is not modified.
//
//   - none: r unchanged.
//   - naive: cancel the kernel's pending restart and leave the return register: amd64
//     orig_rax=-1 (user code sees rax=-512); ppc64le trap=0 (sc: errno 512 with SO; scv:
//     r3=-512, seed 002).
//   - sc-only: correct for sc (and every other arch), naive for scv (EffectivePolicy).
//   - correct: rewind the pc by InsnLen and restore arg0 (amd64 rax=orig_rax, ppc64le
//     r3=orig_gpr3); for ERESTART_RESTARTBLOCK return EINTR instead (amd64 rax=-4; ppc64le sc
//     r3=4 with SO; scv r3=-4); then cancel the kernel's restart (orig_rax=-1, trap=0).
//
// arm64 is returned unchanged by every policy: its kernel rewound pc to the svc and put back
// x0=orig_x0 before the stop, so a restorer that saves and restores the registers re-executes
// the syscall with its original arguments (what CRIU does, and correct); the EINTR a naive
// restorer would leak cannot be produced because the code is no longer in any register.
//
// "trap=0" on ppc64le means vector 0; the kernel keeps its norestart flag bits (0x1 or 0x10)
// whatever is written (set_trap), so ApplyPolicy leaves those bits as they were. Every word it
// changes is within WritableMask.
func ApplyPolicy(r Regs, s RestartState, p sessions.Policy) Regs {
	p = EffectivePolicy(p, r.Arch, s.Insn)
	out := r.Clone()
	if p != sessions.PolicyNaive && p != sessions.PolicyCorrect {
		return out
	}
	switch r.Arch {
	case AMD64:
		if p == sessions.PolicyCorrect && r.Arch == s.Arch {
			switch s.Restore() {
			case ActRewind:
				out.set(amd64RIP, r.word(amd64RIP)-uint64(s.InsnLen))
				out.set(amd64RAX, r.word(amd64OrigRAX))
			case ActEINTR:
				out.set(amd64RAX, negErrno(EINTR))
			}
		}
		out.set(amd64OrigRAX, ^uint64(0))
	case PPC64LE:
		if p == sessions.PolicyCorrect && r.Arch == s.Arch {
			switch s.Restore() {
			case ActRewind:
				out.set(ppcNIP, r.word(ppcNIP)-uint64(s.InsnLen))
				out.set(ppcR3, r.word(ppcOrigR3))
			case ActEINTR:
				if s.Insn == "scv" {
					out.set(ppcR3, negErrno(EINTR))
				} else {
					out.set(ppcR3, EINTR)
					out.set(ppcCCR, r.word(ppcCCR)|ppcCR0SO)
				}
			}
		}
		// trap=0 (vector 0: check_syscall_restart skips the thread). The kernel's set_trap keeps
		// its own norestart flag bits whatever is written, so write them as they are: the result
		// is then exactly what a GETREGS will read back.
		out.set(ppcTRAP, r.word(ppcTRAP)&ppcTrapNoRstrt)
	}
	return out
}

func negErrno(e int) uint64 { return uint64(-int64(e)) }

// Explain says in one or two sentences what the kernel will do with s when resumed with h,
// naming the kernel rule, and what a restorer must write back (and what a naive one leaks).
func (s RestartState) Explain(h Handler) string {
	switch s.Arch {
	case AMD64:
		return s.explainAMD64(h)
	case PPC64LE:
		return s.explainPPC(h)
	case ARM64:
		return s.explainARM64(h)
	}
	return s.Note
}

func (s RestartState) call() string {
	if s.Syscall == "restart_syscall" {
		// Interrupted a second time: the kernel's restart_block still says which call.
		return "the call it was already resuming (restart_syscall)"
	}
	if s.Syscall != "" {
		return s.Syscall
	}
	return fmt.Sprintf("syscall %d", s.Nr)
}

func (s RestartState) explainAMD64(h Handler) string {
	if !s.InSyscall {
		return "The thread is not inside a syscall (orig_rax is -1), so arch_do_signal_or_restart (arch/x86/kernel/signal.c) has nothing to restart; a restorer writes the registers back unchanged."
	}
	if s.Errno == 0 {
		return fmt.Sprintf("In %s (orig_rax=%d) but rax=%d is not an ERESTART* code, so arch_do_signal_or_restart will not restart it; a restorer needs nothing beyond the orig_rax=-1 that rt_sigreturn sets.", s.call(), s.Nr, s.Ret)
	}
	// With a handler the decision is handle_signal's; with none, arch_do_signal_or_restart's
	// (both arch/x86/kernel/signal.c).
	rule := "arch_do_signal_or_restart (arch/x86/kernel/signal.c)"
	if h != NoHandler {
		rule = "handle_signal (arch/x86/kernel/signal.c)"
	}
	var kernel string
	switch s.OnResume(h) {
	case ActRestart:
		kernel = fmt.Sprintf("with %s, %s restarts %s: rax=orig_rax, rip-=2", h, rule, s.call())
	case ActRestartSyscall:
		kernel = fmt.Sprintf("with %s, arch_do_signal_or_restart re-enters %s through restart_syscall: rax=219, rip-=2", h, s.call())
	case ActEINTR:
		kernel = fmt.Sprintf("with %s, %s makes %s return EINTR: rax=-4", h, rule, s.call())
	}
	var restore string
	if s.Restore() == ActRewind {
		restore = fmt.Sprintf("a restorer must rewind itself (rip-=2, rax=orig_rax: CRIU compel_get_task_regs), because the restored thread returns through rt_sigreturn, which sets orig_rax=-1; a naive restore leaks rax=-%d (%s) to user code", s.Errno, s.Code)
	} else {
		restore = fmt.Sprintf("restart_block is kernel-private, so a restorer can only return EINTR (rax=-4; CRIU warns \"Will restore with interrupted system call\"); a naive restore leaks rax=-%d (%s)", s.Errno, s.Code)
	}
	return capitalize(kernel) + "; " + restore + "."
}

func (s RestartState) explainPPC(h Handler) string {
	if !s.InSyscall {
		return fmt.Sprintf("Trap 0x%x is not a syscall vector (0xc00 sc, 0x3000 scv), so check_syscall_restart (arch/powerpc/kernel/signal.c) skips the thread; a restorer writes the registers back with trap=0.", s.Trap)
	}
	if s.AlreadyRestarted {
		return fmt.Sprintf("Trap 0x%x has the norestart flag (0x10 on 5.8-5.12, 0x1 from 5.13): check_syscall_restart already ran for this exit and will not run again, so a restorer must not rewind a second time and only writes trap=0 (CRIU masks ~0xf, so on 5.13+ it sees 0xc00 and, if orig_gpr3 is 512-516 with SO still set, rewinds twice: selftest sig_sc_double_restart.c).", s.Trap)
	}
	if s.Errno == 0 {
		return fmt.Sprintf("In %s via %s, but r3=%d is not an ERESTART* code, so check_syscall_restart will not restart it; a restorer writes trap=0.", s.call(), s.Insn, s.Ret)
	}
	var kernel string
	switch s.OnResume(h) {
	case ActRestart:
		kernel = fmt.Sprintf("with %s, check_syscall_restart (arch/powerpc/kernel/signal.c) restarts %s: r3=orig_gpr3, nip-=4", h, s.call())
	case ActRestartSyscall:
		kernel = fmt.Sprintf("with %s, check_syscall_restart re-enters %s through restart_syscall: r0=0, nip-=4", h, s.call())
	case ActEINTR:
		if s.Insn == "scv" {
			kernel = fmt.Sprintf("with %s, check_syscall_restart makes %s return EINTR: r3=-4", h, s.call())
		} else {
			kernel = fmt.Sprintf("with %s, check_syscall_restart makes %s return EINTR: r3=4 with CR0.SO", h, s.call())
		}
	}
	leak := fmt.Sprintf("errno %d with SO set", s.Errno)
	if s.Insn == "scv" {
		leak = fmt.Sprintf("r3=-%d", s.Errno)
	}
	var restore string
	if s.Restore() == ActRewind {
		restore = fmt.Sprintf("a restorer must rewind itself (nip-=4, r3=orig_gpr3, trap=0: CRIU handle_syscall), because rt_sigreturn disables the restart; a naive restore (trap=0 only) leaks %s (%s) to user code", leak, s.Code)
	} else {
		eintr := "r3=4 with SO"
		if s.Insn == "scv" {
			eintr = "r3=-4"
		}
		restore = fmt.Sprintf("restart_block is kernel-private, so a restorer can only return EINTR (%s, trap=0); a naive restore leaks %s (%s)", eintr, leak, s.Code)
	}
	out := capitalize(kernel) + "; " + restore + "."
	if s.Insn == "scv" {
		out += " CRIU before 59fcfa80 handled only sc (0xc00 with SO), so it restored this scv thread unfixed (checkpoint-restore/criu#2261)."
	}
	return out
}

func (s RestartState) explainARM64(h Handler) string {
	if !s.InSyscall {
		return s.Note
	}
	if s.Errno == 0 {
		switch h {
		case NoHandler:
			return fmt.Sprintf("The pc is at the svc of %s, already rewound by do_signal (arch/arm64/kernel/signal.c) if it was interrupted, so it runs again on resume (through restart_syscall if the lost code was ERESTART_RESTARTBLOCK); a save-and-restore is correct as is.", s.call())
		default:
			return fmt.Sprintf("With %s, do_signal turns the rewound svc of %s into EINTR for ERESTARTNOHAND, ERESTART_RESTARTBLOCK and ERESTARTSYS without SA_RESTART, but the code is no longer in any register, so the outcome cannot be told; a restorer needs no fix-up.", h, s.call())
		}
	}
	var kernel string
	switch s.OnResume(h) {
	case ActRestart:
		kernel = fmt.Sprintf("With %s, do_signal (arch/arm64/kernel/signal.c) keeps the restart it already prepared: %s runs again with x0=orig_x0", h, s.call())
	case ActRestartSyscall:
		kernel = fmt.Sprintf("With %s, do_signal re-enters %s through restart_syscall (x8=128)", h, s.call())
	case ActEINTR:
		kernel = fmt.Sprintf("With %s, do_signal undoes its rewind and %s returns EINTR: x0=-4, pc+=4", h, s.call())
	}
	return kernel + "; arm64 rewound before the stop, so a restorer needs no fix-up (the restored thread re-issues the original syscall and arguments)."
}

func capitalize(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
