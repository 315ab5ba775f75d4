package arch

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/ppc64/ppc64asm"
	"golang.org/x/arch/x86/x86asm"
)

// Inst is one disassembled instruction.
type Inst struct {
	PC    uint64
	Len   int
	Text  string
	Bytes []byte
}

// Disasm decodes up to max instructions of code, which starts at address pc, in GNU syntax
// (x86asm.GNUSyntax / arm64asm.GNUSyntax / ppc64asm.GNUSyntax). Undecodable bytes become a
// 1-byte "(bad)" on amd64 and a raw ".inst"/".long" word on arm64/ppc64le, so the listing keeps
// going; a trailing fragment shorter than an instruction is dropped. For x86 start at a known
// instruction boundary (a function entry or the pc) or the listing is misaligned.
func Disasm(a Arch, code []byte, pc uint64, max int) []Inst {
	var out []Inst
	for off := 0; off < len(code) && len(out) < max; {
		var (
			n    int
			text string
		)
		switch a {
		case AMD64:
			inst, err := x86asm.Decode(code[off:], 64)
			if err != nil || inst.Len == 0 || inst.Op == 0 {
				n, text = 1, "(bad)"
			} else {
				n, text = inst.Len, x86asm.GNUSyntax(inst, pc+uint64(off), nil)
			}
		case ARM64:
			if len(code)-off < 4 {
				return out
			}
			n = 4
			if inst, err := arm64asm.Decode(code[off : off+4]); err == nil {
				text = arm64asm.GNUSyntax(inst)
			} else {
				text = fmt.Sprintf(".inst 0x%08x", binary.LittleEndian.Uint32(code[off:]))
			}
		case PPC64LE:
			if len(code)-off < 4 {
				return out
			}
			n = 4
			if inst, err := ppc64asm.Decode(code[off:], binary.LittleEndian); err == nil && inst.Len > 0 {
				n = inst.Len // prefixed (ISA 3.1) instructions are 8 bytes
				text = ppc64asm.GNUSyntax(inst, pc+uint64(off))
			} else {
				text = fmt.Sprintf(".long 0x%x", binary.LittleEndian.Uint32(code[off:]))
			}
		default:
			return out
		}
		if off+n > len(code) {
			return out
		}
		out = append(out, Inst{PC: pc + uint64(off), Len: n, Text: text, Bytes: append([]byte(nil), code[off:off+n]...)})
		off += n
	}
	return out
}
