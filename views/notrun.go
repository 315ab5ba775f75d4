package views

import (
	"fmt"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// NotRunSentence says why crashtui did not run call ("process_vm_readv", "kcmp") inside a
// process, so that its matrix cell is predicted only: the thread that would have run it and
// what its seccomp filter or syscall user dispatch would have done (kernel.md D.1: filters are
// per thread; the one whose filter decides is the one that runs the call).
func NotRunSentence(call string, n sessions.NotRun) string {
	thread := "a thread"
	if n.TID != 0 {
		thread = fmt.Sprintf("thread %d", n.TID)
	}
	const predicted = "crashtui did not run it there, so this is predicted from /proc only"
	switch n.Why {
	case sessions.NotRunSeccomp:
		return fmt.Sprintf("%s's seccomp filter %s: %s.", thread, seccompDoes(n.Action, call), predicted)
	case sessions.NotRunStrict:
		return fmt.Sprintf("%s is in seccomp strict mode, where %s would kill it: %s.", thread, call, predicted)
	case sessions.NotRunFiltersUnreadable:
		return fmt.Sprintf("%s has seccomp filters crashtui could not read (PTRACE_SECCOMP_GET_FILTER needs CAP_SYS_ADMIN), so %s might kill it: %s. Run crashtui as root to measure.", thread, call, predicted)
	case sessions.NotRunUserDispatch:
		return fmt.Sprintf("%s has syscall user dispatch on, which would turn %s made from crashtui's code into a SIGSYS: %s.", thread, call, predicted)
	case sessions.NotRunEINTR:
		return fmt.Sprintf("every thread of the process was blocked in a call that stopping it would end with EINTR (epoll_wait, a socket call…), and crashtui never does that: %s was not run, predicted from /proc only.", call)
	case sessions.NotRunNoThread:
		return fmt.Sprintf("no thread of the process could be stopped for a moment (stopped by job control, exiting): %s was not run, predicted from /proc only.", call)
	}
	return fmt.Sprintf("%s was not run (%s): predicted from /proc only.", call, sessions.Sanitize(string(n.Why)))
}

// seccompDoes words a seccomp action for call.
func seccompDoes(action, call string) string {
	switch {
	case action == "KILL_PROCESS":
		return "kills the whole process on " + call
	case action == "KILL_THREAD":
		return "kills the thread on " + call
	case action == "TRAP":
		return "answers " + call + " with SIGSYS (TRAP)"
	case action == "USER_NOTIF":
		return "hands " + call + " to the process's seccomp supervisor (USER_NOTIF), which would see crashtui's call"
	case action == "TRACE":
		return "hands " + call + " to a seccomp tracer (TRACE)"
	case strings.HasPrefix(action, "ERRNO("):
		return "fails " + call + " with " + strings.TrimSuffix(strings.TrimPrefix(action, "ERRNO("), ")") + " without running it"
	}
	return "does not allow " + call + " (" + sessions.Sanitize(action) + ")"
}

// CellNotRun is every not-run sentence of a cell, one per call, or nil when both calls ran
// (or the matrix was not measured).
func CellNotRun(c sessions.Cell) []string {
	var out []string
	if n := c.VMReadv.NotRun; n != nil {
		out = append(out, NotRunSentence("process_vm_readv", *n))
	}
	if n := c.Kcmp.NotRun; n != nil {
		if k := NotRunSentence("kcmp", *n); len(out) == 0 || k != out[0] {
			out = append(out, k)
		}
	}
	return out
}

// RefusedSentence says why a process of the job was not attached, and what to do about it.
func RefusedSentence(pid int, r sessions.Refused) string {
	who := fmt.Sprintf("pid %d", pid)
	if r.Comm != "" {
		who += " (" + sessions.Sanitize(r.Comm) + ")"
	}
	switch {
	case r.TracerPID != 0 && r.TracerComm == "crashtui":
		return fmt.Sprintf("%s was not attached: another crashtui (pid %d) traces it. A job that one crashtui traces whole is answered by it: name only its processes (its pgid:N), or quit that crashtui.", who, r.TracerPID)
	case r.TracerPID != 0:
		by := fmt.Sprintf("pid %d", r.TracerPID)
		if r.TracerComm != "" {
			by += " (" + sessions.Sanitize(r.TracerComm) + ")"
		}
		return fmt.Sprintf("%s was not attached: it is already traced by %s, and a thread has one tracer at a time. Detach that one (quit it) and run crashtui again.", who, by)
	case r.Yama == 3:
		return fmt.Sprintf("%s was not attached: Yama's kernel.yama.ptrace_scope is 3, which forbids every attach, root's too, until reboot.", who)
	case r.Yama == 2:
		return fmt.Sprintf("%s was not attached: Yama's kernel.yama.ptrace_scope is 2, where only CAP_SYS_PTRACE may attach. Run crashtui as root.", who)
	case r.Yama == 1:
		return fmt.Sprintf("%s was not attached: Yama's kernel.yama.ptrace_scope is 1, where a process may attach only to its own descendants. Run crashtui as root, or sysctl kernel.yama.ptrace_scope=0.", who)
	case r.Errno == "EPERM" && !r.Root:
		return fmt.Sprintf("%s was not attached (EPERM): another user's process, or one that is not dumpable. Run crashtui as root or as the job's user.", who)
	case r.Errno == "EPERM":
		return fmt.Sprintf("%s was not attached (EPERM), though crashtui runs as root: a process of another user namespace, or a kernel thread.", who)
	}
	e := r.Errno
	if e == "" {
		e = "an error"
	}
	return fmt.Sprintf("%s was not attached (%s).", who, sessions.Sanitize(e))
}

// Unattached is one sentence for each process of the job that could not be attached, in
// the order the session met them.
func Unattached(errs []sessions.Error) []string {
	var out []string
	for _, e := range errs {
		if e.Op == "attach" && e.Refused != nil {
			out = append(out, RefusedSentence(e.PID, *e.Refused))
		}
	}
	return out
}
