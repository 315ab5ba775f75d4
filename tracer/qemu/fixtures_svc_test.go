package qemu_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/qemu"
)

// arm64Fixture is one testdata/arm64_*.json record, decoded.
type arm64Fixture struct {
	rec   qemu.RegRecord
	words []uint64
	insn  []byte
	arg0  uint64
	info  []byte // raw struct ptrace_syscall_info
}

func loadARM64Fixture(t *testing.T, f string) arm64Fixture {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var x arm64Fixture
	if err := json.Unmarshal(b, &x.rec); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	if x.words, err = x.rec.Uint64s(); err != nil {
		t.Fatal(err)
	}
	if x.insn, err = x.rec.Bytes(); err != nil {
		t.Fatal(err)
	}
	if x.arg0, err = strconv.ParseUint(x.rec.Arg0, 0, 64); err != nil {
		t.Fatalf("arg0 %q: %v", x.rec.Arg0, err)
	}
	if x.info, err = hex.DecodeString(x.rec.SyscallInfo); err != nil {
		t.Fatalf("syscall_info %q: %v", x.rec.SyscallInfo, err)
	}
	if x.rec.Arch != "arm64" || len(x.words) != arch.NumWords(arch.ARM64) || len(x.insn) != 4 || len(x.info) < 24 {
		t.Fatalf("%s: arch %q, %d words, %d insn bytes, %d syscall info bytes; want arm64, %d, 4, >= 24",
			f, x.rec.Arch, len(x.words), len(x.insn), len(x.info), arch.NumWords(arch.ARM64))
	}
	return x
}

// TestARM64Fixtures decodes, on any host, what a real arm64 kernel (Debian 6.1 under
// qemu-system-aarch64 -M virt -cpu max) gave for a thread blocked in read or nanosleep
// entered with svc #0, recorded by
// `go run ./tracer/qemu/cmd/arm64-test -record tracer/qemu/testdata`:
//
//   - arm64_max_svc_<call>.json: the PTRACE_INTERRUPT stop. do_signal already rewound:
//     pc on the svc, x0 = orig_x0, x8 = nr; PTRACE_GET_SYSCALL_INFO says op NONE (24
//     bytes: no nr, no rval), so nothing at this stop holds the ERESTART code.
//   - arm64_max_svc_<call>_exit.json: the syscall-exit-stop (PTRACE_SYSCALL, then
//     PTRACE_INTERRUPT) of the same call, before do_signal: x0 = -errno, pc past the svc,
//     GET_SYSCALL_INFO op EXIT with rval = -errno (x8 is 128 for nanosleep: it was
//     restarted through restart_syscall before it blocked again). The record's errno is
//     the code; RestartState.WithErrno carries it over to the rewound stop.
func TestARM64Fixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/arm64_*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no arm64 fixtures in testdata: %v", err)
	}
	const x0, x8, sp, pc = 0, 8, 31, 32
	interrupt := map[string]arm64Fixture{}
	exitRval := map[string]int64{}
	for _, f := range files {
		x := loadARM64Fixture(t, f)
		w, info := x.words, x.info
		le := binary.LittleEndian
		wantNr, wantErrno := 63, arch.ERESTARTSYS
		if x.rec.Call == "nanosleep" {
			wantNr, wantErrno = 101, arch.ERESTART_RESTARTBLOCK
		}
		if le.Uint32(info[4:]) != unix.AUDIT_ARCH_AARCH64 || le.Uint64(info[8:]) != w[pc] || le.Uint64(info[16:]) != w[sp] {
			t.Errorf("%s: syscall info arch %#x ip %#x sp %#x, want AARCH64, pc %#x, sp %#x", f, le.Uint32(info[4:]), le.Uint64(info[8:]), le.Uint64(info[16:]), w[pc], w[sp])
		}
		regs := arch.Regs{Arch: arch.ARM64, Words: w}
		st := arch.Decode(regs, x.insn)
		switch x.rec.Stop {
		case "interrupt":
			interrupt[x.rec.Call] = x
			if le.Uint32(x.insn) != 0xd4000001 || w[x0] != x.arg0 || w[x8] != uint64(wantNr) {
				t.Errorf("%s: word at pc %#x, x0 %#x, x8 %d; want svc #0, arg0 %#x, %d", f, le.Uint32(x.insn), w[x0], w[x8], x.arg0, wantNr)
			}
			if info[0] != unix.PTRACE_SYSCALL_INFO_NONE || x.rec.SyscallInfoLen != 24 {
				t.Errorf("%s: syscall info op %d size %d, want NONE and 24 (nothing about the syscall)", f, info[0], x.rec.SyscallInfoLen)
			}
			if !st.InSyscall || st.Insn != "svc" || !st.InsnConfirmed || st.InsnLen != 4 || st.Nr != wantNr ||
				st.Syscall != x.rec.Call || st.Args[0] != x.arg0 || st.Errno != 0 || st.Code != "" || st.Note == "" {
				t.Errorf("%s: Decode = %+v; want in %s (nr %d, arg0 %#x) via svc, errno lost (0), a Note", f, st, x.rec.Call, wantNr, x.arg0)
			}
			if a := st.OnResume(arch.NoHandler); a != arch.ActRestart {
				t.Errorf("%s: OnResume(no handler) = %s, want restart", f, a)
			}
			if a := st.Restore(); a != arch.ActNone {
				t.Errorf("%s: Restore = %s, want none (the kernel rewound before the stop)", f, a)
			}
			// Every policy writes back the registers as they are (the guest test saw the
			// program then read its byte / finish its sleep under all three).
			for _, p := range []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNone, sessions.PolicyNaive} {
				out := arch.ApplyPolicy(regs, st, p)
				for i := range w {
					if out.Words[i] != w[i] {
						t.Errorf("%s: ApplyPolicy(%s) changed %s %#x -> %#x", f, p, arch.RegName(arch.ARM64, i), w[i], out.Words[i])
					}
				}
			}
		case "exit":
			rval := int64(le.Uint64(info[24:]))
			exitRval[x.rec.Call] = rval
			if info[0] != unix.PTRACE_SYSCALL_INFO_EXIT || len(info) < 33 || info[32] != 1 || rval != -int64(wantErrno) || x.rec.Errno != wantErrno {
				t.Errorf("%s: syscall info op %d rval %d (record errno %d), want EXIT, is_error, rval %d", f, info[0], rval, x.rec.Errno, -wantErrno)
			}
			if int64(w[x0]) != -int64(wantErrno) {
				t.Errorf("%s: x0 = %d at the syscall-exit-stop, want %d (not rewound yet)", f, int64(w[x0]), -wantErrno)
			}
			if x.rec.Call == "nanosleep" && w[x8] != 128 {
				t.Errorf("%s: x8 = %d, want 128 (restart_syscall)", f, w[x8])
			}
			// pc is past the svc: the word there is not an svc, so Decode cannot call it
			// a rewound syscall.
			if st.InSyscall || le.Uint32(x.insn) == 0xd4000001 {
				t.Errorf("%s: word at pc %#x, Decode %+v; want pc past the svc, not InSyscall", f, le.Uint32(x.insn), st)
			}
		default:
			t.Errorf("%s: unknown stop %q", f, x.rec.Stop)
		}
	}
	for _, c := range []struct {
		call string
		act  arch.Action
	}{{"read", arch.ActRestart}, {"nanosleep", arch.ActRestartSyscall}} {
		x, ok := interrupt[c.call]
		rval, ok2 := exitRval[c.call]
		if !ok || !ok2 {
			t.Errorf("no interrupt and exit fixtures for %s", c.call)
			continue
		}
		st := arch.Decode(arch.Regs{Arch: arch.ARM64, Words: x.words}, x.insn).WithErrno(int(-rval))
		if st.Errno != int(-rval) || st.Code != arch.ErrnoName(int(-rval)) || st.OnResume(arch.NoHandler) != c.act || st.Restore() != arch.ActNone {
			t.Errorf("%s: WithErrno(%d) = %+v, on resume %s, restore %s; want %s, none", c.call, -rval, st, st.OnResume(arch.NoHandler), st.Restore(), c.act)
		}
	}
}
