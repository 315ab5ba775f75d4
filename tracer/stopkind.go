package tracer

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// stopClass is what a tracee's stop is, from its wait status (ptrace(2), "Stopped states").
type stopClass int

const (
	classSignal    stopClass = iota // signal-delivery-stop: sig is the signal
	classSyscall                    // syscall-stop (SIGTRAP|0x80: PTRACE_O_TRACESYSGOOD)
	classGroup                      // group-stop: PTRACE_EVENT_STOP with the stop signal (SEIZE)
	classInterrupt                  // PTRACE_EVENT_STOP with SIGTRAP: PTRACE_INTERRUPT (or LISTEN woken)
	classEvent                      // any other PTRACE_EVENT_* (fork, vfork, clone, exec, exit)
)

// sigSyscallStop is the stop signal of a syscall-stop (PTRACE_O_TRACESYSGOOD). The loop hands
// it to signal handling as the stop's sig (crash_handled.go follows faults through
// syscall-stops), where it must be told from a signal.
const sigSyscallStop = int(unix.SIGTRAP) | 0x80

// stopInfo is a classified stop.
type stopInfo struct {
	class stopClass
	sig   int // the stop signal as reported (SIGTRAP|0x80 for a syscall-stop)
	event int // the PTRACE_EVENT_* (status>>16), 0 for a signal-delivery- or syscall-stop
}

// classify is the one decoder of a stopped wait status: the loop, crash handling and
// injection all use it. The event is status>>16 for any stop signal: WaitStatus.TrapCause
// only looks at SIGTRAP, but a seized tracee's group-stop is PTRACE_EVENT_STOP with the stop
// signal.
func classify(ws unix.WaitStatus) stopInfo {
	si := stopInfo{sig: int(ws.StopSignal()), event: int(ws>>16) & 0xff}
	switch {
	case si.sig == int(unix.SIGTRAP) && si.event == unix.PTRACE_EVENT_STOP:
		si.class = classInterrupt
	case si.sig == int(unix.SIGTRAP) && si.event > 0:
		si.class = classEvent
	case si.event == unix.PTRACE_EVENT_STOP:
		si.class = classGroup
	case si.sig == sigSyscallStop:
		si.class = classSyscall
	default:
		si.class, si.event = classSignal, 0
	}
	return si
}

func (si stopInfo) String() string {
	switch si.class {
	case classSignal:
		return "signal-delivery (" + SignalName(si.sig) + ")"
	case classSyscall:
		return "syscall"
	case classGroup:
		return "group (" + SignalName(si.sig) + ")"
	case classInterrupt:
		return "interrupt"
	}
	return fmt.Sprintf("event %d", si.event)
}
