package tracer

import (
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
)

// Register glue: unix.PtraceRegs is the kernel's register struct for this GOARCH, word by
// word (regs_<arch>.go says which and how many words); everything else works on arch.Regs.

// Compile-time check: unix.PtraceRegs is exactly regsWords 64-bit words (the index is out of
// range, a compile error, if the size differs).
var _ = [1]struct{}{}[unsafe.Sizeof(unix.PtraceRegs{})-8*regsWords]

func init() {
	if n := arch.NumWords(regsArch); n != regsWords {
		panic(fmt.Sprintf("tracer: unix.PtraceRegs has %d words on %s but package arch decodes %d", regsWords, regsArch, n))
	}
}

func ptraceRegsWords(pr *unix.PtraceRegs) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(pr)), regsWords)
}

// getRegs reads tid's registers. tid must be in a ptrace-stop of this thread's tracee.
func getRegs(tid int) (arch.Regs, error) {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return arch.Regs{}, fmt.Errorf("getregs %d: %w", tid, err)
	}
	return arch.Regs{Arch: regsArch, Words: slices.Clone(ptraceRegsWords(&pr))}, nil
}

// setRegs writes r to tid, which must be in a ptrace-stop. r must be a full snapshot of this
// architecture, as returned by getRegs (possibly edited by arch.ApplyPolicy/SetupSyscall).
func setRegs(tid int, r arch.Regs) error {
	if r.Arch != regsArch || len(r.Words) != regsWords {
		return fmt.Errorf("setregs %d: have %s registers with %d words, want %s with %d", tid, r.Arch, len(r.Words), regsArch, regsWords)
	}
	var pr unix.PtraceRegs
	copy(ptraceRegsWords(&pr), r.Words)
	if err := unix.PtraceSetRegs(tid, &pr); err != nil {
		return fmt.Errorf("setregs %d: %w", tid, err)
	}
	return nil
}

// restartInsn reads the instruction bytes arch.Decode wants for r (arch.RestartInsnAt). It
// returns nil when the memory is unreadable (arch.Decode then reports it unconfirmed).
func restartInsn(tid int, r arch.Regs) []byte {
	addr, n := arch.RestartInsnAt(r.Arch, r.PC())
	buf := make([]byte, n)
	if err := peekBytes(tid, addr, buf); err != nil {
		return nil
	}
	return buf
}
