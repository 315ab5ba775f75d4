package tracer

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
)

// The ptrace primitives, together as in CRIU compel's ptrace.c: every request crashtui makes
// (but PTRACE_PEEKDATA/POKEDATA, with the other memory accesses in mem.go), with
// golang.org/x/sys/unix where it has the call. tid must be a task this thread traces and,
// for all but seize and interrupt, in a ptrace-stop.
//
// ESRCH means the task is gone (killed, or exited meanwhile): callers test it with errors.Is
// and treat it as normal. The requests that start, stop and resume a task return the errno
// as it is, for the caller to say what it was doing; the reads and writes of its state say
// the request and the tid.

// ptrace is one request as it is, for those with no named primitive here (PTRACE_LISTEN,
// PTRACE_POKEDATA). The requests that only change a task's run state (resume, listen,
// detach, interrupt) never block for long (at most a tick, while a tracee that was preempted
// on its way into its stop gets there), so they are raw syscalls: the loop's hot path skips the Go
// scheduler's entersyscall and exitsyscall. The others can wait on a lock of the tracee (SEIZE on cred_guard_mutex during an exec, PEEKDATA and POKEDATA on
// its mmap lock), and a raw syscall that blocks would hold up a stop-the-world GC.
func ptrace(req, tid int, addr, data uintptr) error {
	call := unix.Syscall6
	switch req {
	case unix.PTRACE_CONT, unix.PTRACE_SYSCALL, unix.PTRACE_LISTEN, unix.PTRACE_DETACH, unix.PTRACE_INTERRUPT:
		call = unix.RawSyscall6 // do not wait for the tracee
	}
	_, _, e := call(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ptracePtr is ptrace with data a pointer. It is converted to uintptr in the call to Syscall6
// itself, so the object stays alive and in place until the syscall returns (unsafe.Pointer
// rule 4; x/sys/unix's own ptracePtr).
func ptracePtr(req, tid int, addr uintptr, data unsafe.Pointer) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, uintptr(data), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ptraceSeize is PTRACE_SEIZE with seizeOptions (unix.PtraceSeize sets no options).
func ptraceSeize(tid int) error {
	return ptrace(unix.PTRACE_SEIZE, tid, 0, seizeOptions)
}

// ptraceInterrupt is PTRACE_INTERRUPT: tid stops at PTRACE_EVENT_STOP (a blocking syscall is
// left with its restart code).
func ptraceInterrupt(tid int) error { return ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0) }

// ptraceResume resumes tid with req, PTRACE_CONT or PTRACE_SYSCALL (stop again at the next
// syscall entry or exit), delivering sig (0: none).
func ptraceResume(req, tid, sig int) error {
	switch req {
	case unix.PTRACE_CONT, unix.PTRACE_SYSCALL:
		return ptrace(req, tid, 0, uintptr(sig))
	}
	return fmt.Errorf("resume %d: request %#x is not PTRACE_CONT or PTRACE_SYSCALL", tid, req)
}

// ptraceListen is PTRACE_LISTEN: a group-stopped tracee stays stopped (job control unchanged)
// while the tracer is told of SIGCONT and new events.
func ptraceListen(tid int) error { return ptrace(unix.PTRACE_LISTEN, tid, 0, 0) }

// ptraceDetach is PTRACE_DETACH delivering sig (0: none), the signal of a held
// signal-delivery-stop (unix.PtraceDetach delivers none).
func ptraceDetach(tid, sig int) error {
	return ptrace(unix.PTRACE_DETACH, tid, 0, uintptr(sig))
}

// ptraceSetOptions is PTRACE_SETOPTIONS; opts replace the options set at seize.
func ptraceSetOptions(tid, opts int) error { return unix.PtraceSetOptions(tid, opts) }

// geteventmsg is PTRACE_GETEVENTMSG: at a fork, vfork or clone stop the new tid, at an exit
// stop the wait status, at an exec stop the former tid.
func geteventmsg(tid int) (uint64, error) {
	msg, err := unix.PtraceGetEventMsg(tid)
	return uint64(msg), err
}

// getSiginfo is PTRACE_GETSIGINFO: the siginfo_t of the signal tid is stopped for.
func getSiginfo(tid int) (Siginfo, error) {
	var buf [128]byte
	if err := ptracePtr(unix.PTRACE_GETSIGINFO, tid, 0, unsafe.Pointer(&buf)); err != nil {
		return Siginfo{}, fmt.Errorf("getsiginfo %d: %w", tid, err)
	}
	return decodeSiginfo(buf[:]), nil
}

// getSigmask is PTRACE_GETSIGMASK: tid's blocked signals, bit sig-1 for each.
func getSigmask(tid int) (uint64, error) {
	var mask uint64
	if err := ptracePtr(unix.PTRACE_GETSIGMASK, tid, 8, unsafe.Pointer(&mask)); err != nil {
		return 0, fmt.Errorf("getsigmask %d: %w", tid, err)
	}
	return mask, nil
}

// setSigmask is PTRACE_SETSIGMASK.
func setSigmask(tid int, mask uint64) error {
	if err := ptracePtr(unix.PTRACE_SETSIGMASK, tid, 8, unsafe.Pointer(&mask)); err != nil {
		return fmt.Errorf("setsigmask %d: %w", tid, err)
	}
	return nil
}

// getSyscallInfo is PTRACE_GET_SYSCALL_INFO (Linux 5.3): at a syscall-stop, entry or exit.
func getSyscallInfo(tid int) (SyscallInfo, error) {
	var buf [88]byte
	if err := ptracePtr(unix.PTRACE_GET_SYSCALL_INFO, tid, uintptr(len(buf)), unsafe.Pointer(&buf)); err != nil {
		return SyscallInfo{}, fmt.Errorf("get syscall info %d: %w", tid, err)
	}
	return decodeSyscallInfo(buf[:]), nil
}

// decodeSyscallInfo reads the part of struct ptrace_syscall_info (include/uapi/linux/ptrace.h)
// the features use.
func decodeSyscallInfo(b []byte) SyscallInfo {
	if len(b) < 32 {
		return SyscallInfo{}
	}
	le := binary.LittleEndian
	return SyscallInfo{Op: b[0], IP: le.Uint64(b[8:]), SP: le.Uint64(b[16:]), Nr: le.Uint64(b[24:])}
}

// seccompFilter is PTRACE_SECCOMP_GET_FILTER: the i-th newest seccomp filter of tid, as its
// struct sock_filter array (8 bytes an instruction). It needs CAP_SYS_ADMIN.
func seccompFilter(tid, i int) ([]byte, error) {
	cnt, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SECCOMP_GET_FILTER, uintptr(tid), uintptr(i), 0, 0, 0)
	if e != 0 {
		return nil, fmt.Errorf("seccomp filter %d of %d: %w", i, tid, e)
	}
	buf := make([]byte, cnt*8)
	if cnt > 0 {
		if err := ptracePtr(unix.PTRACE_SECCOMP_GET_FILTER, tid, uintptr(i), unsafe.Pointer(&buf[0])); err != nil {
			return nil, fmt.Errorf("seccomp filter %d of %d: %w", i, tid, err)
		}
	}
	return buf, nil
}

// getRegs reads tid's registers (unix.PtraceGetRegs: PTRACE_GETREGS, or PTRACE_GETREGSET
// NT_PRSTATUS where there is no GETREGS; regs_<goarch>.go).
func getRegs(tid int) (arch.Regs, error) {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &pr); err != nil {
		return arch.Regs{}, fmt.Errorf("getregs %d: %w", tid, err)
	}
	return arch.Regs{Arch: regsArch, Words: slices.Clone(ptraceRegsWords(&pr))}, nil
}

// setRegs writes r to tid. r must be a full snapshot of this architecture, as returned by
// getRegs (possibly edited by arch.ApplyPolicy/SetupSyscall).
func setRegs(tid int, r arch.Regs) error {
	if r.Arch != regsArch || len(r.Words) != regsWords {
		return fmt.Errorf("setregs %d: have %s registers with %d words, want %s with %d", tid, r.Arch, len(r.Words), regsArch, regsWords)
	}
	var pr unix.PtraceRegs
	copy(ptraceRegsWords(&pr), r.Words)
	if err := unix.PtraceSetRegs(tid, &pr); err != nil {
		return fmt.Errorf("setregs %d: %w", tid, err)
	}
	return nil
}
