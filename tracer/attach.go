package tracer

import (
	"errors"
	"fmt"
	"os"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
	"golang.org/x/sys/unix"
)

// AttachResult says what an attach took hold of.
type AttachResult struct {
	Processes int
	Threads   int
	Refused   []error // per-process failures (EPERM: traced by someone else, another user...)
}

// Attach seizes every thread of every process the job names, re-scanning until no new thread
// or process appears, so that threads and children born during the attach are not missed.
// It returns ErrNoJob (wrapped) when nothing could be attached.
func (t *Tracer) Attach(job Job) (AttachResult, error) {
	var res AttachResult
	err := t.do(func() error {
		var err error
		res, err = t.attach(job)
		return err
	})
	return res, err
}

func (t *Tracer) attach(job Job) (AttachResult, error) {
	var res AttachResult
	refused := map[int]error{}
	skipped := map[int]bool{}
	for round := 0; ; round++ {
		pids, pipeline, stats, err := job.resolve(func(pid int) bool { return t.procs[pid] != nil || refused[pid] != nil })
		if err != nil {
			if round == 0 {
				return res, fmt.Errorf("%w: %v", ErrNoJob, err)
			}
			break
		}
		for pid, why := range pipeline {
			if !skipped[pid] {
				skipped[pid] = true
				t.emitErr(pid, "attach", fmt.Errorf("not traced: %s", why))
			}
		}
		added := 0
		for _, pid := range pids {
			if refused[pid] != nil {
				continue
			}
			n, err := t.seizeProcess(pid)
			if err != nil {
				refused[pid] = err
				continue
			}
			if p := t.procs[pid]; p != nil && !p.announced {
				if st, ok := stats[pid]; ok {
					p.preStat = &st // its ppid and comm, read by this round's scan
				}
			}
			added += n
		}
		if added == 0 || round > 100 {
			break
		}
	}
	for pid, err := range refused {
		if t.procs[pid] == nil && !errors.Is(err, unix.ESRCH) {
			res.Refused = append(res.Refused, err)
			t.emit(sessions.Error{PID: pid, Op: "attach", Message: err.Error(), Refused: refusalOf(pid, err)})
		}
	}
	// What announcing reads of each new process (exe, cmdline, status, environ), read in
	// parallel first: nothing else runs on the loop meanwhile, and each read fills in only
	// its own process.
	var fresh []*proc
	for _, p := range t.procs {
		if len(p.tasks) > 0 && !p.announced && !p.inherited && (!p.launched || p.execed) {
			fresh = append(fresh, p)
		}
	}
	procfs.InParallel(len(fresh), func(i int) { fresh[i].readImage() })
	for _, p := range fresh {
		p.inherited = true
	}
	for _, p := range t.procs {
		if len(p.tasks) == 0 {
			continue
		}
		t.announce(p)
		res.Processes++
		res.Threads += len(p.tasks)
	}
	if res.Processes == 0 {
		if len(res.Refused) > 0 {
			return res, fmt.Errorf("job %s: could not attach: %v", job, res.Refused[0])
		}
		return res, fmt.Errorf("job %s %w (its processes exited, or it never had any)", job, ErrNoJob)
	}
	return res, nil
}

// seizeProcess seizes every thread of pid, re-reading /proc/PID/task until no new thread
// appears. It returns how many threads it newly took.
func (t *Tracer) seizeProcess(pid int) (int, error) {
	added := 0
	for {
		tids := procfs.Tasks(pid)
		if len(tids) == 0 {
			if added == 0 && t.procs[pid] == nil {
				return 0, fmt.Errorf("seize %d: %w", pid, unix.ESRCH)
			}
			return added, nil
		}
		n := 0
		for _, tid := range tids {
			if t.tasks[tid] != nil {
				continue
			}
			err := ptraceSeize(tid)
			if errors.Is(err, unix.EPERM) {
				if st, serr := procfs.ReadStat(tid); serr == nil && (st.State == 'Z' || st.State == 'X') {
					continue // a leader that called pthread_exit: the kernel refuses to seize a zombie
				}
				if tracerOf(tid) == t.self {
					err = nil // the kernel attached it for us (a fork or clone of a seized thread)
				}
			}
			if errors.Is(err, unix.ESRCH) {
				continue // the thread exited meanwhile: normal
			}
			if err != nil {
				if added == 0 && n == 0 {
					return 0, &seizeError{tid: tid, err: err, hint: seizeHint(tid, err)}
				}
				continue
			}
			t.addTask(tid, pid)
			n++
		}
		added += n
		if n == 0 {
			return added, nil
		}
	}
}

func tracerOf(tid int) int {
	_, tracer := procfs.TaskStatus(tid)
	return tracer
}

// seizeError is a PTRACE_SEIZE of thread tid that failed.
type seizeError struct {
	tid  int
	err  error
	hint string // seizeHint, read when it failed
}

func (e *seizeError) Error() string { return fmt.Sprintf("seize %d: %v%s", e.tid, e.err, e.hint) }
func (e *seizeError) Unwrap() error { return e.err }

// refusalOf is why seizing pid failed with err, as facts.
func refusalOf(pid int, err error) *sessions.Refused {
	r := &sessions.Refused{Root: os.Geteuid() == 0}
	var se *seizeError
	tid := pid
	if errors.As(err, &se) {
		tid = se.tid
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		r.Errno = unix.ErrnoName(errno)
	}
	if st, serr := procfs.ReadStat(pid); serr == nil {
		r.Comm = st.Comm
	}
	if errors.Is(err, unix.EPERM) {
		if tp := tracerOf(tid); tp != 0 {
			// TracerPid is the tracing thread; its process is its thread group.
			r.TracerPID = tp
			if tgid := procfs.StatusField(procfs.Path(tp, "status"), "Tgid"); tgid != "" {
				fmt.Sscan(tgid, &r.TracerPID)
			}
			if st, serr := procfs.ReadStat(r.TracerPID); serr == nil {
				r.TracerComm = st.Comm
			}
		} else if y := yamaScope(); y >= 3 || (y >= 1 && !r.Root) {
			r.Yama = y
		}
	}
	return r
}

func seizeHint(tid int, err error) string {
	if !errors.Is(err, unix.EPERM) {
		return ""
	}
	if tp := tracerOf(tid); tp != 0 {
		return fmt.Sprintf(" (already traced by pid %d)", tp)
	}
	root := os.Geteuid() == 0
	switch yama := yamaScope(); {
	case yama == 3:
		return " (Yama ptrace_scope=3 forbids every ptrace attach, even root's, until reboot)"
	case yama == 2 && !root:
		return " (Yama ptrace_scope=2 lets only CAP_SYS_PTRACE attach: run as root)"
	case yama == 1 && !root:
		return " (Yama ptrace_scope=1 lets a process attach only to its descendants: run as root, or sysctl kernel.yama.ptrace_scope=0)"
	}
	return " (another user's process, or non-dumpable: run as root or the job's user)"
}

// yamaScope is Yama's kernel.yama.ptrace_scope, -1 without Yama.
func yamaScope() int {
	var buf [8]byte
	b, err := procfs.ReadSmall("/proc/sys/kernel/yama/ptrace_scope", buf[:])
	if err != nil || len(b) == 0 {
		return -1
	}
	return int(b[0] - '0')
}
