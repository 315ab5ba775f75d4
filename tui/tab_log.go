package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// logTab is Log: every event in order, filterable (on what a row shows) and sortable, with a
// cursor that follows the newest event until the user moves it (G follows again).
type logTab struct {
	cursor, offset int
	following      bool
	filter         string
	sort           int // index into views.LogSorts
	reverse        bool
	keep           follow[int] // the selected event, by its Seq
	// lines caches each event's line by Seq: the filter reads every event's line on each
	// frame, and formatting 20000 of them is the slow part.
	lines map[int]string
}

func (l *logTab) line(m *Model, i int) string {
	e := &m.state.Log[i]
	if l.lines == nil || len(l.lines) > 2*sessions.MaxLog {
		l.lines = map[int]string{}
	}
	s, ok := l.lines[e.Seq]
	if !ok {
		s = views.EventLine(e.Event)
		l.lines[e.Seq] = s
	}
	return s
}

func (l *logTab) rows(m *Model) []views.LogRow {
	return views.LogRows(m.state, l.filter, m.width, views.LogSorts[l.sort], l.reverse, func(i int) string { return l.line(m, i) })
}

// newest is the row of the newest event in the order shown.
func (l *logTab) newest(n int) int {
	if l.reverse {
		return 0
	}
	return n - 1
}

func (l *logTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	n := len(m.state.Log)
	switch {
	case key.Matches(msg, k.Sort):
		l.sort = (l.sort + 1) % len(views.LogSorts)
		return nil
	case key.Matches(msg, k.Reverse):
		l.reverse = !l.reverse
		return nil
	case m.matchDir(msg) != 0:
		if rows := l.rows(m); len(rows) > 0 {
			l.cursor = nextMatch(clamp(l.cursor, len(rows)), len(rows), m.matchDir(msg), func(int) bool { return true })
			l.following = false
		}
		return nil
	case key.Matches(msg, k.Bottom) && !l.reverse, key.Matches(msg, k.Top) && l.reverse:
		l.following = true // G: the newest, and the ones that come after it
		return nil
	}
	if d != 0 && n > 0 {
		l.cursor += d
		l.following = false
	}
	return nil
}

func (l *logTab) normalize(m *Model) {
	rows := l.rows(m)
	if l.following {
		l.cursor = l.newest(len(rows))
		l.keep.has = false // the newest, whichever it is
	}
	l.keep.fit(&l.cursor, len(rows), func(i int) int { return rows[i].Entry.Seq })
	if !l.following && l.cursor == l.newest(len(rows)) && l.sort == 0 {
		l.following = true // moved onto the newest: follow from there
	}
	l.offset = views.Window(l.cursor, l.offset, m.bodyH()-1, len(rows))
}

func (l *logTab) view(m *Model, w, h int) string {
	return views.Log(m.st, m.state, views.LogOptions{Width: w, Height: h, Filter: l.filter, Rows: l.rows(m),
		Cursor: l.cursor, Offset: l.offset, Sort: views.LogSorts[l.sort], Reverse: l.reverse, Following: l.following})
}

func (l *logTab) explain(m *Model) *views.Explanation { return nil }

func (l *logTab) click(m *Model, x, y int) {
	if y >= 1 {
		if i := l.offset + y - 1; i < len(l.rows(m)) {
			l.cursor, l.following = i, false
		}
	}
}

func (l *logTab) escape(m *Model)            { l.filter = "" }
func (l *logTab) filterRef(m *Model) *string { return &l.filter }
func (l *logTab) sorts() bool                { return true }
func (l *logTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Filter}
	if l.filter != "" {
		bs = append(bs, k.NextMatch)
	}
	return append(bs, k.Bottom, k.Sort, k.Reverse)
}
