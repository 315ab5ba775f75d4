package elfinfo

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// fakeStack is memory made of 8-byte words at given addresses.
type fakeStack map[uint64]uint64

func (s fakeStack) read(addr uint64, buf []byte) error {
	for i := 0; i < len(buf); i += 8 {
		v, ok := s[addr+uint64(i)]
		if !ok {
			return fmt.Errorf("unmapped %#x", addr+uint64(i))
		}
		binary.LittleEndian.PutUint64(buf[i:], v)
	}
	return nil
}

// TestUnwindFramePointerArches walks hand-built stacks with no modules (so no CFI): the
// frame-pointer and back-chain conventions of each arch, and LR for a leaf's first caller.
func TestUnwindFramePointerArches(t *testing.T) {
	maps := []Mapping{{Start: 0x1000, End: 0x9000, Perms: "r-xp", Path: "[anon-text]"}}
	for _, tc := range []struct {
		arch           string
		pc, sp, fp, lr uint64
		stack          fakeStack
		want           []uint64
	}{
		{
			// amd64: [rbp] = caller's rbp, [rbp+8] = return address.
			arch: "amd64", pc: 0x1100, sp: 0x7000, fp: 0x7010,
			stack: fakeStack{0x7010: 0x7040, 0x7018: 0x2200, 0x7040: 0, 0x7048: 0x3300},
			want:  []uint64{0x1100, 0x2200, 0x3300},
		},
		{
			// arm64: the leaf has not saved LR; then x29 chain [fp]=fp', [fp+8]=lr'.
			arch: "arm64", pc: 0x1100, sp: 0x7000, fp: 0x7010, lr: 0x2200,
			stack: fakeStack{0x7010: 0x7040, 0x7018: 0x3300, 0x7040: 0, 0x7048: 0},
			want:  []uint64{0x1100, 0x2200, 0x3300},
		},
		{
			// ppc64le: LR for the leaf, then the back chain at 0(r1), LR save at 16(back).
			arch: "ppc64le", pc: 0x1100, sp: 0x7000, lr: 0x2200,
			stack: fakeStack{0x7000: 0x7100, 0x7100: 0x7200, 0x7110: 0x3300, 0x7200: 0, 0x7210: 0},
			want:  []uint64{0x1100, 0x2200, 0x3300},
		},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			frames := NewResolver().Unwind(0, maps, tc.pc, tc.sp, tc.fp, tc.lr, tc.arch, tc.stack.read, 16)
			var got []uint64
			for _, f := range frames {
				got = append(got, f.PC)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("PCs %#x, want %#x", got, tc.want)
			}
		})
	}
}
