package access

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/seccomp"
)

// MatrixStats describes one matrix computation, for benchmarks and the TUI's header.
type MatrixStats struct {
	Predict     time.Duration
	Measure     time.Duration
	LongestStop time.Duration // the longest time one process was held stopped
	Injections  int
}

// Access is the access matrix feature of one engine: predicted from /proc (kernel.md A.3) and
// measured by running kcmp and process_vm_readv inside each process (A.5), through the
// engine's holds and its gated injection.
type Access struct {
	e *tracer.Tracer
	// RefreshMatrix's memory between calls (it runs on its caller's goroutine).
	mu          sync.Mutex
	lastKey     *matrixKey
	lastMeasure time.Time
	measureDue  bool
	// lastImages are the job's processes (pid and exec count) at the last read of /proc, at
	// lastRead: a job that has not changed since is read again only every quietEvery.
	lastImages []image
	lastRead   time.Time
}

// image is one process image of the job: its pid and how many times it has exec'd.
type image struct{ pid, gen int }

// New makes the access matrix feature for e.
func New(e *tracer.Tracer) *Access { return &Access{e: e} }

// Matrix predicts the access matrix of the job from /proc and, when measure is set, measures
// every ordered pair by running kcmp and a 1-byte process_vm_readv inside A, one process held
// at a time. It emits a matrix event and returns it.
//
// /proc is read and the prediction made on the caller's goroutine; only the measurement of
// each A runs on the tracer's thread, one A per request, so the job's other stops are
// serviced between two processes.
func (x *Access) Matrix(measure bool) (sessions.Matrix, MatrixStats, error) {
	var st MatrixStats
	var pids []int
	if err := x.e.Do(func(l *tracer.Loop) error { pids = jobPIDs(l); return nil }); err != nil {
		return sessions.Matrix{}, st, err
	}
	sys := ReadSystem()
	procs := readProcs(pids)
	var meas map[[2]int]Measurement
	// One process has no pair to measure: nothing is held or injected (a static binary
	// with no room for a guard near its pc would fail for nothing).
	if measure && len(procs) > 1 {
		meas = map[[2]int]Measurement{}
		mstart := time.Now()
		total := len(procs) * (len(procs) - 1)
		var said time.Time
		for i := range procs {
			err := x.e.Do(func(l *tracer.Loop) error {
				// Long work shows progress: a fact every quarter second (the pairs done).
				if time.Since(said) >= 250*time.Millisecond && total > 0 {
					l.Emit(sessions.MatrixProgress{Done: i * (len(procs) - 1), Total: total})
					said = time.Now()
				}
				measureFrom(l, sys, procs, i, meas, &st)
				return nil
			})
			if err != nil {
				return sessions.Matrix{}, st, err
			}
		}
		st.Measure = time.Since(mstart)
	}
	pstart := time.Now()
	m := PredictAll(sys, procs)
	st.Predict = time.Since(pstart)
	if measure {
		for i, c := range m.Cells {
			if mm, ok := meas[[2]int{c.From, c.To}]; ok {
				m.Cells[i] = ApplyMeasurement(c, mm)
			}
		}
		m.Measured = true
	}
	err := x.e.Do(func(l *tracer.Loop) error { l.Emit(m); return nil })
	return m, st, err
}

// readProcs reads /proc for each pid, skipping those that exited meanwhile.
func readProcs(pids []int) []Proc {
	procs := make([]Proc, 0, len(pids))
	for _, pid := range pids {
		if p, err := ReadProc(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return procs
}

func jobPIDs(l *tracer.Loop) []int {
	var pids []int
	for _, p := range l.Processes() {
		pids = append(pids, p.PID)
	}
	return pids
}

// measureFrom holds one thread of procs[i] (A) and measures A→B for every other B, in that
// thread. Its prediction is then made from that thread's own seccomp filters: the thread that
// runs the call is the one whose filters decide (kernel.md D.1).
func measureFrom(l *tracer.Loop, sys System, procs []Proc, i int, meas map[[2]int]Measurement, st *MatrixStats) {
	a := &procs[i]
	p, ok := l.Process(a.PID)
	if !ok {
		return
	}
	tid, why := measureThread(l, p)
	if tid == 0 {
		for j := range procs {
			if j != i {
				meas[[2]int{a.PID, procs[j].PID}] = Measurement{NotRun: &sessions.NotRun{Why: why}}
			}
		}
		return
	}
	held := time.Now()
	err := l.Hold([]int{tid}, tracer.HoldOptions{Timeout: 2 * time.Second, AtInterrupt: true}, func(h *tracer.Held) error {
		if len(h.Threads) == 0 {
			// A signal, a group-stop or an exit took the place of our interrupt, or the thread
			// did not stop: this row stays predicted.
			return h.LateErr("measure")
		}
		measureIn(l, h.Threads[0], sys, procs, i, meas, st)
		return nil
	})
	if d := time.Since(held); d > st.LongestStop {
		st.LongestStop = d
	}
	if err != nil {
		l.EmitErr(a.PID, "measure", err)
	}
}

// measureIn runs the measurements of A (procs[i]) in th, held at an interrupt stop.
func measureIn(l *tracer.Loop, th tracer.Thread, sys System, procs []Proc, i int, meas map[[2]int]Measurement, st *MatrixStats) {
	a := &procs[i]
	mode, filters, ferr := th.Seccomp()
	if mode >= 0 {
		a.Seccomp, a.SeccompTID = mode, th.TID()
		if mode == 2 {
			a.SeccompFilters = len(filters)
		}
	}
	if ferr == nil {
		a.Filters = filters
	}
	ai, err := seccomp.Arch(string(arch.Host()))
	if err != nil {
		return
	}
	inj, err := th.Inject()
	if err != nil {
		l.EmitErr(a.PID, "measure", err)
		return
	}
	defer func() {
		if err := inj.End(); err != nil {
			l.EmitErr(a.PID, "measure: restore", err)
		}
	}()
	// Scratch below the red zone: two iovecs and a 1-byte buffer (A.5). The iovecs are the
	// same for every B but the remote base: written once, then only B's address poked.
	sc, err := inj.Scratch(48)
	if err != nil {
		l.EmitErr(a.PID, "measure", err)
		return
	}
	var iov [40]byte
	binary.LittleEndian.PutUint64(iov[0:], sc.Addr+32) // local: the 1-byte buffer
	binary.LittleEndian.PutUint64(iov[8:], 1)
	binary.LittleEndian.PutUint64(iov[24:], 1) // remote length; the base (at 16) is per B
	iovOK := sc.Write(0, iov[:]) == nil
	self := a.PID
	if len(a.NSpid) > 0 {
		self = a.NSpid[len(a.NSpid)-1]
	}
	for j := range procs {
		if j == i {
			continue
		}
		b := procs[j]
		bpid, visible := PIDIn(*a, b)
		if !visible {
			bpid = 1 << 22 // beyond pid_max: what A would see for a pid it cannot name (ESRCH)
		}
		var m Measurement
		ret, _, err := inj.Call(ai.Kcmp, uint64(self), uint64(bpid), KCMPVM, 0, 0)
		switch {
		case err == nil:
			m.KcmpRet, m.KcmpRan = ret, true
			st.Injections++
		case refusal(err) != nil:
			m.KcmpNotRun = refusal(err)
		case !errors.Is(err, tracer.ErrInjectInterrupted):
			l.EmitErr(a.PID, "measure kcmp", err)
		}
		if b.ReadableAddr != 0 && iovOK && inj.Broken() == nil {
			if err := sc.Poke(16, b.ReadableAddr); err == nil { // remote: B's readable byte
				ret, _, err := inj.Call(ai.VMReadv, uint64(bpid), sc.Addr, 1, sc.Addr+16, 1, 0)
				switch {
				case err == nil:
					m.VMRet, m.VMRan = ret, true
					st.Injections++
				case refusal(err) != nil:
					m.VMNotRun = refusal(err)
				case !errors.Is(err, tracer.ErrInjectInterrupted):
					l.EmitErr(a.PID, "measure process_vm_readv", err)
				}
			}
		}
		meas[[2]int{a.PID, b.PID}] = m
		if inj.Broken() != nil {
			// A died, or a signal that cannot be blocked arrived: leave A alone now (the
			// remaining pairs keep their predictions) and let the signal be delivered.
			break
		}
	}
}

// refusal is the gate's refusal in err, as the cell's fact, or nil.
func refusal(err error) *sessions.NotRun {
	var r *tracer.Refused
	if !errors.As(err, &r) {
		return nil
	}
	n := &sessions.NotRun{TID: r.TID}
	switch r.Why {
	case tracer.RefuseStrict:
		n.Why = sessions.NotRunStrict
	case tracer.RefuseUnreadable:
		n.Why = sessions.NotRunFiltersUnreadable
	case tracer.RefuseDispatch:
		n.Why = sessions.NotRunUserDispatch
	default:
		n.Why, n.Action = sessions.NotRunSeccomp, r.Action.String()
	}
	return n
}

// measureThread picks the thread of p to measure in: the leader if it can be held without
// harm, else the lowest such thread; never one in a job-control stop, past its exit, or
// blocked in a call an interrupt would end with EINTR (tracer.EINTRCall). With none, it says
// why (the row stays predicted).
func measureThread(l *tracer.Loop, p tracer.Process) (int, sessions.NotRunWhy) {
	why := sessions.NotRunNoThread
	usable := func(tid int) bool {
		th, ok := l.Thread(tid)
		if !ok {
			return false
		}
		switch th.State() {
		case "running", "stopping", "held":
		default:
			return false
		}
		if _, prone := tracer.EINTRCall(p.PID, tid); prone {
			why = sessions.NotRunEINTR
			return false
		}
		return true
	}
	if usable(p.PID) {
		return p.PID, ""
	}
	for _, tid := range p.TIDs { // in order
		if tid != p.PID && usable(tid) {
			return tid, ""
		}
	}
	return 0, why
}
