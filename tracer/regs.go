package tracer

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
)

// Register glue: unix.PtraceRegs is the kernel's register struct for this GOARCH, word by
// word (regs_<arch>.go says which and how many words); everything else works on arch.Regs.
// getRegs and setRegs, which read and write it, are in ptrace.go.

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
