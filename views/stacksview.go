package views

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/crashtui/crashtui/sessions"
)

// StacksOptions lay out the Stacks tab.
type StacksOptions struct {
	Width, Height int
	Cursor        int
	Collapsed     map[string]bool
	// Detail, when not nil, replaces the classes pane: the selected node's ranks, source and
	// disassembly (the tui reads the files: views do no I/O).
	Detail []string
	// Status is the sampling line ("auto every 5s · last 12:00:01").
	Status string
	// Live says S can take a sample.
	Live bool
	// Filter, Sort and Reverse choose and order the tree's lines (StackLinesOf).
	Filter  string
	Sort    string
	Reverse bool
}

func (o StacksOptions) query() StackQuery {
	return StackQuery{Collapsed: o.Collapsed, Filter: o.Filter, Sort: o.Sort, Reverse: o.Reverse}
}

// progress colours a progress word; the word itself carries the meaning (NO_COLOR).
func (st *Styles) progress(p string, text string) string { return st.progressStyle(p).Render(text) }

func (st *Styles) progressStyle(p string) lipgloss.Style {
	switch p {
	case sessions.Stuck:
		return st.Bad
	case sessions.Spinning:
		return st.Warn
	case sessions.Moving:
		return st.Good
	case sessions.Mixed:
		return st.Warn
	}
	return st.Dim
}

var sparkGlyphs = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws counts, one glyph each, scaled to the largest.
func Sparkline(counts []int) string {
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	var b strings.Builder
	for _, c := range counts {
		switch {
		case c == 0:
			b.WriteRune(' ')
		case top <= 1:
			b.WriteRune(sparkGlyphs[len(sparkGlyphs)-1])
		default:
			b.WriteRune(sparkGlyphs[(c*(len(sparkGlyphs)-1)+top-1)/top])
		}
	}
	return b.String()
}

// StackNodeClass is the class a node is coloured and explained by: its biggest.
func StackNodeClass(st sessions.Stacks, n *sessions.StackNode) *sessions.StackClass {
	for i := range st.Classes { // biggest first
		for _, c := range n.Classes {
			if st.Classes[i].Class == c {
				return &st.Classes[i]
			}
		}
	}
	return nil
}

// Stacks renders the Stacks tab: the merged tree (collapsible), then the classes with their
// sparklines, or the selected node's detail.
func Stacks(st *Styles, merged sessions.Stacks, o StacksOptions) string {
	if merged.Tree == nil || len(merged.Classes) == 0 {
		msg := "no stack samples yet"
		if o.Live {
			msg += " — S samples every thread now (one process held at a time)"
		} else {
			msg += " (this session has none)"
		}
		return fit(st.Dim.Render(msg), o.Width, o.Height)
	}
	lines := StackLinesOf(merged.Tree, o.query())
	cur := clampI(o.Cursor, len(lines))
	listH := stacksListH(o.Height, o.Detail != nil)
	paneH := o.Height - listH
	nthreads := 0
	for _, c := range merged.Classes {
		nthreads += c.Count
	}
	var b strings.Builder
	status := fmt.Sprintf("%s · %s · %s · %s", Count(len(merged.Ranks), "process", "processes"),
		threads(nthreads), Count(merged.Samples, "sample", "samples"), Count(len(merged.Classes), "class", "classes"))
	if o.Filter != "" {
		n := 0
		for _, l := range lines {
			if !l.Context {
				n++
			}
		}
		status = fmt.Sprintf("%s · filter: %s · %s", Count(n, "frame matches", "frames match"), sessions.Sanitize(o.Filter), status)
	}
	if o.Status != "" {
		status += " · " + o.Status
	}
	b.WriteString(st.Dim.Render(cut(status, o.Width)) + "\n")
	rankW := 6 // the ranks as wide as the widest set (RANKS▲ at least), up to a third of the screen
	for _, l := range lines {
		rankW = max(rankW, ansi.StringWidth(sessions.Sanitize(l.Node.Ranks)))
	}
	rankW = min(rankW, max(o.Width/3, 12))
	// The frames as wide as the widest (with its tree glyphs), the rest of the row after it.
	labelW := 20
	for _, l := range lines {
		labelW = max(labelW, ansi.StringWidth(l.Prefix)+2+ansi.StringWidth(sessions.Sanitize(l.Node.Label)))
	}
	labelW = max(12, min(labelW, o.Width-rankW-23))
	// Every row starts with a space: the NO_COLOR cursor marker takes its place.
	hs := []string{"FRAME (by " + merged.Frames + ")", "THR", "RANKS", "STATE"}
	if c, ok := stackSortColumn[o.Sort]; ok {
		hs[c] += SortMark(o.Sort, o.Reverse)
	}
	head := fmt.Sprintf(" %s %5s  %s %-7s %s", pad(hs[0], labelW), hs[1], pad(hs[2], rankW), hs[3], "CLASS")
	b.WriteString(st.Head.Render(cut(head, o.Width)) + "\n")
	h := listH - 2
	off := window(cur, 0, h, len(lines))
	for i := off; i < len(lines) && i < off+h; i++ {
		l := lines[i]
		n := l.Node
		mark := ""
		if len(n.Children) > 0 && o.Collapsed[l.Path] {
			mark = "▸ "
		}
		class := ""
		if len(n.Classes) == 1 {
			class = "#" + strconv.Itoa(n.Classes[0])
		} else {
			class = strconv.Itoa(len(n.Classes)) + " cls"
		}
		label := l.Prefix + mark + sessions.Sanitize(n.Label)
		line := fmt.Sprintf(" %s %5d  %s %s %s", pad(label, labelW), n.Count, pad(sessions.Sanitize(n.Ranks), rankW),
			pad(ProgressText(n.Progress), 7), class)
		switch {
		case o.Filter != "" && l.Context:
			line = st.listRow(line, "", st.Dim, i == cur, o.Width)
		case o.Filter != "" || i == cur:
			line = st.listRow(line, o.Filter, st.progressStyle(n.Progress), i == cur, o.Width)
		default:
			line = st.progress(n.Progress, cut(line, o.Width))
		}
		b.WriteString(line + "\n")
	}
	if len(lines) > h {
		// A position indicator for a long tree.
		b.WriteString(st.Dim.Render(fmt.Sprintf("%d/%d", cur+1, len(lines))))
	}
	list := fit(strings.TrimSuffix(b.String(), "\n"), o.Width, listH)
	var pane []string
	pane = append(pane, st.Dim.Render(strings.Repeat("─", max(0, o.Width))))
	if o.Detail != nil {
		pane = append(pane, o.Detail...)
	} else {
		setW := 4
		for _, c := range merged.Classes {
			setW = max(setW, ansi.StringWidth(sessions.Sanitize(c.Ranks))+2)
		}
		setW = min(setW, max(o.Width/4, 10))
		for _, c := range merged.Classes {
			spark := Sparkline(c.Spark)
			line := fmt.Sprintf("#%-3d %-11s %s %s %s  %s", c.Class, threads(c.Count), pad("["+sessions.Sanitize(c.Ranks)+"]", setW),
				st.progress(c.Progress, pad(ProgressText(c.Progress), 7)), spark, ClassPath(c, merged.Frames))
			if c.Syscall != "" {
				line += " · in " + sessions.Sanitize(c.Syscall)
			}
			pane = append(pane, cut(line, o.Width))
		}
		for _, s := range StacksSummary(merged) {
			pane = append(pane, st.Info.Render(cut(s, o.Width)))
		}
	}
	return list + "\n" + fit(strings.Join(pane, "\n"), o.Width, paneH)
}

// StackNodeDetail is the detail of one node without its source and code (the tui adds
// those): the frame, its threads and ranks, its classes.
func StackNodeDetail(st *Styles, merged sessions.Stacks, n *sessions.StackNode, width int) []string {
	f := n.Frame
	where := sessions.ModuleBase(f.Module) + "+" + f.Offset.String()
	if f.File != "" {
		where += " · " + f.File + ":" + strconv.Itoa(f.Line)
	}
	out := []string{st.Bold.Render(cut(sessions.Sanitize(orUnknown(f.Function)+"  "+where), width))}
	pids := make([]string, 0, len(n.PIDs))
	for _, p := range n.PIDs {
		pids = append(pids, strconv.Itoa(p))
	}
	out = append(out, strings.Split(wrap(fmt.Sprintf("%s of %s (pids %s), %s", threads(n.Count), ranksWord(n.Ranks),
		strings.Join(pids, ","), ProgressText(n.Progress)), width), "\n")...)
	var cs []string
	for _, c := range n.Classes {
		cs = append(cs, "#"+strconv.Itoa(c))
	}
	out = append(out, st.Dim.Render(cut("classes through it: "+strings.Join(cs, " ")+" · e explains · esc back", width)))
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "??"
	}
	return s
}
