package arch

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// FuzzDecode feeds arbitrary register words (of any count, e.g. from a corrupt recorded
// session) and instruction bytes to everything that reads them. Nothing may panic, and the
// invariants the views rely on must hold.
func FuzzDecode(f *testing.F) {
	add := func(archIdx byte, r Regs, insn []byte) {
		var b []byte
		for _, w := range r.Words {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
		f.Add(archIdx, b, insn)
	}
	for _, c := range amd64Cases() {
		add(0, c.regs, c.insn)
	}
	for _, c := range arm64Cases() {
		add(1, c.regs, c.insn)
	}
	for _, c := range ppcCases() {
		add(2, c.regs, c.insn)
	}
	f.Add(byte(3), []byte{1, 2, 3}, []byte(nil))
	f.Add(byte(2), []byte{}, []byte{0x44})

	arches := []Arch{AMD64, ARM64, PPC64LE, "s390x"}
	f.Fuzz(func(t *testing.T, archIdx byte, raw []byte, insn []byte) {
		a := arches[int(archIdx)%len(arches)]
		r := Regs{Arch: a, Words: make([]uint64, len(raw)/8)}
		for i := range r.Words {
			r.Words[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		orig := r.Clone()
		s := Decode(r, insn)
		if s.Errno != 0 && (!s.InSyscall || !isRestartCode(int64(s.Errno)) || s.Code == "") {
			t.Fatalf("Errno %d outside a syscall or not a restart code: %+v", s.Errno, s)
		}
		if !s.InSyscall && s.Nr != -1 {
			t.Fatalf("Nr %d outside a syscall", s.Nr)
		}
		if s.AlreadyRestarted && s.Errno != 0 {
			t.Fatalf("already restarted but Errno %d", s.Errno)
		}
		for _, h := range []Handler{NoHandler, HandlerRestart, HandlerNoRestart} {
			_ = s.OnResume(h)
			_ = s.Explain(h)
		}
		_ = s.Restore()
		for _, p := range []sessions.Policy{sessions.PolicyNone, sessions.PolicyNaive, sessions.PolicyCorrect} {
			out := ApplyPolicy(r, s, p)
			if len(out.Words) != len(r.Words) {
				t.Fatalf("ApplyPolicy(%s) changed the word count %d -> %d", p, len(r.Words), len(out.Words))
			}
			if p == sessions.PolicyNone && !slices.Equal(out.Words, r.Words) {
				t.Fatalf("PolicyNone changed the registers")
			}
		}
		if !slices.Equal(orig.Words, r.Words) {
			t.Fatalf("input modified")
		}
		_ = r.Named()
		_, _ = SyscallResult(r)
		_ = SetupSyscall(r, 0x1000, 39, 1, 2, 3, 4, 5, 6, 7)
		for _, in := range Disasm(a, insn, r.PC(), 64) {
			if in.Len <= 0 || len(in.Bytes) != in.Len {
				t.Fatalf("bad Inst %+v", in)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	cs := append(append(amd64Cases(), ppcCases()...), arm64Cases()...)
	for i := 0; b.Loop(); i++ {
		c := cs[i%len(cs)]
		s := Decode(c.regs, c.insn)
		_ = s.OnResume(NoHandler)
		_ = ApplyPolicy(c.regs, s, sessions.PolicyCorrect)
	}
}
