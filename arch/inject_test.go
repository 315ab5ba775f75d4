package arch

import (
	"slices"
	"testing"
)

// TestGuardStartsWithSyscall checks the instruction SetupSyscall points the thread at: the
// guard's first one is the syscall instruction (sc, not scv, on ppc64le: SyscallResult decodes
// sc's convention) that Decode recognises at a restart. A guard is refused for an unknown
// architecture and for a pc its final jump cannot reach.
func TestGuardStartsWithSyscall(t *testing.T) {
	const base = 0x400000
	for _, c := range []struct {
		a    Arch
		want string
		len  int
	}{{AMD64, "syscall", 2}, {PPC64LE, "sc 0", 4}, {ARM64, "svc #0x0", 4}} {
		resume := Regs{Arch: c.a, Words: make([]uint64, NumWords(c.a))}
		resume.SetPC(base + 0x1000)
		g, err := Guard(resume, 0, base)
		if err != nil {
			t.Errorf("%s: Guard: %v", c.a, err)
			continue
		}
		if in := Disasm(c.a, g, base, 1); len(in) != 1 || in[0].Text != c.want || in[0].Len != c.len {
			t.Errorf("%s: the guard starts with %+v, want %q (%d bytes)", c.a, in, c.want, c.len)
			continue
		}
		r := Regs{Arch: c.a, Words: make([]uint64, NumWords(c.a))}
		switch c.a {
		case AMD64:
			r.Words[amd64OrigRAX] = 0
		case PPC64LE:
			r.Words[ppcTRAP] = ppcTrapSc
		}
		if s := Decode(r, g[:c.len]); !s.InsnConfirmed {
			t.Errorf("%s: Decode does not confirm the guard's syscall instruction: %+v", c.a, s)
		}
		if c.a != AMD64 {
			far := resume.Clone()
			far.SetPC(base + 256<<20)
			if _, err := Guard(far, 0, base); err == nil {
				t.Errorf("%s: a guard whose jump cannot reach pc %#x", c.a, far.PC())
			}
		}
	}
	// The instruction words Decode matches byte-exactly are the ones x/arch decodes as syscalls.
	for _, c := range []struct {
		a    Arch
		w    uint32
		want string
	}{{PPC64LE, insnPPCSc, "sc 0"}, {PPC64LE, insnPPCScv0, "scv 0"}, {ARM64, insnARM64Svc0, "svc #0x0"}} {
		if in := Disasm(c.a, le32(c.w), 0, 1); len(in) != 1 || in[0].Text != c.want {
			t.Errorf("%s %#x disassembles to %+v, want %q", c.a, c.w, in, c.want)
		}
	}
	if g, err := Guard(Regs{Arch: "mips"}, 0, base); err == nil {
		t.Errorf("a guard for an unknown arch: % x", g)
	}
}

func TestSetupSyscall(t *testing.T) {
	const stub = 0x400000
	args := []uint64{11, 22, 33, 44, 55, 66}

	// amd64: the thread was interrupted in read with -512 and TF/DF set.
	orig := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: 0, amd64RAX: neg(512), amd64EFLAGS: 0x746, amd64RSP: 0x7ffd0000, amd64RBX: 9})
	got := SetupSyscall(orig, stub, 39, args...)
	want := edit(orig, map[int]uint64{
		amd64RIP: stub, amd64RAX: 39, amd64OrigRAX: ^uint64(0), amd64EFLAGS: 0x246,
		amd64RDI: 11, amd64RSI: 22, amd64RDX: 33, amd64R10: 44, amd64R8: 55, amd64R9: 66,
	})
	if !slices.Equal(got.Words, want.Words) {
		t.Errorf("amd64: %v", diffWords(want, got))
	}
	if s := Decode(got, []byte{0x0f, 0x05}); s.InSyscall || s.OnResume(NoHandler) != ActNone {
		t.Errorf("amd64: injected registers still carry a restart: %+v", s)
	}

	// ppc64le: trap 0x3000 with a pending scv restart; SO set from an earlier sc error.
	orig = regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip, ppcTRAP: 0x3000, ppcR0: 3, ppcR3: neg(512), ppcCCR: ppcCCRlo | ppcSO, ppcOrigR3: 3, ppcR1: 0x7ffff000})
	got = SetupSyscall(orig, stub, 20, 7)
	want = edit(orig, map[int]uint64{
		ppcNIP: stub, ppcR0: 20, ppcR3: 7, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, ppcOrigR3: 7, ppcR12: stub, ppcTRAP: 0, ppcCCR: ppcCCRlo,
	})
	if !slices.Equal(got.Words, want.Words) {
		t.Errorf("ppc64le: %v", diffWords(want, got))
	}
	if s := Decode(got, nil); s.InSyscall {
		t.Errorf("ppc64le: injected registers still look like a syscall: %+v", s)
	}

	// arm64.
	orig = regsWith(ARM64, map[int]uint64{arm64PC: 0xffff1000, 8: 63, 0: 3, arm64SP: 0xfff0})
	got = SetupSyscall(orig, stub, 172, args...)
	want = edit(orig, map[int]uint64{arm64PC: stub, 8: 172, 0: 11, 1: 22, 2: 33, 3: 44, 4: 55, 5: 66})
	if !slices.Equal(got.Words, want.Words) {
		t.Errorf("arm64: %v", diffWords(want, got))
	}
	if orig.Words[0] != 3 {
		t.Errorf("SetupSyscall modified its input")
	}
}

func TestSyscallResult(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     Regs
		ret   int64
		errno int
	}{
		{"amd64 pid", regsWith(AMD64, map[int]uint64{amd64RAX: 1234}), 1234, 0},
		{"amd64 EPERM", regsWith(AMD64, map[int]uint64{amd64RAX: neg(1)}), -1, 1},
		{"amd64 -4095", regsWith(AMD64, map[int]uint64{amd64RAX: neg(4095)}), -4095, 4095},
		{"amd64 -4096 is an address", regsWith(AMD64, map[int]uint64{amd64RAX: neg(4096)}), -4096, 0},
		{"arm64 ESRCH", regsWith(ARM64, map[int]uint64{0: neg(3)}), -3, 3},
		{"arm64 0", regsWith(ARM64, nil), 0, 0},
		{"ppc64le sc EPERM (SO)", regsWith(PPC64LE, map[int]uint64{ppcR3: 1, ppcCCR: ppcSO}), -1, 1},
		{"ppc64le sc 1 (no SO)", regsWith(PPC64LE, map[int]uint64{ppcR3: 1, ppcCCR: ppcCCRlo}), 1, 0},
		{"ppc64le sc ENOSYS", regsWith(PPC64LE, map[int]uint64{ppcR3: 38, ppcCCR: ppcSO | ppcCCRlo}), -38, 38},
	} {
		ret, errno := SyscallResult(c.r)
		if ret != c.ret || errno != c.errno {
			t.Errorf("%s: SyscallResult = %d, %d; want %d, %d", c.name, ret, errno, c.ret, c.errno)
		}
	}
}

func TestRedZone(t *testing.T) {
	for _, c := range []struct {
		a   Arch
		red uint64
	}{{AMD64, 128}, {PPC64LE, 288}, {ARM64, 0}} {
		if got := RedZone(c.a); got != c.red {
			t.Errorf("%s: RedZone = %d, want %d", c.a, got, c.red)
		}
	}
}
