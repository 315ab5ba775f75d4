package tracer

import (
	"reflect"
	"sort"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/access"
)

// RefreshMatrix recomputes the prediction and, only when it changed since the last refresh
// (a process joined, exited or exec'd, or changed credentials, dumpability, namespaces or
// seccomp), emits a new matrix — measured when measure is set. Called once a second it keeps
// the matrix live at the cost of reading /proc; processes are stopped only after a change.
func (t *Tracer) RefreshMatrix(measure bool) (changed bool, err error) {
	err = t.do(func() error {
		sys := access.ReadSystem()
		procs := make([]access.Proc, 0, len(t.procs))
		for _, pid := range t.jobPIDs() {
			if p, err := access.ReadProc(pid); err == nil {
				procs = append(procs, p)
				t.noticeCreds(pid, p)
			}
		}
		pred := access.PredictAll(sys, procs)
		key := fingerprint(pred, procs)
		if t.lastMatrixKey != nil && reflect.DeepEqual(t.lastMatrixKey, key) {
			return nil
		}
		t.lastMatrixKey = key
		changed = true
		if !measure {
			t.emit(pred)
			return nil
		}
		_, _, err := t.matrix(true)
		return err
	})
	return changed, err
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
