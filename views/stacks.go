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
	// Kind says whether it is a frame, the line the threads put aside are folded under, or
	// the goroutines' heading.
	Kind LineKind
	// Goroutines marks the lines of the goroutines' tree: their counts are goroutines.
	Goroutines bool
}

// LineKind is what a StackLine is.
type LineKind int

const (
	FrameLine LineKind = iota
	// AsideLine folds the branches of the threads with a role (helpers, the launcher; the
	// runtime's own goroutines) under one line: folded until opened (→).
	AsideLine
	// GoroutinesLine heads the goroutines' tree.
	GoroutinesLine
)

// The path ids of the lines that are no frame (no label contains \x1e: Sanitize drops
// control characters).
const (
	asideID      = "\x1easide"
	goroutinesID = "\x1egoroutines"
)

// StackQuery chooses and orders the tree's lines: the folded paths, a filter on the frames'
// rows (a matching frame shows with its callers, dim), and the order of the branches.
// Collapsed folds a path when true; an AsideLine is folded unless its path is false in it.
type StackQuery struct {
	Collapsed map[string]bool
	Filter    string
	Sort      string // one of StackSorts
	Reverse   bool
}

// folded says whether the line of node n at path is folded.
func (q StackQuery) folded(path string, kind LineKind) bool {
	v, ok := q.Collapsed[path]
	if kind == AsideLine {
		return !ok || v
	}
	return v
}

// StackSorts are the orders of each frame's callees (s cycles, r reverses): threads is the
// merge's own, the busiest branch first.
var StackSorts = []string{"threads", "frame", "ranks", "state"}

// stackRowText is what the filter matches in a frame's row.
func stackRowText(n *sessions.StackNode) string {
	return sessions.Sanitize(n.Label) + " " + sessions.Sanitize(n.Ranks) + " " + sessions.Sanitize(n.Unranked) + " " + ProgressText(n.Progress)
}

// stackForest is what the Stacks list shows, as one tree under a root of its own: the
// branches of the program's own threads (the ranks' main threads first), one line that
// folds those of the threads put aside, and the goroutines' heading with the goroutines'
// branches (and the runtime's own folded) under it.
type stackForest struct {
	root *sessions.StackNode
	kind map[*sessions.StackNode]LineKind // the lines that are no frame
}

func forestOf(st sessions.Stacks) stackForest {
	f := stackForest{root: &sessions.StackNode{}, kind: map[*sessions.StackNode]LineKind{}}
	f.root.Children = f.withAside(st.Tree, st.Aside)
	if g := st.Goroutines; g != nil && g.Tree != nil && len(g.Tree.Children) > 0 {
		head := *g.Tree
		head.Label = ""
		head.Children = f.withAside(g.Tree, g.Aside)
		f.kind[&head] = GoroutinesLine
		f.root.Children = append(f.root.Children, &head)
	}
	return f
}

// withAside are tree's outermost branches of the program's own, then one line with those
// of the threads put aside under it.
func (f stackForest) withAside(tree *sessions.StackNode, a *sessions.Aside) []*sessions.StackNode {
	if tree == nil {
		return nil
	}
	var own, aside []*sessions.StackNode
	for _, c := range tree.Children {
		if c.Role == "" {
			own = append(own, c)
		} else {
			aside = append(aside, c)
		}
	}
	if len(aside) == 0 || a == nil {
		return tree.Children
	}
	n := &sessions.StackNode{Count: a.Count, Ranks: a.Ranks, Unranked: a.Unranked, PIDs: a.PIDs, Progress: a.Progress,
		CPUShare: a.CPUShare, Classes: a.Classes, Role: sessions.RoleHelper, Children: aside}
	if a.Helpers == 0 {
		n.Role = sessions.RoleLauncher
	}
	f.kind[n] = AsideLine
	return append(own, n)
}

// id is the path element of child c of n (its i-th): a label twice among siblings (two
// frames the merge kept apart) gets its index, so that paths stay unique.
func (f stackForest) id(c *sessions.StackNode, i int, seen map[string]bool) string {
	switch f.kind[c] {
	case AsideLine:
		return asideID
	case GoroutinesLine:
		return goroutinesID
	}
	id := sessions.Sanitize(c.Label)
	if seen[id] {
		id += "#" + strconv.Itoa(i)
	}
	seen[id] = true
	return id
}

// StackLinesOf flattens what the Stacks list shows (stackForest) as q asks.
func StackLinesOf(st sessions.Stacks, q StackQuery) []StackLine {
	if st.Tree == nil {
		return nil
	}
	f := forestOf(st)
	// Which nodes show: those that match and their callers (a filter shows every match,
	// folded or not).
	show := map[*sessions.StackNode]bool{}
	match := map[*sessions.StackNode]bool{}
	var mark func(n *sessions.StackNode) bool
	mark = func(n *sessions.StackNode) bool {
		m := f.kind[n] == FrameLine && Matches(stackRowText(n), q.Filter)
		any := m
		for _, c := range n.Children {
			if mark(c) {
				any = true
			}
		}
		match[n], show[n] = m, any
		return any
	}
	if q.Filter != "" {
		for _, c := range f.root.Children {
			mark(c)
		}
	}
	less := stackLess(q.Sort)
	order := func(n *sessions.StackNode) []*sessions.StackNode {
		var kids, fixed []*sessions.StackNode
		for _, c := range n.Children {
			switch {
			case q.Filter != "" && !show[c]:
			case f.kind[c] != FrameLine:
				fixed = append(fixed, c) // the folded line and the goroutines stay last
			default:
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
		return append(kids, fixed...)
	}
	// Paths come from the merge's order of the children, whatever is shown.
	ids := map[*sessions.StackNode]string{}
	var name func(n *sessions.StackNode, path string)
	name = func(n *sessions.StackNode, path string) {
		seen := map[string]bool{}
		for i, c := range n.Children {
			p := path + f.id(c, i, seen)
			ids[c] = p
			name(c, p+PathSep)
		}
	}
	name(f.root, "")
	var out []StackLine
	var walk func(n *sessions.StackNode, depth int, prefix string, last, gor bool)
	walk = func(n *sessions.StackNode, depth int, prefix string, last, gor bool) {
		glyph, next := "", prefix
		if depth > 0 {
			if last {
				glyph, next = prefix+"└─ ", prefix+"   "
			} else {
				glyph, next = prefix+"├─ ", prefix+"│  "
			}
		}
		kind := f.kind[n]
		gor = gor || kind == GoroutinesLine
		path := ids[n]
		out = append(out, StackLine{Node: n, Depth: depth, Prefix: glyph, Path: path, Kind: kind, Goroutines: gor,
			Context: q.Filter != "" && !match[n]})
		if q.Filter == "" && q.folded(path, kind) {
			return
		}
		kids := order(n)
		if kind == GoroutinesLine {
			// The goroutines' branches start at the left edge, as the threads' do.
			depth, next = -1, ""
		}
		for i, c := range kids {
			walk(c, depth+1, next, i == len(kids)-1, gor)
		}
	}
	tops := order(f.root)
	for i, c := range tops {
		walk(c, 0, "", i == len(tops)-1, false)
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

// firstPID orders branches by the ranks (and pids, after every rank) through them: the
// set's text sorts 10 before 9, its first number does not.
func firstPID(n *sessions.StackNode) int {
	r, after := sessions.Sanitize(n.Ranks), 0
	if r == "" {
		r, after = sessions.Sanitize(n.Unranked), 1<<29
		if i := strings.LastIndexByte(r, ':'); i >= 0 && !strings.Contains(r[:i], ",") {
			r = r[i+1:] // host:pid
		}
	}
	r = strings.TrimPrefix(r, "pid ") // a recording from before the two sets were apart
	v, i := 0, 0
	for i < len(r) && r[i] >= '0' && r[i] <= '9' {
		v = v*10 + int(r[i]-'0')
		i++
	}
	if i == 0 {
		return 1 << 30
	}
	return after + v
}

// PathSep joins the labels of a StackLine's Path (no label contains it: Sanitize drops
// control characters).
const PathSep = "\x1f"

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
// dropped ("main > barrier > pthread_barrier_wait"), and runtime.goexit, where every
// goroutine starts.
func ClassPath(c sessions.StackClass, frames string) string {
	fs := c.Frames
	for i, f := range fs {
		if f.Function == "main" || f.Function == "main.main" {
			fs = fs[i:]
			break
		}
	}
	if len(fs) > 1 && fs[0].Function == "runtime.goexit" {
		fs = fs[1:]
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

// whoWord names the processes of a rank set and the pids without a rank: "ranks 0-3",
// "rank 0", "pid 28427", "ranks 0-3 and pid 28427".
func whoWord(ranks, unranked string) string {
	ranks, unranked = sessions.Sanitize(ranks), sessions.Sanitize(unranked)
	var parts []string
	if ranks != "" {
		parts = append(parts, ranksWord(ranks))
	}
	if unranked != "" {
		w := "pid "
		if strings.Contains(unranked, ",") {
			w = "pids "
		}
		parts = append(parts, w+unranked)
	}
	if len(parts) == 0 {
		return "no process"
	}
	return strings.Join(parts, " and ")
}

// classWho is whoWord of a class, and how many hosts its ranks span when that is more than
// one and the class came merged from reducing views (StackClass.HostCount).
func classWho(c sessions.StackClass) string {
	w := whoWord(c.Ranks, c.Unranked)
	if c.HostCount > 1 {
		w += fmt.Sprintf(" on %d hosts", c.HostCount)
	}
	return w
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
	return append(out, goroutineSummary(st)...)
}

// progressVerdict is what the processes' progress says about the job: blocked, spinning,
// moving and stopped, with where the spinning and the blocked are. The launcher is left
// out (it waits for the ranks whatever they do), and the ranks' own threads say where.
func progressVerdict(st sessions.Stacks) []string {
	n := map[string]int{}
	ranked, counted := true, 0
	count := func(progress string, procs int) {
		switch progress {
		case sessions.Mixed:
			n[sessions.Moving] += procs // some thread of it moved
		default:
			n[progress] += procs
		}
	}
	if t := st.Tally; t != nil {
		// Merged from reducing views: the processes counted, not listed.
		for _, pt := range t.By {
			count(pt.Progress, pt.Procs)
			counted += pt.Procs
		}
		ranked = t.Others == 0
	}
	for _, r := range st.Ranks {
		if r.Launcher || st.Tally != nil {
			continue
		}
		counted++
		ranked = ranked && r.Rank >= 0
		count(r.Progress, 1)
	}
	one, many := "process", "processes"
	if ranked && counted > 0 {
		one, many = "rank", "ranks"
	}
	stuck, spin, moving, stopped, unknown := n[sessions.Stuck], n[sessions.Spinning], n[sessions.Moving], n[sessions.Stopped], n[sessions.Unknown]
	var out []string
	// Where the spinning ones spin and where the blocked ones block: the classes with that
	// progress by their innermost frame (the cut's, for an MPI call), the program's own
	// threads' when any has it: " in MPI_Barrier", or ": 2 in MPI_Barrier, 1 in MPI_Recv".
	where := func(p string) (string, sessions.StackClass, bool) {
		if st.Tally != nil {
			return tallyWhere(st, p)
		}
		// By rank, as the counts are: each rank with that progress is where its own threads
		// are (its helpers only when it has no other, as its progress is), in the classes
		// with that progress when it has such; a class's progress mixes its ranks', so a
		// rank blocked beside one that spins would otherwise be looked for in no class, and
		// the helpers' waits named for it.
		byNum := make(map[int]sessions.StackClass, len(st.Classes))
		for _, c := range st.Classes {
			byNum[c.Class] = c
		}
		var labels []string
		procs := map[string]map[string]bool{}
		var first sessions.StackClass
		for _, r := range st.Ranks {
			if r.Launcher || r.Progress != p {
				continue
			}
			var own, all, same []sessions.StackClass
			for _, n := range r.Classes {
				if c, ok := byNum[n]; ok && len(c.Frames) > 0 {
					all = append(all, c)
					if c.Role == "" {
						own = append(own, c)
					}
				}
			}
			if len(own) == 0 {
				own = all
			}
			for _, c := range own {
				if c.Progress == p {
					same = append(same, c)
				}
			}
			if len(same) > 0 {
				own = same
			}
			for _, c := range own {
				at := frameLabel(c.Frames[len(c.Frames)-1], "function")
				if sys := sessions.Sanitize(c.Syscall); sys != "" && !strings.HasSuffix(at, sys) {
					at += " in " + sys
				}
				if procs[at] == nil {
					if len(labels) == 0 {
						first = c
					}
					procs[at] = map[string]bool{}
					labels = append(labels, at)
				}
				procs[at][r.Host+"/"+strconv.Itoa(r.PID)] = true
			}
		}
		switch len(labels) {
		case 0:
			return "", sessions.StackClass{}, false
		case 1:
			return " in " + labels[0], first, true
		}
		parts := make([]string, 0, len(labels))
		for _, l := range labels {
			parts = append(parts, fmt.Sprintf("%d in %s", len(procs[l]), l))
		}
		return ": " + strings.Join(parts, ", "), first, true
	}
	switch {
	case stuck > 0 && moving == 0 && spin == 0 && stopped == 0 && unknown == 0:
		out = append(out, fmt.Sprintf("No %s moved over %d samples and none used CPU: a hang (a deadlock if they wait on each other), not a slow job.", one, st.Samples))
	case spin > 0 && moving == 0 && stuck == 0 && unknown == 0:
		out = append(out, fmt.Sprintf("No %s left its call path over %d samples, and they use CPU: a livelock or busy wait (or one very long loop), not a deadlock.", one, st.Samples))
	}
	if spin > 0 {
		if at, c, ok := where(sessions.Spinning); ok {
			out = append(out, fmt.Sprintf("%s spin%s (same path every sample, %.0f%% of a CPU each): busy, not blocked.",
				Count(spin, one, many), at, 100*c.CPUShare))
		}
	}
	if stuck > 0 && (spin > 0 || moving > 0) {
		if at, _, ok := where(sessions.Stuck); ok {
			out = append(out, fmt.Sprintf("%s blocked%s.", Count(stuck, one+" is", many+" are"), at))
		}
	}
	if moving > 0 && (stuck > 0 || spin > 0) {
		out = append(out, fmt.Sprintf("%s moving.", Count(moving, one+" is", many+" are")))
	}
	if unknown > 0 {
		out = append(out, fmt.Sprintf("%s not read in two samples (a busy thread that did not stop in time on a loaded machine, or one that just started): take more samples to know.",
			Count(unknown, one+" was", many+" were")))
	}
	if stopped > 0 {
		out = append(out, fmt.Sprintf("%s stopped by job control (SIGSTOP, Ctrl-Z): not a hang; SIGCONT resumes %s.",
			Count(stopped, one+" is", many+" are"), map[bool]string{true: "it", false: "them"}[stopped == 1]))
	}
	return out
}

// tallyWhere is progressVerdict's where for stacks merged from reducing views: the places
// their tally counts the processes of progress p at, the first class there (for its CPU).
func tallyWhere(st sessions.Stacks, p string) (string, sessions.StackClass, bool) {
	label := func(f sessions.StackFrame, syscall string) string {
		at := frameLabel(f, "function")
		if sys := sessions.Sanitize(syscall); sys != "" && !strings.HasSuffix(at, sys) {
			at += " in " + sys
		}
		return at
	}
	var labels []string
	procs := map[string]int{}
	for _, pt := range st.Tally.By {
		if pt.Progress != p {
			continue
		}
		for _, pl := range pt.Places {
			at := label(pl.Frame, pl.Syscall)
			if _, ok := procs[at]; !ok {
				labels = append(labels, at)
			}
			procs[at] += pl.Procs
		}
	}
	if len(labels) == 0 {
		return "", sessions.StackClass{}, false
	}
	var first sessions.StackClass
	found := false
	for _, own := range []bool{true, false} {
		for _, c := range st.Classes {
			if !found && (c.Role == "") == own && c.Progress == p && len(c.Frames) > 0 && label(c.Frames[len(c.Frames)-1], c.Syscall) == labels[0] {
				first, found = c, true
			}
		}
	}
	if len(labels) == 1 {
		return " in " + labels[0], first, true
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%d in %s", procs[l], l))
	}
	return ": " + strings.Join(parts, ", "), first, true
}

// goroutineSummary is what the goroutines say: how many wait for what, and whether any of
// the program's can run.
func goroutineSummary(st sessions.Stacks) []string {
	g := st.Goroutines
	if g == nil {
		return nil
	}
	var out []string
	if len(g.Waits) > 0 {
		parts := make([]string, 0, len(g.Waits))
		parked, forever := true, true
		for _, w := range g.Waits {
			parts = append(parts, fmt.Sprintf("%d %s", w.Count, waitWord(w.Status, w.WaitReason)))
			parked = parked && w.Status == sessions.GoWaiting && w.Progress == sessions.Stuck
			forever = forever && !goTimedWait(w.WaitReason)
		}
		out = append(out, fmt.Sprintf("Goroutines of %s: %s.", Count(g.Processes, "Go process", "Go processes"), strings.Join(parts, ", ")))
		if st.Samples >= 2 && parked && forever {
			out = append(out, fmt.Sprintf("No goroutine of the program ran over %d samples, each parked on the same path and none sleeping: "+
				"they wait for one another, a deadlock unless something outside the process (I/O, a signal) wakes one.", st.Samples))
		}
	}
	for _, u := range g.Unread {
		out = append(out, fmt.Sprintf("The goroutines of %s could not be read: %s.", rankLabel(u.Rank, u.Host, u.PID), sessions.Sanitize(u.Note)))
	}
	if g.UnreadMore > 0 {
		out = append(out, fmt.Sprintf("Nor could those of %s.", Count(g.UnreadMore, "more Go process", "more Go processes")))
	}
	return out
}

// goTimedWait says a goroutine's wait ends on its own.
func goTimedWait(reason string) bool { return reason == "sleep" }

// waitWord says a goroutine's status and wait: "in chan receive", "running".
func waitWord(status, reason string) string {
	switch status {
	case sessions.GoWaiting:
		if reason != "" {
			return "in " + sessions.Sanitize(reason)
		}
		return "waiting"
	case sessions.GoSyscall:
		return "in a system call"
	case sessions.GoRunnable:
		return "runnable"
	}
	return sessions.Sanitize(status)
}

// waitCell is a goroutine's wait in a column: the runtime's reason, or its status.
func waitCell(status, reason string) string {
	if status == sessions.GoWaiting && reason != "" {
		return sessions.Sanitize(reason)
	}
	return sessions.Sanitize(status)
}

// ExplainClass is the teaching text of one equivalence class.
func ExplainClass(st sessions.Stacks, c sessions.StackClass) Explanation {
	if c.Goroutine() {
		return explainGoroutines(st, c)
	}
	ex := Explanation{Title: fmt.Sprintf("Class %d: %s on one path (%s)", c.Class, threads(c.Count), whoWord(c.Ranks, c.Unranked)),
		Story: StoryStat}
	path := ClassPath(c, st.Frames)
	who := whoWord(c.Ranks, c.Unranked)
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
			threads(c.Count), who, since, in, path)
	case sessions.Spinning:
		ex.What = fmt.Sprintf("%s of %s sat on the same call path in every sample%s but used %.0f%% of a CPU each: spinning (a busy wait, a livelock, or one long loop) at %s.",
			threads(c.Count), who, since, 100*c.CPUShare, path)
	case sessions.Stopped:
		ex.What = fmt.Sprintf("%s of %s are stopped by job control (SIGSTOP, Ctrl-Z) at %s: not a hang; SIGCONT resumes them.", threads(c.Count), who, path)
	case sessions.Moving:
		ex.What = fmt.Sprintf("%s of %s on %s, and the stack changed between samples: progressing.", threads(c.Count), who, path)
	case sessions.Mixed:
		ex.What = fmt.Sprintf("%s of %s on %s now; some were on the same stack every time, some moved.", threads(c.Count), who, path)
	default:
		ex.What = fmt.Sprintf("%s of %s on %s%s (one sample: stuck or moving needs two).", threads(c.Count), who, path, in)
	}
	if c.Partial {
		ex.What += " Some of its threads were read from /proc without stopping them (interrupting a blocked epoll_wait, semop or sigtimedwait would make it fail with EINTR), so their stacks may be partial."
	}
	switch c.Role {
	case sessions.RoleHelper:
		ex.What += " They are helper threads: none runs code of the program's own (an MPI or PMIx progress thread, a library's event loop, the Go runtime's scheduler), so the Stacks list folds them under one line."
	case sessions.RoleLauncher:
		ex.What += " They are the launcher's (a process without a rank that started the ranks: mpirun, prted, srun), folded under one line: it waits for the ranks, whatever they do."
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
	case c.Role != "":
		ex.Fix = "look at the ranks' main threads first (the classes above the folded line): helpers wait for their library's work, the launcher for the ranks."
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

// explainGoroutines is the teaching text of a class of goroutines.
func explainGoroutines(st sessions.Stacks, c sessions.StackClass) Explanation {
	n := Count(c.Count, "goroutine", "goroutines")
	who := whoWord(c.Ranks, c.Unranked)
	ex := Explanation{Title: fmt.Sprintf("Class %d: %s on one path, %s (%s)", c.Class, n, waitWord(c.Status, c.WaitReason), who),
		Story: StoryStat}
	path := ClassPath(c, st.Frames)
	created := ""
	if f := c.CreatedBy; f != nil {
		created = " (started by the go statement in " + frameLabel(*f, "function")
		if f.File != "" {
			created += " at " + sessions.Sanitize(filepath.Base(f.File)) + ":" + strconv.Itoa(f.Line)
		}
		created += ")"
	}
	switch {
	case c.Progress == sessions.Moving:
		ex.What = fmt.Sprintf("%s of %s%s at %s, %s now; their stacks changed between samples: progressing.", n, who, created, path, waitWord(c.Status, c.WaitReason))
	case c.Status == sessions.GoWaiting && c.Progress == sessions.Stuck:
		ex.What = fmt.Sprintf("%s of %s%s parked in %s at %s in every sample: the runtime runs them again only when what they wait for happens.",
			n, who, created, sessions.Sanitize(orUnknown(c.WaitReason)), path)
	case c.Progress == sessions.Spinning:
		ex.What = fmt.Sprintf("%s of %s%s on the same path at %s in every sample, running or ready to run: busy there (a loop), not parked.", n, who, created, path)
	default:
		ex.What = fmt.Sprintf("%s of %s%s at %s, %s.", n, who, created, path, waitWord(c.Status, c.WaitReason))
	}
	if c.Partial {
		ex.What += " Some of their stacks could not be read to the end."
	}
	if c.Role == sessions.RoleHelper {
		ex.What += " They are the Go runtime's own (garbage collection, the finalizer, timers), folded under one line as a goroutine dump leaves them out."
	}
	ex.Rule = "Goroutines whose call paths and waits are the same form one class. A goroutine that blocks is parked by the runtime (gopark) " +
		"with a wait reason, the words a goroutine dump (SIGQUIT, runtime.Stack) prints: chan receive or send waits for the other end of the " +
		"channel, select for one of its cases, sync.Mutex.Lock for whoever holds the mutex, sync.WaitGroup.Wait for the group's count to reach " +
		"zero, IO wait for a file descriptor, sleep for a timer. Goroutines that all wait for each other are a deadlock, as threads are."
	ex.Kernel = "crashtui reads the runtime's list of goroutines (runtime.allgs) from the process's memory with process_vm_readv after its " +
		"threads run again, and unwinds each parked goroutine from the pc and sp the runtime saved for it (g.sched) with delve's pkg/proc; " +
		"a running one takes the stack of the thread it runs on, read while that thread was stopped. No thread is stopped for the goroutines."
	switch c.WaitReason {
	case "chan receive", "chan receive (nil chan)", "chan send", "chan send (nil chan)":
		ex.Fix = "find who should send on (or close) that channel, or receive from it: the other classes show where those goroutines are; a nil channel blocks forever."
	case "select", "select (no cases)":
		ex.Fix = "none of the select's cases is ready: look for the goroutines that should make one ready (a send, a close, a timer, a context's Done)."
	case "sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock", "semacquire":
		ex.Fix = "find the goroutine that holds the lock (one that locked it and waits for something else, or never unlocked it): a lock taken twice, or two taken in opposite orders, deadlock."
	case "sync.WaitGroup.Wait":
		ex.Fix = "a goroutine that was counted (Add) has not called Done: look for one stuck, or an Add without its Done."
	case "sleep":
		ex.Fix = "a timed wait: it wakes on its own."
	default:
		if c.Progress == sessions.Spinning {
			ex.Fix = "look at what the loop waits for; profile it (go tool pprof, perf top -p PID) to see the loop."
		} else {
			ex.Fix = "take more samples (S) to see whether they move; compare with the other classes: what they wait for is done by another goroutine."
		}
	}
	return ex
}

// stackIndex finds the classes, of threads and of goroutines, by number.
type stackIndex map[int]*sessions.StackClass

func indexOf(st sessions.Stacks) stackIndex {
	idx := stackIndex{}
	for i := range st.Classes {
		idx[st.Classes[i].Class] = &st.Classes[i]
	}
	if g := st.Goroutines; g != nil {
		for i := range g.Classes {
			idx[g.Classes[i].Class] = &g.Classes[i]
		}
	}
	return idx
}

// wait is the wait of a node of goroutines, when its classes share one.
func (idx stackIndex) wait(n *sessions.StackNode) string {
	w := ""
	for i, k := range n.Classes {
		c := idx[k]
		if c == nil {
			return ""
		}
		x := waitCell(c.Status, c.WaitReason)
		if i > 0 && x != w {
			return ""
		}
		w = x
	}
	return w
}

// goRuntimeClass says every frame of c is the Go runtime's.
func goRuntimeClass(c *sessions.StackClass) bool {
	for _, f := range c.Frames {
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "internal/runtime/") && !strings.HasPrefix(f.Function, "<") {
			return false
		}
	}
	return len(c.Frames) > 0
}

// lineLabel is the text of a line's frame column, glyphs included; open says an AsideLine
// is unfolded.
func lineLabel(st sessions.Stacks, idx stackIndex, l StackLine, open bool) string {
	n := l.Node
	switch l.Kind {
	case GoroutinesLine:
		return l.Prefix + "goroutines"
	case AsideLine:
		mark := "▸ "
		if open {
			mark = "▾ "
		}
		return l.Prefix + mark + asideLabel(st, idx, n, l.Goroutines)
	}
	return l.Prefix + sessions.Sanitize(n.Label)
}

// asideLabel says what an AsideLine folds: "8 helper threads and 4 of the launcher".
func asideLabel(st sessions.Stacks, idx stackIndex, n *sessions.StackNode, gor bool) string {
	a := st.Aside
	if gor && st.Goroutines != nil {
		a = st.Goroutines.Aside
	}
	if a == nil {
		return Count(n.Count, "thread", "threads")
	}
	if gor {
		return Count(a.Helpers, "goroutine of the runtime", "goroutines of the runtime")
	}
	helper := "helper thread"
	goRT := a.Helpers > 0
	for _, k := range a.Classes {
		if c := idx[k]; c != nil && c.Role == sessions.RoleHelper && !goRuntimeClass(c) {
			goRT = false
		}
	}
	if goRT {
		helper = "Go runtime thread"
	}
	var parts []string
	if a.Helpers > 0 {
		parts = append(parts, Count(a.Helpers, helper, helper+"s"))
	}
	if a.Launcher > 0 {
		parts = append(parts, Count(a.Launcher, "launcher thread", "launcher threads"))
	}
	return strings.Join(parts, " + ")
}

// cpuCell is a share of a CPU in a column ("" when the progress says nothing was measured).
func cpuCell(share float64, progress string, gor bool) string {
	if gor || progress == sessions.Unknown || progress == "" {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*share)
}

// stackColumns says which of the rank and pid columns the list needs, and how wide.
func stackColumns(lines []StackLine, most int) (rankW, pidW int) {
	for _, l := range lines {
		if r := sessions.Sanitize(l.Node.Ranks); r != "" {
			rankW = max(rankW, 5, cellWidth(r))
		}
		if p := sessions.Sanitize(l.Node.Unranked); p != "" {
			pidW = max(pidW, 4, cellWidth(p))
		}
	}
	return min(rankW, most), min(pidW, most)
}

// procsWord counts the processes of a merge: "4 ranks and 1 launcher", "3 processes".
func procsWord(st sessions.Stacks) string {
	ranks, launchers, others := 0, 0, 0
	if t := st.Tally; t != nil {
		ranks, launchers, others = t.Ranked, t.Launchers, t.Others // merged from reducing views
	} else {
		for _, r := range st.Ranks {
			switch {
			case r.Launcher:
				launchers++
			case r.Rank >= 0:
				ranks++
			default:
				others++
			}
		}
	}
	var parts []string
	if ranks > 0 {
		parts = append(parts, Count(ranks, "rank", "ranks"))
	}
	if others > 0 || ranks+launchers == 0 {
		parts = append(parts, Count(others, "process", "processes"))
	}
	if launchers > 0 {
		parts = append(parts, Count(launchers, "launcher", "launchers"))
	}
	return strings.Join(parts, " and ")
}

// StacksText is crashtui stacks' text report: the tree (the program's threads, the helpers
// and the launcher folded into one line, the goroutines), the classes and the summary
// sentences. width 0 means no limit.
func StacksText(st sessions.Stacks, width int) string {
	var b strings.Builder
	nthreads := 0
	for _, c := range st.Classes {
		nthreads += c.Count
	}
	fmt.Fprintf(&b, "%s, %s", procsWord(st), threads(nthreads))
	if g := st.Goroutines; g != nil {
		fmt.Fprintf(&b, ", %s", Count(g.Count, "goroutine", "goroutines"))
	}
	fmt.Fprintf(&b, ", %s (frames by %s", Count(st.Samples, "sample", "samples"), st.Frames)
	if st.Cut != "" {
		fmt.Fprintf(&b, ", cut under %s", sessions.Sanitize(st.Cut))
	}
	b.WriteString(")\n\n")
	idx := indexOf(st)
	lines := StackLinesOf(st, StackQuery{})
	labelW := len("FRAME")
	for _, l := range lines {
		labelW = max(labelW, cellWidth(lineLabel(st, idx, l, false)))
	}
	labelW = min(labelW, 60)
	rankW, pidW := stackColumns(lines, 24)
	row := func(label, count, ranks, pids, state, cpu, wait string) {
		line := pad(label, labelW) + " " + fmt.Sprintf("%4s", count)
		if rankW > 0 {
			line += "  " + pad(ranks, rankW)
		}
		if pidW > 0 {
			line += "  " + pad(pids, pidW)
		}
		line += "  " + pad(state, 8) + " " + fmt.Sprintf("%4s", cpu)
		if wait != "" {
			line += "  " + wait
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("FRAME", "THR", "RANKS", "PIDS", "STATE", "CPU", "")
	for _, l := range lines {
		n := l.Node
		wait := ""
		if l.Goroutines && l.Kind == FrameLine && len(n.Children) == 0 {
			wait = idx.wait(n) // on the leaves: where the goroutines are parked
		}
		row(lineLabel(st, idx, l, false), strconv.Itoa(n.Count), sessions.Sanitize(n.Ranks), sessions.Sanitize(n.Unranked),
			ProgressText(n.Progress), cpuCell(n.CPUShare, n.Progress, l.Goroutines), wait)
	}
	classLine := func(c sessions.StackClass) {
		what := threads(c.Count)
		extra := ""
		if c.Goroutine() {
			what = Count(c.Count, "goroutine", "goroutines")
			extra = "  " + waitWord(c.Status, c.WaitReason)
		} else if c.Syscall != "" {
			extra = "  in " + sessions.Sanitize(c.Syscall)
		}
		fmt.Fprintf(&b, "  %-3d %-13s %-18s %-8s %4s  %s%s\n", c.Class, what, whoWord(c.Ranks, c.Unranked),
			ProgressText(c.Progress), cpuCell(c.CPUShare, c.Progress, c.Goroutine()), ClassPath(c, st.Frames), extra)
	}
	section := func(title string, cs []sessions.StackClass, role bool) {
		first := true
		for _, c := range cs {
			if (c.Role != "") != role {
				continue
			}
			if first {
				b.WriteString("\n" + title + ":\n")
				first = false
			}
			classLine(c)
		}
	}
	section("classes", st.Classes, false)
	section("classes put aside (helpers and the launcher)", st.Classes, true)
	if g := st.Goroutines; g != nil {
		section("goroutine classes (by call path and wait)", g.Classes, false)
		section("the runtime's goroutines", g.Classes, true)
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
