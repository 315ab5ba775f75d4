#include "textflag.h"

// The raw word, not the assembler's SVC mnemonic, so the instruction in the
// binary is exactly the one the test looks for at pc: 0xd4000001 svc #0.

// func svcSyscall(nr, a1, a2, a3 uintptr) (x0 uintptr)
TEXT ·svcSyscall(SB), NOSPLIT, $0-40
	MOVD	a1+8(FP), R0
	MOVD	a2+16(FP), R1
	MOVD	a3+24(FP), R2
	MOVD	nr+0(FP), R8
	WORD	$0xd4000001
	MOVD	R0, x0+32(FP)
	RET

// func svcAddr() uintptr
TEXT ·svcAddr(SB), NOSPLIT, $0-8
	MOVD	$·svcSyscall(SB), R0
	ADD	$16, R0
	MOVD	R0, ret+0(FP)
	RET
