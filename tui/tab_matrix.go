package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// matrixTab is the access matrix: who can read whose memory, grouped into classes.
type matrixTab struct {
	row, col int
	group    int
	expanded map[int]bool
	host     string
	ix       *views.MatrixIndex
	// keepRow and keepCol follow the selected processes when a new matrix replaces this one.
	keepRow, keepCol follow[int]
}

// refresh re-indexes the matrix when a new Matrix event replaced it (the index is the
// expensive part of drawing a 1000-process matrix, so it is built once per event).
func (x *matrixTab) refresh(m *Model) {
	host, mat := views.MatrixFor(m.state, x.host)
	if x.ix == nil || x.ix.M != mat || x.ix.Host != host {
		x.ix = views.IndexMatrix(host, mat)
	}
}

func (x *matrixTab) opts(m *Model) views.MatrixOptions {
	return views.MatrixOptions{Width: m.width, Height: m.bodyH(), Row: x.row, Col: x.col,
		Group: x.group, Expanded: x.expanded, Host: x.host}
}

func (x *matrixTab) units(m *Model) []views.Unit { return views.Units(x.ix, x.opts(m)) }

func (x *matrixTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	units := x.units(m)
	switch {
	case key.Matches(msg, k.Left):
		x.col--
	case key.Matches(msg, k.Right):
		x.col++
	case key.Matches(msg, k.Group):
		if views.Grouped(x.ix, x.opts(m)) {
			x.group = -1
		} else {
			x.group = 1
		}
	case key.Matches(msg, k.Host):
		hs := views.MatrixHosts(m.state)
		for i, h := range hs {
			if h == x.ix.Host {
				x.host = hs[(i+1)%len(hs)]
				break
			}
		}
		x.refresh(m)
	case key.Matches(msg, k.Enter):
		// Expand (or collapse) the class under the cursor's row.
		if r := clamp(x.row, len(units)); r >= 0 && x.ix != nil {
			c := x.ix.Classes[units[r].Class]
			x.expanded[c.ID] = !x.expanded[c.ID] && len(c.Members) > 1
		}
	}
	x.row += d
	return nil
}

func (x *matrixTab) normalize(m *Model) {
	x.refresh(m)
	units := x.units(m)
	pid := func(i int) int { return x.ix.UnitPID(units[i]) }
	x.keepRow.fit(&x.row, len(units), pid)
	x.keepCol.fit(&x.col, len(units), pid)
}

func (x *matrixTab) view(m *Model, w, h int) string {
	return views.Matrix(m.st, m.state, x.ix, x.opts(m))
}

func (x *matrixTab) explain(m *Model) *views.Explanation {
	units := x.units(m)
	if len(units) == 0 {
		return nil
	}
	r, c := clamp(x.row, len(units)), clamp(x.col, len(units))
	if cell := x.ix.PairCell(units[r], units[c]); cell != nil {
		e := views.ExplainCell(cell)
		return &e
	}
	return nil
}

func (x *matrixTab) click(m *Model, px, y int) {
	r, c := views.MatrixHit(x.ix, x.units(m), x.opts(m), px, y)
	if r >= 0 && c >= 0 {
		x.row, x.col = r, c
	}
}

func (x *matrixTab) escape(m *Model)            {}
func (x *matrixTab) filterRef(m *Model) *string { return nil }
func (x *matrixTab) sorts() bool                { return false }
func (x *matrixTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Explain, k.Enter, k.Group}
	if m.live() {
		bs = append(bs, k.Measure)
	}
	return bs
}
