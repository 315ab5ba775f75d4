package arch

import (
	"fmt"
	"runtime"
)

// Arch names a Linux architecture by its GOARCH spelling.
type Arch string

const (
	AMD64   Arch = "amd64"
	ARM64   Arch = "arm64"
	PPC64LE Arch = "ppc64le"
)

// Host returns the architecture crashtui was built for (runtime.GOARCH).
func Host() Arch { return Arch(runtime.GOARCH) }

// Word indices into Regs.Words, named after the kernel's struct members.
//
// amd64: arch/x86/include/asm/user_64.h struct user_regs_struct.
const (
	amd64R15 = iota
	amd64R14
	amd64R13
	amd64R12
	amd64RBP
	amd64RBX
	amd64R11
	amd64R10
	amd64R9
	amd64R8
	amd64RAX
	amd64RCX
	amd64RDX
	amd64RSI
	amd64RDI
	amd64OrigRAX
	amd64RIP
	amd64CS
	amd64EFLAGS
	amd64RSP
	amd64SS
	amd64FSBase
	amd64GSBase
	amd64DS
	amd64ES
	amd64FS
	amd64GS
	amd64NumWords
)

// arm64: arch/arm64/include/uapi/asm/ptrace.h struct user_pt_regs (x0..x30, sp, pc, pstate).
const (
	arm64X0       = 0
	arm64X8       = 8
	arm64SP       = 31
	arm64PC       = 32
	arm64PSTATE   = 33
	arm64NumWords = 34
)

// ppc64le: arch/powerpc/include/uapi/asm/ptrace.h struct user_pt_regs (PT_NIP 32, PT_ORIG_R3 34,
// PT_CCR 38, PT_TRAP 40, PT_RESULT 43).
const (
	ppcR0       = 0
	ppcR1       = 1
	ppcR3       = 3
	ppcR12      = 12
	ppcNIP      = 32
	ppcMSR      = 33
	ppcOrigR3   = 34
	ppcCTR      = 35
	ppcLINK     = 36
	ppcXER      = 37
	ppcCCR      = 38
	ppcSOFTE    = 39
	ppcTRAP     = 40
	ppcDAR      = 41
	ppcDSISR    = 42
	ppcRESULT   = 43
	ppcNumWords = 44
)

// NumWords is the number of 64-bit words of unix.PtraceRegs on a (0 if a is unknown).
func NumWords(a Arch) int {
	switch a {
	case AMD64:
		return amd64NumWords
	case ARM64:
		return arm64NumWords
	case PPC64LE:
		return ppcNumWords
	}
	return 0
}

// Regs is a raw snapshot of the kernel's register struct for Arch, word by word, in the layout
// of unix.PtraceRegs on that arch (amd64 27 words, arm64 34, ppc64le 44). Accessors treat a
// missing word as 0 and setters ignore it, so a short or corrupt snapshot (from a recorded
// session) never panics.
type Regs struct {
	Arch  Arch
	Words []uint64
}

func (r Regs) word(i int) uint64 {
	if i < 0 || i >= len(r.Words) {
		return 0
	}
	return r.Words[i]
}

func (r *Regs) set(i int, v uint64) {
	if i >= 0 && i < len(r.Words) {
		r.Words[i] = v
	}
}

func pcIndex(a Arch) int {
	switch a {
	case AMD64:
		return amd64RIP
	case ARM64:
		return arm64PC
	case PPC64LE:
		return ppcNIP
	}
	return -1
}

func spIndex(a Arch) int {
	switch a {
	case AMD64:
		return amd64RSP
	case ARM64:
		return arm64SP
	case PPC64LE:
		return ppcR1
	}
	return -1
}

// PC returns rip / pc / nip.
func (r Regs) PC() uint64 { return r.word(pcIndex(r.Arch)) }

// SP returns rsp / sp / r1.
func (r Regs) SP() uint64 { return r.word(spIndex(r.Arch)) }

// SetPC sets rip / pc / nip.
func (r *Regs) SetPC(pc uint64) { r.set(pcIndex(r.Arch), pc) }

// Clone returns a copy that shares no memory with r.
func (r Regs) Clone() Regs {
	c := Regs{Arch: r.Arch}
	if r.Words != nil {
		c.Words = append(make([]uint64, 0, len(r.Words)), r.Words...)
	}
	return c
}

// NamedReg is one register with its kernel name.
type NamedReg struct {
	Name  string
	Value uint64
}

var amd64Names = [amd64NumWords]string{
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp",
	"ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
}

var ppcNames = [ppcNumWords]string{
	"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9",
	"r10", "r11", "r12", "r13", "r14", "r15", "r16", "r17", "r18", "r19",
	"r20", "r21", "r22", "r23", "r24", "r25", "r26", "r27", "r28", "r29",
	"r30", "r31", "nip", "msr", "orig_gpr3", "ctr", "link", "xer", "ccr", "softe",
	"trap", "dar", "dsisr", "result",
}

// RegName returns the kernel name of word i of a's register struct ("rip", "x8", "trap"), or
// "word<i>" for a word the layout does not have.
func RegName(a Arch, i int) string {
	switch a {
	case AMD64:
		if i >= 0 && i < amd64NumWords {
			return amd64Names[i]
		}
	case ARM64:
		switch {
		case i >= 0 && i <= 30:
			return fmt.Sprintf("x%d", i)
		case i == arm64SP:
			return "sp"
		case i == arm64PC:
			return "pc"
		case i == arm64PSTATE:
			return "pstate"
		}
	case PPC64LE:
		if i >= 0 && i < ppcNumWords {
			return ppcNames[i]
		}
	}
	return fmt.Sprintf("word%d", i)
}

// Named returns every word with its kernel name, in struct order, for a registers view.
func (r Regs) Named() []NamedReg {
	out := make([]NamedReg, len(r.Words))
	for i, v := range r.Words {
		out[i] = NamedReg{Name: RegName(r.Arch, i), Value: v}
	}
	return out
}

// Reg returns the register with kernel name name ("orig_rax", "x8", "trap").
func (r Regs) Reg(name string) (uint64, bool) {
	for i, v := range r.Words {
		if RegName(r.Arch, i) == name {
			return v, true
		}
	}
	return 0, false
}

// WritableMask returns the bits of word i of a's register struct that PTRACE_SETREGS(ET)
// actually stores; a GETREGS after a SETREGS can differ from what was written outside them.
//
//   - ppc64le (arch/powerpc/kernel/ptrace/ptrace-view.c gpr_set): msr keeps all but
//     MSR_DEBUGCHANGE (SE|BE, set_user_msr); trap keeps the kernel's norestart flag bits
//     (set_user_trap); softe, dar, dsisr and result are not written at all.
//   - amd64 (arch/x86/kernel/ptrace.c set_flags): eflags takes only FLAG_MASK
//     (CF PF AF ZF SF TF DF OF RF AC), never IF or IOPL.
//   - arm64: pstate is validated rather than masked (valid_user_regs); all words are
//     reported fully writable.
func WritableMask(a Arch, i int) uint64 {
	switch a {
	case PPC64LE:
		switch i {
		case ppcMSR:
			return 0x400 | 0x200 // MSR_SE | MSR_BE
		case ppcTRAP:
			return ^uint64(ppcTrapNoRstrt)
		case ppcSOFTE, ppcDAR, ppcDSISR, ppcRESULT:
			return 0
		}
	case AMD64:
		if i == amd64EFLAGS {
			return 0x50dd5 // FLAG_MASK_32
		}
	}
	if i < 0 || i >= NumWords(a) {
		return 0
	}
	return ^uint64(0)
}

// UnwindRegs are the registers an unwind starts from, picked by kernel name (rbp on amd64;
// x29/x30 on arm64; r31/link on ppc64le), so it works on raw words from any arch: the pc, the
// stack pointer, the frame pointer and the link register (0 on amd64).
func (r Regs) UnwindRegs() (pc, sp, fp, lr uint64) {
	pc, sp = r.PC(), r.SP()
	switch r.Arch {
	case AMD64:
		fp, _ = r.Reg("rbp")
	case ARM64:
		fp, _ = r.Reg("x29")
		lr, _ = r.Reg("x30")
	case PPC64LE:
		fp, _ = r.Reg("r31")
		lr, _ = r.Reg("link")
	}
	return pc, sp, fp, lr
}
