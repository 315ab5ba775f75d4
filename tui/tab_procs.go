package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// procsTab is Processes: the job's processes as a tree or sorted, filterable.
type procsTab struct {
	cursor, offset, sort int
	filter               string
}

func (p *procsTab) rows(m *Model) []views.ProcRow {
	return views.ProcRows(m.state, views.ProcSorts[p.sort], p.filter)
}

func (p *procsTab) opts(m *Model, w, h int) views.ProcOptions {
	return views.ProcOptions{Width: w, Height: h, Cursor: p.cursor, Offset: p.offset,
		Sort: views.ProcSorts[p.sort], Filter: p.filter}
}

func (p *procsTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	switch {
	case key.Matches(msg, k.Sort):
		p.sort = (p.sort + 1) % len(views.ProcSorts)
	case key.Matches(msg, k.Enter):
		// Jump to the process's crash group, when it has one.
		rows := p.rows(m)
		if c := clamp(p.cursor, len(rows)); c >= 0 && rows[c].Proc.Crashes > 0 {
			for i, g := range m.state.Groups {
				for _, mem := range g.Members {
					if mem.Host == rows[c].Proc.Host && mem.Crash.PID == rows[c].Proc.PID {
						m.tab, m.crash.cursor, m.crash.detail, m.crash.scroll = tabCrashes, i, true, 0
						return nil
					}
				}
			}
		}
	}
	p.cursor += d
	return nil
}

func (p *procsTab) normalize(m *Model) {
	n := len(p.rows(m))
	p.cursor = clamp(p.cursor, n)
	p.offset = views.Window(p.cursor, p.offset, m.bodyH()-2, n)
}

func (p *procsTab) view(m *Model, w, h int) string {
	return views.Processes(m.st, m.state, p.rows(m), p.opts(m, w, h))
}

func (p *procsTab) explain(m *Model) *views.Explanation {
	rows := p.rows(m)
	c := clamp(p.cursor, len(rows))
	if c < 0 {
		return nil
	}
	pr := rows[c].Proc
	for _, g := range m.state.Groups {
		for _, mem := range g.Members {
			if mem.Host == pr.Host && mem.Crash.PID == pr.PID {
				e := views.ExplainGroup(g)
				return &e
			}
		}
	}
	e := views.ExplainProc(pr)
	return &e
}

func (p *procsTab) click(m *Model, x, y int) {
	if i := views.ProcessesHit(p.opts(m, m.width, m.bodyH()), len(p.rows(m)), y); i >= 0 {
		p.cursor = i
	}
}

func (p *procsTab) escape(m *Model)            { p.filter = "" }
func (p *procsTab) filterRef(m *Model) *string { return &p.filter }
func (p *procsTab) sorts() bool                { return true }
func (p *procsTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	return []key.Binding{k.Filter, k.Sort, k.Enter, k.Explain}
}
