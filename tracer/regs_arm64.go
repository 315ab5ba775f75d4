package tracer

import "github.com/crashtui/crashtui/arch"

// Register glue for linux/arm64: unix.PtraceRegs is the kernel's user_pt_regs
// (arch/arm64/include/uapi/asm/ptrace.h): x0..x30, sp, pc, pstate. unix.PtraceGetRegs reads it with
// PTRACE_GETREGSET NT_PRSTATUS (arm64 has no PTRACE_GETREGS).

const (
	regsArch  = arch.ARM64
	regsWords = 34
)
