package tui

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// Copying (y) and the mouse (M). y puts the selection's most useful text on the clipboard with
// OSC 52, which the terminal handles, so it works over ssh: a process's pid, a crash group's
// core (or its site), the detail's stack, a thread's tid, a frame's place in the source, an
// event's line. The mouse is reported in cell-motion mode (buttons and drags, not every
// move), so a shift-drag still selects text in the terminal; M turns the reporting off, and a
// plain drag selects.

// copier is a tab that has something to copy: what names it for the message, text is it.
type copier interface {
	copyText(m *Model) (what, text string)
}

// maxCopy bounds what y sends: terminals drop longer OSC 52 payloads (xterm's default limit
// is about 100 kB of base64).
const maxCopy = 64 << 10

// copySelection is y.
func (m *Model) copySelection() tea.Cmd {
	c, ok := m.active().(copier)
	if !ok {
		m.message = "nothing to copy on this tab"
		return nil
	}
	what, text := c.copyText(m)
	if text == "" {
		m.message = "nothing selected to copy"
		return nil
	}
	text = sanitizeCopy(text)
	if len(text) > maxCopy {
		text = text[:maxCopy]
	}
	if strings.HasPrefix(os.Getenv("TERM"), "linux") {
		// The Linux console has no clipboard and no OSC 52: the text is at least shown.
		m.message = fmt.Sprintf("the Linux console has no clipboard: %s is %s", what, firstLine(text))
		return nil
	}
	m.message = fmt.Sprintf("copied %s to the clipboard (OSC 52): %s", what, firstLine(text))
	if os.Getenv("TMUX") != "" {
		m.message += " · in tmux: set -g set-clipboard on"
	}
	w := m.term
	if w == nil {
		return nil
	}
	seq := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\a"
	// One write: the terminal takes it whole, between two of Bubble Tea's frames.
	return func() tea.Msg {
		io.WriteString(w, seq)
		return nil
	}
}

// sanitizeCopy keeps what the clipboard may hold: every line sanitised (the text comes from
// events, untrusted), the newlines between them kept.
func sanitizeCopy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = sessions.Sanitize(l)
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	l, rest, more := strings.Cut(s, "\n")
	if more {
		return l + fmt.Sprintf(" … (+%d lines)", strings.Count(rest, "\n")+1)
	}
	return l
}

// toggleMouse is M.
func (m *Model) toggleMouse() tea.Cmd {
	m.mouseOff = !m.mouseOff
	if m.mouseOff {
		m.message = "mouse off: a drag selects text in the terminal · M turns it back on"
		return tea.DisableMouse
	}
	m.message = "mouse on: wheel scrolls, click selects (shift-drag still selects text) · M turns it off"
	return tea.EnableMouseCellMotion
}

// mouseBack is what the program runs after a program it ran on the terminal (gdb) exits:
// Bubble Tea gives the terminal back without the mouse it took away.
func (m *Model) mouseBack() tea.Cmd {
	if m.mouseOff {
		return nil
	}
	return tea.EnableMouseCellMotion
}

func (p *procsTab) copyText(m *Model) (string, string) {
	if p.det != nil && p.det.d != nil {
		return "the command line", strings.Join(p.det.d.Cmdline, " ")
	}
	rows := p.rows(m)
	if c := clamp(p.cursor, len(rows)); c >= 0 {
		pid := strconv.Itoa(rows[c].Proc.PID)
		return "pid " + pid, pid
	}
	return "", ""
}

func (c *crashesTab) copyText(m *Model) (string, string) {
	if c.handled {
		sites := c.listedSites(m)
		if i := clamp(c.hcursor, len(sites)); i >= 0 {
			h := &sites[i]
			return "the site", sessions.ModuleBase(h.Module) + "+" + h.Offset.String()
		}
		return "", ""
	}
	g := c.group(m)
	switch {
	case g == nil:
		return "", ""
	case c.detail:
		stack := g.Stack
		if r := views.RepresentativeCrash(g); r != nil && len(r.Crash.Stack) > 0 {
			stack = r.Crash.Stack
		}
		if len(stack) > 0 {
			return fmt.Sprintf("group %d's stack", g.ID), stackText(stack)
		}
	case g.Core != nil:
		return fmt.Sprintf("group %d's core", g.ID), *g.Core
	}
	if g.AbortMessage != "" {
		return fmt.Sprintf("group %d's abort message", g.ID), strings.TrimSpace(g.AbortMessage)
	}
	return fmt.Sprintf("group %d's site", g.ID), sessions.ModuleBase(g.Module) + "+" + g.Offset.String()
}

// stackText is a stack as gdb's bt writes it, one frame a line.
func stackText(stack []sessions.Frame) string {
	var b strings.Builder
	for i, f := range stack {
		fn := f.Function
		if fn == "" {
			fn = "??"
		}
		fmt.Fprintf(&b, "#%d  %s in %s", i, f.PC, fn)
		if f.File != "" {
			fmt.Fprintf(&b, " at %s:%d", f.File, f.Line)
		}
		fmt.Fprintf(&b, " (%s+%s)\n", f.Module, f.Offset)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (t *threadsTab) copyText(m *Model) (string, string) {
	ts := t.rows(m)
	if c := clamp(t.cursor, len(ts)); c >= 0 {
		tid := strconv.Itoa(ts[c].TID)
		return "tid " + tid, tid
	}
	return "", ""
}

func (s *stacksTab) copyText(m *Model) (string, string) {
	lines := s.lines()
	c := clamp(s.cursor, len(lines))
	if c < 0 {
		return "", ""
	}
	f := lines[c].Node.Frame
	where := sessions.ModuleBase(f.Module) + "+" + f.Offset.String()
	if f.File != "" {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	if f.Function != "" {
		return "the frame", f.Function + " " + where
	}
	return "the frame", where
}

func (l *logTab) copyText(m *Model) (string, string) {
	rows := l.rows(m)
	if c := clamp(l.cursor, len(rows)); c >= 0 {
		return "the event", rows[c].Line
	}
	return "", ""
}

func (x *matrixTab) copyText(m *Model) (string, string) {
	units := x.units(m)
	if len(units) == 0 {
		return "", ""
	}
	r, c := clamp(x.row, len(units)), clamp(x.col, len(units))
	if cell := x.ix.PairCell(units[r], units[c]); cell != nil {
		return "the cell", views.CellText(cell)
	}
	return "", ""
}
