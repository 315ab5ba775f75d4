package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// peerFilter is the filter demo/access/peer installs with -seccomp.
func peerFilter(t testing.TB, ai ArchInfo) []byte {
	t.Helper()
	prog, err := DenyFilter(ai, ErrnoRet(unix.EPERM), ai.VMReadv, ai.VMWritev, ai.Kcmp, ai.Ptrace)
	if err != nil {
		t.Fatal(err)
	}
	return FilterBytes(prog)
}

func TestEvalSeccompDenyFilter(t *testing.T) {
	for _, ai := range arches {
		t.Run(ai.Name, func(t *testing.T) {
			f := [][]byte{peerFilter(t, ai)}
			for _, tc := range []struct {
				name string
				nr   int
				want Action
			}{
				{"kcmp", ai.Kcmp, Action{Action: ActErrno, Errno: int(unix.EPERM)}},
				{"process_vm_readv", ai.VMReadv, Action{Action: ActErrno, Errno: int(unix.EPERM)}},
				{"process_vm_writev", ai.VMWritev, Action{Action: ActErrno, Errno: int(unix.EPERM)}},
				{"ptrace", ai.Ptrace, Action{Action: ActErrno, Errno: int(unix.EPERM)}},
				{"getpid", ai.Getpid, Action{Action: ActAllow}},
			} {
				got, err := Eval(f, ai.Name, tc.nr, 0, [6]uint64{1, 2})
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if got != tc.want {
					t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				}
			}
			if s := (Action{Action: ActErrno, Errno: 1}).String(); s != "ERRNO(EPERM)" {
				t.Errorf("String = %q", s)
			}
		})
	}
}

func TestEvalSeccompForeignArchKills(t *testing.T) {
	amd, _ := Arch("amd64")
	got, err := Eval([][]byte{peerFilter(t, amd)}, "arm64", 172, 0, [6]uint64{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Action != ActKillProcess || !got.Kills() {
		t.Errorf("amd64 filter on an arm64 syscall: got %v, want KILL_PROCESS", got)
	}
}

func TestEvalSeccompKillAndPrecedence(t *testing.T) {
	ai, _ := Arch("amd64")
	kill, err := DenyFilter(ai, KillRet, ai.Kcmp)
	if err != nil {
		t.Fatal(err)
	}
	trap, _ := DenyFilter(ai, RetTrap, ai.VMReadv)
	e5, _ := DenyFilter(ai, ErrnoRet(unix.EIO), ai.Kcmp, ai.VMReadv)
	e1, _ := DenyFilter(ai, ErrnoRet(unix.EPERM), ai.Kcmp, ai.VMReadv)
	logAll, _ := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: RetLog}})
	big, _ := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: RetErrno | 0xffff}})
	tests := []struct {
		name    string
		filters [][]bpf.RawInstruction
		nr      int
		want    Action
	}{
		{"kill on kcmp", [][]bpf.RawInstruction{kill}, ai.Kcmp, Action{Action: ActKillProcess}},
		{"kill filter allows getpid", [][]bpf.RawInstruction{kill}, ai.Getpid, Action{Action: ActAllow}},
		// seccomp_run_filters keeps the lowest action: KILL beats ERRNO whatever the order.
		{"kill beats errno (older)", [][]bpf.RawInstruction{e1, kill}, ai.Kcmp, Action{Action: ActKillProcess}},
		{"kill beats errno (newer)", [][]bpf.RawInstruction{kill, e1}, ai.Kcmp, Action{Action: ActKillProcess}},
		{"trap beats errno", [][]bpf.RawInstruction{e1, trap}, ai.VMReadv, Action{Action: ActTrap}},
		// Equal actions: the newest filter (index 0) wins, its errno is returned.
		{"newest errno wins", [][]bpf.RawInstruction{e5, e1}, ai.Kcmp, Action{Action: ActErrno, Errno: int(unix.EIO)}},
		{"errno beats log", [][]bpf.RawInstruction{logAll, e1}, ai.Kcmp, Action{Action: ActErrno, Errno: 1}},
		{"log alone", [][]bpf.RawInstruction{logAll}, ai.Kcmp, Action{Action: ActLog}},
		{"errno capped at MAX_ERRNO", [][]bpf.RawInstruction{big}, ai.Kcmp, Action{Action: ActErrno, Errno: maxErrno}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fs [][]byte
			for _, f := range tc.filters {
				fs = append(fs, FilterBytes(f))
			}
			got, err := Eval(fs, "amd64", tc.nr, 0, [6]uint64{})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvalSeccompArgs(t *testing.T) {
	// A filter that refuses kcmp only for KCMP_VM (arg 2 == 1) and reads arg 1's low word:
	// checks the seccomp_data layout (args at offset 16 + 8*i, host byte order).
	ai, _ := Arch("amd64")
	lo := uint32(16 + 8*2)
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		lo += 4
	}
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(ai.Kcmp), SkipFalse: 3},
		bpf.LoadAbsolute{Off: lo, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1 /* KCMP_VM */, SkipFalse: 1},
		bpf.RetConstant{Val: ErrnoRet(unix.EACCES)},
		bpf.RetConstant{Val: RetAllow},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := [][]byte{FilterBytes(prog)}
	if got, _ := Eval(f, "amd64", ai.Kcmp, 0, [6]uint64{10, 20, 1 /* KCMP_VM */}); got.Action != ActErrno || got.Errno != int(unix.EACCES) {
		t.Errorf("KCMP_VM: got %v", got)
	}
	if got, _ := Eval(f, "amd64", ai.Kcmp, 0, [6]uint64{10, 20, 0}); got.Action != ActAllow {
		t.Errorf("KCMP_FILE: got %v", got)
	}
}

func TestEvalSeccompRejectsBadFilters(t *testing.T) {
	for name, f := range map[string][]byte{
		"empty":       {},
		"odd length":  make([]byte, 7),
		"falls off":   FilterBytes([]bpf.RawInstruction{{Op: clsLD | modeIMM, K: 1}}),
		"load beyond": FilterBytes([]bpf.RawInstruction{{Op: clsLD | sizeW | modeABS, K: 64}, {Op: clsRET, K: RetAllow}}),
		"unaligned":   FilterBytes([]bpf.RawInstruction{{Op: clsLD | sizeW | modeABS, K: 2}, {Op: clsRET, K: RetAllow}}),
		"jump past":   FilterBytes([]bpf.RawInstruction{{Op: clsJMP, K: 5}, {Op: clsRET, K: RetAllow}}),
	} {
		if _, err := Eval([][]byte{f}, "amd64", 1, 0, [6]uint64{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Eval(nil, "sparc", 1, 0, [6]uint64{}); err == nil {
		t.Error("unknown arch: no error")
	}
}

// FuzzEvalSeccomp checks the interpreter never panics on arbitrary bytes and, for programs
// built from instructions both support, agrees with golang.org/x/net/bpf's VM (which loads
// big-endian words, so it gets the seccomp_data words byte-swapped).
func FuzzEvalSeccomp(f *testing.F) {
	ai, _ := Arch("amd64")
	f.Add(peerFilter(f, ai), 312, uint64(5))
	f.Add([]byte{6, 0, 0, 0, 0, 0, 0xff, 0x7f}, 39, uint64(0))
	f.Add([]byte{0x20, 0, 1, 0, 4, 0, 0, 0, 0x15, 0, 0, 1, 0x3e, 0, 0, 0xc0, 6, 0, 0, 0, 0, 0, 0, 0}, 1, uint64(7))
	f.Fuzz(func(t *testing.T, raw []byte, nr int, arg uint64) {
		args := [6]uint64{arg, arg >> 7, 3}
		// 1. Arbitrary bytes: an error or an action, never a panic.
		if len(raw) > 0 && len(raw)%8 == 0 {
			_, _ = Eval([][]byte{raw}, "amd64", nr, 0, args)
		}
		// 2. A structured program from the same bytes, compared with x/net/bpf.
		var ins []bpf.Instruction
		for i := 0; i+2 < len(raw) && len(ins) < 64; i += 3 {
			op, v, skip := raw[i]%8, uint32(raw[i+1])|uint32(raw[i+2])<<8, raw[i+2]%4
			switch op {
			case 0:
				ins = append(ins, bpf.LoadAbsolute{Off: uint32(raw[i+1]%16) * 4, Size: 4})
			case 1:
				ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: skip})
			case 2:
				ins = append(ins, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: v, SkipFalse: skip})
			case 3:
				ins = append(ins, bpf.ALUOpConstant{Op: []bpf.ALUOp{bpf.ALUOpAdd, bpf.ALUOpAnd, bpf.ALUOpOr, bpf.ALUOpXor, bpf.ALUOpShiftRight}[raw[i+1]%5], Val: v % 40})
			case 4:
				ins = append(ins, bpf.TAX{})
			case 5:
				ins = append(ins, bpf.JumpIfX{Cond: bpf.JumpBitsSet, SkipTrue: skip})
			case 6:
				ins = append(ins, bpf.StoreScratch{Src: bpf.RegA, N: int(v % 16)}, bpf.LoadScratch{Dst: bpf.RegX, N: int(v % 16)})
			case 7:
				ins = append(ins, bpf.RetConstant{Val: v << 16})
			}
		}
		// Every jump may skip at most 3, so 4 trailing returns keep all paths in range.
		ins = append(ins, bpf.RetA{}, bpf.RetA{}, bpf.RetA{}, bpf.RetA{})
		prog, err := bpf.Assemble(ins)
		if err != nil {
			t.Skip()
		}
		data := Data(ai, nr, 0, args)
		mine, err := runFilter(FilterBytes(prog), &data)
		if err != nil {
			t.Fatalf("runFilter: %v", err)
		}
		vm, err := bpf.NewVM(ins)
		if err != nil {
			t.Skip()
		}
		var be [seccompDataSize]byte
		for i := 0; i < seccompDataSize; i += 4 {
			binary.BigEndian.PutUint32(be[i:], binary.NativeEndian.Uint32(data[i:]))
		}
		theirs, err := vm.Run(be[:])
		if err != nil {
			t.Fatalf("x/net VM: %v", err)
		}
		if uint32(theirs) != mine {
			t.Fatalf("runFilter %#x, x/net/bpf %#x for %v", mine, uint32(theirs), ins)
		}
	})
}
