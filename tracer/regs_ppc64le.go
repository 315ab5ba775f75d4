package tracer

import "github.com/crashtui/crashtui/arch"

// Register glue for linux/ppc64le: unix.PtraceRegs is the kernel's user_pt_regs
// (arch/powerpc/include/uapi/asm/ptrace.h): gpr[32], nip, msr, orig_gpr3, ctr, link, xer, ccr,
// softe, trap, dar, dsisr, result. unix.PtraceGetRegs uses PTRACE_GETREGSET NT_PRSTATUS, whose
// 48-word regset the 44-word iovec truncates (trap is word 40 in both).

const (
	regsArch  = arch.PPC64LE
	regsWords = 44
)
