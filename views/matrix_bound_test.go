package views

import (
	"runtime"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// TestMatrixIndexBounded: a matrix event naming 30,000 pids (a 200 kB line of a hostile
// recording) is indexed in bounded memory: the first MaxMatrixPIDs processes, the rest left
// out and said so in the header. Before, the dense index took 4.5 GB.
func TestMatrixIndexBounded(t *testing.T) {
	m := &sessions.Matrix{}
	for p := 1; p <= 30000; p++ {
		m.PIDs = append(m.PIDs, p)
	}
	m.Cells = []sessions.Cell{{From: 1, To: 2}, {From: 29999, To: 30000}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := IndexMatrix("", m)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 200<<20 {
		t.Errorf("indexing 30,000 pids allocated %d MB", got>>20)
	}
	if len(ix.PIDs) != MaxMatrixPIDs || ix.Omitted != 30000-MaxMatrixPIDs {
		t.Errorf("indexed %d pids, omitted %d", len(ix.PIDs), ix.Omitted)
	}
	st := sessions.NewState()
	out := Matrix(Plain(), st, ix, MatrixOptions{Width: 120, Height: 40})
	if !strings.Contains(out, "left out") {
		t.Errorf("header does not say pids were left out:\n%s", out[:min(len(out), 400)])
	}
}
