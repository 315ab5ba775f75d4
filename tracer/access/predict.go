package access

import (
	"slices"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/seccomp"
	"golang.org/x/sys/unix"
)

// Reasons, the first failing rule of kernel.md A.3 (sessions.Cell.Reason).
const (
	ReasonSeccomp      = sessions.ReasonSeccomp
	ReasonUID          = sessions.ReasonUID
	ReasonDumpable     = sessions.ReasonDumpable
	ReasonCapabilities = sessions.ReasonCapabilities
	ReasonPidNS        = sessions.ReasonPidNS
	ReasonUserNS       = sessions.ReasonUserNS
	ReasonYama         = sessions.ReasonYama
	ReasonENOSYS       = sessions.ReasonENOSYS
	ReasonExited       = sessions.ReasonExited
)

// Verdict is the prediction for the ordered pair (A reads B), as facts: views word them.
type Verdict struct {
	VMReadv, Kcmp bool
	// OpenMPI says whether Open MPI's smsc/cma in A would use CMA towards B (A.4: same
	// user-namespace inode, and kcmp(getpid(), B's pid, KCMP_VM) >= 0).
	OpenMPI bool
	// VMErrno and KcmpErrno name the predicted failure ("EPERM", "ESRCH", "ENOSYS", "SIGSYS"
	// when a seccomp filter would kill A), "" when allowed.
	VMErrno, KcmpErrno string
	// Reason is the first failing rule over both calls (lowest A.3 row; process_vm_readv on a
	// tie), "" when both are allowed. VMReason and KcmpReason are per call.
	Reason, VMReason, KcmpReason sessions.Reason
	// Rule is the row that decided the call Reason is about (process_vm_readv when both are
	// allowed), with what its sentence names (views.CellWhy words it with the fix).
	Rule sessions.Rule
	// Disagree are the dangerous differences between what Open MPI decides and what
	// process_vm_readv does: CMA used but failing, or CMA refused although it would work.
	Disagree []sessions.Disagreement
	// Uncertain is what /proc could not show that might change the answer (seccomp filter
	// contents, B's dumpability, PR_SET_PTRACER, an LSM policy); nil when the rules are
	// complete.
	Uncertain []Uncertainty
}

// Uncertainty is one thing /proc could not show that might change a prediction.
type Uncertainty struct {
	Kind UncertainKind
	Call string // the call it is about (UncertainFilters, UncertainUserNotif, UncertainDumpable)
	// Filters is how many seccomp filters A runs (UncertainFilters); EUID B's euid, the root of
	// its namespace (UncertainDumpable); LSM the LSM's name (UncertainLSM).
	Filters int
	EUID    uint32
	LSM     string
}

// UncertainKind is what an Uncertainty is about.
type UncertainKind int

const (
	// UncertainFilters: A's seccomp filters were not read (PTRACE_SECCOMP_GET_FILTER needs
	// CAP_SYS_ADMIN); they are assumed to refuse Call with EPERM, as Docker/runc profiles do
	// without CAP_SYS_PTRACE.
	UncertainFilters UncertainKind = iota + 1
	// UncertainUserNotif: A's filter hands Call to a user-space supervisor, which decides.
	UncertainUserNotif
	// UncertainDumpable: B's dumpability cannot be read from /proc (its euid is the root of its
	// namespace); if B is non-dumpable, Call is refused with EPERM.
	UncertainDumpable
	// UncertainPtracer: PR_SET_PTRACER is invisible in /proc: B may have named A (Open MPI's
	// smsc/cma sets PR_SET_PTRACER_ANY), which would allow it past Yama.
	UncertainPtracer
	// UncertainNestedNS: crashtui runs in a child user namespace, so /proc shows ids mapped
	// into it (unmapped ids read as 65534) and equal-looking ids may differ.
	UncertainNestedNS
	// UncertainLSM: the LSM's policy may refuse further (A.3 row 11: process:ptrace for
	// process_vm_readv, file:read for kcmp).
	UncertainLSM
)

type call int

const (
	callVM   call = iota // process_vm_readv: PTRACE_MODE_ATTACH_REALCREDS
	callKcmp             // kcmp: PTRACE_MODE_READ_REALCREDS
)

func (c call) String() string {
	if c == callKcmp {
		return "kcmp"
	}
	return "process_vm_readv"
}

// outcome is one call's decision: the A.3 row that decided it and why.
type outcome struct {
	ok        bool
	errno     string
	reason    sessions.Reason
	row       int
	rule      sessions.Rule
	uncertain []Uncertainty
}

// Predict applies kernel.md A.3 to (A, B) for both calls. It is pure: everything it needs
// is in sys, a and b (including a.Filters when the tracer read them).
func Predict(sys System, a, b Proc) Verdict {
	vm := decide(sys, a, b, callVM)
	kc := decide(sys, a, b, callKcmp)
	v := Verdict{
		VMReadv: vm.ok, Kcmp: kc.ok,
		VMErrno: vm.errno, KcmpErrno: kc.errno,
		VMReason: vm.reason, KcmpReason: kc.reason,
	}
	switch {
	case !vm.ok && (kc.ok || vm.row <= kc.row):
		v.Reason, v.Rule = vm.reason, vm.rule
	case !kc.ok:
		v.Reason, v.Rule = kc.reason, kc.rule
	default:
		v.Rule = vm.rule
	}
	v.Uncertain = append(vm.uncertain, kc.uncertain...)
	if sys.ObserverNestedNS {
		v.Uncertain = append(v.Uncertain, Uncertainty{Kind: UncertainNestedNS})
	}
	if len(sys.LSMs) > 0 {
		for _, l := range []string{"selinux", "apparmor", "smack"} {
			if sys.hasLSM(l) {
				v.Uncertain = append(v.Uncertain, Uncertainty{Kind: UncertainLSM, LSM: l})
			}
		}
	}
	openMPI(&v, a, b)
	return v
}

// openMPI fills OpenMPI and Disagree from smsc_cma_module.c mca_smsc_cma_get_endpoint:
// different user-namespace inodes refuse CMA; otherwise kcmp(getpid(), peer_pid, KCMP_VM)
// with the pid the peer published (its getpid(), in its own PID namespace) decides.
func openMPI(v *Verdict, a, b Proc) {
	sameUser := sameUserNS(a, b)
	samePid := samePidNS(a, b)
	v.OpenMPI = sameUser && samePid && v.Kcmp
	var d sessions.Disagreement
	switch {
	case v.OpenMPI && !v.VMReadv:
		d = sessions.Disagreement{Kind: sessions.DisagreeCMAFails, Errno: v.VMErrno, Reason: v.VMReason}
	case !v.OpenMPI && v.VMReadv && !sameUser:
		d = sessions.Disagreement{Kind: sessions.DisagreeCMARefusedUserNS}
	case !v.OpenMPI && v.VMReadv && !samePid:
		d = sessions.Disagreement{Kind: sessions.DisagreeCMAWrongPID, PID: ownPID(b)}
	case !v.OpenMPI && v.VMReadv:
		d = sessions.Disagreement{Kind: sessions.DisagreeCMARefusedKcmp, Errno: v.KcmpErrno, Reason: v.KcmpReason}
	default:
		return
	}
	v.Disagree = []sessions.Disagreement{d}
}

// PredictAll predicts every ordered pair A != B of procs, in the order given.
func PredictAll(sys System, procs []Proc) sessions.Matrix {
	m := sessions.Matrix{PIDs: make([]int, len(procs))}
	if len(procs) > 1 {
		m.Cells = make([]sessions.Cell, 0, len(procs)*(len(procs)-1))
	}
	for i, a := range procs {
		m.PIDs[i] = a.PID
		for j := range procs {
			if i != j {
				m.Cells = append(m.Cells, Cell(a, procs[j], Predict(sys, a, procs[j])))
			}
		}
	}
	return m
}

// Cell turns a verdict into the wire form; Errno holds the predicted errno until the tracer
// fills in a measurement (ApplyMeasurement).
func Cell(a, b Proc, v Verdict) sessions.Cell {
	c := sessions.Cell{
		From: a.PID, To: b.PID,
		VMReadv: sessions.Check{Predicted: v.VMReadv, Errno: strPtr(v.VMErrno)},
		Kcmp:    sessions.Check{Predicted: v.Kcmp, Errno: strPtr(v.KcmpErrno)},
		OpenMPI: v.OpenMPI, Rule: v.Rule, Disagreements: v.Disagree,
	}
	if v.Reason != "" {
		r := v.Reason
		c.Reason = &r
	}
	return c
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func decide(sys System, a, b Proc, c call) outcome {
	// Row 0: the syscall is not built (sys_ni_syscall).
	built := sys.CMABuilt
	if c == callKcmp {
		built = sys.KcmpBuilt
	}
	if built != nil && !*built {
		return outcome{errno: "ENOSYS", reason: ReasonENOSYS, row: 0, rule: sessions.Rule{Row: sessions.RowNotBuilt, Call: c.String()}}
	}

	// Row 1: A's seccomp filter (B's is irrelevant).
	if o, stop := seccompRow(sys, a, b, c); stop {
		return o
	}

	// Row 2: B must be nameable in A's PID namespace (find_get_task_by_vpid / find_task_by_vpid).
	if _, ok := PIDIn(a, b); !ok {
		return outcome{errno: "ESRCH", reason: ReasonPidNS, row: 2,
			rule: sessions.Rule{Row: sessions.RowPidNS, Call: c.String(), PidNS: first(a.PidNS)}}
	}

	// Row 3: B has no mm. process_vm_readv's mm_access fails with ESRCH; kcmp only compares
	// pointers and goes on to the credential checks.
	var uncertain []Uncertainty
	if !b.HasMM || b.Exited() {
		if c == callVM {
			return outcome{errno: "ESRCH", reason: ReasonExited, row: 3,
				rule: sessions.Rule{Row: sessions.RowNoMM, Call: c.String(), Exited: b.Exited()}}
		}
	}

	// Row 4: same thread group: __ptrace_may_access allows before any check (and
	// mm_access skips the check for its own mm).
	if a.Tgid != 0 && a.Tgid == b.Tgid {
		return outcome{ok: true, row: 4, rule: sessions.Rule{Row: sessions.RowThreadGroup, Call: c.String()}}
	}

	// Row 5: credentials with REALCREDS: A's real ids against B's real, effective, saved.
	idsMatch := a.UID[0] == b.UID[0] && a.UID[0] == b.UID[1] && a.UID[0] == b.UID[2] &&
		a.GID[0] == b.GID[0] && a.GID[0] == b.GID[1] && a.GID[0] == b.GID[2]
	capB := capIn(a, b.UserNS)
	if !idsMatch && !capB {
		r := sessions.Rule{Row: sessions.RowIDs, Call: c.String(), AUID: a.UID[0], AGID: a.GID[0],
			BUID: [3]uint32(b.UID[:3]), BGID: [3]uint32(b.GID[:3])}
		reason := ReasonUID
		if a.CapEff&CapSysPtrace != 0 {
			reason = ReasonUserNS
			r.Row, r.AUserNS, r.BUserNS = sessions.RowIDsCapElsewhere, ownUserNS(a), ownUserNS(b)
		}
		return outcome{errno: "EPERM", reason: reason, row: 5, rule: r}
	}

	// Row 6: B non-dumpable needs CAP_SYS_PTRACE in B's mm->user_ns.
	if b.HasMM && !b.Exited() {
		mmNS := mmUserNS(b)
		switch b.Dumpable {
		case DumpableNo:
			if !capIn(a, mmNS) {
				return outcome{errno: "EPERM", reason: ReasonDumpable, row: 6,
					rule: sessions.Rule{Row: sessions.RowDumpable, Call: c.String(), SuidDumpable: sys.SuidDumpable}}
			}
		case DumpableUnknown:
			if !capIn(a, mmNS) {
				uncertain = []Uncertainty{{Kind: UncertainDumpable, Call: c.String(), EUID: b.UID[1]}}
			}
		}
	}

	// Row 7: commoncap cap_ptrace_access_check: same user namespace and B's permitted set
	// within A's (CapPrm under REALCREDS), else CAP_SYS_PTRACE in B's user namespace.
	sameNS := sameUserNS(a, b)
	if !(sameNS && b.CapPrm&^a.CapPrm == 0) && !capB {
		if sameNS {
			return outcome{errno: "EPERM", reason: ReasonCapabilities, row: 7,
				rule: sessions.Rule{Row: sessions.RowCapabilities, Call: c.String(), Missing: sessions.Hex(b.CapPrm &^ a.CapPrm), APermitted: sessions.Hex(a.CapPrm)}}
		}
		return outcome{errno: "EPERM", reason: ReasonUserNS, row: 7,
			rule: sessions.Rule{Row: sessions.RowUserNS, Call: c.String(), AUserNS: ownUserNS(a), BUserNS: ownUserNS(b)}}
	}

	// Rows 8-10: Yama, only for PTRACE_MODE_ATTACH, i.e. process_vm_readv, never kcmp.
	if c == callVM {
		if o, deny := yamaRow(sys, a, b, capB); deny {
			o.uncertain = append(uncertain, o.uncertain...)
			return o
		}
	}

	rule := sessions.Rule{Row: sessions.RowSameIDs, Call: c.String()}
	if !idsMatch || !sameNS || b.CapPrm&^a.CapPrm != 0 {
		rule.Row = sessions.RowCapSysPtrace
	}
	if !b.HasMM || b.Exited() {
		rule.Row = sessions.RowKcmpNoMM
	}
	return outcome{ok: true, row: 12, rule: rule, uncertain: uncertain}
}

// seccompRow decides A.3 row 1. stop is true when the filter (or strict mode) denies.
func seccompRow(sys System, a, b Proc, c call) (outcome, bool) {
	act, known := seccompFor(sys, a, b, c)
	if act.Runs() {
		return outcome{}, false
	}
	o := outcome{reason: ReasonSeccomp, row: 1, rule: sessions.Rule{Call: c.String()}}
	switch {
	case a.Seccomp == 1:
		o.errno, o.rule.Row = "SIGKILL", sessions.RowSeccompStrict
		return o, true
	case !known:
		o.errno, o.rule.Row, o.rule.Filters = "EPERM", sessions.RowSeccompUnread, a.SeccompFilters
		o.uncertain = []Uncertainty{{Kind: UncertainFilters, Call: c.String(), Filters: a.SeccompFilters}}
		return o, true
	}
	switch act.Action {
	case seccomp.ActErrno:
		o.errno = seccomp.ErrnoName(act.Errno)
	case seccomp.ActTrace:
		// No tracer has PTRACE_O_TRACESECCOMP: __seccomp_filter skips the call with ENOSYS.
		o.errno = "ENOSYS"
	case seccomp.ActUserNotif:
		o.errno = "USER_NOTIF"
		o.uncertain = []Uncertainty{{Kind: UncertainUserNotif, Call: c.String()}}
	default:
		o.errno = "SIGSYS"
	}
	o.rule.Row, o.rule.Action = sessions.RowSeccompFilter, act.String()
	return o, true
}

// SeccompFor evaluates A's filters for the exact syscalls an injected measurement towards B
// would run (kernel.md A.5): kcmp(A's pid, B's pid in A's namespace, KCMP_VM, 0, 0) and
// process_vm_readv(B's pid, iov, 1, iov, 1, 0). known is false when A runs filters the tracer
// has not read (Proc.Filters nil); the tracer must then not inject. Strict mode is KILL.
func SeccompFor(sys System, a, b Proc) (vm, kcmp seccomp.Action, known bool) {
	vm, k1 := seccompFor(sys, a, b, callVM)
	kcmp, k2 := seccompFor(sys, a, b, callKcmp)
	return vm, kcmp, k1 && k2
}

func seccompFor(sys System, a, b Proc, c call) (seccomp.Action, bool) {
	switch a.Seccomp {
	case 1:
		return seccomp.Action{Action: seccomp.ActKillThread}, true
	case 2:
	default:
		return seccomp.Action{Action: seccomp.ActAllow}, true
	}
	if a.Filters == nil {
		return seccomp.Action{}, false
	}
	ai, err := seccomp.Arch(sys.Arch)
	if err != nil {
		return seccomp.Action{}, false
	}
	bpid, _ := PIDIn(a, b)
	var nr int
	var args [6]uint64
	if c == callKcmp {
		nr, args = ai.Kcmp, [6]uint64{uint64(ownPID(a)), uint64(bpid), KCMPVM}
	} else {
		nr, args = ai.VMReadv, [6]uint64{uint64(bpid), 0, 1, 0, 1, 0}
	}
	act, err := seccomp.Eval(a.Filters, ai.Name, nr, 0, args)
	if err != nil {
		return seccomp.Action{}, false
	}
	return act, true
}

// yamaRow applies rows 8-10 (security/yama/yama_lsm.c yama_ptrace_access_check).
func yamaRow(sys System, a, b Proc, capB bool) (outcome, bool) {
	o := outcome{errno: "EPERM", reason: ReasonYama, row: 9,
		rule: sessions.Rule{Row: sessions.RowYama, Call: callVM.String(), Yama: sys.Yama}}
	switch sys.Yama {
	case 1:
		if capB || contains(b.Ancestors, a.Tgid) || b.TracerPid == a.Tgid && a.Tgid != 0 ||
			b.Ptracer == -1 || b.Ptracer != 0 && (b.Ptracer == a.Tgid || contains(a.Ancestors, b.Ptracer)) {
			return outcome{}, false
		}
		o.uncertain = []Uncertainty{{Kind: UncertainPtracer}}
	case 2:
		if capB {
			return outcome{}, false
		}
		o.row = 10
	case 3:
		o.row = 10
	default:
		return outcome{}, false
	}
	return o, true
}

// capIn is ns_capable(A, ns, CAP_SYS_PTRACE) (kernel/capability.c, security/commoncap.c
// cap_capable): walking from ns towards the root, A's own namespace grants CapEff; a
// namespace whose parent is A's and whose owner is A's euid grants everything.
func capIn(a Proc, chain []UserNS) bool {
	if len(a.UserNS) == 0 || len(chain) == 0 {
		return a.CapEff&CapSysPtrace != 0 // namespaces unreadable: assume one namespace
	}
	own := a.UserNS[0].Inode
	for i, ns := range chain {
		if ns.Inode == own {
			return a.CapEff&CapSysPtrace != 0
		}
		if i+1 < len(chain) && chain[i+1].Inode == own && ns.OwnerUID == a.UID[1] {
			return true
		}
	}
	return false
}

// mmUserNS approximates B's mm->user_ns (its user namespace at its last exec). A
// non-dumpable B's files are owned by the root of mm->user_ns: when that is the root of B's
// own namespace, mm->user_ns is B's; otherwise B entered its namespace after exec and the
// outermost namespace is the safe (strictest) guess.
func mmUserNS(b Proc) []UserNS {
	if len(b.UserNS) <= 1 || b.Dumpable != DumpableNo || b.RootUID >= 0 && uint32(b.RootUID) == b.DumpOwnerUID {
		return b.UserNS
	}
	return b.UserNS[len(b.UserNS)-1:]
}

// PIDIn is B's pid as A's PID namespace names it, and false when B is not visible there
// (A's namespace is not B's or an ancestor of it). The tracer injects with this pid.
func PIDIn(a, b Proc) (int, bool) {
	if len(b.NSpid) == 0 {
		return b.PID, true
	}
	if len(a.PidNS) == 0 || len(b.PidNS) == 0 {
		// Namespaces unreadable: use the nesting depth the NSpid lines show.
		if d := len(a.NSpid); d > 0 && len(b.NSpid) >= d {
			return b.NSpid[d-1], true
		}
		return 0, false
	}
	for i, ns := range b.PidNS {
		if ns == a.PidNS[0] {
			j := len(b.NSpid) - 1 - i
			if j < 0 {
				return 0, false
			}
			return b.NSpid[j], true
		}
	}
	return 0, false
}

// ownPID is the pid a process sees for itself (getpid()): the last NSpid entry.
func ownPID(p Proc) int {
	if len(p.NSpid) == 0 {
		return p.PID
	}
	return p.NSpid[len(p.NSpid)-1]
}

func sameUserNS(a, b Proc) bool {
	return len(a.UserNS) == 0 || len(b.UserNS) == 0 || a.UserNS[0].Inode == b.UserNS[0].Inode
}

func samePidNS(a, b Proc) bool {
	return len(a.PidNS) == 0 || len(b.PidNS) == 0 || a.PidNS[0] == b.PidNS[0]
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ownUserNS is p's own user namespace inode, 0 when unreadable.
func ownUserNS(p Proc) uint64 {
	if len(p.UserNS) == 0 {
		return 0
	}
	return p.UserNS[0].Inode
}

func first(s []uint64) uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

// Measurement is what the syscalls injected inside A returned, as raw return values with a
// negative errno on failure (the tracer converts ppc64 `sc`'s CR0.SO + positive errno). Ran
// is false for a call that was not injected (SeccompFor said it would kill A, or A could
// not be stopped).
type Measurement struct {
	VMRet, KcmpRet int64
	VMRan, KcmpRan bool
	// VMNotRun and KcmpNotRun say why a call was not run (the gate refused it); NotRun why
	// neither was (no thread of A could be used).
	VMNotRun, KcmpNotRun, NotRun *sessions.NotRun
}

// ApplyMeasurement records a measurement in a predicted cell. process_vm_readv returning 1
// or -EFAULT (allowed, bad address) counts as allowed, as does kcmp >= 0 (kernel.md A.5).
// A measurement that contradicts the prediction is a Disagreement, before the prediction's.
func ApplyMeasurement(c sessions.Cell, m Measurement) sessions.Cell {
	var notes []sessions.Disagreement
	c.VMReadv.NotRun, c.Kcmp.NotRun = m.VMNotRun, m.KcmpNotRun
	if m.NotRun != nil {
		c.VMReadv.NotRun, c.Kcmp.NotRun = m.NotRun, m.NotRun
	}
	predicted := c.Disagreements
	if m.VMRan {
		ok := m.VMRet >= 0 || m.VMRet == -int64(unix.EFAULT)
		c.VMReadv.Measured = &ok
		c.VMReadv.Errno = nil
		if m.VMRet < 0 {
			c.VMReadv.Errno = strPtr(seccomp.ErrnoName(int(-m.VMRet)))
		}
		switch {
		case ok == c.VMReadv.Predicted:
		case ok && c.Reason != nil && *c.Reason == ReasonYama:
			// Yama's one exception /proc cannot show (the prediction said it was uncertain).
			notes = append(notes, sessions.Disagreement{Kind: sessions.DisagreePtracer})
			// CMA works after all.
			predicted = slices.DeleteFunc(slices.Clone(predicted), func(d sessions.Disagreement) bool { return d.Kind == sessions.DisagreeCMAFails })
		default:
			notes = append(notes, sessions.Disagreement{Kind: sessions.DisagreeUnexplainedVMReadv})
		}
	}
	if m.KcmpRan {
		ok := m.KcmpRet >= 0
		c.Kcmp.Measured = &ok
		c.Kcmp.Errno = nil
		if m.KcmpRet < 0 {
			c.Kcmp.Errno = strPtr(seccomp.ErrnoName(int(-m.KcmpRet)))
		}
		if ok != c.Kcmp.Predicted {
			notes = append(notes, sessions.Disagreement{Kind: sessions.DisagreeUnexplainedKcmp})
		}
	}
	if all := append(notes, predicted...); len(all) > 0 {
		c.Disagreements = all
	} else {
		c.Disagreements = nil
	}
	return c
}
