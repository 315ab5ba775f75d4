package tracer

import "github.com/crashtui/crashtui/arch"

// Register glue for linux/amd64: unix.PtraceRegs is the kernel's user_regs_struct
// (arch/x86/include/asm/user_64.h): r15..r8, rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags,
// rsp, ss, fs_base, gs_base, ds, es, fs, gs.

const (
	regsArch  = arch.AMD64
	regsWords = 27
)
