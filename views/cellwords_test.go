package views

import (
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// TestCellWords: every row of kernel.md A.3 the tracer reports is worded here, in exactly
// the sentences the tracer itself wrote before it reported facts (what --json's explain and
// disagree have always said, and what scripts may match): each expected string below is the
// old tracer's output for the same pair.
func TestCellWords(t *testing.T) {
	const seccompFix = " Fix: run A with a seccomp profile that allows kcmp and process_vm_readv (Docker's default profile enables kcmp with --cap-add SYS_PTRACE; or --security-opt seccomp=<profile>)."
	vm := "process_vm_readv"
	for _, tc := range []struct {
		from, to int
		rule     sessions.Rule
		want     string
	}{
		{23, 60, sessions.Rule{Row: sessions.RowSeccompStrict, Call: vm},
			"A (pid 23) is in seccomp strict mode, where any syscall but read, write, exit and sigreturn kills it (kernel/seccomp.c __secure_computing_strict). Fix: do not run A under SECCOMP_MODE_STRICT."},
		{24, 60, sessions.Rule{Row: sessions.RowSeccompUnread, Call: vm, Filters: 3},
			"A (pid 24) runs under 3 seccomp filter(s), which container profiles use to refuse process_vm_readv with EPERM (kernel/seccomp.c __seccomp_filter; B's filters are irrelevant)." + seccompFix},
		{30, 60, sessions.Rule{Row: sessions.RowSeccompFilter, Call: "kcmp", Action: "ERRNO(EPERM)"},
			"A's seccomp filter returns ERRNO(EPERM) for kcmp (kernel/seccomp.c __seccomp_filter runs before the syscall; B's filters are irrelevant)." + seccompFix},
		{20, 60, sessions.Rule{Row: sessions.RowNotBuilt, Call: "kcmp"},
			"kcmp is not built into this kernel (CONFIG_KCMP off, so sys_ni_syscall returns ENOSYS), and Open MPI's smsc/cma then refuses CMA while blaming CAP_SYS_PTRACE. Fix: use a kernel with CONFIG_KCMP=y (CONFIG_CHECKPOINT_RESTORE before 5.12), or ignore the message since process_vm_readv is checked separately."},
		{20, 60, sessions.Rule{Row: sessions.RowNotBuilt, Call: vm},
			"process_vm_readv is not built into this kernel (CONFIG_CROSS_MEMORY_ATTACH off, so sys_ni_syscall returns ENOSYS). Fix: use a kernel with CONFIG_CROSS_MEMORY_ATTACH=y, or run Open MPI with --mca smsc ^cma."},
		{50, 60, sessions.Rule{Row: sessions.RowPidNS, Call: vm, PidNS: 201},
			"B (pid 60) cannot be named in A's PID namespace (pid:[201]; process_vm_readv looks B up with find_task_by_vpid and gets ESRCH). Fix: run the ranks in one PID namespace (docker run --pid=host, or --pid=container:<first rank>); note that Open MPI never compares PID namespaces."},
		{20, 68, sessions.Rule{Row: sessions.RowNoMM, Call: vm, Exited: true},
			"B (pid 68) has exited (zombie), so mm_access in mm/process_vm_access.c returns ESRCH; nothing to fix on the permission side."},
		{20, 69, sessions.Rule{Row: sessions.RowNoMM, Call: vm},
			"B (pid 69) has no address space (a kernel thread), so mm_access in mm/process_vm_access.c returns ESRCH; nothing to fix on the permission side."},
		{20, 71, sessions.Rule{Row: sessions.RowThreadGroup, Call: vm},
			"A and B are one thread group: __ptrace_may_access allows it before any credential check."},
		{22, 62, sessions.Rule{Row: sessions.RowIDsCapElsewhere, Call: vm, AUID: 1000, AGID: 1000, AUserNS: 150, BUserNS: 100},
			"A (uid 1000 gid 1000) may not read B (uid 0 gid 0): ptrace_may_access requires A's real uid and gid to equal B's real, effective and saved ids, or CAP_SYS_PTRACE in B's user namespace (kernel/ptrace.c __ptrace_may_access); A has CAP_SYS_PTRACE, but only in user namespace user:[150], which is neither B's (user:[100]) nor an ancestor of it. Fix: run both ranks in one user namespace (one container), or as the same user."},
		{20, 63, sessions.Rule{Row: sessions.RowIDs, Call: vm, AUID: 1000, AGID: 1000, BUID: [3]uint32{1001, 1001, 1001}, BGID: [3]uint32{1001, 1001, 1001}},
			"A (uid 1000 gid 1000) may not read B (uid 1001 gid 1001): ptrace_may_access requires A's real uid and gid to equal B's real, effective and saved ids, or CAP_SYS_PTRACE in B's user namespace (kernel/ptrace.c __ptrace_may_access). Fix: run both ranks as the same user and group, or grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE)."},
		{20, 64, sessions.Rule{Row: sessions.RowIDs, Call: vm, AUID: 1000, AGID: 1000, BUID: [3]uint32{1000, 1000, 0}, BGID: [3]uint32{1000, 1000, 1000}},
			"A (uid 1000 gid 1000) may not read B (uid 1000/1000/0 gid 1000): ptrace_may_access requires A's real uid and gid to equal B's real, effective and saved ids, or CAP_SYS_PTRACE in B's user namespace (kernel/ptrace.c __ptrace_may_access). Fix: run both ranks as the same user and group, or grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE)."},
		{20, 66, sessions.Rule{Row: sessions.RowDumpable, Call: vm, SuidDumpable: -1},
			"B (pid 66) is not dumpable (prctl(PR_SET_DUMPABLE, 0), a setuid/setgid or file-capability exec, or an id change with fs.suid_dumpable=?), and A lacks CAP_SYS_PTRACE in B's mm->user_ns (kernel/ptrace.c __ptrace_may_access: get_dumpable(mm) != SUID_DUMP_USER). Fix: have B call prctl(PR_SET_DUMPABLE, 1) after changing ids, avoid setuid launchers, or grant A CAP_SYS_PTRACE."},
		{20, 70, sessions.Rule{Row: sessions.RowCapabilities, Call: vm, Missing: 0x3000},
			"B (pid 70) holds permitted capabilities 0x3000 that A's permitted set 0x0 lacks, and A has no CAP_SYS_PTRACE (security/commoncap.c cap_ptrace_access_check). Fix: give both ranks the same capability set (the same --cap-add/--cap-drop), or grant CAP_SYS_PTRACE."},
		{20, 22, sessions.Rule{Row: sessions.RowUserNS, Call: vm, AUserNS: 100, BUserNS: 150},
			"A (user:[100]) and B (user:[150]) are in different user namespaces and A lacks CAP_SYS_PTRACE in B's (security/commoncap.c cap_ptrace_access_check trusts equal ids only inside one namespace). Fix: run both ranks in one user namespace (one container), or start A from the owner of B's namespace."},
		{20, 60, sessions.Rule{Row: sessions.RowYama, Call: vm, Yama: 1},
			"Yama ptrace_scope=1 refuses process_vm_readv because B (pid 60) does not descend from A (pid 20) and did not name A with PR_SET_PTRACER (security/yama/yama_lsm.c yama_ptrace_access_check, ATTACH mode only, so kcmp still passes). Fix: sysctl kernel.yama.ptrace_scope=0, have B call prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), or grant CAP_SYS_PTRACE."},
		{20, 60, sessions.Rule{Row: sessions.RowYama, Call: vm, Yama: 2},
			"Yama ptrace_scope=2 lets only CAP_SYS_PTRACE holders attach, and process_vm_readv is an ATTACH-mode check (security/yama/yama_lsm.c yama_ptrace_access_check; kcmp is READ mode and still passes). Fix: grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) or set kernel.yama.ptrace_scope to 0 or 1."},
		{20, 60, sessions.Rule{Row: sessions.RowYama, Call: vm, Yama: 3},
			"Yama ptrace_scope=3 refuses every ATTACH-mode access, process_vm_readv included, and cannot be lowered until reboot (security/yama/yama_lsm.c yama_ptrace_access_check; kcmp is READ mode and still passes). Fix: boot with kernel.yama.ptrace_scope<=1, or run Open MPI with --mca smsc ^cma."},
		{20, 60, sessions.Rule{Row: sessions.RowSameIDs, Call: vm},
			"A may use process_vm_readv on B: A's real uid/gid equal B's real, effective and saved ids, B is dumpable and B's permitted capabilities are within A's (kernel/ptrace.c __ptrace_may_access)."},
		{20, 73, sessions.Rule{Row: sessions.RowCapSysPtrace, Call: vm},
			"A may use process_vm_readv on B: A has CAP_SYS_PTRACE in B's user namespace, from its effective set or as the euid that created B's namespace (kernel/ptrace.c ptrace_has_cap, security/commoncap.c cap_capable)."},
	} {
		c := sessions.Cell{From: tc.from, To: tc.to, Rule: tc.rule}
		if got := CellWhy(&c); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.rule.Row, got, tc.want)
		}
		// The explanation box has the same sentence, with the fix under its own label.
		ex := ExplainCell(&c)
		if what, fix, _ := strings.Cut(tc.want, " Fix: "); ex.What != what || ex.Fix != fix {
			t.Errorf("%s: explanation what %q fix %q", tc.rule.Row, ex.What, ex.Fix)
		}
	}
}

// TestCellDisagreeWords: each disagreement in the old tracer's words, measured ones first.
func TestCellDisagreeWords(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		c    sessions.Cell
		want string
	}{
		{sessions.Cell{Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreeCMAFails, Errno: "ESRCH", Reason: sessions.ReasonExited}}},
			"Open MPI would use CMA (kcmp passes) but process_vm_readv fails with ESRCH (exited): single-copy transfers would fail at run time"},
		{sessions.Cell{Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreeCMARefusedUserNS}}},
			"Open MPI refuses CMA that would work: A and B are in different user namespaces (smsc_cma_module.c get_endpoint compares the inodes)"},
		{sessions.Cell{Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreeCMAWrongPID, PID: 1}}},
			"Open MPI in A would run kcmp on pid 1 (B's own getpid()), which in A's PID namespace names another process or none; if that kcmp succeeds, Open MPI copies to or from the wrong process"},
		{sessions.Cell{Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreePtracer}}},
			"process_vm_readv measured allowed although Yama was predicted to refuse it: B has named A, or any process, with prctl(PR_SET_PTRACER), the exception /proc does not show (Open MPI's smsc/cma sets PR_SET_PTRACER_ANY)"},
		{sessions.Cell{VMReadv: sessions.Check{Predicted: true, Measured: &no}, Kcmp: sessions.Check{Predicted: false, Measured: &yes},
			Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreeUnexplainedVMReadv}, {Kind: sessions.DisagreeUnexplainedKcmp},
				{Kind: sessions.DisagreeCMARefusedKcmp, Errno: "EPERM", Reason: sessions.ReasonSeccomp}}},
			"unexplained: process_vm_readv predicted allowed, measured denied (an LSM, PR_SET_PTRACER, or something /proc does not show?); unexplained: kcmp predicted denied, measured allowed (an LSM or something /proc does not show?); Open MPI refuses CMA that would work: kcmp fails with EPERM (seccomp) although process_vm_readv succeeds"},
		// A recording of format version 2 or older says it in its own words.
		{sessions.Cell{Disagree: "recorded\x1b[2J words", Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreePtracer}}}, sessions.Sanitize("recorded\x1b[2J words")},
	} {
		if got := CellDisagree(&tc.c); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
		if !tc.c.Disagrees() {
			t.Errorf("%+v does not disagree", tc.c)
		}
	}
	if c := (sessions.Cell{}); CellDisagree(&c) != "" || c.Disagrees() {
		t.Error("a cell without disagreements has one")
	}
}

// TestCellRecordedWords: a cell of a recording of format version 2 or older carries the
// tracer's own sentence and no rule: the matrix's detail and the explanation show it as
// recorded (its fix included), sanitised; a cell with neither falls back on its answers.
func TestCellRecordedWords(t *testing.T) {
	uid := sessions.ReasonUID
	old := sessions.Cell{From: 1, To: 2, Reason: &uid, Explain: "A (uid 1000 gid 1000) may not read B (uid 0 gid 0): recorded\x1b]0;x\x07. Fix: run both ranks as the same user."}
	if got := CellWhy(&old); got != sessions.Sanitize(old.Explain) || strings.ContainsRune(got, 0x1b) {
		t.Errorf("recorded sentence: %q", got)
	}
	if ex := ExplainCell(&old); !strings.HasPrefix(ex.What, "A (uid 1000 gid 1000) may not read B") || ex.Fix != "" || ex.Rule != reasonRules[uid].rule {
		t.Errorf("recorded explanation: %+v", ex)
	}
	bare := sessions.Cell{From: 1, To: 2, Reason: &uid}
	if CellWhy(&bare) != "" || ExplainCell(&bare).What != "Both checks are refused: Open MPI falls back to copy-in/copy-out through shared memory." {
		t.Errorf("a cell with a reason only: %q / %q", CellWhy(&bare), ExplainCell(&bare).What)
	}
}

// TestCellNotRunShown: a measured matrix's cell whose calls crashtui did not run says why,
// in the matrix's detail and in the explanation, as crashtui matrix does.
func TestCellNotRunShown(t *testing.T) {
	c := sessions.Cell{From: 4104, To: 4102, VMReadv: sessions.Check{Predicted: true, NotRun: &sessions.NotRun{TID: 4104, Why: sessions.NotRunSeccomp, Action: "KILL_PROCESS"}},
		Kcmp: sessions.Check{Predicted: true, NotRun: &sessions.NotRun{TID: 4104, Why: sessions.NotRunSeccomp, Action: "KILL_PROCESS"}},
		Rule: sessions.Rule{Row: sessions.RowSameIDs, Call: "process_vm_readv"}}
	want := CellNotRun(c)
	if len(want) != 2 || !strings.Contains(want[0], "thread 4104's seccomp filter kills the whole process on process_vm_readv") {
		t.Fatalf("not-run sentences %q", want)
	}
	ex := ExplainCell(&c)
	for _, w := range want {
		if !strings.Contains(ex.What, w) {
			t.Errorf("explanation lacks %q:\n%s", w, ex.What)
		}
	}
	s := sessions.NewState()
	s.Apply(sessions.Event{Body: sessions.Matrix{PIDs: []int{4102, 4104}, Cells: []sessions.Cell{c, {From: 4102, To: 4104}}, Measured: true}})
	ix := IndexMatrix("", s.Matrix[""])
	out := Matrix(Plain(), s, ix, MatrixOptions{Width: 400, Height: 30, Row: 1, Col: 0})
	if !strings.Contains(out, "not run: "+want[0]) {
		t.Errorf("the matrix's detail lacks the not-run sentence:\n%s", out)
	}
}
