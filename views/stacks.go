package views

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// StoryStat is the story behind the Stacks tab.
const StoryStat = "LLNL's Stack Trace Analysis Tool (STAT) answers \"where is every rank now?\" for jobs of a million tasks: " +
	"it samples every task's stack, merges them into one call-path prefix tree (2D) and over time (3D), and groups " +
	"the tasks into equivalence classes, so a hang shows as a few classes and a lone odd rank. It needs LaunchMON, " +
	"MRNet and Dyninst; crashtui already holds every thread of the job."

// StackLine is one row of the rendered tree: its node, depth and the prefix glyphs.
type StackLine struct {
	Node   *sessions.StackNode
	Depth  int
	Prefix string // "│  ├─ "
	// Path is the node's position as the labels from the outermost frame, joined by
	// PathSep: a stable id for collapsing and for the cursor, which a new sample that
	// reorders the branches does not change.
	Path string
	// Context marks a frame shown only because a frame under it matches the filter.
	Context bool
}

// StackQuery chooses and orders the tree's lines: the folded paths, a filter on the frames'
// rows (a matching frame shows with its callers, dim), and the order of the branches.
type StackQuery struct {
	Collapsed map[string]bool
	Filter    string
	Sort      string // one of StackSorts
	Reverse   bool
}

// StackSorts are the orders of each frame's callees (s cycles, r reverses): threads is the
// merge's own, the busiest branch first.
var StackSorts = []string{"threads", "frame", "ranks", "state"}

// stackSortColumn is the column of the Stacks list each sort is marked on.
var stackSortColumn = map[string]int{"frame": 0, "threads": 1, "ranks": 2, "state": 3}

// stackRowText is what the filter matches in a frame's row.
func stackRowText(n *sessions.StackNode) string {
	return sessions.Sanitize(n.Label) + " " + sessions.Sanitize(n.Ranks) + " " + ProgressText(n.Progress)
}

// StackLinesOf flattens the tree as q asks.
func StackLinesOf(root *sessions.StackNode, q StackQuery) []StackLine {
	if root == nil {
		return nil
	}
	if q.Filter == "" && (q.Sort == "" || q.Sort == "threads") && !q.Reverse {
		return StackLines(root, q.Collapsed)
	}
	// Which nodes show: those that match and their callers (a filter shows every match,
	// folded or not).
	show := map[*sessions.StackNode]bool{}
	match := map[*sessions.StackNode]bool{}
	var mark func(n *sessions.StackNode) bool
	mark = func(n *sessions.StackNode) bool {
		m := Matches(stackRowText(n), q.Filter)
		any := m
		for _, c := range n.Children {
			if mark(c) {
				any = true
			}
		}
		match[n], show[n] = m, any
		return any
	}
	for _, c := range root.Children {
		mark(c)
	}
	less := stackLess(q.Sort)
	order := func(n *sessions.StackNode) []*sessions.StackNode {
		kids := make([]*sessions.StackNode, 0, len(n.Children))
		for _, c := range n.Children {
			if q.Filter == "" || show[c] {
				kids = append(kids, c)
			}
		}
		if less != nil {
			sort.SliceStable(kids, func(i, j int) bool { return less(kids[i], kids[j]) })
		}
		if q.Reverse {
			if less == nil {
				slices.Reverse(kids)
			} else {
				sort.SliceStable(kids, func(i, j int) bool { return less(kids[j], kids[i]) })
			}
		}
		return kids
	}
	// Paths come from the merge's order of the children (walkChildren), whatever is shown.
	ids := map[*sessions.StackNode]string{}
	var name func(n *sessions.StackNode, path string)
	name = func(n *sessions.StackNode, path string) {
		walkChildren(n, 0, "", path, func(c *sessions.StackNode, _ int, _, p string, _ bool) {
			ids[c] = p
			name(c, p+PathSep)
		})
	}
	name(root, "")
	var out []StackLine
	var walk func(n *sessions.StackNode, depth int, prefix string, last bool)
	walk = func(n *sessions.StackNode, depth int, prefix string, last bool) {
		glyph, next := "", prefix
		if depth > 0 {
			if last {
				glyph, next = prefix+"└─ ", prefix+"   "
			} else {
				glyph, next = prefix+"├─ ", prefix+"│  "
			}
		}
		path := ids[n]
		out = append(out, StackLine{Node: n, Depth: depth, Prefix: glyph, Path: path, Context: q.Filter != "" && !match[n]})
		if q.Filter == "" && q.Collapsed[path] {
			return
		}
		kids := order(n)
		for i, c := range kids {
			walk(c, depth+1, next, i == len(kids)-1)
		}
	}
	tops := order(root)
	for i, c := range tops {
		walk(c, 0, "", i == len(tops)-1)
	}
	return out
}

// stackLess orders two callees for a sort; nil keeps the merge's order.
func stackLess(by string) func(a, b *sessions.StackNode) bool {
	switch by {
	case "frame":
		return func(a, b *sessions.StackNode) bool { return strings.ToLower(a.Label) < strings.ToLower(b.Label) }
	case "ranks":
		return func(a, b *sessions.StackNode) bool { return firstPID(a) < firstPID(b) }
	case "state":
		rank := map[string]int{sessions.Stuck: 0, sessions.Spinning: 1, sessions.Mixed: 2, sessions.Moving: 3, sessions.Stopped: 4}
		return func(a, b *sessions.StackNode) bool {
			ra, ok := rank[a.Progress]
			if !ok {
				ra = 5
			}
			rb, ok := rank[b.Progress]
			if !ok {
				rb = 5
			}
			return ra < rb
		}
	}
	return nil
}

// firstPID orders branches by the ranks (and pids) through them: the set's text sorts 10
// before 9, its first number does not.
func firstPID(n *sessions.StackNode) int {
	r := sessions.Sanitize(n.Ranks)
	r = strings.TrimPrefix(r, "pid ")
	v, i := 0, 0
	for i < len(r) && r[i] >= '0' && r[i] <= '9' {
		v = v*10 + int(r[i]-'0')
		i++
	}
	if i == 0 {
		return 1 << 30
	}
	return v
}

// PathSep joins the labels of a StackLine's Path (no label contains it: Sanitize drops
// control characters).
const PathSep = "\x1f"

// StackLines flattens the tree for display, skipping the children of collapsed paths.
func StackLines(root *sessions.StackNode, collapsed map[string]bool) []StackLine {
	var out []StackLine
	if root == nil {
		return out
	}
	var walk func(n *sessions.StackNode, depth int, prefix, path string, last bool)
	walk = func(n *sessions.StackNode, depth int, prefix, path string, last bool) {
		glyph := ""
		next := prefix
		if depth > 0 {
			if last {
				glyph, next = prefix+"└─ ", prefix+"   "
			} else {
				glyph, next = prefix+"├─ ", prefix+"│  "
			}
		}
		out = append(out, StackLine{Node: n, Depth: depth, Prefix: glyph, Path: path})
		if collapsed[path] {
			return
		}
		walkChildren(n, depth+1, next, path+PathSep, walk)
	}
	// The root "/" is not shown: its children are the outermost frames.
	walkChildren(root, 0, "", "", walk)
	return out
}

// walkChildren walks n's children with their paths: a label twice among siblings (two
// frames the merge kept apart) gets its index, so that paths stay unique.
func walkChildren(n *sessions.StackNode, depth int, prefix, path string, walk func(*sessions.StackNode, int, string, string, bool)) {
	seen := map[string]bool{}
	for i, c := range n.Children {
		id := sessions.Sanitize(c.Label)
		if seen[id] {
			id += "#" + strconv.Itoa(i)
		}
		seen[id] = true
		walk(c, depth, prefix, path+id, i == len(n.Children)-1)
	}
}

// classWord is "thread" or "threads".
func threads(n int) string { return Count(n, "thread", "threads") }

// rankLabel is "rank 3" or "pid 412".
func rankLabel(r sessions.Rank, host string, pid int) string {
	if r >= 0 {
		return "rank " + strconv.Itoa(int(r))
	}
	if host != "" {
		return "pid " + sessions.Sanitize(host) + ":" + strconv.Itoa(pid)
	}
	return "pid " + strconv.Itoa(pid)
}

// ClassPath is a class's path in one line, outermost first, with the frames before main
// dropped ("main > barrier > pthread_barrier_wait").
func ClassPath(c sessions.StackClass, frames string) string {
	fs := c.Frames
	for i, f := range fs {
		if f.Function == "main" || f.Function == "main.main" {
			fs = fs[i:]
			break
		}
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, frameLabel(f, frames))
	}
	return strings.Join(parts, " > ")
}

func frameLabel(f sessions.StackFrame, by string) string {
	off := sessions.ModuleBase(f.Module) + "+" + f.Offset.String()
	switch {
	case by == "offset" || f.Function == "":
		return sessions.Sanitize(off)
	case by == "line" && f.File != "":
		return sessions.Sanitize(f.Function + " " + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line))
	}
	return sessions.Sanitize(f.Function)
}

// ProgressText says what a class's or rank's progress means, in a few words.
func ProgressText(p string) string {
	switch p {
	case sessions.Stuck:
		return "stuck"
	case sessions.Spinning:
		return "spinning"
	case sessions.Moving:
		return "moving"
	case sessions.Stopped:
		return "stopped"
	case sessions.Mixed:
		return "mixed"
	}
	return "unknown"
}

// ranksWord is "ranks 1-4", "rank 0" or "pid 412" for a compressed rank set.
func ranksWord(set string) string {
	set = sessions.Sanitize(set)
	switch {
	case strings.HasPrefix(set, "pid "):
		return set
	case strings.ContainsAny(set, ",-"):
		return "ranks " + set
	}
	return "rank " + set
}

// StacksSummary is the sentences under the tree: the lone rank, the slow rank, what the
// classes say about the job.
func StacksSummary(st sessions.Stacks) []string {
	var out []string
	if len(st.Classes) == 0 {
		return []string{"No stack could be read: every thread was gone or unreadable."}
	}
	if st.Samples < 2 {
		out = append(out, "One sample only: take more (--samples 3, or S in the TUI) to tell stuck from moving.")
	}
	for _, l := range st.Lone {
		who := rankLabel(l.Rank, l.Host, l.PID)
		switch {
		case l.Progress == sessions.Stuck && sessions.TimedWait(l.Syscall):
			out = append(out, fmt.Sprintf("%s is the only one in %s under %s; it is sleeping in %s, a timed wait, not blocked on another rank.",
				who, sessions.Sanitize(l.Into), sessions.Sanitize(l.At), sessions.Sanitize(l.Syscall)))
		case st.Culprit != nil && l.PID == st.Culprit.PID && l.Host == st.Culprit.Host && (l.Progress == sessions.Stuck || l.Progress == sessions.Spinning):
			how := "stuck there"
			if l.Progress == sessions.Spinning {
				how = "stays there, spinning (a progress loop polls at full CPU while it waits)"
			}
			out = append(out, fmt.Sprintf("%s is the only one in %s under %s, and it %s while %s wait elsewhere: "+
				"the classic deadlock culprit (look at what it waits for, and who should have sent it).",
				who, sessions.Sanitize(l.Into), sessions.Sanitize(l.At), strings.Replace(how, "stuck there", "is stuck there", 1), othersWord(l.Others)))
		case l.Progress == sessions.Moving:
			out = append(out, fmt.Sprintf("%s is the only one in %s under %s and it is still moving: a slow rank the others may be waiting for.",
				who, sessions.Sanitize(l.Into), sessions.Sanitize(l.At)))
		case l.Progress == sessions.Spinning:
			out = append(out, fmt.Sprintf("%s is the only one in %s under %s, on the same path every time and using CPU: busy there (a busy wait, a livelock, or one long loop) while the others wait.",
				who, sessions.Sanitize(l.Into), sessions.Sanitize(l.At)))
		default:
			out = append(out, fmt.Sprintf("%s is the only one in %s under %s (%s).", who, sessions.Sanitize(l.Into),
				sessions.Sanitize(l.At), ProgressText(l.Progress)))
		}
	}
	if st.Samples >= 2 {
		out = append(out, progressVerdict(st)...)
	}
	return out
}

// progressVerdict is what the processes' progress says about the job: blocked, spinning,
// moving and stopped, with where the spinning and the blocked are.
func progressVerdict(st sessions.Stacks) []string {
	n := map[string]int{}
	for _, r := range st.Ranks {
		switch r.Progress {
		case sessions.Mixed:
			n[sessions.Moving]++ // some thread of it moved
		default:
			n[r.Progress]++
		}
	}
	stuck, spin, moving, stopped, unknown := n[sessions.Stuck], n[sessions.Spinning], n[sessions.Moving], n[sessions.Stopped], n[sessions.Unknown]
	var out []string
	// Where the spinning ones spin and where the blocked ones block: the biggest class of
	// each, by its innermost frame (the cut's, for an MPI call).
	where := func(p string) (string, sessions.StackClass, bool) {
		for _, c := range st.Classes {
			if c.Progress == p && len(c.Frames) > 0 {
				f := c.Frames[len(c.Frames)-1]
				return frameLabel(f, "function"), c, true
			}
		}
		return "", sessions.StackClass{}, false
	}
	switch {
	case stuck > 0 && moving == 0 && spin == 0 && stopped == 0 && unknown == 0:
		out = append(out, fmt.Sprintf("No process moved over %d samples and none used CPU: a hang (a deadlock if they wait on each other), not a slow job.", st.Samples))
	case spin > 0 && moving == 0 && stuck == 0 && unknown == 0:
		out = append(out, fmt.Sprintf("No process left its call path over %d samples, and they use CPU: a livelock or busy wait (or one very long loop), not a deadlock.", st.Samples))
	}
	if spin > 0 {
		if at, c, ok := where(sessions.Spinning); ok {
			out = append(out, fmt.Sprintf("%s spin in %s (same path every sample, %.0f%% of a CPU each): busy, not blocked.",
				Count(spin, "process", "processes"), at, 100*c.CPUShare))
		}
	}
	if stuck > 0 && (spin > 0 || moving > 0) {
		if at, c, ok := where(sessions.Stuck); ok {
			in := ""
			if c.Syscall != "" {
				in = " in " + sessions.Sanitize(c.Syscall)
			}
			out = append(out, fmt.Sprintf("%s blocked in %s%s.", Count(stuck, "process is", "processes are"), at, in))
		}
	}
	if moving > 0 && (stuck > 0 || spin > 0) {
		out = append(out, fmt.Sprintf("%s moving.", Count(moving, "process is", "processes are")))
	}
	if unknown > 0 {
		out = append(out, fmt.Sprintf("%s not read in two samples (a busy thread that did not stop in time on a loaded machine, or one that just started): take more samples to know.",
			Count(unknown, "process was", "processes were")))
	}
	if stopped > 0 {
		out = append(out, fmt.Sprintf("%s stopped by job control (SIGSTOP, Ctrl-Z): not a hang; SIGCONT resumes %s.",
			Count(stopped, "process is", "processes are"), map[bool]string{true: "it", false: "them"}[stopped == 1]))
	}
	return out
}

// ExplainClass is the teaching text of one equivalence class.
func ExplainClass(st sessions.Stacks, c sessions.StackClass) Explanation {
	ex := Explanation{Title: fmt.Sprintf("Class %d: %s on one path (%s)", c.Class, threads(c.Count), ranksWord(c.Ranks)),
		Story: StoryStat}
	path := ClassPath(c, st.Frames)
	in := ""
	if c.Syscall != "" {
		in = ", blocked in " + sessions.Sanitize(c.Syscall)
	}
	since := ""
	if c.Since != nil {
		since = " since " + c.Since.Format(time.TimeOnly)
	}
	switch c.Progress {
	case sessions.Stuck:
		ex.What = fmt.Sprintf("%s of %s sat on the same call path in every sample%s%s, using no CPU: blocked at %s.",
			threads(c.Count), ranksWord(c.Ranks), since, in, path)
	case sessions.Spinning:
		ex.What = fmt.Sprintf("%s of %s sat on the same call path in every sample%s but used %.0f%% of a CPU each: spinning (a busy wait, a livelock, or one long loop) at %s.",
			threads(c.Count), ranksWord(c.Ranks), since, 100*c.CPUShare, path)
	case sessions.Stopped:
		ex.What = fmt.Sprintf("%s of %s are stopped by job control (SIGSTOP, Ctrl-Z) at %s: not a hang; SIGCONT resumes them.", threads(c.Count), ranksWord(c.Ranks), path)
	case sessions.Moving:
		ex.What = fmt.Sprintf("%s of %s on %s, and the stack changed between samples: progressing.", threads(c.Count), ranksWord(c.Ranks), path)
	case sessions.Mixed:
		ex.What = fmt.Sprintf("%s of %s on %s now; some were on the same stack every time, some moved.", threads(c.Count), ranksWord(c.Ranks), path)
	default:
		ex.What = fmt.Sprintf("%s of %s on %s%s (one sample: stuck or moving needs two).", threads(c.Count), ranksWord(c.Ranks), path, in)
	}
	if c.Partial {
		ex.What += " Some of its threads were read from /proc without stopping them (interrupting a blocked epoll_wait, semop or sigtimedwait would make it fail with EINTR), so their stacks may be partial."
	}
	ex.Rule = "Threads whose call paths are the same, frame by frame from the root, form one equivalence class. " +
		"A deadlock shows as a few stuck classes and often one lone rank on a branch of its own (it waits for something nobody will send); " +
		"a livelock as threads that use CPU but keep the same stack; a slow rank as the one moving class while the others wait in a collective."
	ex.Kernel = "crashtui stops one process at a time with PTRACE_INTERRUPT (a blocked call is restarted on resume), reads the registers " +
		"and unwinds with the module's CFI (.eh_frame / .debug_frame), falling back to frame pointers; frames are module + link-time " +
		"offset, named from the symbol table and DWARF when present."
	switch {
	case (c.Progress == sessions.Stuck || c.Progress == sessions.Spinning) && st.Culprit != nil && st.Culprit.Class == c.Class:
		ex.Fix = "attach a debugger to this one process (D) and look at what it waits for and who should have sent it; the others are probably waiting for it."
	case c.Progress == sessions.Stuck:
		ex.Fix = "compare with the other classes: if they wait for each other it is a deadlock; the lone rank, if any, is where to look first. Take more samples to be sure."
	case c.Progress == sessions.Spinning:
		ex.Fix = "look at what the loop waits for (a flag, a lock, an MPI progress poll): a busy wait on something that never comes is a hang that burns CPU; profile it (perf top -p PID) to see the loop."
	case c.Progress == sessions.Stopped:
		ex.Fix = "kill -CONT the processes (or fg in their shell) and sample again."
	case c.Progress == sessions.Moving:
		ex.Fix = "if the others are waiting in a collective, this is the slow rank: profile it, or check its input is not larger than the others'."
	default:
		ex.Fix = "take more samples (S) to tell stuck from moving."
	}
	return ex
}

// StacksText is crashtui stacks' text report: the tree, the classes and the summary
// sentences. width 0 means no limit.
func StacksText(st sessions.Stacks, width int) string {
	var b strings.Builder
	procs := len(st.Ranks)
	nthreads := 0
	for _, c := range st.Classes {
		nthreads += c.Count
	}
	fmt.Fprintf(&b, "%s, %s, %s (frames by %s", Count(procs, "process", "processes"), threads(nthreads),
		Count(st.Samples, "sample", "samples"), st.Frames)
	if st.Cut != "" {
		fmt.Fprintf(&b, ", cut under %s", sessions.Sanitize(st.Cut))
	}
	b.WriteString(")\n\n")
	lines := StackLines(st.Tree, nil)
	labelW := 0
	for _, l := range lines {
		labelW = max(labelW, len([]rune(l.Prefix))+len([]rune(sessions.Sanitize(l.Node.Label))))
	}
	labelW = min(labelW, 60)
	for _, l := range lines {
		label := l.Prefix + sessions.Sanitize(l.Node.Label)
		if r := []rune(label); len(r) > labelW {
			label = string(r[:labelW-1]) + "…"
		}
		fmt.Fprintf(&b, "%-*s %4d  [%s]  %s\n", labelW, label, l.Node.Count,
			sessions.Sanitize(l.Node.Ranks), ProgressText(l.Node.Progress))
	}
	b.WriteString("\nclasses:\n")
	for _, c := range st.Classes {
		in := ""
		if c.Syscall != "" {
			in = "  in " + sessions.Sanitize(c.Syscall)
		}
		fmt.Fprintf(&b, "  %d  %-10s [%s]  %-7s %s%s\n", c.Class, threads(c.Count), ranksWord(c.Ranks),
			ProgressText(c.Progress), ClassPath(c, st.Frames), in)
	}
	if sum := StacksSummary(st); len(sum) > 0 {
		b.WriteString("\n")
		for _, line := range sum {
			b.WriteString(wrap(line, max(width, 100)) + "\n")
		}
	}
	return b.String()
}

// WriteDot writes the tree as Graphviz in the shape STAT's .dot files have: one node per
// frame (label, function, source, line, module, offset) and edges labelled with the count and
// the rank set, so STAT's users can open it with their own tools.
func WriteDot(w io.Writer, st sessions.Stacks) {
	fmt.Fprintln(w, "digraph G {")
	fmt.Fprintln(w, "\tnode [shape=record,style=filled,labeljust=c,height=0.2];")
	id := 0
	q := func(s string) string {
		s = sessions.Sanitize(s)
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	colour := map[string]string{sessions.Stuck: "#e06c75", sessions.Spinning: "#d19a66", sessions.Moving: "#98c379", sessions.Mixed: "#e5c07b", sessions.Stopped: "#61afef"}
	var walk func(n *sessions.StackNode) int
	walk = func(n *sessions.StackNode) int {
		me := id
		id++
		fill := colour[n.Progress]
		if fill == "" {
			fill = "#d0d0d0"
		}
		fmt.Fprintf(w, "\t%d [label=%s,function=%s,source=%s,line=%d,module=%s,offset=%s,fillcolor=%q];\n",
			me, q(n.Label), q(n.Frame.Function), q(n.Frame.File), n.Frame.Line, q(n.Frame.Module),
			q(n.Frame.Offset.String()), fill)
		for _, c := range n.Children {
			child := walk(c)
			fmt.Fprintf(w, "\t%d -> %d [label=%s];\n", me, child, q(fmt.Sprintf("%d:[%s]", c.Count, c.Ranks)))
		}
		return me
	}
	if st.Tree != nil {
		walk(st.Tree)
	}
	fmt.Fprintln(w, "}")
}

// othersWord is "1 other" or "3 others".
func othersWord(n int) string { return Count(n, "other", "others") }
