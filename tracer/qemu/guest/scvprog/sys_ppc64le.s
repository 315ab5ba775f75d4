#include "textflag.h"

// Raw words, not the assembler's SC/SCV mnemonics, so the instruction in the
// binary is exactly the one the test looks for at nip-4:
//   0x44000002 sc
//   0x44000001 scv 0
//   0x7c800026 mfcr r4
// Go requires R0 == 0 on return from assembly; both calls use it for the
// syscall number, so it is cleared again afterwards.

// func scSyscall(nr, a1, a2, a3 uintptr) (r3, cr uintptr)
TEXT ·scSyscall(SB), NOSPLIT, $0-48
	MOVD	a1+8(FP), R3
	MOVD	a2+16(FP), R4
	MOVD	a3+24(FP), R5
	MOVD	nr+0(FP), R0
	WORD	$0x44000002
	WORD	$0x7c800026
	XOR	R0, R0, R0
	MOVD	R3, r3+32(FP)
	MOVD	R4, cr+40(FP)
	RET

// scv clobbers LR (it holds the return address, like a branch-and-link), CTR,
// XER, r0, r4-r12 and CR fields: keep LR in R20, which scv preserves.
// func scvSyscall(nr, a1, a2, a3 uintptr) (r3, cr uintptr)
TEXT ·scvSyscall(SB), NOSPLIT, $0-48
	MOVD	LR, R20
	MOVD	a1+8(FP), R3
	MOVD	a2+16(FP), R4
	MOVD	a3+24(FP), R5
	MOVD	nr+0(FP), R0
	WORD	$0x44000001
	MOVD	R20, LR
	WORD	$0x7c800026
	XOR	R0, R0, R0
	MOVD	R3, r3+32(FP)
	MOVD	R4, cr+40(FP)
	RET
