package views

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

// Explanation is the teaching text behind a cell, a crash group or a thread: what happened,
// the kernel rule, where the kernel decides it, the real bug it comes from (a seed) and the fix.
type Explanation struct {
	Title  string
	What   string // this case, in a sentence (the tracer's Explain text when it has one)
	Rule   string
	Kernel string
	Story  string
	Fix    string
	// Hint replaces "esc closes" at the bottom (the tour says how to go on).
	Hint string
}

// The stories behind each capability: the real bugs this tool was designed around.
const (
	StoryOpenMPI = "Open MPI's smsc/cma single-copy check (open-mpi/ompi#10694): in a Docker container run with --user 998:995 and no CAP_SYS_PTRACE, " +
		"process_vm_readv between two ranks failed and btl/sm died in an assertion (mca_pml_ob1_send_request_fini). " +
		"The fix made Open MPI call kcmp(getpid(), peer, KCMP_VM) first and skip CMA when it fails. kcmp checks in READ mode " +
		"and ignores Yama, CMA checks in ATTACH mode, so the proxy can still say yes where CMA is refused."
	StorySpindle = "LLNL Spindle's core-dump deduplication: each crash is keyed by <exe>|<library>+<offset> " +
		"(or abort:<message> for SIGABRT); the first process with a new key keeps its core and the others set RLIMIT_CORE " +
		"to 0, so a 10 000-rank crash writes one core per site. Faults the application's own handler repairs " +
		"(safepoints, SIGBUS on a file it then extends) are not crashes. crashtui does the same from outside, with ptrace."
	StoryCRIU = "CRIU's ppc64le scv fix (checkpoint-restore/criu#2261): glibc on POWER9+ enters the kernel with scv. CRIU recognised only sc " +
		"(trap 0xc00 with CR0.SO), so a thread interrupted inside an scv syscall was restored at the next instruction " +
		"with r3 = -512 and user code saw ERESTARTSYS instead of the syscall running again (zdtm/static/sigpending on Power10)."
)

// SigCodeText explains a signal and its si_code in a sentence.
func SigCodeText(signal, code string) string {
	if t, ok := codeText[code]; ok {
		return t
	}
	if t, ok := signalText[signal]; ok {
		return t
	}
	return "signal " + sessions.Sanitize(signal) + " " + sessions.Sanitize(code)
}

var codeText = map[string]string{
	"SEGV_MAPERR":   "SEGV_MAPERR: the address is not mapped at all (a NULL or wild pointer, a use after munmap, a stack overflow past the guard page).",
	"SEGV_ACCERR":   "SEGV_ACCERR: the address is mapped but the access is not permitted (a write to read-only data or code, execution of a non-executable page).",
	"SEGV_BNDERR":   "SEGV_BNDERR: a bounds check failed (MPX/bounds registers).",
	"SEGV_PKUERR":   "SEGV_PKUERR: a protection key forbade the access.",
	"SEGV_MTESERR":  "SEGV_MTESERR: an arm64 memory-tagging check failed synchronously (the pointer's tag does not match the memory's).",
	"BUS_ADRALN":    "BUS_ADRALN: a misaligned access on an architecture that traps on it.",
	"BUS_ADRERR":    "BUS_ADRERR: the address is mapped but has no backing page, typically an mmap of a file beyond its current end (the file was truncated, or never extended).",
	"BUS_OBJERR":    "BUS_OBJERR: a hardware error in the backing object.",
	"BUS_MCEERR_AR": "BUS_MCEERR_AR: a machine-check memory error was consumed.",
	"FPE_INTDIV":    "FPE_INTDIV: integer division by zero (x86 also raises it for INT_MIN / -1).",
	"FPE_INTOVF":    "FPE_INTOVF: integer overflow trap.",
	"FPE_FLTDIV":    "FPE_FLTDIV: floating-point division by zero with the exception unmasked.",
	"FPE_FLTOVF":    "FPE_FLTOVF: floating-point overflow with the exception unmasked.",
	"FPE_FLTUND":    "FPE_FLTUND: floating-point underflow with the exception unmasked.",
	"FPE_FLTRES":    "FPE_FLTRES: inexact floating-point result with the exception unmasked.",
	"FPE_FLTINV":    "FPE_FLTINV: invalid floating-point operation (NaN) with the exception unmasked.",
	"ILL_ILLOPC":    "ILL_ILLOPC: illegal opcode (code built for a newer CPU, or a jump into data).",
	"ILL_ILLOPN":    "ILL_ILLOPN: illegal operand (x86 ud2 from __builtin_trap or a compiler-inserted trap).",
	"ILL_ILLADR":    "ILL_ILLADR: illegal addressing mode.",
	"ILL_ILLTRP":    "ILL_ILLTRP: illegal trap.",
	"ILL_PRVOPC":    "ILL_PRVOPC: a privileged instruction in user mode.",
	"ILL_PRVREG":    "ILL_PRVREG: a privileged register.",
	"ILL_COPROC":    "ILL_COPROC: coprocessor error.",
	"ILL_BADSTK":    "ILL_BADSTK: internal stack error.",
	"SI_USER":       "SI_USER: sent by kill() from another process, not caused by the instruction at the pc.",
	"SI_TKILL":      "SI_TKILL: sent by tkill/tgkill (raise(), pthread_kill, abort()), not caused by the instruction at the pc.",
	"SI_QUEUE":      "SI_QUEUE: sent by sigqueue().",
	"SI_KERNEL":     "SI_KERNEL: sent by the kernel itself (x86 general protection faults report this).",
	"SI_TIMER":      "SI_TIMER: a POSIX timer expired.",
}

var signalText = map[string]string{
	"SIGSEGV": "SIGSEGV: invalid memory reference.",
	"SIGBUS":  "SIGBUS: bus error (an access to a mapping with no backing store).",
	"SIGFPE":  "SIGFPE: arithmetic exception.",
	"SIGILL":  "SIGILL: illegal instruction.",
	"SIGABRT": "SIGABRT: the process called abort() (a failed assert, glibc's heap checks, std::terminate).",
	"SIGTRAP": "SIGTRAP: a breakpoint or trap instruction.",
	"SIGSYS":  "SIGSYS: a seccomp filter trapped a system call.",
	"SIGINT":  "SIGINT: an interrupt, what ctrl+c sends; without a handler it ends the process (crashtui sends it first to the ranks it started when it quits).",
	"SIGTERM": "SIGTERM: a request to end; without a handler it ends the process.",
	"SIGKILL": "SIGKILL: the process was killed outright: it cannot be caught or ignored (kill -9, the OOM killer, crashtui ending the ranks it started).",
	"SIGHUP":  "SIGHUP: the terminal or the session went away; without a handler it ends the process.",
	"SIGQUIT": "SIGQUIT: what ctrl+\\ sends; its default action ends the process with a core.",
	"SIGPIPE": "SIGPIPE: a write to a pipe or socket with no reader left; without a handler it ends the process.",
	"SIGUSR1": "SIGUSR1: a signal whose meaning the program chooses; without a handler it ends the process.",
	"SIGUSR2": "SIGUSR2: a signal whose meaning the program chooses; without a handler it ends the process.",
	"SIGALRM": "SIGALRM: a timer (alarm, setitimer) expired; without a handler it ends the process.",
	"SIGXCPU": "SIGXCPU: the process used more CPU time than RLIMIT_CPU allows.",
}

// reasonRule is the rule behind a matrix denial reason (kernel.md §A.3) and where the kernel
// applies it; the case's own sentence and fix come from its Rule (ruleWords).
type reasonRule struct {
	rule, kernel string
}

var reasonRules = map[sessions.Reason]reasonRule{
	sessions.ReasonENOSYS: {"the syscall is not built into this kernel (CONFIG_CROSS_MEMORY_ATTACH for process_vm_readv, CONFIG_KCMP for kcmp); the call returns ENOSYS.",
		"sys_ni_syscall"},
	sessions.ReasonSeccomp: {"a seccomp filter on the reader (A) refuses the syscall; B's filter does not matter. Docker's and runc's default profiles return EPERM.",
		"seccomp filter at syscall entry"},
	sessions.ReasonPidNS: {"B cannot be named in A's PID namespace (find_get_task_by_vpid fails), so both calls return ESRCH; Open MPI never compares PID namespaces and may even name another process.",
		"find_get_task_by_vpid"},
	sessions.ReasonExited: {"B has no mm (a zombie or a kernel thread): process_vm_readv gets ESRCH from mm_access; kcmp still compares.",
		"mm_access (kernel/fork.c)"},
	sessions.ReasonUserNS: {"Rows 5b/7: A and B are in different user namespaces and A lacks CAP_SYS_PTRACE in B's namespace.",
		"ptrace_has_cap / cap_ptrace_access_check"},
	sessions.ReasonUID: {"__ptrace_may_access compares A's real uid/gid with B's real, effective and saved uid/gid; any mismatch needs CAP_SYS_PTRACE in B's user namespace, else EPERM.",
		"__ptrace_may_access (kernel/ptrace.c)"},
	sessions.ReasonDumpable: {"B is not dumpable (setuid/setgid or file-capability exec, prctl(PR_SET_DUMPABLE, 0), or an id change), so even a matching uid needs CAP_SYS_PTRACE in B's mm->user_ns.",
		"__ptrace_may_access: get_dumpable(mm) != SUID_DUMP_USER"},
	sessions.ReasonCapabilities: {"B holds permitted capabilities A lacks; cap_ptrace_access_check refuses unless A has CAP_SYS_PTRACE.",
		"cap_ptrace_access_check (security/commoncap.c)"},
	sessions.ReasonYama: {"Rows 9/10: Yama's ptrace_scope applies to ATTACH mode only: process_vm_readv is refused unless B descends from A or called PR_SET_PTRACER; kcmp (READ mode) is not affected, so Open MPI's kcmp proxy says yes and CMA still fails.",
		"yama_ptrace_access_check"},
}

// cellWhat is a cell's case in a sentence, from its two answers alone.
func cellWhat(c *sessions.Cell) string {
	vm, _ := checkVerdict(c.VMReadv)
	kc, _ := checkVerdict(c.Kcmp)
	switch {
	case vm == vAllow && kc == vAllow:
		return "Both process_vm_readv and kcmp(KCMP_VM) pass: Open MPI's single-copy (CMA) transport works between these two."
	case vm == vDeny && kc == vAllow:
		return "kcmp passes but process_vm_readv is refused: Open MPI's proxy check says yes and its CMA copies then fail."
	case vm == vAllow && kc == vDeny:
		return "process_vm_readv would work but kcmp fails, so Open MPI disables CMA needlessly."
	}
	return "Both checks are refused: Open MPI falls back to copy-in/copy-out through shared memory."
}

// ExplainCell teaches one access-matrix cell: the row of kernel.md A.3 that decided it and
// its fix (or, from a recording of format version 2 or older, the recorded sentence, fix
// included), the general rule of its reason, its disagreements, and why a measured matrix
// did not run its calls.
func ExplainCell(c *sessions.Cell) Explanation {
	ex := Explanation{Title: fmt.Sprintf("%d → %d: may %d read %d's memory?", c.From, c.To, c.From, c.To),
		Story: StoryOpenMPI}
	ex.What = cellWhat(c)
	if c.Explain != "" {
		ex.What = sessions.Sanitize(c.Explain)
	} else if what, fix := ruleWords(c); what != "" {
		ex.What, ex.Fix = what, fix
	}
	ex.Rule = "process_vm_readv needs ptrace_may_access(B, PTRACE_MODE_ATTACH_REALCREDS); kcmp needs PTRACE_MODE_READ_REALCREDS on both tasks."
	ex.Kernel = "mm/process_vm_access.c:process_vm_rw_core → mm_access → __ptrace_may_access; kernel/kcmp.c"
	if c.Reason != nil && *c.Reason != "" {
		if rr, ok := reasonRules[*c.Reason]; ok {
			ex.Rule, ex.Kernel = rr.rule, rr.kernel
		} else {
			ex.Rule = "Reason reported by the tracer: " + sessions.Sanitize(string(*c.Reason)) + "."
		}
	}
	if d := CellDisagree(c); d != "" {
		ex.What += " Disagreement: " + d + " (prediction and measurement differ: an LSM, a Yama exception or PR_SET_PTRACER that /proc cannot show)."
	}
	if nr := CellNotRun(*c); len(nr) > 0 {
		ex.What += " Not run: " + strings.Join(nr, " ")
	}
	return ex
}

// RepresentativeCrash is the group's representative crash (the one whose core is kept), or,
// while it has none (no member could have a core), its first: the crash its detail shows.
func RepresentativeCrash(g *sessions.Group) *sessions.CrashRef {
	if len(g.Members) == 0 {
		return nil
	}
	for i := range g.Members {
		m := &g.Members[i]
		if m.Host == g.Representative.Host && m.Crash.PID == g.Representative.PID {
			return m
		}
	}
	return &g.Members[0]
}

// ExplainGroup teaches a crash group.
func ExplainGroup(g *sessions.Group) Explanation {
	ex := Explanation{Title: fmt.Sprintf("crash group %d: %s at %s", g.ID, sessions.Sanitize(g.Signal), groupSite(g)),
		Story: StorySpindle}
	rep := RepresentativeCrash(g)
	code := ""
	if rep != nil {
		code = rep.Crash.Code
	}
	n := g.Count()
	if n == 1 {
		ex.What = "1 process crashed at this site."
	} else {
		ex.What = fmt.Sprintf("%d processes crashed at the same site.", n)
	}
	if rep != nil && rep.Crash.Core != nil {
		ex.What += " crashtui wrote one core for the group, the representative's: " + sessions.Sanitize(*rep.Crash.Core) + "."
	}
	switch {
	case rep != nil && rep.Crash.Unrepaired:
		ex.What = fmt.Sprintf("The process's own %s handler took this fault and returned without repairing it (the same instruction faulted again at the same address), so it would have looped forever: as Spindle does, crashtui then delivered the fault as if no handler were installed, and the process died of it (with a core by its own limit). --unrepaired=leave keeps such a loop running instead. ",
			sessions.Sanitize(g.Signal)) + ex.What
	case rep != nil && rep.Crash.HandlerTries > 0:
		ex.What = fmt.Sprintf("The process's own %s handler took this fault %d times and returned each time without repairing it (the same instruction faulted again at the same address), so it loops forever: crashtui calls that a crash, as Spindle does, and (--unrepaired=leave) leaves the process looping as it would without crashtui. ",
			sessions.Sanitize(g.Signal), rep.Crash.HandlerTries) + ex.What
	}
	if g.AbortMessage != "" {
		ex.What = "The program aborted with the message \"" + sessions.Sanitize(strings.TrimSpace(g.AbortMessage)) + "\" (a failed assert or a glibc check). " + ex.What
	}
	ex.Rule = SigCodeText(g.Signal, code)
	if rep != nil && rep.Crash.UserSent {
		ex.Rule += " The signal was sent, so the site is where the receiver was, not a faulting instruction."
	}
	ex.Kernel = "signal-delivery-stop (get_signal) before the default action; the key is the module plus the pc's link-time offset (pc - vma_start + vma_offset → PT_LOAD vaddr), which is the same under any ASLR layout"
	if g.AbortMessage != "" {
		ex.Kernel = "SIGABRT: the key is glibc's __abort_msg (filled by assert and __libc_message), read with process_vm_readv; without it every abort would share raise()'s pc in libc"
	}
	if rep != nil && rep.Crash.Core != nil {
		ex.Fix = "open the representative core: gdb " + sessions.Sanitize(rep.Crash.Exe) + " " + sessions.Sanitize(*rep.Crash.Core) + ", then fix the code at the site shown; the group's other members got no core (RLIMIT_CORE 0 before their signal)."
	} else {
		ex.Fix = "fix the code at the site shown; for a core per site, run crashtui with --cores DIR (or --dedup-kernel-cores to let the kernel write the representative's, with its own ulimit -c)."
	}
	return ex
}

// ExplainThread teaches a thread's restart state.
func ExplainThread(t *sessions.Thread) Explanation {
	ex := Explanation{Title: fmt.Sprintf("thread %d of pid %d: %s", t.TID, t.PID, threadWhere(t)), Story: StoryCRIU}
	if what := ThreadExplain(t); what != "" {
		ex.What = what
	} else if !t.InSyscall {
		ex.What = "The thread is in user code: nothing to restart; a checkpoint restores its registers as they are."
	} else {
		ex.What = fmt.Sprintf("The thread is inside %s; on resume the kernel will %s.", sessions.Sanitize(t.Syscall), sessions.Sanitize(t.OnResume))
	}
	ex.Rule = restartRule(t.Code)
	ex.Kernel = "arch_do_signal_or_restart (x86), do_signal/check_syscall_restart (powerpc), do_signal (arm64 rewinds before get_signal)"
	ex.Fix = "a restore must rewind the pc over the syscall instruction (2 bytes on x86, 4 on ppc64/arm64) and put the first argument back (orig_rax / orig_gpr3 / orig_x0), for sc and scv alike; ERESTART_RESTARTBLOCK cannot be restored (restart_block is kernel-private): return EINTR."
	return ex
}

// ThreadExplain says in a few sentences what the kernel will do with the thread's interrupted
// syscall when it resumes and why: the reason its held stop decides as it does (the signal and
// its handler), what the registers could not tell, and the kernel's rule with what a restorer
// must write back. A recording of format version 1 says it in its own recorded words. It is ""
// for an event that carries neither.
func ThreadExplain(t *sessions.Thread) string {
	if t.Explain != "" {
		return recordedWords(sessions.Sanitize(t.Explain))
	}
	if t.Stop == "" {
		return ""
	}
	rule := ""
	if st, ok := restartState(t); ok {
		switch h, known := archHandler(t.Handler); {
		case known:
			rule = st.Explain(h)
		case st.OnResume(arch.HandlerRestart) == st.OnResume(arch.HandlerNoRestart):
			rule = st.Explain(arch.HandlerRestart)
		default:
			rule = fmt.Sprintf("If the handler has SA_RESTART: %s If not: %s", st.Explain(arch.HandlerRestart), st.Explain(arch.HandlerNoRestart))
		}
		if st.Note != "" && !strings.Contains(rule, st.Note) {
			rule = st.Note + " " + rule
		}
	}
	if why := stopWhy(t); why != "" {
		rule = why + " " + rule
	}
	return sessions.Sanitize(strings.TrimSpace(rule))
}

// restartState decodes the thread's restart state again from what the tracer decoded it from
// (the registers before the restore and the instruction bytes): the same pure arch.Decode, so
// the rule is the one the tracer applied.
func restartState(t *sessions.Thread) (arch.RestartState, bool) {
	a := arch.Arch(t.Arch)
	n := arch.NumWords(a)
	if n == 0 || len(t.Before) == 0 {
		return arch.RestartState{}, false
	}
	byName := make(map[string]uint64, len(t.Before))
	for _, r := range t.Before {
		byName[r.Name] = uint64(r.Value)
	}
	regs := arch.Regs{Arch: a, Words: make([]uint64, n)}
	for i := range regs.Words {
		regs.Words[i] = byName[arch.RegName(a, i)]
	}
	insn, err := hex.DecodeString(t.InsnBytes)
	if err != nil {
		insn = nil
	}
	return arch.Decode(regs, insn), true
}

// archHandler is h as arch's restart rules take it; known is false for HandlerUnknown. An
// event without a handler is an interrupt stop's: no handler.
func archHandler(h sessions.HandlerKind) (_ arch.Handler, known bool) {
	switch h {
	case sessions.HandlerRestart:
		return arch.HandlerRestart, true
	case sessions.HandlerNoRestart:
		return arch.HandlerNoRestart, true
	case sessions.HandlerUnknown:
		return arch.HandlerRestart, false
	}
	return arch.NoHandler, true
}

// stopWhy is the sentence that says why the held stop decides as it does; "" for an
// interrupt stop (resumed with signal 0: as with no handler, which the rule says).
func stopWhy(t *sessions.Thread) string {
	switch t.Stop {
	case sessions.StopGroup:
		return "The thread is in a group-stop: the stop signal's action is stop, so after SIGCONT the kernel decides as with no handler."
	case sessions.StopExit:
		return "The thread is exiting (PTRACE_EVENT_EXIT): it never returns to user space."
	case sessions.StopSignal:
	default:
		return ""
	}
	sig := sessions.Sanitize(t.Signal)
	switch t.Disposition {
	case sessions.DispIgnored:
		return sig + " is ignored (SigIgn), so the kernel decides as with no handler."
	case sessions.DispDefaultStop:
		return sig + "'s default action is stop, so the kernel decides as with no handler once the thread continues."
	case sessions.DispDefaultIgnore:
		return sig + "'s default action is to ignore it, so the kernel decides as with no handler."
	case sessions.DispDefaultKill:
		return sig + "'s default action kills the process: the syscall never returns."
	case sessions.DispCaught:
		return caughtWhy(sig, t)
	}
	return ""
}

// caughtWhy: a caught signal's handler decides the restart by its SA_RESTART, which only
// rt_sigaction run inside the process can read (the flags are not in /proc).
func caughtWhy(sig string, t *sessions.Thread) string {
	sa := t.Sigaction
	read := ""
	if sa != nil && sa.Flags != nil {
		read = fmt.Sprintf(" (flags %#x, read with rt_sigaction inside the process, thread %d)", uint64(*sa.Flags), sa.TID)
	}
	switch t.Handler {
	case sessions.HandlerRestart:
		return sig + " is caught by a handler with SA_RESTART" + read + "."
	case sessions.HandlerNoRestart:
		return sig + " is caught by a handler without SA_RESTART" + read + "."
	}
	why := sig + " is caught (SigCgt); whether its handler has SA_RESTART is kernel-private (only rt_sigaction inside the process reads it)."
	switch {
	case sa == nil:
	case sa.AllHeld:
		why += fmt.Sprintf(" (Running rt_sigaction inside the process to read it failed: every thread of %d is held at a signal; code is run only in a thread held at an interrupt stop, which a crashtui that died could leave exactly as it was.)", t.PID)
	case sa.Error != "":
		why += " (Running rt_sigaction inside the process to read it failed: " + sessions.Sanitize(sa.Error) + ".)"
	case sa.Handler != nil && (*sa.Handler == 0 || *sa.Handler == 1):
		why += fmt.Sprintf(" (rt_sigaction inside the process, thread %d, now returns SIG_%s: the handler was just removed.)", sa.TID, map[sessions.Hex]string{0: "DFL", 1: "IGN"}[*sa.Handler])
	}
	return why
}

// ThreadOutcome says in a sentence what the thread did after the restore policy was applied:
// what the policy made certain (a naive restore hands the ERESTART code to the program, a
// correct one turns a restart block into EINTR), then where the thread went. A recording of
// format version 1 says it in its own recorded words; "" when the outcome is not known.
func ThreadOutcome(t *sessions.Thread) string {
	if t.Outcome != "" {
		return recordedWords(sessions.Sanitize(t.Outcome))
	}
	name := sessions.Sanitize(t.Syscall)
	if name == "" {
		name = fmt.Sprintf("syscall %d", t.Nr)
	}
	var got string
	switch t.OutcomeKind {
	case "":
		return ""
	case sessions.OutcomeJobStopped:
		return "still stopped by job control: the restore takes effect when the job continues"
	case sessions.OutcomeRestarted:
		return "back in " + name + ": the syscall was restarted and the program never noticed"
	case sessions.OutcomeLeft:
		if t.Exited {
			return "left " + name + " and the thread exited"
		}
		return "left " + name + " (it completed, or a handler ran)"
	case sessions.OutcomeERESTARTLeaked:
		code, errno := sessions.Sanitize(t.Code), 0
		if t.Returned != nil {
			errno = int(-*t.Returned)
			code = arch.ErrnoName(errno)
		}
		got = fmt.Sprintf("%s returned %s (%d) to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261)", name, code, errno)
	case sessions.OutcomeEINTR:
		got = name + " returned EINTR, as after a real restore (a restart block cannot be carried over)"
	default:
		return "outcome " + sessions.Sanitize(string(t.OutcomeKind)) // a kind from a newer crashtui
	}
	switch {
	case t.Exited:
		return got + "; the thread then exited"
	case t.CalledAgain():
		return got + "; the program then called " + name + " again"
	}
	return got
}

// OutcomeBad says whether the outcome is one the program was never meant to see.
func OutcomeBad(t *sessions.Thread) bool {
	return t.OutcomeKind == sessions.OutcomeERESTARTLeaked
}

func restartRule(code string) string {
	switch code {
	case "ERESTARTSYS", "512":
		return "ERESTARTSYS (512): restarted when no handler runs or the handler has SA_RESTART; otherwise the call returns EINTR."
	case "ERESTARTNOINTR", "513":
		return "ERESTARTNOINTR (513): always restarted, handler or not."
	case "ERESTARTNOHAND", "514":
		return "ERESTARTNOHAND (514): restarted only when no handler runs; with a handler the call returns EINTR."
	case "ERESTART_RESTARTBLOCK", "516":
		return "ERESTART_RESTARTBLOCK (516): resumed through restart_syscall with the kernel's saved restart_block (nanosleep, clock_nanosleep, poll timeouts); with a handler: EINTR."
	case "":
		return "No restart code: the thread is not in an interrupted syscall."
	}
	return "Return code " + sessions.Sanitize(code) + ": not a restart code, the syscall completed or failed on its own."
}

// PolicyText describes each checkpoint restore policy (sessions.Policies).
var PolicyText = map[sessions.Policy]string{
	sessions.PolicyCorrect: "rewind the pc over the syscall instruction and restore the first argument (x86 rax=orig_rax, ip-=2; ppc r3=orig_gpr3, nip-=4, trap=0), for sc and scv: the syscall runs again",
	sessions.PolicyNaive:   "write back the registers as captured, as CRIU did for scv before the fix: the thread resumes after the instruction with -ERESTARTSYS in its return register, and user code sees errno 512",
	sessions.PolicyNone:    "write nothing back: resume the thread as it was stopped and let the kernel's own restart logic decide (the baseline)",
	sessions.PolicySCOnly:  "the restorer before CRIU's fix (checkpoint-restore/criu#2261): rewind a thread interrupted in sc (trap 0xc00, CR0.SO, an ERESTART* code in r3) but write back one interrupted in scv (trap 0x3000) as captured; on POWER8 (glibc uses sc) the job survives, on POWER9/10 (glibc uses scv) it sees errno 512; on amd64 and arm64 it equals correct",
}

// RenderExplanation draws an explanation as a box of at most width×height.
func RenderExplanation(st *Styles, ex Explanation, width, height int) string {
	out, _ := RenderExplanationFrom(st, ex, width, height, 0)
	return out
}

// RenderExplanationFrom renders the explanation scrolled to line from (clamped); it returns
// the box and the first line actually shown. When the text is taller than the box, the last
// line says how to scroll and how much is left, so nothing is cut silently mid-sentence.
func RenderExplanationFrom(st *Styles, ex Explanation, width, height, from int) (string, int) {
	w := min(width-4, 96)
	if w < 16 {
		w = max(width-2, 4)
	}
	var parts []string
	parts = append(parts, st.Title.Render(sessions.Sanitize(ex.Title)))
	add := func(label, text string) {
		if text == "" {
			return
		}
		parts = append(parts, wrap(st.Bold.Render(label)+" "+text, w))
	}
	add("What:", ex.What)
	add("Rule:", ex.Rule)
	add("Kernel:", ex.Kernel)
	add("Fix:", ex.Fix)
	add("Story:", ex.Story)
	lines := strings.Split(strings.Join(parts, "\n"), "\n")
	room := max(height-3, 1) // the box's borders and the hint line
	from = max(0, min(from, len(lines)-room))
	shown := lines[from:min(len(lines), from+room)]
	hint := "esc closes"
	if ex.Hint != "" {
		hint = ex.Hint
	}
	if len(lines) > room {
		more := fmt.Sprintf(" · j/k scroll (%d more below)", len(lines)-from-len(shown))
		if from+len(shown) >= len(lines) {
			more = " · k scrolls back"
		}
		hint += more
	}
	shown = append(shown, st.Dim.Render(hint))
	return st.Box.Render(fit(strings.Join(shown, "\n"), w, len(shown))), from
}

// ExplainProc teaches a process's state (for processes without a crash group).
func ExplainProc(p *sessions.Proc) Explanation {
	ex := Explanation{Title: fmt.Sprintf("pid %d (%s) · %s: %s", p.PID, sessions.Sanitize(p.Comm), rankOrNone(p.Rank), ProcState(p))}
	switch {
	case p.Exit != nil && p.Exit.Detached:
		ex.What = "crashtui detached from this process; it keeps running untraced."
		ex.Rule = "PTRACE_DETACH resumes the tracee; crashtui restores every register and byte it touched first."
	case p.Exit != nil && p.Exit.Signal != "":
		ex.What = "The process was killed by " + sessions.Sanitize(p.Exit.Signal) + " without a crash being recorded (a signal sent from outside, or a fatal signal crashtui does not group)."
		ex.Rule = SigCodeText(p.Exit.Signal, "")
	case p.Exit != nil:
		ex.What = "The process exited normally."
	case p.Stopped:
		ex.What = "The process was in a job-control stop (SIGSTOP/SIGTSTP) when crashtui attached; PTRACE_SEIZE leaves it stopped."
	default:
		ex.What = "The process is running under PTRACE_SEIZE: it stops only for events crashtui asked for (fatal signals, exec, clone, exit)."
	}
	if p.Handled > 0 {
		ex.What += fmt.Sprintf(" It had %d fault(s) repaired by its own signal handler: not crashes.", p.Handled)
		ex.Story = StorySpindle
	}
	return ex
}

// recordedWords rewords what older tracers wrote into their events in the project's own
// jargon: "seed 002" is the name of a test story in crashtui's sources, not something a user
// can look up; the bug it stands for is CRIU's checkpoint-restore/criu#2261.
func recordedWords(s string) string {
	return strings.NewReplacer(
		"unfixed: seed 002.", "unfixed (checkpoint-restore/criu#2261).",
		", the seed 002 bug", " (checkpoint-restore/criu#2261)",
		" (seed 002)", " (checkpoint-restore/criu#2261)",
	).Replace(s)
}

// rankOrNone is "rank 3", or "no rank" for a process without one.
func rankOrNone(r sessions.Rank) string {
	if r < 0 {
		return "no rank"
	}
	return "rank " + r.String()
}

// TourBand draws the guided tour's explanation as a band width×height: a rule with its title,
// the text wrapped from line from (clamped), and the hint; it returns the band and the first
// line shown.
func TourBand(st *Styles, ex Explanation, width, height, from int) (string, int) {
	w := max(width-2, 10)
	var parts []string
	add := func(label, text string) {
		if text != "" {
			parts = append(parts, wrap(st.Bold.Render(label)+" "+text, w))
		}
	}
	add("What:", ex.What)
	add("Rule:", ex.Rule)
	add("Kernel:", ex.Kernel)
	add("Fix:", ex.Fix)
	add("Story:", ex.Story)
	lines := strings.Split(strings.Join(parts, "\n"), "\n")
	room := max(height-2, 1) // the title rule and the hint
	from = max(0, min(from, len(lines)-room))
	shown := lines[from:min(len(lines), from+room)]
	title := " " + sessions.Sanitize(ex.Title) + " "
	rule := st.Title.Render(cut("──"+title, width))
	if n := width - lipglossWidth(rule); n > 0 {
		rule += st.Dim.Render(strings.Repeat("─", n))
	}
	hint := ex.Hint
	if rest := len(lines) - from - len(shown); rest > 0 {
		hint += fmt.Sprintf(" (%d more below)", rest)
	}
	out := []string{rule}
	for _, l := range shown {
		out = append(out, " "+l)
	}
	for len(out) < height-1 {
		out = append(out, "")
	}
	out = append(out, st.Dim.Render(cut(" "+hint, width)))
	return fit(strings.Join(out, "\n"), width, height), from
}
