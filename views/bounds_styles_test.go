package views

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

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

// TestStylesAdaptToLightTerminals: on a light background the warn, info, good and bad colours
// are the dark ANSI ones (bright yellow and cyan are unreadable on white), the bright ones on
// a dark background.
func TestStylesAdaptToLightTerminals(t *testing.T) {
	for _, dark := range []bool{true, false} {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.ANSI)
		r.SetHasDarkBackground(dark)
		st := NewStyles(r)
		got := st.Warn.Render("w") + st.Info.Render("i")
		want := []string{"\x1b[33m", "\x1b[36m"} // yellow, cyan
		if dark {
			want = []string{"\x1b[93m", "\x1b[96m"} // bright yellow, bright cyan
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("dark background %v: %q lacks %q", dark, got, w)
			}
		}
	}
}
