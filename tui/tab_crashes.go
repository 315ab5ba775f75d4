package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// crashesTab is Crashes: the groups by crash site, and one group's detail.
type crashesTab struct {
	cursor int
	detail bool
	scroll int
}

func (c *crashesTab) opts(m *Model, w, h int) views.CrashOptions {
	return views.CrashOptions{Width: w, Height: h, Cursor: c.cursor, Detail: c.detail, Scroll: c.scroll}
}

func (c *crashesTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	if c.detail {
		c.scroll += d
		if key.Matches(msg, k.Left) {
			c.detail = false
		}
		return nil
	}
	if key.Matches(msg, k.Enter) || key.Matches(msg, k.Right) {
		if len(m.state.Groups) > 0 {
			c.detail, c.scroll = true, 0 // another group opens at its top
		}
		return nil
	}
	c.cursor += d
	return nil
}

func (c *crashesTab) normalize(m *Model) {
	c.cursor = clamp(c.cursor, len(m.state.Groups))
	if c.cursor < 0 {
		c.detail, c.scroll = false, 0
		return
	}
	if c.detail {
		// No dead zone: the scroll stops where the last line is at the bottom.
		n := len(views.CrashDetailLines(m.st, m.state, m.state.Groups[c.cursor], m.width))
		c.scroll = max(0, min(c.scroll, n-m.bodyH()))
	}
}

func (c *crashesTab) view(m *Model, w, h int) string {
	return views.Crashes(m.st, m.state, c.opts(m, w, h))
}

func (c *crashesTab) explain(m *Model) *views.Explanation {
	if i := clamp(c.cursor, len(m.state.Groups)); i >= 0 {
		e := views.ExplainGroup(m.state.Groups[i])
		return &e
	}
	return nil
}

func (c *crashesTab) click(m *Model, x, y int) {
	if i := views.CrashesHit(c.opts(m, m.width, m.bodyH()), len(m.state.Groups), y); i >= 0 {
		c.cursor = i
	}
}

func (c *crashesTab) escape(m *Model)            { c.detail = false }
func (c *crashesTab) filterRef(m *Model) *string { return nil }
func (c *crashesTab) sorts() bool                { return false }
func (c *crashesTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	return []key.Binding{k.Enter, k.Explain}
}
