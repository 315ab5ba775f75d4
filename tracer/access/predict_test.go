package access

import (
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/seccomp"
	"golang.org/x/sys/unix"
)

// cmaTrap starts the words of a pair where Open MPI's kcmp pre-check passes and CMA fails.
const cmaTrap = "Open MPI would use CMA (kcmp passes) but process_vm_readv fails"

// fixture is a plain dumpable process in the initial namespaces. Fixtures are for the rules
// this machine cannot show for real (Yama is not built here, kcmp is); the others are
// checked against the kernel in ground_test.go.
func fixture(pid int, uid uint32, ancestors ...int) Proc {
	return Proc{
		PID: pid, Tgid: pid, State: 'S', HasMM: true, Dumpable: DumpableYes,
		UID: [4]uint32{uid, uid, uid, uid}, GID: [4]uint32{uid, uid, uid, uid},
		UserNS: []UserNS{{Inode: 100}}, PidNS: []uint64{200}, NSpid: []int{pid},
		Seccomp: 0, RootUID: 0, Ancestors: ancestors,
	}
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func sysYama(scope int) System {
	return System{Arch: "amd64", Yama: scope, KcmpBuilt: yes(), CMABuilt: yes(), SuidDumpable: 2}
}

func TestPredictYama(t *testing.T) {
	const launcher, a0, b0, other = 10, 20, 30, 40
	root := fixture(a0, 0, launcher, 1)
	root.CapEff, root.CapPrm = 0x1ffffffffff, 0x1ffffffffff
	tests := []struct {
		name   string
		scope  int
		a, b   Proc
		edit   func(a, b *Proc)
		vm     bool
		reason sessions.Reason
	}{
		{"scope 0 unrelated", 0, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), nil, true, ""},
		{"absent unrelated", -1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), nil, true, ""},
		{"scope 1 siblings", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), nil, false, "yama"},
		{"scope 1 child", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, a0, launcher, 1), nil, true, ""},
		{"scope 1 grandchild", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, other, a0, launcher, 1), nil, true, ""},
		// A subreaper adopted B: real_parent no longer leads to A.
		{"scope 1 reparented", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, other, 1), nil, false, "yama"},
		{"scope 1 child reads parent", 1, fixture(b0, 1000, a0, launcher, 1), fixture(a0, 1000, launcher, 1), nil, false, "yama"},
		{"scope 1 PR_SET_PTRACER_ANY", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), func(a, b *Proc) { b.Ptracer = -1 }, true, ""},
		{"scope 1 PR_SET_PTRACER A", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), func(a, b *Proc) { b.Ptracer = a0 }, true, ""},
		{"scope 1 PR_SET_PTRACER A's ancestor", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), func(a, b *Proc) { b.Ptracer = launcher }, true, ""},
		{"scope 1 PR_SET_PTRACER someone else", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), func(a, b *Proc) { b.Ptracer = other }, false, "yama"},
		{"scope 1 A already traces B", 1, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), func(a, b *Proc) { b.TracerPid = a0 }, true, ""},
		{"scope 1 CAP_SYS_PTRACE", 1, root, fixture(b0, 1000, launcher, 1), nil, true, ""},
		{"scope 2 child", 2, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, a0, launcher, 1), nil, false, "yama"},
		{"scope 2 PR_SET_PTRACER_ANY", 2, fixture(a0, 1000, launcher, 1), fixture(b0, 1000, launcher, 1), func(a, b *Proc) { b.Ptracer = -1 }, false, "yama"},
		{"scope 2 CAP_SYS_PTRACE", 2, root, fixture(b0, 1000, launcher, 1), nil, true, ""},
		{"scope 3 root with CAP_SYS_PTRACE", 3, root, fixture(b0, 1000, a0, launcher, 1), nil, false, "yama"},
		// Yama comes after the credential rules: a uid mismatch is reported as such.
		{"scope 3 uid first", 3, fixture(a0, 1000, launcher, 1), fixture(b0, 1001, launcher, 1), nil, false, "uid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a, tc.b
			if tc.edit != nil {
				tc.edit(&a, &b)
			}
			v := Predict(sysYama(tc.scope), a, b)
			if v.VMReadv != tc.vm || v.Reason != tc.reason {
				t.Fatalf("vm %v reason %q, want vm %v reason %q (%s)", v.VMReadv, v.Reason, tc.vm, tc.reason, explainOf(a, b, v))
			}
			if tc.reason == "yama" {
				// Yama checks ATTACH mode only: kcmp (READ) passes, Open MPI uses CMA, and the
				// copies fail — the disagreement crashtui exists to show.
				if d := verdictDisagree(a, b, v); !v.Kcmp || !v.OpenMPI || v.VMErrno != "EPERM" || !strings.Contains(d, "Open MPI would use CMA") {
					t.Errorf("kcmp %v openmpi %v errno %q disagree %q", v.Kcmp, v.OpenMPI, v.VMErrno, d)
				}
				if why := explainOf(a, b, v); !strings.Contains(why, "yama_ptrace_access_check") || !strings.Contains(why, "Fix:") {
					t.Errorf("explain: %s", why)
				}
			}
			if tc.scope == 1 && tc.reason == "yama" && !uncertain(v, UncertainPtracer) {
				t.Errorf("scope 1 denial must say PR_SET_PTRACER is invisible: %+v", v.Uncertain)
			}
		})
	}
}

func TestPredictNotBuilt(t *testing.T) {
	a, b := fixture(20, 1000), fixture(30, 1000)
	sys := sysYama(-1)
	sys.KcmpBuilt = no()
	v := Predict(sys, a, b)
	if v.Kcmp || v.KcmpErrno != "ENOSYS" || !v.VMReadv || v.Reason != ReasonENOSYS || v.OpenMPI {
		t.Fatalf("kcmp not built: %+v", v)
	}
	if d, why := verdictDisagree(a, b, v), explainOf(a, b, v); !strings.Contains(d, "refuses CMA that would work") || !strings.Contains(why, "CONFIG_KCMP") {
		t.Errorf("disagree %q explain %q", d, why)
	}
	sys = sysYama(-1)
	sys.CMABuilt = no()
	if v := Predict(sys, a, b); v.VMReadv || v.VMErrno != "ENOSYS" || !v.Kcmp || !v.OpenMPI || verdictDisagree(a, b, v) == "" {
		t.Errorf("CMA not built: %+v", v)
	}
	// Unknown (nil) means "assume built".
	sys.CMABuilt, sys.KcmpBuilt = nil, nil
	if v := Predict(sys, a, b); !v.VMReadv || !v.Kcmp {
		t.Errorf("unknown build: %+v", v)
	}
}

func TestPredictSeccompActions(t *testing.T) {
	ai, _ := seccomp.Arch("amd64")
	b := fixture(30, 1000)
	for _, tc := range []struct {
		name   string
		ret    uint32
		errno  string
		strict bool
	}{
		{"errno EPERM", seccomp.ErrnoRet(unix.EPERM), "EPERM", false},
		{"errno ENOSYS", seccomp.ErrnoRet(unix.ENOSYS), "ENOSYS", false},
		{"kill", seccomp.KillRet, "SIGSYS", false},
		{"trap", seccomp.RetTrap, "SIGSYS", false},
		{"trace without tracer", seccomp.RetTrace, "ENOSYS", false},
		{"strict mode", 0, "SIGKILL", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fixture(20, 1000)
			a.Seccomp = 2
			prog, err := seccomp.DenyFilter(ai, tc.ret, ai.Kcmp, ai.VMReadv)
			if err != nil {
				t.Fatal(err)
			}
			a.Filters = [][]byte{seccomp.FilterBytes(prog)}
			if tc.strict {
				a.Seccomp, a.Filters = 1, nil
			}
			v := Predict(sysYama(-1), a, b)
			if v.Kcmp || v.VMReadv || v.KcmpErrno != tc.errno || v.VMErrno != tc.errno || v.Reason != ReasonSeccomp {
				t.Errorf("%+v", v)
			}
			// B's filter is irrelevant (A.3 row 1).
			if v := Predict(sysYama(-1), b, a); !v.Kcmp || !v.VMReadv {
				t.Errorf("reverse direction: %+v", v)
			}
		})
	}
	// A filter that blocks only kcmp: CMA works but Open MPI refuses it.
	a := fixture(20, 1000)
	a.Seccomp = 2
	prog, _ := seccomp.DenyFilter(ai, seccomp.ErrnoRet(unix.EPERM), ai.Kcmp)
	a.Filters = [][]byte{seccomp.FilterBytes(prog)}
	if v := Predict(sysYama(-1), a, b); v.Kcmp || !v.VMReadv || v.OpenMPI || !strings.Contains(verdictDisagree(a, b, v), "refuses CMA that would work") {
		t.Errorf("kcmp-only filter: %+v", v)
	}
}

func TestPredictNamespacesOpenMPI(t *testing.T) {
	root := fixture(20, 0)
	root.CapEff, root.CapPrm = 0x1ffffffffff, 0x1ffffffffff
	// B in a child PID namespace: visible to A, but B publishes its own getpid() (1).
	b := fixture(30, 0)
	b.NSpid, b.PidNS = []int{30, 1}, []uint64{201, 200}
	v := Predict(sysYama(-1), root, b)
	if !v.VMReadv || !v.Kcmp || v.OpenMPI || !strings.Contains(verdictDisagree(root, b, v), "pid 1") {
		t.Errorf("child pid ns: %+v", v)
	}
	if pid, ok := PIDIn(root, b); !ok || pid != 30 {
		t.Errorf("PIDIn = %d %v", pid, ok)
	}
	if _, ok := PIDIn(b, root); ok {
		t.Error("parent namespace visible from the child")
	}
	// B in a child user namespace owned by root: allowed, but Open MPI compares inodes.
	u := fixture(40, 65534)
	u.UserNS = []UserNS{{Inode: 101, OwnerUID: 0}, {Inode: 100}}
	v = Predict(sysYama(-1), root, u)
	if !v.VMReadv || v.OpenMPI || !strings.Contains(verdictDisagree(root, u, v), "different user namespaces") {
		t.Errorf("child user ns: %+v", v)
	}
}

func TestPredictDumpable(t *testing.T) {
	a, b := fixture(20, 1000), fixture(30, 1000)
	b.Dumpable, b.DumpOwnerUID = DumpableNo, 0
	v := Predict(sysYama(-1), a, b)
	if v.VMReadv || v.Kcmp || v.Reason != ReasonDumpable || !strings.Contains(explainOf(a, b, v), "suid_dumpable=2") {
		t.Errorf("%+v", v)
	}
	b.Dumpable = DumpableUnknown
	if v := Predict(sysYama(-1), a, b); !v.VMReadv || !uncertain(v, UncertainDumpable) {
		t.Errorf("unknown dumpability: %+v", v)
	}
	// A zombie has no mm: dumpability does not apply, kcmp still works.
	b.State, b.HasMM = 'Z', false
	if v := Predict(sysYama(-1), a, b); v.VMReadv || v.VMErrno != "ESRCH" || !v.Kcmp || v.Reason != ReasonExited {
		t.Errorf("zombie: %+v", v)
	}
}

func TestPredictUIDExplain(t *testing.T) {
	v := Predict(sysYama(-1), fixture(20, 1000), fixture(30, 0))
	why := explainOf(fixture(20, 1000), fixture(30, 0), v)
	for _, s := range []string{"A (uid 1000", "B (uid 0", "real, effective and saved", "kernel/ptrace.c __ptrace_may_access", "Fix:", "--cap-add SYS_PTRACE"} {
		if !strings.Contains(why, s) {
			t.Errorf("explain lacks %q: %s", s, why)
		}
	}
	// Only A's real ids count: a matching euid does not help (REALCREDS).
	a := fixture(20, 1000)
	a.UID[1], a.UID[3] = 0, 0
	if v := Predict(sysYama(-1), a, fixture(30, 0)); v.VMReadv || v.Reason != ReasonUID {
		t.Errorf("euid 0, ruid 1000: %+v", v)
	}
	// B's saved uid counts: a setuid program that dropped only its euid is still protected.
	b := fixture(30, 1000)
	b.UID[2] = 0
	if v := Predict(sysYama(-1), fixture(20, 1000), b); v.VMReadv || v.Reason != ReasonUID {
		t.Errorf("B suid 0: %+v", v)
	}
}

func TestPredictAll(t *testing.T) {
	procs := []Proc{fixture(20, 1000), fixture(30, 1000), fixture(40, 0)}
	m := PredictAll(sysYama(-1), procs)
	if m.Measured || len(m.PIDs) != 3 || len(m.Cells) != 6 {
		t.Fatalf("matrix: %+v", m)
	}
	seen := map[[2]int]bool{}
	for _, c := range m.Cells {
		if c.From == c.To || seen[[2]int{c.From, c.To}] {
			t.Errorf("cell %d->%d repeated or diagonal", c.From, c.To)
		}
		seen[[2]int{c.From, c.To}] = true
		if c.VMReadv.Measured != nil || c.Kcmp.Measured != nil {
			t.Errorf("cell %d->%d claims a measurement", c.From, c.To)
		}
		allowed := c.VMReadv.Predicted && c.Kcmp.Predicted
		if allowed != (c.Reason == nil) || c.VMReadv.Predicted != (c.VMReadv.Errno == nil) {
			t.Errorf("cell %d->%d: reason %v errno %v", c.From, c.To, c.Reason, c.VMReadv.Errno)
		}
	}
	if c := m.Cells[1]; c.From != 20 || c.To != 40 || *c.Reason != ReasonUID {
		t.Errorf("20->40: %+v", c)
	}
}

func TestApplyMeasurement(t *testing.T) {
	a, b := fixture(20, 1000), fixture(30, 1000)
	c := Cell(a, b, Predict(sysYama(-1), a, b))
	got := ApplyMeasurement(c, Measurement{VMRet: -int64(unix.EFAULT), VMRan: true, KcmpRet: 1, KcmpRan: true})
	if got.VMReadv.Measured == nil || !*got.VMReadv.Measured || *got.VMReadv.Errno != "EFAULT" || got.Disagrees() {
		t.Errorf("EFAULT is allowed with a bad address: %+v", got)
	}
	got = ApplyMeasurement(c, Measurement{VMRet: -int64(unix.EPERM), VMRan: true})
	if *got.VMReadv.Measured || *got.VMReadv.Errno != "EPERM" || got.Kcmp.Measured != nil || !strings.Contains(disagreeOf(got), "unexplained") {
		t.Errorf("EPERM against an allowed prediction: %+v", got)
	}
	// Yama scope 1 predicts EPERM (b does not descend from a); a pass means b called
	// PR_SET_PTRACER: explained, and Open MPI's CMA trap warning no longer holds.
	c = Cell(a, b, Predict(sysYama(1), a, b))
	if c.VMReadv.Predicted || !strings.HasPrefix(disagreeOf(c), cmaTrap) {
		t.Fatalf("scope 1 prediction: %+v", c)
	}
	got = ApplyMeasurement(c, Measurement{VMRet: 1, VMRan: true, KcmpRet: 0, KcmpRan: true})
	if d := disagreeOf(got); !*got.VMReadv.Measured || strings.Contains(d, "unexplained") || !strings.Contains(d, "PR_SET_PTRACER") || strings.Contains(d, cmaTrap) {
		t.Errorf("Yama exception: %q", d)
	}
}
