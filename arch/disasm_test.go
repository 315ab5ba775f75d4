package arch

import (
	"encoding/binary"
	"testing"
)

func TestDisasm(t *testing.T) {
	le := func(ws ...uint32) []byte {
		var b []byte
		for _, w := range ws {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
		return b
	}
	for _, c := range []struct {
		name string
		a    Arch
		code []byte
		max  int
		want []Inst
	}{
		{"x86 mixed lengths", AMD64, []byte{0x48, 0x89, 0xe5, 0x0f, 0x05, 0xc3}, 10, []Inst{
			{PC: 0x1000, Len: 3, Text: "mov %rsp,%rbp"},
			{PC: 0x1003, Len: 2, Text: "syscall"},
			{PC: 0x1005, Len: 1, Text: "retq"},
		}},
		{"x86 max", AMD64, []byte{0x90, 0x90, 0x90}, 2, []Inst{{PC: 0x1000, Len: 1, Text: "nop"}, {PC: 0x1001, Len: 1, Text: "nop"}}},
		{"x86 bad byte keeps going", AMD64, []byte{0x06, 0x90}, 10, []Inst{{PC: 0x1000, Len: 1, Text: "(bad)"}, {PC: 0x1001, Len: 1, Text: "nop"}}},
		{"x86 truncated tail", AMD64, []byte{0x90, 0x0f}, 10, []Inst{{PC: 0x1000, Len: 1, Text: "nop"}, {PC: 0x1001, Len: 1, Text: "(bad)"}}},
		{"arm64", ARM64, le(0xd2800808, 0xd4000001, 0x12345), 10, []Inst{
			{PC: 0x1000, Len: 4, Text: "mov x8, #0x40"},
			{PC: 0x1004, Len: 4, Text: "svc #0x0"},
			{PC: 0x1008, Len: 4, Text: ".inst 0x00012345"},
		}},
		{"ppc64le", PPC64LE, append(le(0x38000003, 0x44000001, 0x4e800020), 0xff), 10, []Inst{
			{PC: 0x1000, Len: 4, Text: "li r0,3"},
			{PC: 0x1004, Len: 4, Text: "scv 0"},
			{PC: 0x1008, Len: 4, Text: "blr"},
		}},
		{"unknown arch", "vax", []byte{1, 2, 3, 4}, 10, nil},
	} {
		got := Disasm(c.a, c.code, 0x1000, c.max)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d instructions %+v, want %d", c.name, len(got), got, len(c.want))
			continue
		}
		off := 0
		for i, w := range c.want {
			g := got[i]
			if g.PC != w.PC || g.Len != w.Len || g.Text != w.Text || string(g.Bytes) != string(c.code[off:off+w.Len]) {
				t.Errorf("%s: [%d] = %+v, want %+v", c.name, i, g, w)
			}
			off += w.Len
		}
	}
}
