package arch

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// Fixtures are raw register words as the kernel reports them at PTRACE_EVENT_STOP
// (kernel.md B.2; ppc64le rows from the real POWER9/POWER10 kernel in ppc64le-qemu.md).

func regsWith(a Arch, set map[int]uint64) Regs {
	r := Regs{Arch: a, Words: make([]uint64, NumWords(a))}
	for i, v := range set {
		r.Words[i] = v
	}
	return r
}

// edit returns a copy of r with the given words changed: the expected result of a policy.
func edit(r Regs, set map[int]uint64) Regs {
	out := r.Clone()
	for i, v := range set {
		out.Words[i] = v
	}
	return out
}

func neg(e int64) uint64 { return uint64(-e) }

func le32(w uint32) []byte { return binary.LittleEndian.AppendUint32(nil, w) }

var allHandlers = []Handler{NoHandler, HandlerRestart, HandlerNoRestart}

type restartCase struct {
	name string
	regs Regs
	insn []byte

	inSyscall bool
	nr        int
	syscall   string
	insnName  string
	confirmed bool
	errno     int
	code      string
	already   bool
	wantNote  bool
	arg0      uint64

	onResume [3]Action // NoHandler, HandlerRestart, HandlerNoRestart
	restore  Action
	naive    Regs
	correct  Regs
}

const (
	amd64PC  = 0x7f0000401002 // just after a syscall at 0x...1000
	ppcNip   = 0x7fff80001004 // just after an sc/scv at 0x...1000
	ppcSO    = 0x10000000
	ppcCCRlo = 0x04000082 // unrelated CR fields, must survive the fix-ups
)

func amd64Cases() []restartCase {
	var cs []restartCase
	syscallBytes := []byte{0x0f, 0x05}
	// read(3, buf, 100) interrupted with each restart code.
	for _, tc := range []struct {
		errno    int
		code     string
		onResume [3]Action
		restore  Action
	}{
		{512, "ERESTARTSYS", [3]Action{ActRestart, ActRestart, ActEINTR}, ActRewind},
		{513, "ERESTARTNOINTR", [3]Action{ActRestart, ActRestart, ActRestart}, ActRewind},
		{514, "ERESTARTNOHAND", [3]Action{ActRestart, ActEINTR, ActEINTR}, ActRewind},
		{516, "ERESTART_RESTARTBLOCK", [3]Action{ActRestartSyscall, ActEINTR, ActEINTR}, ActEINTR},
	} {
		nr := 0 // read
		if tc.errno == ERESTART_RESTARTBLOCK {
			nr = 230 // clock_nanosleep returns ERESTART_RESTARTBLOCK
		}
		r := regsWith(AMD64, map[int]uint64{
			amd64RIP: amd64PC, amd64OrigRAX: uint64(nr), amd64RAX: neg(int64(tc.errno)),
			amd64RDI: 3, amd64RSI: 0x7ffc0000, amd64RDX: 100, amd64R10: 7, amd64EFLAGS: 0x246, amd64RSP: 0x7ffd0000,
		})
		c := restartCase{
			name: "amd64 " + tc.code, regs: r, insn: syscallBytes,
			inSyscall: true, nr: nr, syscall: SyscallName(AMD64, nr), insnName: "syscall", confirmed: true,
			errno: tc.errno, code: tc.code, arg0: 3,
			onResume: tc.onResume, restore: tc.restore,
			naive: edit(r, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
		}
		if tc.restore == ActRewind {
			c.correct = edit(r, map[int]uint64{amd64RIP: amd64PC - 2, amd64RAX: uint64(nr), amd64OrigRAX: ^uint64(0)})
		} else {
			c.correct = edit(r, map[int]uint64{amd64RAX: neg(4), amd64OrigRAX: ^uint64(0)})
		}
		cs = append(cs, c)
	}

	notIn := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: ^uint64(0), amd64RAX: neg(512)})
	cs = append(cs, restartCase{
		name: "amd64 orig_rax -1 (not in a syscall; rax=-512 is just data)", regs: notIn, insn: syscallBytes,
		nr: -1, onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
		naive: notIn, correct: notIn,
	})

	done := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: 1, amd64RAX: 5, amd64RDI: 1})
	cs = append(cs, restartCase{
		name: "amd64 write completed (rax=5)", regs: done, insn: syscallBytes,
		inSyscall: true, nr: 1, syscall: "write", insnName: "syscall", confirmed: true, arg0: 1,
		onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
		naive:   edit(done, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
		correct: edit(done, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
	})

	ioctl := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: 16, amd64RAX: neg(ENOIOCTLCMD)})
	cs = append(cs, restartCase{
		name: "amd64 -515 ENOIOCTLCMD is not a restart code", regs: ioctl, insn: syscallBytes,
		inSyscall: true, nr: 16, syscall: "ioctl", insnName: "syscall", confirmed: true,
		onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
		naive:   edit(ioctl, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
		correct: edit(ioctl, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
	})

	int80 := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: 3, amd64RAX: neg(512), amd64RBX: 0})
	cs = append(cs, restartCase{
		name: "amd64 int $0x80", regs: int80, insn: []byte{0x90, 0xcd, 0x80},
		inSyscall: true, nr: 3, syscall: "", insnName: "int80", confirmed: true, errno: 512, code: "ERESTARTSYS", wantNote: true, // i386 read, not amd64 close
		onResume: [3]Action{ActRestart, ActRestart, ActEINTR}, restore: ActRewind,
		naive:   edit(int80, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
		correct: edit(int80, map[int]uint64{amd64RIP: amd64PC - 2, amd64RAX: 3, amd64OrigRAX: ^uint64(0)}),
	})

	moved := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: 0, amd64RAX: neg(513)})
	cs = append(cs, restartCase{
		name: "amd64 bytes before rip are not a syscall", regs: moved, insn: []byte{0x48, 0x89},
		inSyscall: true, nr: 0, syscall: "read", errno: 513, code: "ERESTARTNOINTR", wantNote: true,
		onResume: [3]Action{ActRestart, ActRestart, ActRestart}, restore: ActRewind,
		naive:   edit(moved, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
		correct: edit(moved, map[int]uint64{amd64RIP: amd64PC - 2, amd64RAX: 0, amd64OrigRAX: ^uint64(0)}),
	})

	unread := regsWith(AMD64, map[int]uint64{amd64RIP: amd64PC, amd64OrigRAX: 0, amd64RAX: neg(512)})
	cs = append(cs, restartCase{
		name: "amd64 bytes unreadable: syscall assumed, unconfirmed", regs: unread, insn: nil,
		inSyscall: true, nr: 0, syscall: "read", insnName: "syscall", errno: 512, code: "ERESTARTSYS",
		onResume: [3]Action{ActRestart, ActRestart, ActEINTR}, restore: ActRewind,
		naive:   edit(unread, map[int]uint64{amd64OrigRAX: ^uint64(0)}),
		correct: edit(unread, map[int]uint64{amd64RIP: amd64PC - 2, amd64RAX: 0, amd64OrigRAX: ^uint64(0)}),
	})
	return cs
}

func ppcCases() []restartCase {
	sc, scv := le32(insnPPCSc), le32(insnPPCScv0)
	var cs []restartCase

	// ppc64le-qemu.md row 1: sc read, trap 0xc00, r0 3, r3 +512, SO, orig_gpr3 3.
	scRead := regsWith(PPC64LE, map[int]uint64{
		ppcNIP: ppcNip, ppcTRAP: 0xc00, ppcR0: 3, ppcR3: 512, ppcCCR: ppcCCRlo | ppcSO, ppcOrigR3: 3,
		4: 0x7fffc000, 5: 100, ppcLINK: 0x7fff80002000, ppcR1: 0x7ffff000,
	})
	cs = append(cs, restartCase{
		name: "ppc64le sc read +512 SO", regs: scRead, insn: sc,
		inSyscall: true, nr: 3, syscall: "read", insnName: "sc", confirmed: true, errno: 512, code: "ERESTARTSYS", arg0: 3,
		onResume: [3]Action{ActRestart, ActRestart, ActEINTR}, restore: ActRewind,
		naive:   edit(scRead, map[int]uint64{ppcTRAP: 0}),
		correct: edit(scRead, map[int]uint64{ppcNIP: ppcNip - 4, ppcR3: 3, ppcTRAP: 0}),
	})

	// Row 2: scv 0 read, trap 0x3000, r3 -512, no SO, link == nip (scv overwrites LR).
	scvRead := regsWith(PPC64LE, map[int]uint64{
		ppcNIP: ppcNip, ppcTRAP: 0x3000, ppcR0: 3, ppcR3: neg(512), ppcCCR: ppcCCRlo, ppcOrigR3: 3,
		4: 0x7fffc000, 5: 100, ppcLINK: ppcNip,
	})
	cs = append(cs, restartCase{
		name: "ppc64le scv read -512 (seed 002)", regs: scvRead, insn: scv,
		inSyscall: true, nr: 3, syscall: "read", insnName: "scv", confirmed: true, errno: 512, code: "ERESTARTSYS", arg0: 3,
		onResume: [3]Action{ActRestart, ActRestart, ActEINTR}, restore: ActRewind,
		naive:   edit(scvRead, map[int]uint64{ppcTRAP: 0}),
		correct: edit(scvRead, map[int]uint64{ppcNIP: ppcNip - 4, ppcR3: 3, ppcTRAP: 0}),
	})

	// Rows 3 and 4: nanosleep 516. CRIU returns EINTR: sc r3=4 with SO kept, scv r3=-4.
	const req = 0x7fffe000
	scSleep := regsWith(PPC64LE, map[int]uint64{
		ppcNIP: ppcNip, ppcTRAP: 0xc00, ppcR0: 162, ppcR3: 516, ppcCCR: ppcCCRlo | ppcSO, ppcOrigR3: req, 4: 0,
	})
	cs = append(cs, restartCase{
		name: "ppc64le sc nanosleep +516 SO", regs: scSleep, insn: sc,
		inSyscall: true, nr: 162, syscall: "nanosleep", insnName: "sc", confirmed: true, errno: 516, code: "ERESTART_RESTARTBLOCK", arg0: req,
		onResume: [3]Action{ActRestartSyscall, ActEINTR, ActEINTR}, restore: ActEINTR,
		naive:   edit(scSleep, map[int]uint64{ppcTRAP: 0}),
		correct: edit(scSleep, map[int]uint64{ppcR3: 4, ppcTRAP: 0}),
	})
	scvSleep := regsWith(PPC64LE, map[int]uint64{
		ppcNIP: ppcNip, ppcTRAP: 0x3000, ppcR0: 162, ppcR3: neg(516), ppcCCR: ppcCCRlo, ppcOrigR3: req, ppcLINK: ppcNip,
	})
	cs = append(cs, restartCase{
		name: "ppc64le scv nanosleep -516", regs: scvSleep, insn: scv,
		inSyscall: true, nr: 162, syscall: "nanosleep", insnName: "scv", confirmed: true, errno: 516, code: "ERESTART_RESTARTBLOCK", arg0: req,
		onResume: [3]Action{ActRestartSyscall, ActEINTR, ActEINTR}, restore: ActEINTR,
		naive:   edit(scvSleep, map[int]uint64{ppcTRAP: 0}),
		correct: edit(scvSleep, map[int]uint64{ppcR3: neg(4), ppcTRAP: 0}),
	})

	// sc with SO set but an EINTR-less scv-style value, and sc returning 512 bytes (no SO):
	// success, not a restart code.
	scOK := regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip, ppcTRAP: 0xc00, ppcR0: 3, ppcR3: 512, ppcCCR: ppcCCRlo, ppcOrigR3: 3})
	cs = append(cs, restartCase{
		name: "ppc64le sc read returned 512 bytes (no SO)", regs: scOK, insn: sc,
		inSyscall: true, nr: 3, syscall: "read", insnName: "sc", confirmed: true, arg0: 3,
		onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
		naive: edit(scOK, map[int]uint64{ppcTRAP: 0}), correct: edit(scOK, map[int]uint64{ppcTRAP: 0}),
	})

	// Already restarted: the kernel ran check_syscall_restart (r3=orig_gpr3, nip rewound, SO
	// left set) and flagged trap. With arg0 == 512 the registers look exactly like an
	// interrupted sc to a decoder that masks ~0xf (CRIU): sig_sc_double_restart.c.
	for _, trap := range []uint64{0xc01, 0xc10} {
		r := regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip - 4, ppcTRAP: trap, ppcR0: 3, ppcR3: 512, ppcCCR: ppcCCRlo | ppcSO, ppcOrigR3: 512})
		cs = append(cs, restartCase{
			name: "ppc64le sc already restarted trap " + hex(trap), regs: r, insn: le32(0x60000000), // nip-4 is whatever precedes the sc
			inSyscall: true, nr: 3, syscall: "read", insnName: "sc", already: true, wantNote: true, arg0: 512,
			onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
			// trap=0 keeps the flag bits, which the kernel would keep anyway (set_trap).
			naive: edit(r, map[int]uint64{ppcTRAP: trap & 0x11}), correct: edit(r, map[int]uint64{ppcTRAP: trap & 0x11}),
		})
	}
	scvDone := regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip - 4, ppcTRAP: 0x3001, ppcR0: 221, ppcR3: 0x1000, ppcOrigR3: 0x1000})
	cs = append(cs, restartCase{
		name: "ppc64le scv futex already restarted trap 0x3001", regs: scvDone, insn: nil,
		inSyscall: true, nr: 221, syscall: "futex", insnName: "scv", already: true, wantNote: true, arg0: 0x1000,
		onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
		naive: edit(scvDone, map[int]uint64{ppcTRAP: 1}), correct: edit(scvDone, map[int]uint64{ppcTRAP: 1}),
	})

	// Not in a syscall: decrementer interrupt 0x900; r3/SO are user data.
	dec := regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip, ppcTRAP: 0x900, ppcR0: 3, ppcR3: 512, ppcCCR: ppcSO})
	cs = append(cs, restartCase{
		name: "ppc64le not in a syscall (trap 0x900)", regs: dec, insn: sc,
		nr: -1, onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone,
		naive: edit(dec, map[int]uint64{ppcTRAP: 0}), correct: edit(dec, map[int]uint64{ppcTRAP: 0}),
	})
	// A trap of 0 (older kernels after a restart, or a restorer already wrote it).
	zero := regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip, ppcR3: neg(512)})
	cs = append(cs, restartCase{
		name: "ppc64le trap 0", regs: zero, insn: scv,
		nr: -1, onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone, naive: zero, correct: zero,
	})
	// Trap says sc, but the word at nip-4 is not sc: the pc was moved.
	moved := regsWith(PPC64LE, map[int]uint64{ppcNIP: ppcNip, ppcTRAP: 0xc00, ppcR0: 3, ppcR3: 514, ppcCCR: ppcSO, ppcOrigR3: 3})
	cs = append(cs, restartCase{
		name: "ppc64le sc with moved nip", regs: moved, insn: scv,
		inSyscall: true, nr: 3, syscall: "read", insnName: "sc", errno: 514, code: "ERESTARTNOHAND", wantNote: true, arg0: 3,
		onResume: [3]Action{ActRestart, ActEINTR, ActEINTR}, restore: ActRewind,
		naive:   edit(moved, map[int]uint64{ppcTRAP: 0}),
		correct: edit(moved, map[int]uint64{ppcNIP: ppcNip - 4, ppcR3: 3, ppcTRAP: 0}),
	})
	return cs
}

func arm64Cases() []restartCase {
	const pc = 0xffff80001000
	r := regsWith(ARM64, map[int]uint64{arm64PC: pc, 8: 63, 0: 3, 1: 0xffffc000, 2: 100, arm64SP: 0xfffff000})
	var cs []restartCase
	cs = append(cs, restartCase{
		name: "arm64 pc at svc (already rewound; code gone)", regs: r, insn: le32(insnARM64Svc0),
		inSyscall: true, nr: 63, syscall: "read", insnName: "svc", confirmed: true, wantNote: true, arg0: 3,
		onResume: [3]Action{ActRestart, ActUnknown, ActUnknown}, restore: ActNone,
		naive: r, correct: r,
	})
	other := regsWith(ARM64, map[int]uint64{arm64PC: pc, 8: 63, 0: neg(512)})
	cs = append(cs, restartCase{
		name: "arm64 word at pc is not svc", regs: other, insn: le32(0xd503201f), // nop
		nr: -1, wantNote: true,
		onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone, naive: other, correct: other,
	})
	cs = append(cs, restartCase{
		name: "arm64 word at pc unreadable", regs: other, insn: nil,
		nr: -1, wantNote: true,
		onResume: [3]Action{ActNone, ActNone, ActNone}, restore: ActNone, naive: other, correct: other,
	})
	return cs
}

func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

func TestRestartFixtures(t *testing.T) {
	var cs []restartCase
	cs = append(cs, amd64Cases()...)
	cs = append(cs, ppcCases()...)
	cs = append(cs, arm64Cases()...)
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			before := c.regs.Clone()
			s := Decode(c.regs, c.insn)
			if s.Arch != c.regs.Arch || s.InSyscall != c.inSyscall || s.Nr != c.nr || s.Syscall != c.syscall ||
				s.Insn != c.insnName || s.InsnConfirmed != c.confirmed || s.Errno != c.errno || s.Code != c.code ||
				s.AlreadyRestarted != c.already {
				t.Errorf("Decode = %+v\nwant in=%v nr=%d %q insn=%q confirmed=%v errno=%d %q already=%v",
					s, c.inSyscall, c.nr, c.syscall, c.insnName, c.confirmed, c.errno, c.code, c.already)
			}
			if (s.Note != "") != c.wantNote {
				t.Errorf("Note = %q, want note: %v", s.Note, c.wantNote)
			}
			if c.inSyscall && s.Args[0] != c.arg0 {
				t.Errorf("Args[0] = %#x, want %#x", s.Args[0], c.arg0)
			}
			if s.InSyscall && s.InsnLen == 0 {
				t.Errorf("InsnLen = 0 in a syscall")
			}
			if c.regs.Arch == PPC64LE && s.Trap != c.regs.Words[ppcTRAP] {
				t.Errorf("Trap = %#x, want raw %#x", s.Trap, c.regs.Words[ppcTRAP])
			}
			for i, h := range allHandlers {
				if got := s.OnResume(h); got != c.onResume[i] {
					t.Errorf("OnResume(%v) = %s, want %s", h, got, c.onResume[i])
				}
				if s.Explain(h) == "" {
					t.Errorf("Explain(%v) is empty", h)
				}
			}
			if got := s.Restore(); got != c.restore {
				t.Errorf("Restore = %s, want %s", got, c.restore)
			}
			for _, p := range []struct {
				p    sessions.Policy
				want Regs
			}{{sessions.PolicyNone, before}, {sessions.PolicyNaive, c.naive}, {sessions.PolicyCorrect, c.correct}} {
				got := ApplyPolicy(c.regs, s, p.p)
				if got.Arch != p.want.Arch || !slices.Equal(got.Words, p.want.Words) {
					t.Errorf("ApplyPolicy(%s) changed %v", p.p, diffWords(p.want, got))
				}
			}
			if !slices.Equal(c.regs.Words, before.Words) {
				t.Errorf("ApplyPolicy modified its input: %v", diffWords(before, c.regs))
			}
		})
	}
}

// diffWords lists the words where got differs from want, by kernel name.
func diffWords(want, got Regs) []string {
	var d []string
	for i := 0; i < max(len(want.Words), len(got.Words)); i++ {
		var w, g uint64
		if i < len(want.Words) {
			w = want.Words[i]
		}
		if i < len(got.Words) {
			g = got.Words[i]
		}
		if w != g {
			d = append(d, fmt.Sprintf("%s: got %#x want %#x", RegName(want.Arch, i), g, w))
		}
	}
	return d
}

func TestExplainNamesTheRule(t *testing.T) {
	for _, c := range []struct {
		name string
		regs Regs
		insn []byte
		h    Handler
		want []string
	}{
		{"amd64 512 no handler", amd64Cases()[0].regs, []byte{0x0f, 0x05}, NoHandler,
			[]string{"arch_do_signal_or_restart", "rip-=2", "rax=-512", "ERESTARTSYS"}},
		{"amd64 516 handler", amd64Cases()[3].regs, []byte{0x0f, 0x05}, HandlerRestart,
			[]string{"EINTR", "restart_block", "rax=-4"}},
		{"ppc scv read", ppcCases()[1].regs, le32(insnPPCScv0), NoHandler,
			[]string{"check_syscall_restart", "nip-=4", "r3=-512", "59fcfa80"}},
		{"ppc sc read", ppcCases()[0].regs, le32(insnPPCSc), HandlerNoRestart,
			[]string{"check_syscall_restart", "r3=4 with CR0.SO", "errno 512 with SO"}},
		{"ppc already", ppcCases()[5].regs, nil, NoHandler,
			[]string{"norestart", "sig_sc_double_restart"}},
		{"arm64", arm64Cases()[0].regs, le32(insnARM64Svc0), HandlerNoRestart,
			[]string{"do_signal", "cannot be told"}},
	} {
		got := Decode(c.regs, c.insn).Explain(c.h)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: Explain = %q, missing %q", c.name, got, w)
			}
		}
	}
}

// arm64 with the code known from elsewhere (PTRACE_GET_SYSCALL_INFO at the syscall-exit-stop).
func TestARM64WithErrno(t *testing.T) {
	r := arm64Cases()[0].regs
	s := Decode(r, le32(insnARM64Svc0))
	for _, c := range []struct {
		errno int
		want  [3]Action
	}{
		{ERESTARTSYS, [3]Action{ActRestart, ActRestart, ActEINTR}},
		{ERESTARTNOINTR, [3]Action{ActRestart, ActRestart, ActRestart}},
		{ERESTARTNOHAND, [3]Action{ActRestart, ActEINTR, ActEINTR}},
		{ERESTART_RESTARTBLOCK, [3]Action{ActRestartSyscall, ActEINTR, ActEINTR}},
	} {
		k := s.WithErrno(c.errno)
		if k.Errno != c.errno || k.Code != ErrnoName(c.errno) {
			t.Errorf("WithErrno(%d) = %d %q", c.errno, k.Errno, k.Code)
		}
		for i, h := range allHandlers {
			if got := k.OnResume(h); got != c.want[i] {
				t.Errorf("errno %d OnResume(%v) = %s, want %s", c.errno, h, got, c.want[i])
			}
		}
		if k.Restore() != ActNone {
			t.Errorf("errno %d Restore = %s, want none (arm64 rewound before the stop)", c.errno, k.Restore())
		}
	}
	if k := s.WithErrno(4); k.Errno != 0 || k.Code != "" {
		t.Errorf("WithErrno(EINTR) kept %d %q", k.Errno, k.Code)
	}
}
