package arch

import (
	"encoding/binary"
	"fmt"
)

// The guard: code that makes an injected syscall safe at every moment, even if the tracer
// dies (tracer/doc.go). It is written into bytes of the process that no code uses (the tail
// of an executable mapping past its last segment) and starts with the syscall instruction the
// injection runs. Whatever happens to the tracer, the thread can only ever run:
//
//	syscall                      the injected call (number and arguments in registers)
//	rt_sigprocmask(SIG_SETMASK, &mask, NULL, 8)
//	every general register := its value in resume (and the flags, the stack pointer)
//	jump to resume's pc
//
// so a thread the kernel lets go mid-injection finishes the (harmless) call, puts back its own
// signal mask and registers, and goes on exactly where it would have. Nothing is written to
// its stack, nothing through a register it owns: the saved values are literals in the guard
// itself, read PC-relative. resume is ResumeRegs of the held thread: the kernel's own
// no-signal restart already applied, since the guard returns to user space without it.

// GuardSize bounds the size of any guard, for choosing where to write it.
const GuardSize = 640

// guardRange is how far a guard's final jump reaches (amd64 jumps through a literal: any).
func guardRange(a Arch) uint64 {
	switch a {
	case ARM64:
		return 128<<20 - GuardSize // b imm26
	case PPC64LE:
		return 32<<20 - GuardSize // b LI
	}
	return ^uint64(0)
}

// GuardReaches says whether a guard written at base can jump to pc.
func GuardReaches(a Arch, base, pc uint64) bool {
	d := int64(pc - base)
	if d < 0 {
		d = -d
	}
	return uint64(d) < guardRange(a)
}

// ResumeRegs returns the registers a thread held at an interrupt stop runs with once the
// kernel lets it go with no signal to handle: amd64 and ppc64le rewind an ERESTART* syscall to
// run it again (restart_syscall for ERESTART_RESTARTBLOCK, which keeps the kernel's
// restart_block); arm64 rewound before the stop, so r is returned as it is. insn is what
// RestartInsnAt names.
func ResumeRegs(r Regs, insn []byte) Regs {
	out := r.Clone()
	s := Decode(r, insn)
	if r.Arch == ARM64 || !s.pending() {
		return out
	}
	const nrRestartAMD64, nrRestartPPC = 219, 0
	switch r.Arch {
	case AMD64:
		out.set(amd64RIP, r.word(amd64RIP)-2)
		if s.Errno == ERESTART_RESTARTBLOCK {
			nr := uint64(nrRestartAMD64)
			if s.Insn == "int80" {
				nr = 0 // i386 __NR_restart_syscall
			}
			out.set(amd64RAX, nr)
		} else {
			out.set(amd64RAX, r.word(amd64OrigRAX))
		}
		out.set(amd64OrigRAX, ^uint64(0))
	case PPC64LE:
		out.set(ppcNIP, r.word(ppcNIP)-4)
		if s.Errno == ERESTART_RESTARTBLOCK {
			out.set(ppcR0, nrRestartPPC)
		} else {
			out.set(ppcR3, r.word(ppcOrigR3))
		}
	}
	return out
}

// Guard returns the guard for a thread whose registers must become resume and whose signal
// mask must become mask, to be written at base. Its first instruction is the syscall that
// SetupSyscall(_, base, ...) points the thread at. It fails when the final jump cannot
// reach resume's pc from base (GuardReaches).
func Guard(resume Regs, mask, base uint64) ([]byte, error) {
	a := resume.Arch
	if NumWords(a) == 0 || len(resume.Words) < NumWords(a) {
		return nil, fmt.Errorf("guard: %d register words for %s", len(resume.Words), a)
	}
	if !GuardReaches(a, base, resume.PC()) {
		return nil, fmt.Errorf("guard at %#x: pc %#x out of reach of a direct branch", base, resume.PC())
	}
	var g []byte
	switch a {
	case AMD64:
		g = guardAMD64(resume, mask)
	case ARM64:
		g = guardARM64(resume, mask, base)
	case PPC64LE:
		g = guardPPC64LE(resume, mask, base)
	}
	if len(g) > GuardSize {
		return nil, fmt.Errorf("guard: %d bytes, more than %d", len(g), GuardSize)
	}
	return g, nil
}

// ---- amd64 ----

// amd64Enc is the encoding number of each general register, by index into Regs.Words.
var amd64Enc = map[int]byte{
	amd64RAX: 0, amd64RCX: 1, amd64RDX: 2, amd64RBX: 3, amd64RSP: 4, amd64RBP: 5, amd64RSI: 6, amd64RDI: 7,
	amd64R8: 8, amd64R9: 9, amd64R10: 10, amd64R11: 11, amd64R12: 12, amd64R13: 13, amd64R14: 14, amd64R15: 15,
}

// guardAMD64: popfq reads the flags from a literal (rsp points at it for one instruction:
// nothing is pushed), then movabs loads every register, rsp first, then jmp *pc(%rip).
func guardAMD64(r Regs, mask uint64) []byte {
	var c []byte
	le32 := func(v uint32) { c = binary.LittleEndian.AppendUint32(c, v) }
	var fix []int // offsets of the rel32 fields, patched to point at the k-th literal
	rel := func(op ...byte) { c = append(c, op...); fix = append(fix, len(c)); le32(0) }
	c = append(c, 0x0f, 0x05) // syscall: the injected call
	c = append(c, 0xb8)       // mov $14, %eax (rt_sigprocmask)
	le32(14)
	c = append(c, 0xbf) // mov $2, %edi (SIG_SETMASK)
	le32(2)
	rel(0x48, 0x8d, 0x35)     // lea mask(%rip), %rsi
	c = append(c, 0x31, 0xd2) // xor %edx, %edx
	c = append(c, 0x41, 0xba) // mov $8, %r10d
	le32(8)
	c = append(c, 0x0f, 0x05) // syscall
	rel(0x48, 0x8d, 0x25)     // lea flags(%rip), %rsp
	c = append(c, 0x9d)       // popfq
	for _, i := range []int{amd64RSP, amd64RAX, amd64RBX, amd64RCX, amd64RDX, amd64RSI, amd64RDI, amd64RBP,
		amd64R8, amd64R9, amd64R10, amd64R11, amd64R12, amd64R13, amd64R14, amd64R15} {
		enc := amd64Enc[i]
		rex := byte(0x48) // REX.W
		if enc >= 8 {
			rex |= 1 // REX.B
		}
		c = append(c, rex, 0xb8+enc&7) // movabs $imm64, %reg
		c = binary.LittleEndian.AppendUint64(c, r.word(i))
	}
	rel(0xff, 0x25) // jmp *pc(%rip)
	for len(c)%8 != 0 {
		c = append(c, 0xcc)
	}
	const tf, rf = 0x100, 0x10000
	at := len(c)
	for _, v := range []uint64{mask, r.word(amd64EFLAGS) &^ (tf | rf), r.word(amd64RIP)} {
		c = binary.LittleEndian.AppendUint64(c, v)
	}
	for k, off := range fix {
		binary.LittleEndian.PutUint32(c[off:], uint32(at+8*k-(off+4)))
	}
	return c
}

// ---- arm64 ----

// guardARM64: svc; rt_sigprocmask with x1 = adr mask; nzcv and sp through x0; x0..x30 by
// ldr (literal); b pc. The literals follow the code.
func guardARM64(r Regs, mask, base uint64) []byte {
	var code []uint32
	type lit struct {
		insn int // index of the ldr/adr
		adr  bool
		k    int // literal index
	}
	var lits []lit
	ldr := func(rt uint32, k int) {
		lits = append(lits, lit{insn: len(code), k: k})
		code = append(code, 0x58000000|rt)
	}
	movz := func(rd, imm uint32) { code = append(code, 0xd2800000|imm<<5|rd) }
	// Literal slots: 0 mask, 1 nzcv, 2 sp, 3+i xi.
	code = append(code, insnARM64Svc0) // the injected call
	movz(8, 135)                       // rt_sigprocmask
	movz(0, 2)                         // SIG_SETMASK
	lits = append(lits, lit{insn: len(code), adr: true, k: 0})
	code = append(code, 0x10000000|1) // adr x1, mask
	movz(2, 0)
	movz(3, 8)
	code = append(code, insnARM64Svc0)
	ldr(0, 1)
	code = append(code, 0xd51b4200) // msr nzcv, x0
	ldr(0, 2)
	code = append(code, 0x9100001f) // mov sp, x0
	for i := uint32(0); i <= 30; i++ {
		ldr(i, 3+int(i))
	}
	bAt := len(code)
	code = append(code, 0x14000000) // b pc (patched)
	if len(code)%2 != 0 {
		code = append(code, insnARM64Brk0)
	}
	litAt := len(code) * 4
	vals := []uint64{mask, r.word(arm64PSTATE) & 0xf0000000, r.word(arm64SP)}
	for i := 0; i <= 30; i++ {
		vals = append(vals, r.word(arm64X0+i))
	}
	for _, l := range lits {
		off := uint32(litAt + 8*l.k - 4*l.insn)
		if l.adr {
			code[l.insn] |= (off&3)<<29 | (off>>2&0x7ffff)<<5
		} else {
			code[l.insn] |= (off >> 2 & 0x7ffff) << 5
		}
	}
	code[bAt] |= uint32((int64(r.word(arm64PC))-int64(base+uint64(4*bAt)))>>2) & 0x3ffffff
	return assemble(code, vals)
}

// assemble lays out instruction words followed by 64-bit literals (8-byte aligned: the code
// was padded to an even number of words).
func assemble(code []uint32, vals []uint64) []byte {
	out := make([]byte, 0, 4*len(code)+8*len(vals))
	for _, w := range code {
		out = binary.LittleEndian.AppendUint32(out, w)
	}
	for _, v := range vals {
		out = binary.LittleEndian.AppendUint64(out, v)
	}
	return out
}

// ---- ppc64le ----

// guardPPC64LE: sc; bcl 20,31,$+4 and mflr r12 give a base for the literals; rt_sigprocmask
// with r4 = mask; the base again (the kernel zeroes r9-r12 on the way out of a syscall); lr,
// ctr, xer and cr through r0; r0..r11 and r13..r31 by ld; r12 last (ld r12,d(r12)); b nip.
func guardPPC64LE(r Regs, mask, base uint64) []byte {
	var code []uint32
	type lit struct{ insn, k, base int }
	var lits []lit
	baseInsn := 0
	// setBase: r12 = the address of the mflr (bcl 20,31,$+4 sets lr to it).
	setBase := func() {
		code = append(code, 0x429f0005) // bcl 20,31,$+4
		baseInsn = len(code)
		code = append(code, 0x7d8802a6) // mflr r12
	}
	// ld rt, lit(r12): the displacement is patched once the literals' place is known.
	ld := func(rt uint32, k int) {
		lits = append(lits, lit{len(code), k, baseInsn})
		code = append(code, 0xe8000000|rt<<21|12<<16)
	}
	li := func(rt, imm uint32) { code = append(code, 0x38000000|rt<<21|imm&0xffff) }
	mtspr := func(spr uint32) { code = append(code, 0x7c0003a6|(spr&0x1f)<<16|(spr>>5)<<11) }
	// Literal slots: 0 mask, 1 lr, 2 ctr, 3 xer, 4 ccr, 5+i ri.
	code = append(code, insnPPCSc) // the injected call
	setBase()
	li(0, 174) // rt_sigprocmask
	li(3, 2)   // SIG_SETMASK
	lits = append(lits, lit{len(code), 0, baseInsn})
	code = append(code, 0x38000000|4<<21|12<<16) // addi r4, r12, mask
	li(5, 0)
	li(6, 8)
	code = append(code, insnPPCSc)
	setBase()
	ld(0, 1)
	mtspr(8) // mtlr r0
	ld(0, 2)
	mtspr(9) // mtctr r0
	ld(0, 3)
	mtspr(1) // mtxer r0
	ld(0, 4)
	code = append(code, 0x7c0ff120) // mtcrf 0xff, r0
	for i := uint32(0); i <= 31; i++ {
		if i != 12 {
			ld(i, 5+int(i))
		}
	}
	ld(12, 5+12)
	bAt := len(code)
	code = append(code, 0x48000000) // b nip (patched)
	if len(code)%2 != 0 {
		code = append(code, insnPPCTwi)
	}
	litAt := len(code) * 4
	vals := []uint64{mask, r.word(ppcLINK), r.word(ppcCTR), r.word(ppcXER), r.word(ppcCCR)}
	for i := 0; i <= 31; i++ {
		vals = append(vals, r.word(ppcR0+i))
	}
	for _, l := range lits {
		code[l.insn] |= uint32(litAt+8*l.k-4*l.base) & 0xffff
	}
	code[bAt] |= uint32(int64(r.word(ppcNIP))-int64(base+uint64(4*bAt))) & 0x03fffffc
	return assemble(code, vals)
}
