package arch

import "testing"

func TestInjectionRestore(t *testing.T) {
	ppc := func(trap uint64) Regs {
		r := Regs{Arch: PPC64LE, Words: make([]uint64, NumWords(PPC64LE))}
		r.set(ppcTRAP, trap)
		return r
	}
	for _, tc := range []struct {
		trap, want uint64
	}{
		{0xc00, 0xc00},   // a pending restart is re-armed unchanged
		{0x3000, 0x3000}, // scv likewise
		{0xc01, 0x001},   // already restarted (5.13+): no second rewind
		{0xc10, 0x010},   // already restarted (5.8-5.12)
		{0x500, 0x500},   // not a syscall
	} {
		if got := InjectionRestore(ppc(tc.trap)).word(ppcTRAP); got != tc.want {
			t.Errorf("trap %#x: restore writes %#x, want %#x", tc.trap, got, tc.want)
		}
	}
	amd := Regs{Arch: AMD64, Words: make([]uint64, NumWords(AMD64))}
	amd.set(amd64OrigRAX, 0)
	if got := InjectionRestore(amd); got.word(amd64OrigRAX) != 0 {
		t.Errorf("amd64 registers changed")
	}
}
