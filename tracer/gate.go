package tracer

import (
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/seccomp"
)

// The gate: every system call crashtui injects passes it first, in the thread that will run
// it (kernel.md D.1). Seccomp filters and syscall user dispatch belong to a thread, not to a
// process: one worker can have a filter that kills on process_vm_readv while the main thread
// has none. So the gate reads that thread's own state (/proc/PID/task/TID/status, its filters
// with PTRACE_SECCOMP_GET_FILTER on that tid, its dispatch with
// PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG) and evaluates the filters on the call's real
// seccomp_data: its number, its arguments, and the instruction pointer of the guard's syscall
// instruction, as the kernel will. Anything but ALLOW or LOG, and anything it cannot know, is
// refused: the call does not run, and the caller predicts instead.

// RefuseWhy is why the gate refused a call.
type RefuseWhy int

const (
	// RefuseSeccomp: the thread's seccomp filters decide Action, not ALLOW: it could kill
	// the process or the thread, raise SIGSYS, wake a supervisor, or fake a result.
	RefuseSeccomp RefuseWhy = iota
	// RefuseStrict: the thread is in SECCOMP_MODE_STRICT (only read, write, _exit and
	// sigreturn; anything else kills it).
	RefuseStrict
	// RefuseUnreadable: the thread has filters crashtui cannot read (PTRACE_SECCOMP_GET_FILTER
	// needs CAP_SYS_ADMIN); they are never risked.
	RefuseUnreadable
	// RefuseDispatch: syscall user dispatch is on in the thread and the guard is outside
	// the range it lets through: the call would raise SIGSYS.
	RefuseDispatch
)

// Refused is a call the gate did not let through; nothing ran.
type Refused struct {
	TID    int
	Call   string // the syscall's name
	Why    RefuseWhy
	Action seccomp.Action // RefuseSeccomp: what the filters decide
	Err    error          // RefuseUnreadable: why they could not be read
}

func (r *Refused) Error() string {
	switch r.Why {
	case RefuseStrict:
		return fmt.Sprintf("not injected: thread %d is in seccomp strict mode, which kills %s", r.TID, r.Call)
	case RefuseUnreadable:
		return fmt.Sprintf("not injected: thread %d's seccomp filters cannot be read (%v)", r.TID, r.Err)
	case RefuseDispatch:
		return fmt.Sprintf("not injected: thread %d has syscall user dispatch on, which would turn %s into SIGSYS", r.TID, r.Call)
	}
	return fmt.Sprintf("not injected: thread %d's seccomp filter decides %s for %s", r.TID, r.Action, r.Call)
}

// threadFilters are a thread's filters as last read, newest first, and how many there were.
type threadFilters struct {
	n     int
	progs [][]byte
}

// gate says whether syscall nr with args, made at ip by tk (held), may run: nil, or a
// *Refused.
func (t *Tracer) gate(tk *task, nr int, args [6]uint64, ip uint64) error {
	a := arch.Host()
	name := arch.SyscallName(a, nr)
	if name == "" {
		name = "syscall " + strconv.Itoa(nr)
	}
	refuse := func(why RefuseWhy) *Refused { return &Refused{TID: tk.tid, Call: name, Why: why} }
	v := procfs.StatusFields(procfs.Path(tk.pid, "task/"+strconv.Itoa(tk.tid)+"/status"), "Seccomp", "Seccomp_filters")
	switch v[0] {
	case "0", "": // no seccomp (or a kernel without it: the field is absent)
	case "1":
		return refuse(RefuseStrict)
	default:
		n, _ := strconv.Atoi(v[1])
		progs, err := t.threadFilters(tk, n)
		if err != nil {
			r := refuse(RefuseUnreadable)
			r.Err = err
			return r
		}
		act, err := seccomp.Eval(progs, string(a), nr, ip, args)
		if err != nil {
			r := refuse(RefuseUnreadable)
			r.Err = err
			return r
		}
		if act.Action != seccomp.ActAllow && act.Action != seccomp.ActLog {
			r := refuse(RefuseSeccomp)
			r.Action = act
			return r
		}
	}
	if on, lo, n, known := userDispatch(tk.tid); known && on && ip-lo >= n {
		return refuse(RefuseDispatch)
	}
	return nil
}

// threadFilters reads tk's n seccomp filters (cached while it has n).
func (t *Tracer) threadFilters(tk *task, n int) ([][]byte, error) {
	if f, ok := t.filters[tk.tid]; ok && f.n == n {
		return f.progs, nil
	}
	progs := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		buf, err := seccompFilter(tk.tid, i)
		if err != nil {
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: reading a seccomp filter needs CAP_SYS_ADMIN", err)
			}
			return nil, err
		}
		progs = append(progs, buf)
	}
	if t.filters == nil {
		t.filters = map[int]threadFilters{}
	}
	t.filters[tk.tid] = threadFilters{n: n, progs: progs}
	return progs, nil
}

// ptraceGetSUD is PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG (Linux 6.4).
const ptraceGetSUD = 0x4211

// userDispatch reads tid's syscall user dispatch (struct ptrace_sud_config: mode, selector,
// offset, len): whether it is on, and the range of addresses whose syscalls it lets through.
// known is false where the kernel cannot say (before 6.4): nothing can be read then.
func userDispatch(tid int) (on bool, lo, n uint64, known bool) {
	var cfg [4]uint64
	if err := ptracePtr(ptraceGetSUD, tid, uintptr(unsafe.Sizeof(cfg)), unsafe.Pointer(&cfg)); err != nil {
		return false, 0, 0, false
	}
	return cfg[0] != 0, cfg[2], cfg[3], true
}

// Seccomp is the held thread's own seccomp mode (0 off, 1 strict, 2 filter, -1 unknown) and,
// in filter mode, its filters newest first (PTRACE_SECCOMP_GET_FILTER on this tid; the error
// says why they could not be read).
func (th Thread) Seccomp() (mode int, filters [][]byte, err error) {
	if err := th.stopped("seccomp"); err != nil {
		return -1, nil, err
	}
	tk := th.tk
	v := procfs.StatusFields(procfs.Path(tk.pid, "task/"+strconv.Itoa(tk.tid)+"/status"), "Seccomp", "Seccomp_filters")
	mode, perr := strconv.Atoi(v[0])
	if perr != nil {
		return -1, nil, nil
	}
	if mode != 2 {
		return mode, nil, nil
	}
	n, _ := strconv.Atoi(v[1])
	filters, err = th.t.threadFilters(tk, n)
	return mode, filters, err
}
