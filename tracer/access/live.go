package access

import (
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
)

// liveMeasureEvery bounds how often the live matrix stops processes to measure: a job that
// forks helpers changes its matrix every second, and measuring N processes stops each in turn.
const liveMeasureEvery = 5 * time.Second

// quietEvery is how often Refresh reads /proc again for a job whose processes are the same
// images as at the last read (no fork, exec or exit since): what no ptrace event tells (a
// setresuid, a new name, a seccomp filter, an unshare) shows within it. A job that changed is
// read at every refresh. /proc is most of a refresh's cost: 64 processes' took 13 ms of CPU
// (BenchmarkReadProc64), each second of a quiet job's life, on the CPUs the job runs on.
var quietEvery = 5 * time.Second

// Refresh recomputes the prediction from /proc (on the caller's goroutine) and, when it
// changed since the last refresh (a process joined, exited or exec'd, or changed
// credentials, dumpability, namespaces or seccomp), emits a new matrix. With measure, the
// new matrix is measured inside the processes, at most once per liveMeasureEvery: a change
// sooner is shown predicted at once and measured when the interval has passed. Called once a
// second it keeps the matrix live; processes are stopped only after a change, and a job
// whose processes are the images they were is read from /proc only every quietEvery.
func (x *Access) Refresh(measure bool) (changed bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var pids []int
	var images []image
	if err := x.e.Do(func(l *tracer.Loop) error {
		for _, p := range l.Processes() {
			pids = append(pids, p.PID)
			images = append(images, image{p.PID, p.Gen})
		}
		return nil
	}); err != nil {
		return false, err
	}
	if slices.Equal(images, x.lastImages) && time.Since(x.lastRead) < quietEvery {
		return x.measureIfDue(measure)
	}
	x.lastImages, x.lastRead = images, time.Now()
	sys := ReadSystem()
	procs := readProcs(pids)
	pred := PredictAll(sys, procs)
	key := fingerprint(pred, procs)
	same := x.lastKey != nil && reflect.DeepEqual(x.lastKey, key)
	x.lastKey = key
	err = x.e.Do(func(l *tracer.Loop) error {
		// No ptrace event reports a change of effective uid or name (setresuid,
		// prctl(PR_SET_NAME)); /proc, read just now, does.
		for _, ap := range procs {
			l.Renamed(ap.PID, int(ap.UID[1]), ap.Comm)
		}
		if !same {
			// The prediction at once, so the matrix is never blank while it is measured.
			l.Emit(pred)
		}
		return nil
	})
	if err != nil {
		return !same, err
	}
	if !same && measure {
		x.measureDue = true
	}
	if measured, err := x.measureIfDue(measure); measured || err != nil {
		return true, err
	}
	return !same, nil
}

// measureIfDue measures the matrix (and says so) when a change is waiting for it and
// liveMeasureEvery has passed since the last measure.
func (x *Access) measureIfDue(measure bool) (bool, error) {
	if !measure || !x.measureDue || time.Since(x.lastMeasure) < liveMeasureEvery {
		return false, nil
	}
	x.measureDue = false
	x.lastMeasure = time.Now()
	_, _, err := x.Matrix(true)
	return true, err
}

// matrixKey is what a matrix depends on: the cells as predicted, and the identity of each
// process (an exec keeps the pid but may change everything).
type matrixKey struct {
	Cells []sessions.Cell
	Execs []string
}

func fingerprint(m sessions.Matrix, procs []Proc) *matrixKey {
	k := &matrixKey{Cells: m.Cells}
	for _, p := range procs {
		k.Execs = append(k.Execs, p.Comm)
	}
	sort.Strings(k.Execs)
	return k
}
