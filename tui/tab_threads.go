package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// threadsTab is Threads: every thread's syscall restart state at the last checkpoint.
type threadsTab struct{ cursor int }

func (t *threadsTab) opts(w, h int) views.ThreadOptions {
	return views.ThreadOptions{Width: w, Height: h, Cursor: t.cursor}
}

func (t *threadsTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	t.cursor += d
	return nil
}

func (t *threadsTab) normalize(m *Model) { t.cursor = clamp(t.cursor, len(m.state.Threads)) }

func (t *threadsTab) view(m *Model, w, h int) string {
	return views.Threads(m.st, m.state, t.opts(w, h))
}

func (t *threadsTab) explain(m *Model) *views.Explanation {
	ts := views.ThreadList(m.state)
	if c := clamp(t.cursor, len(ts)); c >= 0 {
		e := views.ExplainThread(ts[c].Thread)
		return &e
	}
	return nil
}

func (t *threadsTab) click(m *Model, x, y int) {
	if i := views.ThreadsHit(t.opts(m.width, m.bodyH()), len(m.state.Threads), y); i >= 0 {
		t.cursor = i
	}
}

func (t *threadsTab) escape(m *Model)            {}
func (t *threadsTab) filterRef(m *Model) *string { return nil }
func (t *threadsTab) sorts() bool                { return false }
func (t *threadsTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Explain}
	if m.live() {
		bs = append(bs, k.Checkpoint)
	}
	return bs
}
