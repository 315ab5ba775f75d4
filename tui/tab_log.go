package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// logTab is Log: every event in order, following the newest unless scrolled back.
type logTab struct {
	filter string
	back   int
}

func (l *logTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	l.back = max(0, l.back-d) // up scrolls back in time
	if key.Matches(msg, m.keys.Bottom) {
		l.back = 0
	}
	return nil
}

func (l *logTab) normalize(m *Model) {
	if top := max(0, len(m.state.Log)-(m.bodyH()-1)); l.back > top {
		l.back = top // g: the oldest full page, not past it
	}
}

func (l *logTab) view(m *Model, w, h int) string {
	return views.Log(m.st, m.state, views.LogOptions{Width: w, Height: h, Filter: l.filter, Back: l.back})
}

func (l *logTab) explain(m *Model) *views.Explanation { return nil }
func (l *logTab) click(m *Model, x, y int)            {}
func (l *logTab) escape(m *Model)                     { l.filter = "" }
func (l *logTab) filterRef(m *Model) *string          { return &l.filter }
func (l *logTab) sorts() bool                         { return false }
func (l *logTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	return []key.Binding{k.Filter, k.Bottom}
}
