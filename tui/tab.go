package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// component is one tab (soft-serve's pkg/ui shape): it owns its cursor, its keys, its view,
// its explanation and its mouse hits. The Model keeps only the routing, the overlays and what
// every tab shares (the State, the styles, the size, the controller).
type component interface {
	// key handles a key meant for this tab (after the Model's global keys); d is the cursor
	// movement the key asks for (0 for none).
	key(m *Model, msg tea.KeyMsg, d int) tea.Cmd
	// normalize clamps the cursor and scroll offsets to what the State has now; the Model
	// calls it after every message, so view changes nothing.
	normalize(m *Model)
	view(m *Model, w, h int) string
	// explain is the teaching text of what is selected, nil when nothing is.
	explain(m *Model) *views.Explanation
	// click selects what is at body line y (0 = the body's first line), column x.
	click(m *Model, x, y int)
	// escape is esc: close a detail, clear a filter.
	escape(m *Model)
	// filterRef is the tab's filter text, nil when the tab has none.
	filterRef(m *Model) *string
	// sorts says whether s sorts this tab.
	sorts() bool
	shortHelp(m *Model) []key.Binding
}

// tabs returns the components in tab order (views.TabNames).
func (m *Model) tabs() []component {
	return []component{m.proc, m.mx, m.crash, m.thr, m.stk, m.log, m.out}
}

func (m *Model) active() component { return m.tabs()[m.tab] }

// delta is the cursor movement a key asks for.
func (m *Model) delta(msg tea.KeyMsg) int {
	k := &m.keys
	switch {
	case key.Matches(msg, k.Up):
		return -1
	case key.Matches(msg, k.Down):
		return 1
	case key.Matches(msg, k.PageUp):
		return -max(m.bodyH()-3, 1)
	case key.Matches(msg, k.PageDown):
		return max(m.bodyH()-3, 1)
	case key.Matches(msg, k.Top):
		return -1 << 30
	case key.Matches(msg, k.Bottom):
		return 1 << 30
	}
	return 0
}

func clamp(v, n int) int {
	if v >= n {
		v = n - 1
	}
	if v < 0 {
		v = 0
	}
	if n == 0 {
		return -1
	}
	return v
}

// follow keeps a list's cursor on the same item when the list changes under it (a sample
// re-merges the stacks, a process joins above the selected one, a class splits): the item is
// known by its key (a pid, a class's path, a group's id), not by its row. normalize calls fit
// after every message; a cursor that differs from the one fit left was moved by the user (a
// key, a click, the tour), and the item under it becomes the one followed. An item that is
// gone for a while (a sampling round half arrived, a checkpoint's threads still coming) stays
// the one followed: the cursor comes back to it when it is listed again, unless the user
// moved meanwhile.
type follow[K comparable] struct {
	at  int
	key K
	has bool
}

// fit moves *cursor to the followed item's row among n (keyAt names row i) and clamps it; a
// cursor the user moved follows what is under it from now on.
func (f *follow[K]) fit(cursor *int, n int, keyAt func(i int) K) {
	moved := !f.has || *cursor != f.at
	if !moved {
		for i := 0; i < n; i++ {
			if keyAt(i) == f.key {
				*cursor = i
				break
			}
		}
	}
	*cursor = clamp(*cursor, n)
	f.at = *cursor
	if moved && *cursor >= 0 {
		f.key, f.has = keyAt(*cursor), true
	}
}

// nextMatch is the row after cursor (dir 1) or before it (dir -1), going round, for which
// match holds; cursor itself when no other does.
func nextMatch(cursor, n, dir int, match func(i int) bool) int {
	for k := 1; k <= n; k++ {
		if i := ((cursor+dir*k)%n + n) % n; match(i) {
			return i
		}
	}
	return cursor
}

// matchDir is the direction n (1) or N (-1) asks for, 0 for another key.
func (m *Model) matchDir(msg tea.KeyMsg) int {
	switch {
	case key.Matches(msg, m.keys.NextMatch):
		return 1
	case key.Matches(msg, m.keys.PrevMatch):
		return -1
	}
	return 0
}
