package tracer

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestClassify decodes the wait statuses of ptrace(2)'s "Stopped states" as the kernel builds
// them: (event<<8 | signal)<<8 | 0x7f (ptrace_event: exit_code = SIGTRAP | event<<8). The
// regs and injection tests check the interrupt and syscall-stop cases against a real tracee.
func TestClassify(t *testing.T) {
	stopped := func(event, sig int) unix.WaitStatus { return unix.WaitStatus((event<<8|sig)<<8 | 0x7f) }
	sigtrap, sigstop := int(unix.SIGTRAP), int(unix.SIGSTOP)
	for _, c := range []struct {
		name string
		ws   unix.WaitStatus
		want stopInfo
	}{
		{"signal-delivery-stop", stopped(0, int(unix.SIGSEGV)), stopInfo{classSignal, int(unix.SIGSEGV), 0}},
		{"a plain SIGTRAP is a signal", stopped(0, sigtrap), stopInfo{classSignal, sigtrap, 0}},
		{"syscall-stop", stopped(0, sigSyscallStop), stopInfo{classSyscall, sigSyscallStop, 0}},
		{"interrupt", stopped(unix.PTRACE_EVENT_STOP, sigtrap), stopInfo{classInterrupt, sigtrap, unix.PTRACE_EVENT_STOP}},
		{"group-stop", stopped(unix.PTRACE_EVENT_STOP, sigstop), stopInfo{classGroup, sigstop, unix.PTRACE_EVENT_STOP}},
		{"group-stop SIGTSTP", stopped(unix.PTRACE_EVENT_STOP, int(unix.SIGTSTP)), stopInfo{classGroup, int(unix.SIGTSTP), unix.PTRACE_EVENT_STOP}},
		{"fork", stopped(unix.PTRACE_EVENT_FORK, sigtrap), stopInfo{classEvent, sigtrap, unix.PTRACE_EVENT_FORK}},
		{"clone", stopped(unix.PTRACE_EVENT_CLONE, sigtrap), stopInfo{classEvent, sigtrap, unix.PTRACE_EVENT_CLONE}},
		{"exec", stopped(unix.PTRACE_EVENT_EXEC, sigtrap), stopInfo{classEvent, sigtrap, unix.PTRACE_EVENT_EXEC}},
		{"exit", stopped(unix.PTRACE_EVENT_EXIT, sigtrap), stopInfo{classEvent, sigtrap, unix.PTRACE_EVENT_EXIT}},
	} {
		if got := classify(c.ws); got != c.want {
			t.Errorf("%s: classify(%#x) = %+v, want %+v", c.name, uint32(c.ws), got, c.want)
		}
	}
}
