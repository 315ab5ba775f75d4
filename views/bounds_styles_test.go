package views

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views/viewtest"
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

// TestMatrixPast99: with more than 100 processes the rows carry three-digit numbers and a
// line of hundreds sits above the column numbers, so row 120 and column 120 read the same;
// the mouse hit accounts for that line.
func TestMatrixPast99(t *testing.T) {
	s := viewtest.Big(150)
	host, m := MatrixFor(s, "")
	ix := IndexMatrix(host, m)
	o := MatrixOptions{Width: 80, Height: 30, Row: 120, Col: 120, Group: -1}
	out := Matrix(Plain(), s, ix, o)
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[1], "1··") || !strings.Contains(lines[2], "20<") {
		t.Errorf("no hundreds line above the column numbers:\n%s", strings.Join(lines[:4], "\n"))
	}
	if !strings.Contains(out, "120 ") {
		t.Errorf("row 120 is not numbered 120:\n%s", out)
	}
	units := Units(ix, o)
	gridH, _, _ := geometry(o)
	roff := window(120, 0, gridH-1, len(units))
	if r, c := MatrixHit(ix, units, o, matrixLabelW, 3+(120-roff)); r != 120 || c < 0 {
		t.Errorf("click on row 120: %d,%d", r, c)
	}
}

// TestMatrixShowsProgress: while the first matrix is measured the tab says how far it is,
// not "no access matrix yet"; once a matrix is there the progress is in its title.
func TestMatrixShowsProgress(t *testing.T) {
	s := sessions.NewState()
	s.Apply(sessions.Event{Body: sessions.MatrixProgress{Done: 3, Total: 12}})
	out := Matrix(Plain(), s, nil, MatrixOptions{Width: 80, Height: 20})
	if !strings.Contains(out, "measuring inside each process: 3/12 pairs (25%)") {
		t.Errorf("no progress before the first matrix:\n%s", out)
	}
	big := viewtest.Big(10)
	big.Apply(sessions.Event{Body: sessions.MatrixProgress{Done: 45, Total: 90}})
	host, m := MatrixFor(big, "")
	if out := Matrix(Plain(), big, IndexMatrix(host, m), MatrixOptions{Width: 200, Height: 30}); !strings.Contains(out, "45/90 pairs (50%)") {
		t.Errorf("no progress in the title:\n%s", out)
	}
}
