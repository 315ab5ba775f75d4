package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// stackFrames are the node identities f cycles through.
var stackFrames = []string{"function", "line", "offset"}

// stackWindow is how many of each process's latest samples decide stuck or moving in the
// TUI: with auto-sampling every 5 s, the last 15 seconds.
const stackWindow = 3

// stacksTab is Stacks: the merged call-path tree of the samples, its classes, one frame's
// detail.
type stacksTab struct {
	cursor    int
	collapsed map[string]bool
	detail    bool
	frames    int // index into stackFrames
	every     time.Duration
	auto      bool
	merged    sessions.Stacks
	mergedAt  int // State.SampleEvents when merged was computed, -1: never
	// source is the open detail's source lines and disassembly, read from files by read (the
	// Options' Source) in a command (sourceCmd) that normalize starts when the selected frame
	// changes: never while drawing or in Update, which holds the lock the tracer's events wait
	// on, and a source file on a slow file system must not stall either. sourceOf names it.
	read     func(sessions.StackFrame) sessions.FrameSource
	source   []string
	sourceOf sourceKey
	// keep follows the selected frame (by its path) across samples.
	keep    follow[string]
	filter  string
	sort    int // index into views.StackSorts
	reverse bool
}

func (s *stacksTab) query() views.StackQuery {
	return views.StackQuery{Collapsed: s.collapsed, Filter: s.filter, Sort: views.StackSorts[s.sort], Reverse: s.reverse}
}

type sourceKey struct {
	frame  sessions.StackFrame
	caller bool
}

// refresh re-merges the samples when new ones arrived or the frame identity changed
// (merging is the expensive part; view only draws the result).
func (s *stacksTab) refresh(m *Model) {
	if s.mergedAt == m.state.SampleEvents {
		return
	}
	s.mergedAt = m.state.SampleEvents
	s.merged = m.state.Stacks(sessions.StackOptions{Frames: stackFrames[s.frames], Cut: sessions.DefaultCutRE, Window: stackWindow})
}

func (s *stacksTab) lines() []views.StackLine { return views.StackLinesOf(s.merged, s.query()) }

func (s *stacksTab) opts(m *Model, w, h int) views.StacksOptions {
	o := views.StacksOptions{Width: w, Height: h, Cursor: s.cursor, Collapsed: s.collapsed, Live: m.live(),
		Filter: s.filter, Sort: views.StackSorts[s.sort], Reverse: s.reverse}
	switch {
	case m.player != nil:
	case s.auto:
		o.Status = fmt.Sprintf("auto every %v (a: off)", s.every)
	case m.live():
		o.Status = "S samples · a: auto"
	}
	if last := m.lastSample(); !last.IsZero() {
		if o.Status != "" {
			o.Status += " · "
		}
		o.Status += "last " + last.Format(time.TimeOnly)
	}
	lines := s.lines()
	if c := clamp(s.cursor, len(lines)); c >= 0 && s.detail {
		o.Detail = append(views.StackNodeDetail(m.st, s.merged, lines[c].Node, w), s.source...)
	}
	return o
}

func (s *stacksTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	switch {
	case key.Matches(msg, k.Sample):
		if m.ctrl == nil || m.player != nil {
			m.message = "sampling needs a live session (no tracer in replay or view)"
			return nil
		}
		m.message = "sampling every thread…"
		return m.ctrlCmd("stack sample", m.ctrl.Sample)
	case key.Matches(msg, k.Auto):
		if m.ctrl == nil || m.player != nil {
			m.message = "auto-sampling needs a live session"
			return nil
		}
		if s.every <= 0 {
			s.every = 5 * time.Second
		}
		s.auto = !s.auto
		m.ctrl.AutoSample(s.auto)
		if s.auto {
			m.message = fmt.Sprintf("auto-sampling every %v", s.every)
		} else {
			m.message = "auto-sampling off: S samples"
		}
		return nil
	case key.Matches(msg, k.Debug):
		return m.debugClass()
	case key.Matches(msg, k.Frames):
		s.frames = (s.frames + 1) % len(stackFrames)
		s.mergedAt = -1
		s.collapsed = map[string]bool{}
		s.refresh(m)
		m.message = "frames by " + stackFrames[s.frames]
		return nil
	}
	lines := s.lines()
	c := clamp(s.cursor, len(lines))
	switch {
	case key.Matches(msg, k.Sort):
		s.sort = (s.sort + 1) % len(views.StackSorts)
		m.message = "branches by " + views.StackSorts[s.sort]
		return nil
	case key.Matches(msg, k.Reverse):
		s.reverse = !s.reverse
		return nil
	case m.matchDir(msg) != 0:
		if c >= 0 {
			s.cursor = nextMatch(c, len(lines), m.matchDir(msg), func(i int) bool { return !lines[i].Context })
		}
		return nil
	case c < 0:
	case key.Matches(msg, k.Enter):
		s.detail = !s.detail
	case key.Matches(msg, k.Left):
		if l := lines[c]; len(l.Node.Children) > 0 && !s.collapsed[l.Path] {
			s.collapsed[l.Path] = true
		} else if i := strings.LastIndex(l.Path, views.PathSep); i > 0 {
			// Already collapsed or a leaf: go to its parent, as file trees do.
			for j, p := range lines {
				if p.Path == l.Path[:i] {
					s.cursor = j
				}
			}
		}
		return nil
	case key.Matches(msg, k.Right):
		s.collapsed[lines[c].Path] = false // opened: the line of the threads put aside is folded until then
		return nil
	}
	s.cursor += d
	return nil
}

func (s *stacksTab) normalize(m *Model) {
	s.refresh(m)
	lines := s.lines()
	s.keep.fit(&s.cursor, len(lines), func(i int) string { return lines[i].Path })
	if s.detail && s.cursor >= 0 {
		n := lines[s.cursor].Node
		if k := (sourceKey{n.Frame, len(n.Children) > 0}); k != s.sourceOf || s.source == nil {
			if s.read == nil {
				s.source, s.sourceOf = []string{}, k // nothing to read with: nothing to show
				return
			}
			s.source, s.sourceOf = []string{m.st.Dim.Render("  reading source and code…")}, k
			m.later(sourceCmd(m.st, k, s.read))
		}
	}
}

func (s *stacksTab) view(m *Model, w, h int) string {
	return views.Stacks(m.st, s.merged, s.opts(m, w, h))
}

func (s *stacksTab) explain(m *Model) *views.Explanation {
	lines := s.lines()
	if c := clamp(s.cursor, len(lines)); c >= 0 {
		if cl := views.StackNodeClass(s.merged, lines[c].Node); cl != nil {
			e := views.ExplainClass(s.merged, *cl)
			return &e
		}
	}
	return nil
}

func (s *stacksTab) click(m *Model, x, y int) {
	if i := views.StacksHit(s.opts(m, m.width, m.bodyH()), len(s.lines()), y); i >= 0 {
		s.cursor = i
	}
}

// seekMatch moves the cursor off a row shown only as a match's caller.
func (s *stacksTab) seekMatch(m *Model) {
	lines := s.lines()
	if c := clamp(s.cursor, len(lines)); c >= 0 && lines[c].Context {
		s.cursor = nextMatch(c, len(lines), 1, func(i int) bool { return !lines[i].Context })
	}
}

// escape closes the detail, or clears the filter.
func (s *stacksTab) escape(m *Model) {
	if s.detail {
		s.detail = false
		return
	}
	s.filter = ""
}
func (s *stacksTab) filterRef(m *Model) *string { return &s.filter }
func (s *stacksTab) sorts() bool                { return true }
func (s *stacksTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Enter, k.Explain, k.Frames, k.Filter}
	if s.filter != "" {
		bs = append(bs, k.NextMatch)
	}
	bs = append(bs, k.Sort, k.Reverse)
	if m.live() {
		bs = append(bs, k.Sample, k.Auto, k.Debug)
	}
	return bs
}

func (m *Model) lastSample() time.Time {
	var t time.Time
	for _, l := range m.state.Samples {
		if len(l) > 0 && l[len(l)-1].Time.After(t) {
			t = l[len(l)-1].Time
		}
	}
	return t
}

// sourceMsg is what sourceCmd read for the frame key names, drawn.
type sourceMsg struct {
	key   sourceKey
	lines []string
}

// sourceCmd reads a frame's source and code with read and draws them, off the Update path.
func sourceCmd(st *views.Styles, k sourceKey, read func(sessions.StackFrame) sessions.FrameSource) tea.Cmd {
	return func() tea.Msg { return sourceMsg{k, views.FrameSourceLines(st, k.frame, k.caller, read(k.frame))} }
}
