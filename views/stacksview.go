package views

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"

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

// StackNodeClass is the class a node is coloured and explained by: its first (the classes
// are in order: the ranks' main threads, the biggest, first), of threads or goroutines.
func StackNodeClass(st sessions.Stacks, n *sessions.StackNode) *sessions.StackClass {
	lists := [][]sessions.StackClass{st.Classes}
	if st.Goroutines != nil {
		lists = append(lists, st.Goroutines.Classes)
	}
	for _, l := range lists {
		for i := range l {
			if slices.Contains(n.Classes, l[i].Class) {
				return &l[i]
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
	lines := StackLinesOf(merged, o.query())
	idx := indexOf(merged)
	cur := clampI(o.Cursor, len(lines))
	listH := stacksListH(o.Height, o.Detail != nil)
	paneH := o.Height - listH
	nthreads := 0
	for _, c := range merged.Classes {
		nthreads += c.Count
	}
	var b strings.Builder
	status := fmt.Sprintf("%s · %s", procsWord(merged), threads(nthreads))
	if g := merged.Goroutines; g != nil {
		status += " · " + Count(g.Count, "goroutine", "goroutines")
	}
	status += fmt.Sprintf(" · %s · %s", Count(merged.Samples, "sample", "samples"), Count(len(idx), "class", "classes"))
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
	// The ranks and the pids without a rank in columns of their own, each as wide as its
	// widest set (its heading at least), up to a quarter of the screen.
	rankW, pidW := stackColumns(lines, max(o.Width/4, 10))
	if rankW > 0 {
		rankW = max(rankW, 6)
	}
	if pidW > 0 {
		pidW = max(pidW, 5)
	}
	// CLASS takes 8 columns, and room for a goroutine's wait ("#12 sync.Mutex.Lock").
	classW := 8
	for _, l := range lines {
		if l.Goroutines && l.Kind == FrameLine && len(l.Node.Children) == 0 {
			classW = max(classW, min(16, 5+cellWidth(idx.wait(l.Node))))
		}
	}
	fixed := 1 + 1 + 5 + 2 + 8 + 1 + 4 + 2 + classW // the row's other columns
	if rankW > 0 {
		fixed += rankW + 2
	}
	if pidW > 0 {
		fixed += pidW + 2
	}
	// The frames as wide as the widest (with its tree glyphs), the rest of the row after it.
	labelW := 20
	for _, l := range lines {
		labelW = max(labelW, cellWidth(lineLabel(merged, idx, l, true))+2)
	}
	labelW = max(12, min(labelW, o.Width-fixed))
	// Every row starts with a space: the NO_COLOR cursor marker takes its place.
	row := func(label, count, ranks, pids, state, cpu, class string) string {
		line := " " + pad(label, labelW) + " " + fmt.Sprintf("%5s", count)
		if rankW > 0 {
			line += "  " + pad(ranks, rankW)
		}
		if pidW > 0 {
			line += "  " + pad(pids, pidW)
		}
		return line + "  " + pad(state, 8) + " " + fmt.Sprintf("%4s", cpu) + "  " + class
	}
	hs := []string{"FRAME (by " + merged.Frames + ")", "THR", "RANKS", "PIDS", "STATE"}
	mark := map[string]int{"frame": 0, "threads": 1, "ranks": 2, "state": 4}
	if rankW == 0 {
		mark["ranks"] = 3
	}
	if c, ok := mark[o.Sort]; ok {
		hs[c] += SortMark(o.Sort, o.Reverse)
	}
	b.WriteString(st.Head.Render(cut(row(hs[0], hs[1], hs[2], hs[3], hs[4], "CPU", "CLASS"), o.Width)) + "\n")
	h := listH - 2
	off := window(cur, 0, h, len(lines))
	q := o.query()
	for i := off; i < len(lines) && i < off+h; i++ {
		l := lines[i]
		n := l.Node
		open := !q.folded(l.Path, l.Kind)
		label := lineLabel(merged, idx, l, open)
		if l.Kind == FrameLine && len(n.Children) > 0 && o.Collapsed[l.Path] {
			label = l.Prefix + "▸ " + sessions.Sanitize(n.Label)
		}
		class := ""
		switch {
		case l.Kind == AsideLine && open:
			class = "← folds"
		case l.Kind == AsideLine:
			class = "→ opens"
		case l.Kind == GoroutinesLine:
		case len(n.Classes) == 1:
			class = "#" + strconv.Itoa(n.Classes[0])
		default:
			class = strconv.Itoa(len(n.Classes)) + " cls"
		}
		if l.Goroutines && l.Kind == FrameLine && (len(n.Children) == 0 || o.Collapsed[l.Path]) {
			if w := idx.wait(n); w != "" {
				class += " " + w
			}
		}
		line := row(label, strconv.Itoa(n.Count), sessions.Sanitize(n.Ranks), sessions.Sanitize(n.Unranked),
			ProgressText(n.Progress), cpuCell(n.CPUShare, n.Progress, l.Goroutines), class)
		base := st.progressStyle(n.Progress)
		switch l.Kind {
		case AsideLine:
			base = st.Dim
		case GoroutinesLine:
			base = st.Bold
		}
		switch {
		case o.Filter != "" && l.Context:
			line = st.listRow(line, "", st.Dim, i == cur, o.Width)
		case o.Filter != "" || i == cur:
			line = st.listRow(line, o.Filter, base, i == cur, o.Width)
		default:
			line = base.Render(cut(line, o.Width))
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
		var all []sessions.StackClass
		all = append(all, merged.Classes...)
		if g := merged.Goroutines; g != nil {
			all = append(all, g.Classes...)
		}
		setW := 4
		for _, c := range all {
			setW = max(setW, cellWidth(classWho(c)))
		}
		setW = min(setW, max(o.Width/4, 10))
		classRow := func(c sessions.StackClass) string {
			what := threads(c.Count)
			if c.Goroutine() {
				what = Count(c.Count, "goroutine", "goroutines")
			}
			head := fmt.Sprintf("#%-3d %-13s %s %s ", c.Class, what, pad(classWho(c), setW),
				st.progress(c.Progress, pad(ProgressText(c.Progress), 8)))
			if c.Goroutine() {
				// The wait before the path: at a glance, what they wait for.
				return head + fmt.Sprintf("%4s %s  ", "-", Sparkline(c.Spark)) + waitCell(c.Status, c.WaitReason) + " · " + ClassPath(c, merged.Frames)
			}
			tail := ""
			if c.Syscall != "" {
				tail = " · in " + sessions.Sanitize(c.Syscall)
			}
			return head + fmt.Sprintf("%4s %s  %s%s", cpuCell(c.CPUShare, c.Progress, false), Sparkline(c.Spark), ClassPath(c, merged.Frames), tail)
		}
		// The program's own classes, threads then goroutines, the sentences, then the
		// classes put aside.
		for _, c := range all {
			if c.Role == "" {
				pane = append(pane, cut(classRow(c), o.Width))
			}
		}
		for _, s := range StacksSummary(merged) {
			pane = append(pane, st.Info.Render(cut(s, o.Width)))
		}
		for _, c := range all {
			if c.Role != "" {
				pane = append(pane, st.Dim.Render(cut(classRow(c), o.Width)))
			}
		}
	}
	return list + "\n" + fit(strings.Join(pane, "\n"), o.Width, paneH)
}

// StackNodeDetail is the detail of one line without its source and code (the tui adds
// those): the frame, its threads (or goroutines) and ranks, its classes.
func StackNodeDetail(st *Styles, merged sessions.Stacks, n *sessions.StackNode, width int) []string {
	idx := indexOf(merged)
	unit := threads
	if len(n.Classes) > 0 && idx[n.Classes[0]] != nil && idx[n.Classes[0]].Goroutine() {
		unit = func(k int) string { return Count(k, "goroutine", "goroutines") }
	}
	f := n.Frame
	var out []string
	if n.Label == "" && f == (sessions.StackFrame{}) {
		// The folded line or the goroutines' heading: what is under it.
		what := "the goroutines of the job's Go processes"
		if n.Role != "" {
			what = "put aside: helpers run no code of the program's own, the launcher waits for the ranks (→ unfolds, ← folds)"
		}
		out = append(out, st.Bold.Render(cut(unit(n.Count)+" · "+what, width)))
	} else {
		where := sessions.ModuleBase(f.Module) + "+" + f.Offset.String()
		if f.File != "" {
			where += " · " + f.File + ":" + strconv.Itoa(f.Line)
		}
		out = append(out, st.Bold.Render(cut(sessions.Sanitize(orUnknown(f.Function)+"  "+where), width)))
	}
	pids := make([]string, 0, len(n.PIDs))
	for _, p := range n.PIDs {
		pids = append(pids, strconv.Itoa(p))
	}
	state := ProgressText(n.Progress)
	if c := cpuCell(n.CPUShare, n.Progress, unit(2) != threads(2)); c != "-" {
		state += ", " + c + " of a CPU each"
	}
	out = append(out, strings.Split(wrap(fmt.Sprintf("%s of %s (pids %s), %s", unit(n.Count), whoWord(n.Ranks, n.Unranked),
		strings.Join(pids, ","), state), width), "\n")...)
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
