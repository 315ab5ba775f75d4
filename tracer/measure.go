package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/access"
)

// MatrixStats describes one matrix computation, for benchmarks and the TUI's header.
type MatrixStats struct {
	Predict     time.Duration
	Measure     time.Duration
	LongestStop time.Duration // the longest time one process was held stopped
	Injections  int
}

// Matrix predicts the access matrix of the job from /proc (kernel.md A.3) and, when measure is
// set, measures every ordered pair by running kcmp and a 1-byte process_vm_readv inside A
// (A.5), one process stopped at a time. It emits a matrix event and returns it.
//
// /proc is read and the prediction made on the caller's goroutine; only the measurement of
// each A runs on the tracer's thread, one A per request, so the job's other stops are
// serviced between two processes.
func (t *Tracer) Matrix(measure bool) (sessions.Matrix, MatrixStats, error) {
	var st MatrixStats
	var pids []int
	if err := t.do(func() error { pids = t.jobPIDs(); return nil }); err != nil {
		return sessions.Matrix{}, st, err
	}
	sys := access.ReadSystem()
	procs := readProcs(pids)
	var meas map[[2]int]access.Measurement
	if measure {
		// Filters must be read before predicting: the seccomp row evaluates them.
		meas = map[[2]int]access.Measurement{}
		mstart := time.Now()
		total := len(procs) * (len(procs) - 1)
		var said time.Time
		for i := range procs {
			err := t.do(func() error {
				// Long work shows progress: a fact every quarter second (the pairs done).
				if time.Since(said) >= 250*time.Millisecond && total > 0 {
					t.emit(sessions.MatrixProgress{Done: i * (len(procs) - 1), Total: total})
					said = time.Now()
				}
				t.measureFrom(sys, procs, i, meas, &st)
				return nil
			})
			if err != nil {
				return sessions.Matrix{}, st, err
			}
		}
		st.Measure = time.Since(mstart)
	}
	pstart := time.Now()
	m := access.PredictAll(sys, procs)
	st.Predict = time.Since(pstart)
	if measure {
		for i, c := range m.Cells {
			if mm, ok := meas[[2]int{c.From, c.To}]; ok {
				m.Cells[i] = access.ApplyMeasurement(c, mm)
			}
		}
		m.Measured = true
	}
	err := t.do(func() error { t.emit(m); return nil })
	return m, st, err
}

// readProcs reads /proc for each pid, skipping those that exited meanwhile.
func readProcs(pids []int) []access.Proc {
	procs := make([]access.Proc, 0, len(pids))
	for _, pid := range pids {
		if p, err := access.ReadProc(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return procs
}

// seccompFilters reads the held task's filters, newest first (needs CAP_SYS_ADMIN).
func seccompFilters(tid, n int) ([][]byte, error) {
	var out [][]byte
	for i := 0; i < n; i++ {
		buf, err := seccompFilter(tid, i)
		if err != nil {
			return nil, err
		}
		out = append(out, buf)
	}
	return out, nil
}

func (t *Tracer) jobPIDs() []int {
	var pids []int
	for pid, p := range t.procs {
		if p.announced && len(p.tasks) > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// measureFrom stops one thread of procs[i] (A) and measures A→B for every other B.
func (t *Tracer) measureFrom(sys access.System, procs []access.Proc, i int, meas map[[2]int]access.Measurement, st *MatrixStats) {
	a := &procs[i]
	p := t.procs[a.PID]
	if p == nil {
		return
	}
	tk := measureThread(p)
	if tk == nil || tk.listening {
		return // a job-control-stopped or exiting process is left alone
	}
	if tk.stopped != running {
		return // held by another operation (a crash being decided): not ours to use
	}
	held := time.Now()
	if err := t.stopTask(tk, 2*time.Second); err != nil {
		t.emitErr(a.PID, "measure", err)
		return
	}
	defer func() {
		if t.tasks[tk.tid] != nil {
			t.resumeReported(tk, "measure resume")
		}
		if d := time.Since(held); d > st.LongestStop {
			st.LongestStop = d
		}
	}()
	if t.tasks[tk.tid] == nil || tk.stopped != stopEvent || tk.cause != unix.PTRACE_EVENT_STOP {
		// A signal, a group-stop or an exit won the race with our interrupt: resume it as it
		// is (the signal is re-injected) and leave this row predicted.
		return
	}
	if a.Seccomp == 2 && a.SeccompFilters > 0 {
		f, err := seccompFilters(tk.tid, a.SeccompFilters)
		if err != nil {
			// Said once per process: without CAP_SYS_ADMIN it fails every time.
			if !t.filtersUnreadable[a.PID] {
				if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
					err = fmt.Errorf("%w: reading a seccomp filter needs CAP_SYS_ADMIN; its calls are not injected and its cells stay predicted", err)
				}
				t.emitErr(a.PID, "read seccomp filters", err)
				if t.filtersUnreadable == nil {
					t.filtersUnreadable = map[int]bool{}
				}
				t.filtersUnreadable[a.PID] = true
			}
		} else {
			a.Filters = f
		}
	}
	ai, err := access.Arch(string(arch.Host()))
	if err != nil {
		return
	}
	regs, err := getRegs(tk.tid)
	if err != nil {
		return
	}
	// Scratch below the red zone: two iovecs and a 1-byte buffer (A.5).
	sc, err := newScratch(tk, regs, 48)
	if err != nil {
		t.emitErr(a.PID, "measure", err)
		return
	}
	defer sc.restore()
	// The iovecs are the same for every B but the remote base: write them once, then poke
	// only B's address (one POKEDATA instead of a read-modify-write of the whole scratch).
	var iov [40]byte
	binary.LittleEndian.PutUint64(iov[0:], sc.addr+32) // local: the 1-byte buffer
	binary.LittleEndian.PutUint64(iov[8:], 1)
	binary.LittleEndian.PutUint64(iov[24:], 1) // remote length; the base (at 16) is per B
	iovOK := sc.write(0, iov[:]) == nil
	// One injection session for all of A's calls: registers and mask saved and restored once.
	sess, err := t.beginInject(tk)
	if err != nil {
		t.emitErr(a.PID, "measure", err)
		return
	}
	defer func() {
		if err := sess.end(); err != nil {
			t.emitErr(a.PID, "measure: restore", err)
		}
	}()
	self := a.PID
	if len(a.NSpid) > 0 {
		self = a.NSpid[len(a.NSpid)-1]
	}
	for j := range procs {
		if j == i {
			continue
		}
		b := procs[j]
		vmAct, kcmpAct, known := access.SeccompFor(sys, *a, b)
		if !known {
			continue // filters we could not read: never risk killing A
		}
		bpid, visible := access.PIDIn(*a, b)
		if !visible {
			bpid = 1 << 22 // beyond pid_max: what A would see for a pid it cannot name (ESRCH)
		}
		var m access.Measurement
		if safe(kcmpAct) {
			ret, _, err := sess.call(ai.Kcmp, uint64(self), uint64(bpid), access.KCMPVM, 0, 0)
			if err == nil {
				m.KcmpRet, m.KcmpRan = ret, true
				st.Injections++
			} else if !errors.Is(err, errInjectInterrupted) {
				t.emitErr(a.PID, "measure kcmp", err)
			}
		}
		if safe(vmAct) && b.ReadableAddr != 0 && iovOK {
			if err := sc.poke(16, b.ReadableAddr); err == nil { // remote: B's readable byte
				ret, _, err := sess.call(ai.VMReadv, uint64(bpid), sc.addr, 1, sc.addr+16, 1, 0)
				if err == nil {
					m.VMRet, m.VMRan = ret, true
					st.Injections++
				} else if !errors.Is(err, errInjectInterrupted) {
					t.emitErr(a.PID, "measure process_vm_readv", err)
				}
			}
		}
		meas[[2]int{a.PID, b.PID}] = m
		if sess.broken != nil {
			// A died, or a signal that cannot be blocked arrived: leave A alone now (the
			// remaining pairs keep their predictions) and let the signal be delivered.
			break
		}
	}
}

// safe says an injected call may run: it is not killed, trapped into SIGSYS, or handed to a
// user-space supervisor that might never answer.
func safe(a access.SeccompAction) bool {
	return !a.Kills() && a.Action != access.ActUserNotif
}

// measureThread picks the thread of p to inject into: the leader if it can still stop, else
// the lowest live thread (a leader that called pthread_exit never stops again), never one
// blocked in a call an interrupt would end with EINTR (noInterrupt); nil when there is none.
func measureThread(p *proc) *task {
	usable := func(tk *task) bool {
		return tk != nil && !tk.exited && tk.stopped != stopGroup && interruptible(tk)
	}
	if tk := p.tasks[p.pid]; usable(tk) {
		return tk
	}
	var best *task
	for _, tk := range p.tasks {
		if usable(tk) && (best == nil || tk.tid < best.tid) {
			best = tk
		}
	}
	return best
}

// interruptible says whether a PTRACE_INTERRUPT leaves tk's program unchanged: not when it
// is blocked in epoll_wait, semop, io_getevents or sigtimedwait (signal(7): never
// restarted), which would return EINTR. A thread already held can always be used.
func interruptible(tk *task) bool {
	if tk.stopped != running {
		return true
	}
	sys := readTaskSyscall(tk.pid, tk.tid)
	return sys.nr < 0 || !noInterrupt[arch.SyscallName(arch.Host(), sys.nr)]
}
