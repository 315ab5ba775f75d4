package views

import (
	"fmt"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// The words of the access matrix: every sentence about a cell is written here, from the facts
// the tracer reports (sessions.Rule, sessions.Disagreement, sessions.NotRun).

// CellWhy explains a cell in a sentence or two: the rule of kernel.md A.3 that decided it,
// naming the kernel function, then "Fix: " and what a user can do about it (the explain of
// --json). A recording of format version 2 or older says it in its own recorded words; "" for
// a cell that carries neither.
func CellWhy(c *sessions.Cell) string {
	if c.Explain != "" {
		return sessions.Sanitize(c.Explain)
	}
	what, fix := ruleWords(c)
	if fix == "" {
		return what
	}
	return what + " Fix: " + fix
}

// seccompFix is the fix of every row-1 denial but strict mode's.
const seccompFix = "run A with a seccomp profile that allows kcmp and process_vm_readv (Docker's default profile enables kcmp with --cap-add SYS_PTRACE; or --security-opt seccomp=<profile>)."

// ruleWords is the sentence of the cell's Rule and its fix ("" when there is none); two ""
// for a cell without a rule.
func ruleWords(c *sessions.Cell) (what, fix string) {
	r := c.Rule
	call := sessions.Sanitize(r.Call)
	switch r.Row {
	case "":
		return "", ""
	case sessions.RowNotBuilt:
		if r.Call == "kcmp" {
			return "kcmp is not built into this kernel (CONFIG_KCMP off, so sys_ni_syscall returns ENOSYS), and Open MPI's smsc/cma then refuses CMA while blaming CAP_SYS_PTRACE.",
				"use a kernel with CONFIG_KCMP=y (CONFIG_CHECKPOINT_RESTORE before 5.12), or ignore the message since process_vm_readv is checked separately."
		}
		return "process_vm_readv is not built into this kernel (CONFIG_CROSS_MEMORY_ATTACH off, so sys_ni_syscall returns ENOSYS).",
			"use a kernel with CONFIG_CROSS_MEMORY_ATTACH=y, or run Open MPI with --mca smsc ^cma."
	case sessions.RowSeccompStrict:
		return fmt.Sprintf("A (pid %d) is in seccomp strict mode, where any syscall but read, write, exit and sigreturn kills it (kernel/seccomp.c __secure_computing_strict).", c.From),
			"do not run A under SECCOMP_MODE_STRICT."
	case sessions.RowSeccompUnread:
		return fmt.Sprintf("A (pid %d) runs under %d seccomp filter(s), which container profiles use to refuse %s with EPERM (kernel/seccomp.c __seccomp_filter; B's filters are irrelevant).", c.From, r.Filters, call),
			seccompFix
	case sessions.RowSeccompFilter:
		return fmt.Sprintf("A's seccomp filter returns %s for %s (kernel/seccomp.c __seccomp_filter runs before the syscall; B's filters are irrelevant).", sessions.Sanitize(r.Action), call),
			seccompFix
	case sessions.RowPidNS:
		return fmt.Sprintf("B (pid %d) cannot be named in A's PID namespace (pid:[%d]; %s looks B up with find_task_by_vpid and gets ESRCH).", c.To, r.PidNS, call),
			"run the ranks in one PID namespace (docker run --pid=host, or --pid=container:<first rank>); note that Open MPI never compares PID namespaces."
	case sessions.RowNoMM:
		what := "has no address space (a kernel thread)"
		if r.Exited {
			what = "has exited (zombie)"
		}
		return fmt.Sprintf("B (pid %d) %s, so mm_access in mm/process_vm_access.c returns ESRCH; nothing to fix on the permission side.", c.To, what), ""
	case sessions.RowThreadGroup:
		return "A and B are one thread group: __ptrace_may_access allows it before any credential check.", ""
	case sessions.RowIDs, sessions.RowIDsCapElsewhere:
		why := fmt.Sprintf("A (uid %d gid %d) may not read B (uid %s gid %s): ptrace_may_access requires A's real uid and gid to equal B's real, effective and saved ids, or CAP_SYS_PTRACE in B's user namespace (kernel/ptrace.c __ptrace_may_access)",
			r.AUID, r.AGID, idList(r.BUID), idList(r.BGID))
		if r.Row == sessions.RowIDs {
			return why + ".", "run both ranks as the same user and group, or grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE)."
		}
		return why + fmt.Sprintf("; A has CAP_SYS_PTRACE, but only in user namespace user:[%d], which is neither B's (user:[%d]) nor an ancestor of it.", r.AUserNS, r.BUserNS),
			"run both ranks in one user namespace (one container), or as the same user."
	case sessions.RowDumpable:
		return fmt.Sprintf("B (pid %d) is not dumpable (prctl(PR_SET_DUMPABLE, 0), a setuid/setgid or file-capability exec, or an id change with fs.suid_dumpable=%s), and A lacks CAP_SYS_PTRACE in B's mm->user_ns (kernel/ptrace.c __ptrace_may_access: get_dumpable(mm) != SUID_DUMP_USER).", c.To, sysctlVal(r.SuidDumpable)),
			"have B call prctl(PR_SET_DUMPABLE, 1) after changing ids, avoid setuid launchers, or grant A CAP_SYS_PTRACE."
	case sessions.RowCapabilities:
		return fmt.Sprintf("B (pid %d) holds permitted capabilities %#x that A's permitted set %#x lacks, and A has no CAP_SYS_PTRACE (security/commoncap.c cap_ptrace_access_check).", c.To, uint64(r.Missing), uint64(r.APermitted)),
			"give both ranks the same capability set (the same --cap-add/--cap-drop), or grant CAP_SYS_PTRACE."
	case sessions.RowUserNS:
		return fmt.Sprintf("A (user:[%d]) and B (user:[%d]) are in different user namespaces and A lacks CAP_SYS_PTRACE in B's (security/commoncap.c cap_ptrace_access_check trusts equal ids only inside one namespace).", r.AUserNS, r.BUserNS),
			"run both ranks in one user namespace (one container), or start A from the owner of B's namespace."
	case sessions.RowYama:
		switch r.Yama {
		case 1:
			return fmt.Sprintf("Yama ptrace_scope=1 refuses process_vm_readv because B (pid %d) does not descend from A (pid %d) and did not name A with PR_SET_PTRACER (security/yama/yama_lsm.c yama_ptrace_access_check, ATTACH mode only, so kcmp still passes).", c.To, c.From),
				"sysctl kernel.yama.ptrace_scope=0, have B call prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), or grant CAP_SYS_PTRACE."
		case 2:
			return "Yama ptrace_scope=2 lets only CAP_SYS_PTRACE holders attach, and process_vm_readv is an ATTACH-mode check (security/yama/yama_lsm.c yama_ptrace_access_check; kcmp is READ mode and still passes).",
				"grant CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE) or set kernel.yama.ptrace_scope to 0 or 1."
		case 3:
			return "Yama ptrace_scope=3 refuses every ATTACH-mode access, process_vm_readv included, and cannot be lowered until reboot (security/yama/yama_lsm.c yama_ptrace_access_check; kcmp is READ mode and still passes).",
				"boot with kernel.yama.ptrace_scope<=1, or run Open MPI with --mca smsc ^cma."
		}
		return fmt.Sprintf("Yama ptrace_scope=%d refuses process_vm_readv (security/yama/yama_lsm.c yama_ptrace_access_check).", r.Yama), ""
	case sessions.RowSameIDs:
		return fmt.Sprintf("A may use %s on B: A's real uid/gid equal B's real, effective and saved ids, B is dumpable and B's permitted capabilities are within A's (kernel/ptrace.c __ptrace_may_access).", call), ""
	case sessions.RowCapSysPtrace:
		return fmt.Sprintf("A may use %s on B: A has CAP_SYS_PTRACE in B's user namespace, from its effective set or as the euid that created B's namespace (kernel/ptrace.c ptrace_has_cap, security/commoncap.c cap_capable).", call), ""
	case sessions.RowKcmpNoMM:
		return fmt.Sprintf("kcmp still works on B (pid %d) although it has no mm: kcmp compares pointers after the credential checks.", c.To), ""
	}
	return "Decided by rule " + sessions.Sanitize(string(r.Row)) + " (a rule from a newer crashtui).", "" // a recording from a newer build
}

// idList is B's real, effective and saved ids: one number when they are equal.
func idList(ids [3]uint32) string {
	if ids[0] == ids[1] && ids[1] == ids[2] {
		return fmt.Sprint(ids[0])
	}
	return fmt.Sprintf("%d/%d/%d", ids[0], ids[1], ids[2])
}

// sysctlVal is a sysctl's value, "?" when it could not be read.
func sysctlVal(n int) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// CellDisagree says what is dangerous about a cell, each disagreement in a clause, measured
// ones first; a recording of format version 2 or older says it in its recorded words; "" when
// the cell shows none.
func CellDisagree(c *sessions.Cell) string {
	if c.Disagree != "" {
		return sessions.Sanitize(c.Disagree)
	}
	var out []string
	for _, d := range c.Disagreements {
		out = append(out, disagreementWords(c, d))
	}
	return strings.Join(out, "; ")
}

// cmaTrap starts the words of a pair where Open MPI's kcmp pre-check passes and CMA fails.
const cmaTrap = "Open MPI would use CMA (kcmp passes) but process_vm_readv fails"

func disagreementWords(c *sessions.Cell, d sessions.Disagreement) string {
	errno, reason := sessions.Sanitize(d.Errno), sessions.Sanitize(string(d.Reason))
	switch d.Kind {
	case sessions.DisagreeCMAFails:
		return fmt.Sprintf("%s with %s (%s): single-copy transfers would fail at run time", cmaTrap, errno, reason)
	case sessions.DisagreeCMARefusedUserNS:
		return "Open MPI refuses CMA that would work: A and B are in different user namespaces (smsc_cma_module.c get_endpoint compares the inodes)"
	case sessions.DisagreeCMAWrongPID:
		return fmt.Sprintf("Open MPI in A would run kcmp on pid %d (B's own getpid()), which in A's PID namespace names another process or none; if that kcmp succeeds, Open MPI copies to or from the wrong process", d.PID)
	case sessions.DisagreeCMARefusedKcmp:
		return fmt.Sprintf("Open MPI refuses CMA that would work: kcmp fails with %s (%s) although process_vm_readv succeeds", errno, reason)
	case sessions.DisagreePtracer:
		return "process_vm_readv measured allowed although Yama was predicted to refuse it: B has named A, or any process, with prctl(PR_SET_PTRACER), the exception /proc does not show (Open MPI's smsc/cma sets PR_SET_PTRACER_ANY)"
	case sessions.DisagreeUnexplainedVMReadv:
		return fmt.Sprintf("unexplained: process_vm_readv predicted %s, measured %s (an LSM, PR_SET_PTRACER, or something /proc does not show?)", allowedWord(c.VMReadv.Predicted), measuredWord(c.VMReadv))
	case sessions.DisagreeUnexplainedKcmp:
		return fmt.Sprintf("unexplained: kcmp predicted %s, measured %s (an LSM or something /proc does not show?)", allowedWord(c.Kcmp.Predicted), measuredWord(c.Kcmp))
	}
	return "disagreement " + sessions.Sanitize(string(d.Kind)) // a kind from a newer crashtui
}

func allowedWord(ok bool) string {
	if ok {
		return "allowed"
	}
	return "denied"
}

func measuredWord(c sessions.Check) string {
	if c.Measured == nil {
		return "nothing"
	}
	return allowedWord(*c.Measured)
}
