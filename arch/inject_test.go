package arch

import (
	"slices"
	"testing"
)

func TestSyscallStubDisassembles(t *testing.T) {
	for _, c := range []struct {
		a    Arch
		want []string
	}{
		{AMD64, []string{"syscall", "int3", "int3", "int3", "int3", "int3", "int3"}},
		{PPC64LE, []string{"sc 0", "twi 31,r0,0"}},
		{ARM64, []string{"svc #0x0", "brk #0x0"}},
	} {
		stub := SyscallStub(c.a)
		if len(stub) != 8 {
			t.Errorf("%s: stub is %d bytes, want one 8-byte word", c.a, len(stub))
		}
		var got []string
		for _, in := range Disasm(c.a, stub, 0x1000, 16) {
			got = append(got, in.Text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: stub disassembles to %q, want %q", c.a, got, c.want)
		}
		// The syscall instruction in the stub is the one Decode recognises at a restart.
		before := stub[:2]
		if c.a != AMD64 {
			before = stub[:4]
		}
		r := Regs{Arch: c.a, Words: make([]uint64, NumWords(c.a))}
		switch c.a {
		case AMD64:
			r.Words[amd64OrigRAX] = 0
		case PPC64LE:
			r.Words[ppcTRAP] = ppcTrapSc
		}
		if s := Decode(r, before); !s.InsnConfirmed {
			t.Errorf("%s: Decode does not confirm the stub's own syscall instruction: %+v", c.a, s)
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
	if SyscallStub("mips") != nil {
		t.Errorf("stub for an unknown arch")
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
	if s := Decode(got, SyscallStub(AMD64)[:2]); s.InSyscall || s.OnResume(NoHandler) != ActNone {
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

func TestStopPCAndRedZone(t *testing.T) {
	for _, c := range []struct {
		a       Arch
		stopOff uint64
		red     uint64
	}{{AMD64, 3, 128}, {PPC64LE, 4, 288}, {ARM64, 4, 0}} {
		if got := SyscallStopPC(c.a, 0x1000); got != 0x1000+c.stopOff {
			t.Errorf("%s: SyscallStopPC = %#x", c.a, got)
		}
		if got := RedZone(c.a); got != c.red {
			t.Errorf("%s: RedZone = %d", c.a, got)
		}
		// The stop pc is inside the stub, just past the syscall instruction.
		stub := SyscallStub(c.a)
		in := Disasm(c.a, stub, 0x1000, 2)
		if len(in) < 2 || SyscallStopPC(c.a, 0x1000) < in[1].PC || SyscallStopPC(c.a, 0x1000) > in[1].PC+uint64(in[1].Len) {
			t.Errorf("%s: stop pc %#x is not at the trap after the syscall: %+v", c.a, SyscallStopPC(c.a, 0x1000), in)
		}
	}
}
