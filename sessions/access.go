package sessions

// The access matrix's facts: why a cell is refused or allowed (the row of kernel.md A.3 that
// decided it, with what a sentence about it names) and the dangerous disagreements it shows.
// The tracer (tracer/access) decides them; views word them (views.CellWhy,
// views.CellDisagree), so a recording replays in the words of the build that replays it.

// Reason is the first rule of kernel.md A.3 that refuses a cell's calls (Cell.Reason).
type Reason string

const (
	ReasonENOSYS  Reason = "enosys"  // row 0: the call is not built into the kernel
	ReasonSeccomp Reason = "seccomp" // row 1: A's seccomp filter, or strict mode
	ReasonPidNS   Reason = "pidns"   // row 2: B cannot be named in A's PID namespace
	ReasonExited  Reason = "exited"  // row 3: B has no mm (process_vm_readv only)
	ReasonUID     Reason = "uid"     // row 5: the ids differ and A lacks CAP_SYS_PTRACE over B
	// ReasonUserNS: rows 5 and 7: A's CAP_SYS_PTRACE, or equal ids, count only in B's user
	// namespace.
	ReasonUserNS       Reason = "userns"
	ReasonDumpable     Reason = "dumpable"     // row 6: B is not dumpable
	ReasonCapabilities Reason = "capabilities" // row 7: B's permitted capabilities exceed A's
	ReasonYama         Reason = "yama"         // rows 9 and 10 (process_vm_readv only)
)

// Row names the rule of kernel.md A.3 that decided a call, refusing or allowing it.
type Row string

const (
	RowNotBuilt      Row = "not_built"      // 0: sys_ni_syscall (Call)
	RowSeccompStrict Row = "seccomp_strict" // 1: A is in seccomp strict mode
	// RowSeccompUnread: 1: A runs Filters filters the tracer could not read, assumed to refuse
	// Call with EPERM as container profiles do.
	RowSeccompUnread Row = "seccomp_unread"
	RowSeccompFilter Row = "seccomp_filter" // 1: A's filter returns Action for Call
	RowPidNS         Row = "pidns"          // 2: B is not in A's PID namespace (PidNS) or below it
	RowNoMM          Row = "no_mm"          // 3: B has exited (Exited) or is a kernel thread
	RowThreadGroup   Row = "thread_group"   // 4: A and B are one thread group: allowed
	RowIDs           Row = "ids"            // 5: the ids differ (AUID, AGID against BUID, BGID)
	// RowIDsCapElsewhere: 5: the ids differ, and A's CAP_SYS_PTRACE is in its own user
	// namespace (AUserNS), neither B's (BUserNS) nor an ancestor of it.
	RowIDsCapElsewhere Row = "ids_cap_elsewhere"
	RowDumpable        Row = "dumpable"       // 6: B is not dumpable (SuidDumpable)
	RowCapabilities    Row = "capabilities"   // 7: B holds Missing, which A's APermitted lacks
	RowUserNS          Row = "userns"         // 7: A (AUserNS) and B (BUserNS) in different user namespaces
	RowYama            Row = "yama"           // 9, 10: Yama's ptrace_scope (Yama) refuses an attach
	RowSameIDs         Row = "same_ids"       // 12: allowed: same ids, B dumpable, capabilities within A's
	RowCapSysPtrace    Row = "cap_sys_ptrace" // 12: allowed: A has CAP_SYS_PTRACE in B's user namespace
	RowKcmpNoMM        Row = "kcmp_no_mm"     // 12: kcmp allowed on a B without mm
)

// Rule is the row of kernel.md A.3 that decided a cell (the call its Reason is about, or
// process_vm_readv when both are allowed), with the parameters its sentence names; A is the
// cell's From, B its To. Only the fields its Row names are set (a zero field is absent from
// the JSON).
type Rule struct {
	Row Row `json:"row"`
	// Call is the call the row decided: process_vm_readv or kcmp.
	Call string `json:"call,omitempty"`
	// Filters is how many seccomp filters A runs (RowSeccompUnread); Action what they return
	// for Call (RowSeccompFilter: KILL_PROCESS, TRAP, ERRNO(EPERM)…).
	Filters int    `json:"filters,omitzero"`
	Action  string `json:"action,omitempty"`
	// PidNS is A's PID namespace, AUserNS and BUserNS A's and B's user namespaces, by inode
	// (0: unreadable).
	PidNS   uint64 `json:"pidns,omitzero"`
	AUserNS uint64 `json:"a_userns,omitzero"`
	BUserNS uint64 `json:"b_userns,omitzero"`
	// Exited: B has exited (a zombie); otherwise it is a kernel thread (RowNoMM).
	Exited bool `json:"exited,omitzero"`
	// AUID and AGID are A's real uid and gid; BUID and BGID B's real, effective and saved ids.
	AUID uint32    `json:"a_uid,omitzero"`
	AGID uint32    `json:"a_gid,omitzero"`
	BUID [3]uint32 `json:"b_uid,omitzero"`
	BGID [3]uint32 `json:"b_gid,omitzero"`
	// SuidDumpable is fs.suid_dumpable (-1: unreadable), the dumpability an id change leaves.
	SuidDumpable int `json:"suid_dumpable,omitzero"`
	// Missing is the permitted capabilities B holds that A's permitted set (APermitted) lacks.
	Missing    Hex `json:"missing,omitzero"`
	APermitted Hex `json:"a_permitted,omitzero"`
	// Yama is kernel.yama.ptrace_scope (1, 2 or 3).
	Yama int `json:"yama,omitzero"`
}

// Disagreement is a dangerous difference a cell shows: between what Open MPI decides and what
// process_vm_readv does (predicted), or between the prediction and the measurement.
type Disagreement struct {
	Kind DisagreeKind `json:"kind"`
	// Errno and Reason are the failing call's, as predicted (DisagreeCMAFails,
	// DisagreeCMARefusedKcmp).
	Errno  string `json:"errno,omitempty"`
	Reason Reason `json:"reason,omitempty"`
	// PID is the pid Open MPI in A would name B by (DisagreeCMAWrongPID: B's own getpid()).
	PID int `json:"pid,omitempty"`
}

// DisagreeKind is what a Disagreement is about.
type DisagreeKind string

const (
	// DisagreeCMAFails: Open MPI would use CMA (its kcmp check passes) but process_vm_readv
	// fails: single-copy transfers would fail at run time.
	DisagreeCMAFails DisagreeKind = "cma_fails"
	// DisagreeCMARefusedUserNS: Open MPI refuses CMA that would work, because A and B are in
	// different user namespaces (smsc_cma_module.c get_endpoint compares the inodes).
	DisagreeCMARefusedUserNS DisagreeKind = "cma_refused_userns"
	// DisagreeCMAWrongPID: A and B are in different PID namespaces: Open MPI in A would run
	// kcmp on PID, which in A's namespace names another process or none.
	DisagreeCMAWrongPID DisagreeKind = "cma_wrong_pid"
	// DisagreeCMARefusedKcmp: Open MPI refuses CMA that would work, because kcmp fails.
	DisagreeCMARefusedKcmp DisagreeKind = "cma_refused_kcmp"
	// DisagreePtracer: process_vm_readv measured allowed where Yama was predicted to refuse
	// it: B named A with PR_SET_PTRACER, which /proc does not show.
	DisagreePtracer DisagreeKind = "ptracer"
	// DisagreeUnexplainedVMReadv and DisagreeUnexplainedKcmp: the call's measurement (the
	// cell's Check) differs from its prediction, and no rule says why.
	DisagreeUnexplainedVMReadv DisagreeKind = "unexplained_vm_readv"
	DisagreeUnexplainedKcmp    DisagreeKind = "unexplained_kcmp"
)

// Disagrees says whether the cell shows a disagreement (as facts, or as a recording's
// sentence).
func (c *Cell) Disagrees() bool { return len(c.Disagreements) > 0 || c.Disagree != "" }
