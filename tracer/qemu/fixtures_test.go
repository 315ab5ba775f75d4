package qemu_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/tracer/qemu"
)

// TestPPC64LEFixtures decodes, on any host, the register words a real
// ppc64le kernel (Debian 6.1 under QEMU) gave at the PTRACE_INTERRUPT stop of
// a thread blocked in read or nanosleep entered with sc or scv 0, recorded by
// `go run ./tracer/qemu/cmd/ppc64le-test -record tracer/qemu/testdata`.
func TestPPC64LEFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var rec qemu.RegRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			seen[rec.CPU+"/"+rec.Insn+"/"+rec.Call] = true
			words, err := rec.Uint64s()
			if err != nil {
				t.Fatal(err)
			}
			insn, err := rec.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			arg0, err := strconv.ParseUint(rec.Arg0, 0, 64)
			if err != nil {
				t.Fatalf("arg0 %q: %v", rec.Arg0, err)
			}
			if len(words) != arch.NumWords(arch.PPC64LE) {
				t.Fatalf("%d words, want %d", len(words), arch.NumWords(arch.PPC64LE))
			}
			var wantVec uint64 = 0xc00
			if rec.Insn == "scv" {
				wantVec = 0x3000
			}
			wantNr, wantErrno := 3, arch.ERESTARTSYS
			if rec.Call == "nanosleep" {
				wantNr, wantErrno = 162, arch.ERESTART_RESTARTBLOCK
			}
			regs := arch.Regs{Arch: arch.PPC64LE, Words: words}
			st := arch.Decode(regs, insn)
			if !st.InSyscall || st.Insn != rec.Insn || !st.InsnConfirmed || st.InsnLen != 4 || st.Trap != wantVec ||
				st.Nr != wantNr || st.Syscall != rec.Call || st.Args[0] != arg0 || st.Errno != wantErrno ||
				st.Code != arch.ErrnoName(wantErrno) || st.AlreadyRestarted {
				t.Fatalf("Decode = %+v\nwant %s %s(nr %d, arg0 %#x) trap %#x errno %d", st, rec.Insn, rec.Call, wantNr, arg0, wantVec, wantErrno)
			}

			// ApplyPolicy on real words: only the words named in kernel.md §B.3 change.
			const nip, r3, origR3, ccr, trap = 32, 3, 34, 38, 40
			diff := func(p arch.Policy) map[int]uint64 {
				out := arch.ApplyPolicy(regs, st, p)
				d := map[int]uint64{}
				for i := range words {
					if out.Words[i] != words[i] {
						d[i] = out.Words[i]
					}
				}
				return d
			}
			check := func(p arch.Policy, want map[int]uint64) {
				t.Helper()
				got := diff(p)
				if len(got) != len(want) {
					t.Errorf("%s: changed words %#x, want %#x", p, got, want)
					return
				}
				for i, v := range want {
					if got[i] != v {
						t.Errorf("%s: word %d = %#x, want %#x (all changes %#x)", p, i, got[i], v, got)
					}
				}
			}
			check(arch.PolicyNone, map[int]uint64{})
			check(arch.PolicyNaive, map[int]uint64{trap: 0})
			switch {
			case wantErrno == arch.ERESTARTSYS:
				check(arch.PolicyCorrect, map[int]uint64{trap: 0, nip: words[nip] - 4, r3: words[origR3]})
			case rec.Insn == "sc":
				want := map[int]uint64{trap: 0, r3: 4}
				if words[ccr]&0x10000000 == 0 {
					want[ccr] = words[ccr] | 0x10000000
				}
				check(arch.PolicyCorrect, want)
			default:
				check(arch.PolicyCorrect, map[int]uint64{trap: 0, r3: uint64(0xfffffffffffffffc)})
			}
		})
	}
	for _, cpu := range []string{"power9", "power10"} {
		for _, insn := range []string{"sc", "scv"} {
			for _, call := range []string{"read", "nanosleep"} {
				if !seen[cpu+"/"+insn+"/"+call] {
					t.Errorf("no fixture for %s %s %s", cpu, insn, call)
				}
			}
		}
	}
}
