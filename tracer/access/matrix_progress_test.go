package access

import (
	"strconv"
	"testing"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestMatrixProgress: measuring the matrix of a 40-process job says how far it has got
// (pairs done of n·(n-1), never going back) before the measured matrix arrives, and a live
// refresh shows the prediction before it measures.
func TestMatrixProgress(t *testing.T) {
	pgid, _ := tracertest.StartJobN(t, 40)
	log := &tracertest.EventLog{}
	tr := tracer.New(tracer.Options{Emit: log.Emit})
	t.Cleanup(func() { tr.Close() })
	job, _ := tracer.ParseJob("pgid:" + strconv.Itoa(pgid))
	if res, err := tr.Attach(job); err != nil || res.Processes != 40 {
		t.Fatalf("attach: %+v %v", res, err)
	}
	if _, err := New(tr).Refresh(true); err != nil {
		t.Fatal(err)
	}
	var progress []sessions.MatrixProgress
	var kinds []sessions.Kind
	for _, e := range log.Events() {
		switch b := e.Body.(type) {
		case sessions.MatrixProgress:
			progress = append(progress, b)
			kinds = append(kinds, e.Kind())
		case sessions.Matrix:
			kinds = append(kinds, e.Kind())
			if len(kinds) == 1 && b.Measured {
				t.Errorf("the first matrix was already measured: the prediction must come first")
			}
		}
	}
	if len(kinds) < 3 || kinds[0] != sessions.KindMatrix || kinds[len(kinds)-1] != sessions.KindMatrix {
		t.Fatalf("events %v, want the prediction, progress, then the measured matrix", kinds)
	}
	last := -1
	for _, p := range progress {
		if p.Total != 40*39 || p.Done < last || p.Done > p.Total {
			t.Errorf("progress %+v after %d", p, last)
		}
		last = p.Done
	}
	if len(progress) == 0 {
		t.Error("no progress during the measurement")
	}
}
