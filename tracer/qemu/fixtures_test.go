package qemu_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/qemu"
)

// TestPPC64LEFixtures decodes, on any host, the register words a real
// ppc64le kernel (Debian 6.1 under QEMU) gave for a thread blocked in read or
// nanosleep entered with sc or scv 0: at the PTRACE_INTERRUPT stop, at the
// SIGUSR1 signal-delivery-stop, and at the stop right after the kernel set up
// the SIGUSR1 handler (norestart flag set), recorded by
// `go run ./tracer/qemu/cmd/ppc64le-test -record tracer/qemu/testdata`.
func TestPPC64LEFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/power*.json")
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
			seen[rec.CPU+"/"+rec.Insn+"/"+rec.Call+"/"+rec.Stop] = true
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
			const nip, r3, origR3, ccr, trap = 32, 3, 34, 38, 40
			if rec.Stop == "handler" {
				// After check_syscall_restart and the handler frame: the
				// norestart flag (bit 0x1 since 5.13) is set and nothing may
				// be rewound again.
				if words[trap] != wantVec|1 || !st.InSyscall || st.Insn != rec.Insn || !st.AlreadyRestarted || st.Errno != 0 {
					t.Fatalf("trap %#x, Decode = %+v; want trap %#x, %s, AlreadyRestarted, Errno 0", words[trap], st, wantVec|1, rec.Insn)
				}
				for _, p := range []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNaive} {
					out := arch.ApplyPolicy(regs, st, p)
					for i := range words {
						got, want := out.Words[i], words[i]
						if i == trap {
							// Only the vector is cleared; set_user_trap keeps the
							// kernel's flag bits whatever is written.
							got, want = got&^0x1f, 0
						}
						if got != want {
							t.Errorf("%s at the handler stop: word %d = %#x, want %#x", p, i, out.Words[i], want)
						}
					}
				}
				return
			}
			if !st.InSyscall || st.Insn != rec.Insn || !st.InsnConfirmed || st.InsnLen != 4 || st.Trap != wantVec ||
				st.Nr != wantNr || st.Syscall != rec.Call || st.Args[0] != arg0 || st.Errno != wantErrno ||
				st.Code != arch.ErrnoName(wantErrno) || st.AlreadyRestarted {
				t.Fatalf("Decode = %+v\nwant %s %s(nr %d, arg0 %#x) trap %#x errno %d", st, rec.Insn, rec.Call, wantNr, arg0, wantVec, wantErrno)
			}

			// ApplyPolicy on real words: only the words named in kernel.md §B.3 change.
			diff := func(p sessions.Policy) map[int]uint64 {
				out := arch.ApplyPolicy(regs, st, p)
				d := map[int]uint64{}
				for i := range words {
					if out.Words[i] != words[i] {
						d[i] = out.Words[i]
					}
				}
				return d
			}
			check := func(p sessions.Policy, want map[int]uint64) {
				t.Helper()
				got := diff(p)
				if len(got) != len(want) {
					t.Errorf("%s: changed words %#x, want %#x", p, got, want)
					return
				}
				for i, v := range want {
					if i == trap && got[i]&^0x1f == v {
						continue // flag bits may be kept; the vector is what counts
					}
					if got[i] != v {
						t.Errorf("%s: word %d = %#x, want %#x (all changes %#x)", p, i, got[i], v, got)
					}
				}
			}
			check(sessions.PolicyNone, map[int]uint64{})
			check(sessions.PolicyNaive, map[int]uint64{trap: 0})
			switch {
			case wantErrno == arch.ERESTARTSYS:
				check(sessions.PolicyCorrect, map[int]uint64{trap: 0, nip: words[nip] - 4, r3: words[origR3]})
			case rec.Insn == "sc":
				want := map[int]uint64{trap: 0, r3: 4}
				if words[ccr]&0x10000000 == 0 {
					want[ccr] = words[ccr] | 0x10000000
				}
				check(sessions.PolicyCorrect, want)
			default:
				check(sessions.PolicyCorrect, map[int]uint64{trap: 0, r3: uint64(0xfffffffffffffffc)})
			}
		})
	}
	for _, cpu := range []string{"power9", "power10"} {
		for _, insn := range []string{"sc", "scv"} {
			for _, k := range []string{"read/interrupt", "nanosleep/interrupt", "read/signal", "read/handler"} {
				if !seen[cpu+"/"+insn+"/"+k] {
					t.Errorf("no fixture for %s %s %s", cpu, insn, k)
				}
			}
		}
	}
}
