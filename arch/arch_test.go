package arch

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/crashtui/crashtui/sessions"
	"golang.org/x/sys/unix"
)

func TestHost(t *testing.T) {
	if string(Host()) != runtime.GOARCH {
		t.Errorf("Host = %s, runtime.GOARCH = %s", Host(), runtime.GOARCH)
	}
}

// The host's unix.PtraceRegs must have exactly NumWords(Host()) words: tracer converts it
// word by word.
func TestNumWordsMatchesHostPtraceRegs(t *testing.T) {
	n := NumWords(Host())
	if n == 0 {
		t.Skipf("crashtui does not support %s", Host())
	}
	if got := int(unsafe.Sizeof(unix.PtraceRegs{}) / 8); got != n {
		t.Errorf("unix.PtraceRegs on %s has %d words, NumWords says %d", Host(), got, n)
	}
}

func TestAccessors(t *testing.T) {
	for _, c := range []struct {
		a          Arch
		pc, sp     int
		pcN, spN   string
		extraNames map[int]string
	}{
		{AMD64, amd64RIP, amd64RSP, "rip", "rsp", map[int]string{amd64OrigRAX: "orig_rax", amd64RAX: "rax", amd64R10: "r10", amd64EFLAGS: "eflags", 26: "gs"}},
		{ARM64, arm64PC, arm64SP, "pc", "sp", map[int]string{0: "x0", 8: "x8", 30: "x30", arm64PSTATE: "pstate"}},
		{PPC64LE, ppcNIP, ppcR1, "nip", "r1", map[int]string{ppcTRAP: "trap", ppcCCR: "ccr", ppcOrigR3: "orig_gpr3", ppcLINK: "link", ppcRESULT: "result", 3: "r3"}},
	} {
		r := Regs{Arch: c.a, Words: make([]uint64, NumWords(c.a))}
		r.Words[c.pc], r.Words[c.sp] = 0x1111, 0x2222
		if r.PC() != 0x1111 || r.SP() != 0x2222 {
			t.Errorf("%s: PC %#x SP %#x", c.a, r.PC(), r.SP())
		}
		cl := r.Clone()
		cl.SetPC(0x3333)
		if r.PC() != 0x1111 || cl.PC() != 0x3333 {
			t.Errorf("%s: Clone shares memory or SetPC failed: %#x %#x", c.a, r.PC(), cl.PC())
		}
		named := r.Named()
		if len(named) != NumWords(c.a) {
			t.Fatalf("%s: Named has %d entries", c.a, len(named))
		}
		seen := map[string]bool{}
		for _, n := range named {
			if seen[n.Name] {
				t.Errorf("%s: duplicate register name %q", c.a, n.Name)
			}
			seen[n.Name] = true
		}
		names := map[int]string{c.pc: c.pcN, c.sp: c.spN}
		for i, n := range c.extraNames {
			names[i] = n
		}
		for i, n := range names {
			if named[i].Name != n {
				t.Errorf("%s: word %d named %q, want %q", c.a, i, named[i].Name, n)
			}
		}
		if v, ok := r.Reg(c.pcN); !ok || v != 0x1111 {
			t.Errorf("%s: Reg(%q) = %#x %v", c.a, c.pcN, v, ok)
		}
	}
	// Short snapshots (a truncated recording) never panic.
	short := Regs{Arch: PPC64LE, Words: []uint64{1, 2}}
	short.SetPC(5)
	if short.PC() != 0 || short.SP() != 2 {
		t.Errorf("short regs: PC %#x SP %#x", short.PC(), short.SP())
	}
	if got := (Regs{Arch: AMD64, Words: make([]uint64, 28)}).Named()[27].Name; got != "word27" {
		t.Errorf("extra word named %q", got)
	}
}

func TestSyscallTables(t *testing.T) {
	for _, c := range []struct {
		a    Arch
		nr   int
		name string
	}{
		{AMD64, 0, "read"}, {AMD64, 39, "getpid"}, {AMD64, 202, "futex"}, {AMD64, 219, "restart_syscall"},
		{AMD64, 230, "clock_nanosleep"}, {AMD64, 310, "process_vm_readv"}, {AMD64, 312, "kcmp"},
		{ARM64, 63, "read"}, {ARM64, 98, "futex"}, {ARM64, 128, "restart_syscall"}, {ARM64, 172, "getpid"}, {ARM64, 272, "kcmp"},
		{PPC64LE, 0, "restart_syscall"}, {PPC64LE, 3, "read"}, {PPC64LE, 162, "nanosleep"}, {PPC64LE, 221, "futex"},
		{PPC64LE, 351, "process_vm_readv"}, {PPC64LE, 354, "kcmp"},
	} {
		if got := SyscallName(c.a, c.nr); got != c.name {
			t.Errorf("SyscallName(%s, %d) = %q, want %q", c.a, c.nr, got, c.name)
		}
		if nr, ok := SyscallNumber(c.a, c.name); !ok || nr != c.nr {
			t.Errorf("SyscallNumber(%s, %q) = %d %v, want %d", c.a, c.name, nr, ok, c.nr)
		}
	}
	for _, nr := range []int{-1, 1 << 20} {
		if got := SyscallName(AMD64, nr); got != "" {
			t.Errorf("SyscallName(amd64, %d) = %q", nr, got)
		}
	}
	if _, ok := SyscallNumber(ARM64, "open"); ok {
		t.Errorf("arm64 has no open(2), only openat")
	}
	if _, ok := SyscallNumber("sparc", "read"); ok {
		t.Errorf("unknown arch has a table")
	}
	// The host table agrees with the kernel numbers x/sys compiled in for this GOARCH.
	if NumWords(Host()) != 0 {
		for name, nr := range map[string]int{"getpid": unix.SYS_GETPID, "futex": unix.SYS_FUTEX, "restart_syscall": unix.SYS_RESTART_SYSCALL, "kcmp": unix.SYS_KCMP} {
			if got, ok := SyscallNumber(Host(), name); !ok || got != nr {
				t.Errorf("host %s: %d, unix.SYS_ says %d", name, got, nr)
			}
		}
	}
}

func TestErrnoName(t *testing.T) {
	for e, want := range map[int]string{
		1: "EPERM", 3: "ESRCH", 4: "EINTR", 14: "EFAULT", 38: "ENOSYS",
		512: "ERESTARTSYS", 513: "ERESTARTNOINTR", 514: "ERESTARTNOHAND", 515: "ENOIOCTLCMD", 516: "ERESTART_RESTARTBLOCK",
		0: "errno 0", 9999: "errno 9999", -3: "errno -3",
	} {
		if got := ErrnoName(e); got != want {
			t.Errorf("ErrnoName(%d) = %q, want %q", e, got, want)
		}
	}
	if ErrnoName(int(unix.EAGAIN)) != "EAGAIN" {
		t.Errorf("EAGAIN named %q", ErrnoName(int(unix.EAGAIN)))
	}
}

func TestWritableMask(t *testing.T) {
	for _, c := range []struct {
		a    Arch
		i    int
		want uint64
	}{
		{AMD64, amd64RAX, ^uint64(0)}, {AMD64, amd64OrigRAX, ^uint64(0)}, {AMD64, amd64EFLAGS, 0x50dd5}, {AMD64, 27, 0},
		{ARM64, arm64PC, ^uint64(0)}, {ARM64, -1, 0},
		{PPC64LE, ppcR3, ^uint64(0)}, {PPC64LE, ppcOrigR3, ^uint64(0)}, {PPC64LE, ppcCCR, ^uint64(0)},
		{PPC64LE, ppcTRAP, ^uint64(0x11)}, {PPC64LE, ppcMSR, 0x600}, {PPC64LE, ppcRESULT, 0}, {PPC64LE, ppcSOFTE, 0},
	} {
		if got := WritableMask(c.a, c.i); got != c.want {
			t.Errorf("WritableMask(%s, %s) = %#x, want %#x", c.a, RegName(c.a, c.i), got, c.want)
		}
	}
	// Every word a restore policy or SetupSyscall changes must be writable, or the simulated
	// restore would silently not happen.
	for _, c := range append(append(amd64Cases(), ppcCases()...), arm64Cases()...) {
		s := Decode(c.regs, c.insn)
		for _, out := range []Regs{ApplyPolicy(c.regs, s, sessions.PolicyNaive), ApplyPolicy(c.regs, s, sessions.PolicyCorrect), SetupSyscall(c.regs, 0x1000, 1, 2, 3)} {
			for i := range out.Words {
				if changed := out.Words[i] ^ c.regs.Words[i]; changed&^WritableMask(c.regs.Arch, i) != 0 {
					t.Errorf("%s: word %s changes bits %#x that ptrace cannot write", c.name, RegName(c.regs.Arch, i), changed&^WritableMask(c.regs.Arch, i))
				}
			}
		}
	}
}
