package arch_test

import (
	"testing"

	"github.com/crashtui/crashtui/arch"
)

// TestUnwindRegs checks the unwinder's starting registers on every arch from raw words.
func TestUnwindRegs(t *testing.T) {
	for _, tc := range []struct {
		a                  arch.Arch
		pc, sp, fp, lr     string
		wpc, wsp, wfp, wlr uint64
	}{
		{arch.AMD64, "rip", "rsp", "rbp", "", 0x401000, 0x7ff0, 0x7ff8, 0},
		{arch.ARM64, "pc", "sp", "x29", "x30", 0x401000, 0x7ff0, 0x7ff8, 0x400800},
		{arch.PPC64LE, "nip", "r1", "r31", "link", 0x10001000, 0x7ff0, 0x7ff8, 0x10000800},
	} {
		r := arch.Regs{Arch: tc.a, Words: make([]uint64, arch.NumWords(tc.a))}
		for i := range r.Words {
			switch arch.RegName(tc.a, i) {
			case tc.pc:
				r.Words[i] = tc.wpc
			case tc.sp:
				r.Words[i] = tc.wsp
			case tc.fp:
				r.Words[i] = tc.wfp
			case tc.lr:
				r.Words[i] = tc.wlr
			default:
				r.Words[i] = 0xdead
			}
		}
		pc, sp, fp, lr := r.UnwindRegs()
		if [4]uint64{pc, sp, fp, lr} != [4]uint64{tc.wpc, tc.wsp, tc.wfp, tc.wlr} {
			t.Errorf("%s: %#x %#x %#x %#x", tc.a, pc, sp, fp, lr)
		}
	}
}
