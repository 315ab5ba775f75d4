package access

import (
	"fmt"
	"strings"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/seccomp"
	"golang.org/x/sys/unix"
)

// Reasons, the first failing rule of kernel.md A.3 in the words of sessions.Cell.Reason.
const (
	ReasonSeccomp      = "seccomp"
	ReasonUID          = "uid"
	ReasonDumpable     = "dumpable"
	ReasonCapabilities = "capabilities"
	ReasonPidNS        = "pidns"
	ReasonUserNS       = "userns"
	ReasonYama         = "yama"
	ReasonENOSYS       = "enosys"
	ReasonExited       = "exited"
)

// Verdict is the prediction for the ordered pair (A reads B).
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
	Reason, VMReason, KcmpReason string
	// Explain is one sentence naming the rule (kernel function) and the fix a user can apply.
	Explain string
	// Disagree names a dangerous difference between what Open MPI decides and what
	// process_vm_readv does: CMA used but failing, or CMA refused although it would work.
	Disagree string
	// Uncertain says what /proc could not show that might change the answer (seccomp filter
	// contents, B's dumpability, PR_SET_PTRACER, an LSM policy); "" when the rules are complete.
	Uncertain string
}

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
	reason    string
	row       int
	explain   lazy // rendered only for the call whose outcome is reported
	uncertain string
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
		v.Reason, v.Explain = vm.reason, vm.explain.String()
	case !kc.ok:
		v.Reason, v.Explain = kc.reason, kc.explain.String()
	default:
		v.Explain = vm.explain.String()
	}
	v.Uncertain = joinNonEmpty(vm.uncertain, kc.uncertain)
	if sys.ObserverNestedNS {
		v.Uncertain = joinNonEmpty(v.Uncertain, "crashtui runs in a child user namespace, so /proc shows ids mapped into it (unmapped ids read as 65534) and equal-looking ids may differ")
	}
	if len(sys.LSMs) > 0 {
		for _, l := range []string{"selinux", "apparmor", "smack"} {
			if sys.hasLSM(l) {
				v.Uncertain = joinNonEmpty(v.Uncertain, "the "+l+" policy may refuse further (A.3 row 11: process:ptrace for process_vm_readv, file:read for kcmp)")
			}
		}
	}
	openMPI(&v, a, b)
	return v
}

// cmaTrap starts the Disagree of a pair where Open MPI's kcmp pre-check passes and CMA fails.
const cmaTrap = "Open MPI would use CMA (kcmp passes) but process_vm_readv fails"

// openMPI fills OpenMPI and Disagree from smsc_cma_module.c mca_smsc_cma_get_endpoint:
// different user-namespace inodes refuse CMA; otherwise kcmp(getpid(), peer_pid, KCMP_VM)
// with the pid the peer published (its getpid(), in its own PID namespace) decides.
func openMPI(v *Verdict, a, b Proc) {
	sameUser := sameUserNS(a, b)
	samePid := samePidNS(a, b)
	v.OpenMPI = sameUser && samePid && v.Kcmp
	switch {
	case v.OpenMPI && !v.VMReadv:
		v.Disagree = fmt.Sprintf("%s with %s (%s): single-copy transfers would fail at run time", cmaTrap, v.VMErrno, v.VMReason)
	case !v.OpenMPI && v.VMReadv && !sameUser:
		v.Disagree = "Open MPI refuses CMA that would work: A and B are in different user namespaces (smsc_cma_module.c get_endpoint compares the inodes)"
	case !v.OpenMPI && v.VMReadv && !samePid:
		v.Disagree = fmt.Sprintf("Open MPI in A would run kcmp on pid %d (B's own getpid()), which in A's PID namespace names another process or none; if that kcmp succeeds, Open MPI copies to or from the wrong process", ownPID(b))
	case !v.OpenMPI && v.VMReadv:
		v.Disagree = fmt.Sprintf("Open MPI refuses CMA that would work: kcmp fails with %s (%s) although process_vm_readv succeeds", v.KcmpErrno, v.KcmpReason)
	}
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
		OpenMPI: v.OpenMPI, Reason: strPtr(v.Reason), Explain: v.Explain, Disagree: v.Disagree,
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
	if built := sys.CMABuilt; c == callKcmp {
		built = sys.KcmpBuilt
		if built != nil && !*built {
			return outcome{errno: "ENOSYS", reason: ReasonENOSYS, row: 0, explain: lazy{f: "kcmp is not built into this kernel (CONFIG_KCMP off, so sys_ni_syscall returns ENOSYS), and Open MPI's smsc/cma then refuses CMA while blaming CAP_SYS_PTRACE. Fix: use a kernel with CONFIG_KCMP=y (CONFIG_CHECKPOINT_RESTORE before 5.12), or ignore the message since process_vm_readv is checked separately."}}
		}
	} else if built != nil && !*built {
		return outcome{errno: "ENOSYS", reason: ReasonENOSYS, row: 0, explain: lazy{f: "process_vm_readv is not built into this kernel (CONFIG_CROSS_MEMORY_ATTACH off, so sys_ni_syscall returns ENOSYS). Fix: use a kernel with CONFIG_CROSS_MEMORY_ATTACH=y, or run Open MPI with --mca smsc ^cma."}}
	}

	// Row 1: A's seccomp filter (B's is irrelevant).
	if o, stop := seccompRow(sys, a, b, c); stop {
		return o
	}

	// Row 2: B must be nameable in A's PID namespace (find_get_task_by_vpid / find_task_by_vpid).
	if _, ok := PIDIn(a, b); !ok {
		return outcome{errno: "ESRCH", reason: ReasonPidNS, row: 2, explain: lz(
			"B (pid %d) cannot be named in A's PID namespace (pid:[%d]; %s looks B up with find_task_by_vpid and gets ESRCH). Fix: run the ranks in one PID namespace (docker run --pid=host, or --pid=container:<first rank>); note that Open MPI never compares PID namespaces.",
			b.PID, first(a.PidNS), c)}
	}

	// Row 3: B has no mm. process_vm_readv's mm_access fails with ESRCH; kcmp only compares
	// pointers and goes on to the credential checks.
	var uncertain string
	if !b.HasMM || b.Exited() {
		if c == callVM {
			what := "has exited (zombie)"
			if !b.Exited() {
				what = "has no address space (a kernel thread)"
			}
			return outcome{errno: "ESRCH", reason: ReasonExited, row: 3, explain: lz(
				"B (pid %d) %s, so mm_access in mm/process_vm_access.c returns ESRCH; nothing to fix on the permission side.", b.PID, what)}
		}
	}

	// Row 4: same thread group: __ptrace_may_access allows before any check (and
	// mm_access skips the check for its own mm).
	if a.Tgid != 0 && a.Tgid == b.Tgid {
		return outcome{ok: true, row: 4, explain: lazy{f: "A and B are one thread group: __ptrace_may_access allows it before any credential check."}}
	}

	// Row 5: credentials with REALCREDS: A's real ids against B's real, effective, saved.
	idsMatch := a.UID[0] == b.UID[0] && a.UID[0] == b.UID[1] && a.UID[0] == b.UID[2] &&
		a.GID[0] == b.GID[0] && a.GID[0] == b.GID[1] && a.GID[0] == b.GID[2]
	capB := capIn(a, b.UserNS)
	if !idsMatch && !capB {
		reason := ReasonUID
		why := fmt.Sprintf("A (uid %d gid %d) may not read B (uid %s gid %s): ptrace_may_access requires A's real uid and gid to equal B's real, effective and saved ids, or CAP_SYS_PTRACE in B's user namespace (kernel/ptrace.c __ptrace_may_access)",
			a.UID[0], a.GID[0], idList(b.UID), idList(b.GID))
		fix := "Fix: run both ranks as the same user and group, or grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE)."
		if a.CapEff&CapSysPtrace != 0 {
			reason = ReasonUserNS
			why += fmt.Sprintf("; A has CAP_SYS_PTRACE, but only in user namespace user:[%d], which is neither B's (user:[%d]) nor an ancestor of it", first(userInodes(a.UserNS)), first(userInodes(b.UserNS)))
			fix = "Fix: run both ranks in one user namespace (one container), or as the same user."
		}
		return outcome{errno: "EPERM", reason: reason, row: 5, explain: lz("%s. %s", why, fix)}
	}

	// Row 6: B non-dumpable needs CAP_SYS_PTRACE in B's mm->user_ns.
	if b.HasMM && !b.Exited() {
		mmNS := mmUserNS(b)
		switch b.Dumpable {
		case DumpableNo:
			if !capIn(a, mmNS) {
				return outcome{errno: "EPERM", reason: ReasonDumpable, row: 6, explain: lz(
					"B (pid %d) is not dumpable (prctl(PR_SET_DUMPABLE, 0), a setuid/setgid or file-capability exec, or an id change with fs.suid_dumpable=%s), and A lacks CAP_SYS_PTRACE in B's mm->user_ns (kernel/ptrace.c __ptrace_may_access: get_dumpable(mm) != SUID_DUMP_USER). Fix: have B call prctl(PR_SET_DUMPABLE, 1) after changing ids, avoid setuid launchers, or grant A CAP_SYS_PTRACE.",
					b.PID, sysctlVal(sys.SuidDumpable))}
			}
		case DumpableUnknown:
			if !capIn(a, mmNS) {
				uncertain = fmt.Sprintf("B's dumpability cannot be read from /proc (its euid %d is the root of its namespace); if B is non-dumpable, %s is refused with EPERM", b.UID[1], c)
			}
		}
	}

	// Row 7: commoncap cap_ptrace_access_check: same user namespace and B's permitted set
	// within A's (CapPrm under REALCREDS), else CAP_SYS_PTRACE in B's user namespace.
	sameNS := sameUserNS(a, b)
	if !(sameNS && b.CapPrm&^a.CapPrm == 0) && !capB {
		if sameNS {
			return outcome{errno: "EPERM", reason: ReasonCapabilities, row: 7, explain: lz(
				"B (pid %d) holds permitted capabilities %#x that A's permitted set %#x lacks, and A has no CAP_SYS_PTRACE (security/commoncap.c cap_ptrace_access_check). Fix: give both ranks the same capability set (the same --cap-add/--cap-drop), or grant CAP_SYS_PTRACE.",
				b.PID, b.CapPrm&^a.CapPrm, a.CapPrm)}
		}
		return outcome{errno: "EPERM", reason: ReasonUserNS, row: 7, explain: lz(
			"A (user:[%d]) and B (user:[%d]) are in different user namespaces and A lacks CAP_SYS_PTRACE in B's (security/commoncap.c cap_ptrace_access_check trusts equal ids only inside one namespace). Fix: run both ranks in one user namespace (one container), or start A from the owner of B's namespace.",
			first(userInodes(a.UserNS)), first(userInodes(b.UserNS)))}
	}

	// Rows 8-10: Yama, only for PTRACE_MODE_ATTACH, i.e. process_vm_readv, never kcmp.
	if c == callVM {
		if o, deny := yamaRow(sys, a, b, capB); deny {
			o.uncertain = joinNonEmpty(uncertain, o.uncertain)
			return o
		}
	}

	explain := lz("A may use %s on B: A's real uid/gid equal B's real, effective and saved ids, B is dumpable and B's permitted capabilities are within A's (kernel/ptrace.c __ptrace_may_access).", c)
	if !idsMatch || !sameNS || b.CapPrm&^a.CapPrm != 0 {
		explain = lz("A may use %s on B: A has CAP_SYS_PTRACE in B's user namespace, from its effective set or as the euid that created B's namespace (kernel/ptrace.c ptrace_has_cap, security/commoncap.c cap_capable).", c)
	}
	if !b.HasMM || b.Exited() {
		explain = lz("kcmp still works on B (pid %d) although it has no mm: kcmp compares pointers after the credential checks.", b.PID)
	}
	return outcome{ok: true, row: 12, explain: explain, uncertain: uncertain}
}

// seccompRow decides A.3 row 1. stop is true when the filter (or strict mode) denies.
func seccompRow(sys System, a, b Proc, c call) (outcome, bool) {
	act, known := seccompFor(sys, a, b, c)
	if act.Runs() {
		return outcome{}, false
	}
	o := outcome{reason: ReasonSeccomp, row: 1}
	fix := "Fix: run A with a seccomp profile that allows kcmp and process_vm_readv (Docker's default profile enables kcmp with --cap-add SYS_PTRACE; or --security-opt seccomp=<profile>)."
	switch {
	case a.Seccomp == 1:
		o.errno = "SIGKILL"
		o.explain = lz("A (pid %d) is in seccomp strict mode, where any syscall but read, write, exit and sigreturn kills it (kernel/seccomp.c __secure_computing_strict). Fix: do not run A under SECCOMP_MODE_STRICT.", a.PID)
		return o, true
	case !known:
		o.errno = "EPERM"
		o.uncertain = fmt.Sprintf("A's %d seccomp filter(s) were not read (PTRACE_SECCOMP_GET_FILTER needs CAP_SYS_ADMIN); assumed to deny %s with EPERM as Docker/runc profiles do without CAP_SYS_PTRACE", a.SeccompFilters, c)
		o.explain = lz("A (pid %d) runs under %d seccomp filter(s), which container profiles use to refuse %s with EPERM (kernel/seccomp.c __seccomp_filter; B's filters are irrelevant). %s", a.PID, a.SeccompFilters, c, fix)
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
		o.uncertain = "A's seccomp filter hands " + c.String() + " to a user-space supervisor, which decides"
	default:
		o.errno = "SIGSYS"
	}
	o.explain = lz("A's seccomp filter returns %s for %s (kernel/seccomp.c __seccomp_filter runs before the syscall; B's filters are irrelevant). %s", act, c, fix)
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
	o := outcome{errno: "EPERM", reason: ReasonYama, row: 9}
	switch sys.Yama {
	case 1:
		if capB || contains(b.Ancestors, a.Tgid) || b.TracerPid == a.Tgid && a.Tgid != 0 ||
			b.Ptracer == -1 || b.Ptracer != 0 && (b.Ptracer == a.Tgid || contains(a.Ancestors, b.Ptracer)) {
			return outcome{}, false
		}
		o.uncertain = "PR_SET_PTRACER is invisible in /proc: B may have named A (Open MPI's smsc/cma sets PR_SET_PTRACER_ANY), which would allow it"
		o.explain = lz("Yama ptrace_scope=1 refuses process_vm_readv because B (pid %d) does not descend from A (pid %d) and did not name A with PR_SET_PTRACER (security/yama/yama_lsm.c yama_ptrace_access_check, ATTACH mode only, so kcmp still passes). Fix: sysctl kernel.yama.ptrace_scope=0, have B call prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), or grant CAP_SYS_PTRACE.", b.PID, a.PID)
	case 2:
		if capB {
			return outcome{}, false
		}
		o.row = 10
		o.explain = lazy{f: "Yama ptrace_scope=2 lets only CAP_SYS_PTRACE holders attach, and process_vm_readv is an ATTACH-mode check (security/yama/yama_lsm.c yama_ptrace_access_check; kcmp is READ mode and still passes). Fix: grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) or set kernel.yama.ptrace_scope to 0 or 1."}
	case 3:
		o.row = 10
		o.explain = lazy{f: "Yama ptrace_scope=3 refuses every ATTACH-mode access, process_vm_readv included, and cannot be lowered until reboot (security/yama/yama_lsm.c yama_ptrace_access_check; kcmp is READ mode and still passes). Fix: boot with kernel.yama.ptrace_scope<=1, or run Open MPI with --mca smsc ^cma."}
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

func first(s []uint64) uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

func userInodes(s []UserNS) []uint64 {
	if len(s) == 0 {
		return nil
	}
	return []uint64{s[0].Inode}
}

func idList(ids [4]uint32) string {
	if ids[0] == ids[1] && ids[1] == ids[2] {
		return fmt.Sprint(ids[0])
	}
	return fmt.Sprintf("%d/%d/%d", ids[0], ids[1], ids[2])
}

func sysctlVal(n int) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
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
// A measurement that contradicts the prediction is reported in Disagree.
func ApplyMeasurement(c sessions.Cell, m Measurement) sessions.Cell {
	var notes []string
	c.VMReadv.NotRun, c.Kcmp.NotRun = m.VMNotRun, m.KcmpNotRun
	if m.NotRun != nil {
		c.VMReadv.NotRun, c.Kcmp.NotRun = m.NotRun, m.NotRun
	}
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
			notes = append(notes, "process_vm_readv measured allowed although Yama was predicted to refuse it: B has named A, or any process, with prctl(PR_SET_PTRACER), the exception /proc does not show (Open MPI's smsc/cma sets PR_SET_PTRACER_ANY)")
			if strings.HasPrefix(c.Disagree, cmaTrap) {
				c.Disagree = "" // CMA works after all
			}
		default:
			notes = append(notes, fmt.Sprintf("unexplained: process_vm_readv predicted %s, measured %s (an LSM, PR_SET_PTRACER, or something /proc does not show?)", word(c.VMReadv.Predicted), word(ok)))
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
			notes = append(notes, fmt.Sprintf("unexplained: kcmp predicted %s, measured %s (an LSM or something /proc does not show?)", word(c.Kcmp.Predicted), word(ok)))
		}
	}
	if len(notes) > 0 {
		c.Disagree = strings.Join(append(notes, c.Disagree), "; ")
		c.Disagree = strings.TrimSuffix(c.Disagree, "; ")
	}
	return c
}

func word(ok bool) string {
	if ok {
		return "allowed"
	}
	return "denied"
}

// lazy is an explanation rendered only when it is reported: Predict decides both calls but
// explains one, and PredictAll does this for every pair of a large job.
type lazy struct {
	f string
	a []any
}

func lz(format string, args ...any) lazy { return lazy{f: format, a: args} }

func (l lazy) String() string {
	if len(l.a) == 0 {
		return l.f
	}
	return fmt.Sprintf(l.f, l.a...)
}
