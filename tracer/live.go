package tracer

import (
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/access"
)

// liveMeasureEvery bounds how often the live matrix stops processes to measure: a job that
// forks helpers changes its matrix every second, and measuring N processes stops each in turn.
const liveMeasureEvery = 5 * time.Second

// liveState is RefreshMatrix's memory between calls.
type liveState struct {
	mu          sync.Mutex
	lastMeasure time.Time
	measureDue  bool
}

// RefreshMatrix recomputes the prediction from /proc (on the caller's goroutine) and, when it
// changed since the last refresh (a process joined, exited or exec'd, or changed
// credentials, dumpability, namespaces or seccomp), emits a new matrix. With measure, the
// new matrix is measured inside the processes, at most once per liveMeasureEvery: a change
// sooner is shown predicted at once and measured when the interval has passed. Called once a
// second it keeps the matrix live; processes are stopped only after a change.
func (t *Tracer) RefreshMatrix(measure bool) (changed bool, err error) {
	t.live.mu.Lock()
	defer t.live.mu.Unlock()
	var pids []int
	if err := t.do(func() error { pids = t.jobPIDs(); return nil }); err != nil {
		return false, err
	}
	sys := access.ReadSystem()
	procs := readProcs(pids)
	pred := access.PredictAll(sys, procs)
	key := fingerprint(pred, procs)
	same := false
	err = t.do(func() error {
		for _, ap := range procs {
			t.noticeCreds(ap.PID, ap)
		}
		same = t.lastMatrixKey != nil && reflect.DeepEqual(t.lastMatrixKey, key)
		t.lastMatrixKey = key
		return nil
	})
	if err != nil {
		return false, err
	}
	if !same && measure {
		t.live.measureDue = true
	}
	if !same {
		// The prediction at once, so the matrix is never blank while it is being measured.
		if err := t.do(func() error { t.emit(pred); return nil }); err != nil {
			return true, err
		}
	}
	if measure && t.live.measureDue && time.Since(t.live.lastMeasure) >= liveMeasureEvery {
		t.live.measureDue = false
		t.live.lastMeasure = time.Now()
		_, _, err := t.Matrix(true)
		return true, err
	}
	return !same, nil
}

// matrixKey is what a matrix depends on: the cells as predicted, and the identity of each
// process (an exec keeps the pid but may change everything).
type matrixKey struct {
	Cells []sessions.Cell
	Execs []string
}

func fingerprint(m sessions.Matrix, procs []access.Proc) *matrixKey {
	k := &matrixKey{Cells: m.Cells}
	for _, p := range procs {
		k.Execs = append(k.Execs, p.Comm)
	}
	sort.Strings(k.Execs)
	return k
}

// noticeCreds re-announces a process whose effective uid or name changed since it joined
// (setresuid, prctl(PR_SET_NAME)): no ptrace event reports either.
func (t *Tracer) noticeCreds(pid int, ap access.Proc) {
	p := t.procs[pid]
	if p == nil || !p.announced {
		return
	}
	uid := int(ap.UID[1])
	if uid == p.uid && ap.Comm == p.comm {
		return
	}
	p.uid, p.comm = uid, ap.Comm
	t.emit(sessions.Process{PID: p.pid, PPID: p.ppid, Rank: p.rank, Exe: p.exe, Comm: p.comm,
		Argv: p.argv, UID: p.uid, Threads: len(p.tasks)})
}
