package sessions

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Merging classes, not threads: a reducer's StackClasses carry each call path's count, rank
// set and progress, so a view above it merges paths, never tasks. The prefix tree is the
// classes' paths merged by prefix, as STAT's tree is rebuilt from its filters' merged trees.
//
// A reducer made its classes with its own options (function frames under the default cut:
// what `view --reduce` uses). Merged under other options, a class is re-keyed from its
// frames: coarser options (a cut, hidden frames) merge classes exactly; finer ones (line,
// offset) cannot split what the reducer already merged.

// classPath is a class's frames (root first) under o: unsymbolized frames hidden, the path cut
// below the first frame matching o.Cut.
func classPath(frames []StackFrame, o StackOptions) []StackFrame {
	out := make([]StackFrame, 0, len(frames))
	for _, f := range frames {
		if o.HideUnsymbolized && f.Function == "" {
			continue
		}
		out = append(out, f)
		if o.Cut != nil && f.Function != "" && o.Cut.MatchString(f.Function) {
			break
		}
	}
	return out
}

func stackFrameKey(f StackFrame, by string) (key, label string) {
	return frameKey(Frame{Module: f.Module, Offset: f.Offset, Function: f.Function, File: f.File, Line: f.Line}, by)
}

// classRank orders classes of one size: by their first rank, the unranked after.
func classRank(c ReducedClass) int {
	if !c.Ranks.Empty() {
		return c.Ranks.First()
	}
	best := 1<<31 - 1
	for _, m := range c.Members {
		best = min(best, 1<<30+m.PID)
	}
	return best
}

// mergeClasses merges classes with the same path under o, the largest first.
func mergeClasses(parts []ReducedClass, o StackOptions) []ReducedClass {
	if o.Frames == "" {
		o.Frames = "function"
	}
	byKey := map[string]int{}
	var out []ReducedClass
	for _, p := range parts {
		path := classPath(p.Frames, o)
		var kb strings.Builder
		kb.WriteString(p.Role)
		kb.WriteByte(0)
		kb.WriteString(p.Status) // a class of goroutines is one path in one status and wait
		kb.WriteByte(0)
		kb.WriteString(p.WaitReason)
		kb.WriteByte(0)
		for _, f := range path {
			k, _ := stackFrameKey(f, o.Frames)
			kb.WriteString(k)
			kb.WriteByte('\n')
		}
		i, ok := byKey[kb.String()]
		if !ok {
			i = len(out)
			byKey[kb.String()] = i
			c := p
			c.Frames, c.Members, c.Spark = path, slices.Clone(p.Members), slices.Clone(p.Spark)
			c.Since = nil
			c.Progress = ""
			c.Count, c.Procs, c.CPUTicks, c.Unranked, c.Main, c.CPUShare = 0, 0, 0, 0, 0, 0
			c.Ranks, c.Hosts = RankSet{}, HostSet{}
			c.Syscall = p.Syscall
			out = append(out, c)
		} else {
			c := &out[i]
			if c.Syscall != p.Syscall {
				c.Syscall = ""
			}
			if c.CreatedBy != nil && (p.CreatedBy == nil || *p.CreatedBy != *c.CreatedBy) {
				c.CreatedBy = nil // they do not share one go statement
			}
			c.Members = firstMembers(c.Members, p.Members)
			c.Spark = addSparks(c.Spark, p.Spark)
		}
		c := &out[i]
		// The share of one CPU each thread used on average, over both.
		c.CPUShare = (c.CPUShare*float64(c.Count) + p.CPUShare*float64(p.Count)) / float64(max(c.Count+p.Count, 1))
		c.Count += p.Count
		c.Main += p.Main
		c.Procs += p.Procs
		c.Unranked += p.Unranked
		c.CPUTicks += p.CPUTicks
		c.Ranks = c.Ranks.Union(p.Ranks)
		c.Hosts = c.Hosts.Union(p.Hosts)
		c.Progress = combineProgress(c.Progress, p.Progress)
		c.Partial = c.Partial || p.Partial
		if p.Since != nil && (c.Since == nil || p.Since.After(*c.Since)) {
			s := *p.Since
			c.Since = &s
		}
	}
	for i := range out {
		if out[i].Progress != Stuck && out[i].Progress != Spinning {
			out[i].Since = nil
		}
		if out[i].Progress == "" {
			out[i].Progress = Unknown
		}
	}
	// As a merge of threads orders them: the program's own first, the ranks' main threads
	// first among them, then the biggest.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := roleOrder(a.Role), roleOrder(b.Role); ra != rb {
			return ra < rb
		}
		if (a.Main > 0) != (b.Main > 0) {
			return a.Main > 0
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return classRank(a) < classRank(b)
	})
	return out
}

// addSparks adds two sparks sample by sample, their latest samples aligned.
func addSparks(a, b []int) []int {
	if len(b) > len(a) {
		a, b = b, a
	}
	out := slices.Clone(a)
	for i := range b {
		out[len(out)-len(b)+i] += b[i]
	}
	return out
}

// unrankedText is a merged class's or node's processes without a rank as Stacks writes them
// (Unranked): those of its first members by host:pid, then how many more there are.
func unrankedText(members []Member, unranked int) string {
	if unranked == 0 {
		return ""
	}
	var named []string
	for _, m := range members {
		if m.Rank >= 0 {
			continue
		}
		if m.Host != "" {
			named = append(named, m.Host+":"+strconv.Itoa(m.PID))
		} else {
			named = append(named, strconv.Itoa(m.PID))
		}
	}
	t := strings.Join(named, ",")
	if more := unranked - len(named); more > 0 {
		if t != "" {
			t += " "
		}
		t += fmt.Sprintf("+%d more", more)
	}
	return t
}

// StackClasses is the State's merged stacks as a reducer passes them on: its own samples'
// classes merged with its subtrees'.
func (s *State) StackClasses(o StackOptions) StackClasses {
	_, local := s.store.mergeFull(o, false)
	all := []*StackClasses{&local}
	for _, name := range s.subList {
		if c := s.subs[name].classes; c != nil {
			all = append(all, c)
		}
	}
	return mergeStackClasses(all, o)
}

// mergeStackClasses merges reducers' stacks (the first one's frames and cut are the
// merge's): their classes by path, what they put aside, their goroutines.
func mergeStackClasses(all []*StackClasses, o StackOptions) StackClasses {
	out := StackClasses{Frames: all[0].Frames, Cut: all[0].Cut}
	var parts []ReducedClass
	var asides []*ReducedAside
	var gors []*ReducedGoroutines
	var tallies []*ProcessTally
	for _, c := range all {
		parts = append(parts, c.Classes...)
		out.Samples = max(out.Samples, c.Samples)
		out.Processes += c.Processes
		asides = append(asides, c.Aside)
		gors = append(gors, c.Goroutines)
		tallies = append(tallies, c.Tally)
	}
	out.Classes = mergeClasses(parts, o)
	if out.Classes == nil {
		out.Classes = []ReducedClass{}
	}
	out.Aside = mergeAsides(asides)
	out.Goroutines = mergeGoroutines(gors, o)
	out.Tally = mergeTallies(tallies)
	return out
}

// mergeAsides adds up what reducers put aside (nil when none put anything aside). Their
// hosts are apart: their processes add up.
func mergeAsides(list []*ReducedAside) *ReducedAside {
	var out *ReducedAside
	for _, a := range list {
		if a == nil {
			continue
		}
		if out == nil {
			out = &ReducedAside{Members: []Member{}}
		}
		if n := out.Count + a.Count; n > 0 {
			out.CPUShare = (out.CPUShare*float64(out.Count) + a.CPUShare*float64(a.Count)) / float64(n)
		}
		out.Count += a.Count
		out.Helpers += a.Helpers
		out.Launcher += a.Launcher
		out.Procs += a.Procs
		out.Unranked += a.Unranked
		out.Ranks = out.Ranks.Union(a.Ranks)
		out.Hosts = out.Hosts.Union(a.Hosts)
		out.Progress = combineProgress(out.Progress, a.Progress)
		out.Members = unrankedFirst(out.Members, a.Members)
	}
	return out
}

// firstMembers are the first MaxReducedMembers processes of a and b by host and pid, as a
// merge of threads lists them, whatever order the reducers' streams came in.
func firstMembers(a, b []Member) []Member {
	all := append(slices.Clone(a), b...)
	slices.SortStableFunc(all, func(x, y Member) int {
		if x.Host != y.Host {
			return strings.Compare(x.Host, y.Host)
		}
		return x.PID - y.PID
	})
	all = slices.CompactFunc(all, func(x, y Member) bool { return x.Host == y.Host && x.PID == y.PID })
	return all[:min(len(all), MaxReducedMembers)]
}

// unrankedFirst are the first MaxReducedMembers of the processes of the lists, those without
// a rank first (they are named by pid, where the others are in the rank set), each kind by
// host and pid, each process once.
func unrankedFirst(lists ...[]Member) []Member {
	var all []Member
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortStableFunc(all, func(a, b Member) int {
		if (a.Rank < 0) != (b.Rank < 0) {
			if a.Rank < 0 {
				return -1
			}
			return 1
		}
		if a.Host != b.Host {
			return strings.Compare(a.Host, b.Host)
		}
		return a.PID - b.PID
	})
	all = slices.CompactFunc(all, func(a, b Member) bool { return a.Host == b.Host && a.PID == b.PID })
	return append([]Member{}, all[:min(len(all), MaxReducedMembers)]...)
}

// mergeGoroutines merges reducers' goroutines (nil when none had any).
func mergeGoroutines(list []*ReducedGoroutines, o StackOptions) *ReducedGoroutines {
	var out *ReducedGoroutines
	var parts []ReducedClass
	var asides []*ReducedAside
	waitAt := map[[2]string]int{}
	for _, g := range list {
		if g == nil {
			continue
		}
		if out == nil {
			out = &ReducedGoroutines{Waits: []ReducedWait{}}
		}
		out.Processes += g.Processes
		out.Count += g.Count
		out.System += g.System
		out.Unreadable += g.Unreadable
		out.Unread = append(out.Unread, g.Unread...)
		parts = append(parts, g.Classes...)
		asides = append(asides, g.Aside)
		for _, w := range g.Waits {
			k := [2]string{w.Status, w.WaitReason}
			i, ok := waitAt[k]
			if !ok {
				i = len(out.Waits)
				waitAt[k] = i
				out.Waits = append(out.Waits, ReducedWait{Status: w.Status, WaitReason: w.WaitReason, Members: []Member{}})
			}
			m := &out.Waits[i]
			m.Count += w.Count
			m.Unranked += w.Unranked
			m.Ranks = m.Ranks.Union(w.Ranks)
			m.Progress = combineProgress(m.Progress, w.Progress)
			m.Members = unrankedFirst(m.Members, w.Members)
		}
	}
	if out == nil {
		return nil
	}
	out.Classes = mergeClasses(parts, o)
	if out.Classes == nil {
		out.Classes = []ReducedClass{}
	}
	out.Aside = mergeAsides(asides)
	sort.SliceStable(out.Unread, func(i, j int) bool {
		a, b := out.Unread[i], out.Unread[j]
		return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID)
	})
	out.Unread = out.Unread[:min(len(out.Unread), MaxListedPIDs)]
	return out
}

// mergeReducedStacks is Stacks from the State's own merge (local, and red as a reducer would
// pass it on) and the reducers' (subs): their classes of threads and of goroutines merged by
// path, their trees built from those, what they put aside and their goroutines by wait.
func mergeReducedStacks(local Stacks, red *StackClasses, subs []*StackClasses, o StackOptions) Stacks {
	m := mergeStackClasses(append([]*StackClasses{red}, subs...), o)
	out := Stacks{Samples: m.Samples, Frames: local.Frames, Cut: local.Cut, Ranks: local.Ranks, Processes: m.Processes,
		Tally: m.Tally}
	out.Classes = classesOf(m.Classes, 1)
	root := classTree(m.Classes, o, 1)
	out.Tree = root.n
	out.Lone = classLone(root, m.Classes)
	out.Culprit = culprit(out.Lone)
	out.Aside = asideFrom(m.Aside, out.Classes)
	if g := m.Goroutines; g != nil {
		first := len(out.Classes) + 1
		gs := &GoroutineStacks{Processes: g.Processes, Count: g.Count, System: g.System, Classes: classesOf(g.Classes, first),
			Tree: classTree(g.Classes, o, first).n, Unread: g.Unread, UnreadMore: g.Unreadable - len(g.Unread)}
		gs.Aside = asideFrom(g.Aside, gs.Classes)
		gs.Waits = waitsFrom(g.Waits, gs.Classes)
		out.Goroutines = gs
	}
	return out
}

// classesOf are merged classes as Stacks lists them, numbered from first.
func classesOf(merged []ReducedClass, first int) []StackClass {
	out := []StackClass{}
	for i, c := range merged {
		sc := StackClass{Class: first + i, Count: c.Count, Ranks: c.Ranks.String(), Unranked: unrankedText(c.Members, c.Unranked),
			Progress: c.Progress, Frames: c.Frames, Syscall: c.Syscall, Since: c.Since, CPUTicks: c.CPUTicks,
			CPUShare: c.CPUShare, Partial: c.Partial, Spark: c.Spark, Role: c.Role, Main: c.Main, HostCount: c.Hosts.Len(),
			Status: c.Status, WaitReason: c.WaitReason, CreatedBy: c.CreatedBy}
		multi := false
		for _, m := range c.Members {
			sc.PIDs = append(sc.PIDs, m.PID)
			sc.Hosts = append(sc.Hosts, m.Host)
			multi = multi || m.Host != ""
		}
		if !multi {
			sc.Hosts = nil
		}
		out = append(out, sc)
	}
	return out
}

// asideFrom is Aside from merged asides: its classes are those with a role.
func asideFrom(a *ReducedAside, classes []StackClass) *Aside {
	if a == nil {
		return nil
	}
	out := &Aside{Count: a.Count, Helpers: a.Helpers, Launcher: a.Launcher, Ranks: a.Ranks.String(),
		Unranked: unrankedText(a.Members, a.Unranked), Progress: a.Progress, CPUShare: a.CPUShare, PIDs: []int{}}
	for _, m := range a.Members {
		out.PIDs = append(out.PIDs, m.PID)
	}
	for _, c := range classes {
		if c.Role != "" {
			out.Classes = append(out.Classes, c.Class)
		}
	}
	if out.Progress == "" {
		out.Progress = Unknown
	}
	return out
}

// waitsFrom are the goroutines by wait from merged waits, the most first (goroutineWaits):
// each with the classes of the program's goroutines in that status and wait.
func waitsFrom(waits []ReducedWait, classes []StackClass) []GoroutineWait {
	out := make([]GoroutineWait, 0, len(waits))
	for _, w := range waits {
		gw := GoroutineWait{Status: w.Status, WaitReason: w.WaitReason, Count: w.Count, Ranks: w.Ranks.String(),
			Unranked: unrankedText(w.Members, w.Unranked), Progress: w.Progress}
		for _, c := range classes {
			if c.Role == "" && c.Status == w.Status && c.WaitReason == w.WaitReason {
				gw.Classes = append(gw.Classes, c.Class)
			}
		}
		out = append(out, gw)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Status+out[i].WaitReason < out[j].Status+out[j].WaitReason
	})
	return out
}

// classNode is a node of the tree of merged classes.
type classNode struct {
	n        *StackNode
	kids     map[string]*classNode
	order    []string
	ranks    RankSet   // once built: the union of sets
	sets     []RankSet // its classes' ranks
	unranked int
	procs    int
	cpu      float64 // share of one CPU, summed over threads
	main     bool
	members  []Member
	classes  []int
	syscall  string
}

// classTree is the prefix tree of merged classes, numbered from first.
func classTree(classes []ReducedClass, o StackOptions, first int) *classNode {
	if o.Frames == "" {
		o.Frames = "function"
	}
	root := &classNode{n: &StackNode{Label: "/"}, kids: map[string]*classNode{}}
	add := func(at *classNode, c ReducedClass, id int) {
		at.n.Count += c.Count
		at.n.Progress = combineProgress(at.n.Progress, c.Progress)
		at.cpu += c.CPUShare * float64(c.Count)
		at.main = at.main || c.Main > 0
		at.sets = append(at.sets, c.Ranks)
		at.unranked += c.Unranked
		at.procs += c.Procs
		if len(at.classes) == 0 {
			at.syscall = c.Syscall
		} else if at.syscall != c.Syscall {
			at.syscall = ""
		}
		at.classes = append(at.classes, id)
		for _, m := range c.Members {
			if len(at.members) < MaxListedPIDs {
				at.members = append(at.members, m)
			}
		}
	}
	for i, c := range classes {
		at := root
		add(at, c, first+i)
		for j, f := range c.Frames {
			k, label := stackFrameKey(f, o.Frames)
			if j == 0 {
				k = c.Role + "\x00" + k // the outermost frames split by role, as a merge of threads does
			}
			next := at.kids[k]
			if next == nil {
				next = &classNode{n: &StackNode{Label: label, Frame: f, Role: c.Role}, kids: map[string]*classNode{}}
				at.kids[k] = next
				at.order = append(at.order, k)
			}
			add(next, c, first+i)
			at = next
		}
	}
	var build func(a *classNode, top bool)
	build = func(a *classNode, top bool) {
		a.ranks, a.sets = UnionAll(a.sets...), nil
		a.n.Ranks, a.n.Unranked = a.ranks.String(), unrankedText(a.members, a.unranked)
		if a.n.Count > 0 {
			a.n.CPUShare = a.cpu / float64(a.n.Count)
		}
		for _, m := range a.members {
			a.n.PIDs = append(a.n.PIDs, m.PID)
		}
		a.n.Classes = slices.Compact(slices.Sorted(slices.Values(a.classes)))
		kids := make([]*classNode, 0, len(a.order))
		for _, k := range a.order {
			kids = append(kids, a.kids[k])
		}
		sort.SliceStable(kids, func(i, j int) bool {
			if top {
				if ri, rj := roleOrder(kids[i].n.Role), roleOrder(kids[j].n.Role); ri != rj {
					return ri < rj
				}
				if kids[i].main != kids[j].main {
					return kids[i].main
				}
			}
			return kids[i].n.Count > kids[j].n.Count
		})
		for _, k := range kids {
			build(k, false)
			a.n.Children = append(a.n.Children, k.n)
		}
	}
	build(root, true)
	if root.n.Progress == "" {
		root.n.Progress = Unknown
	}
	return root
}

// classLone is loneRanks over merged classes: a branch at the first fork whose classes hold
// one process, which no other branch holds.
func classLone(root *classNode, classes []ReducedClass) []LoneRank {
	var out []LoneRank
	for _, rk := range root.order {
		at := root.kids[rk]
		if at.n.Role != "" {
			continue // helpers' and the launcher's branches tell nothing of the ranks' waits
		}
		for len(at.order) == 1 && at.kids[at.order[0]].n.Count == at.n.Count {
			at = at.kids[at.order[0]]
		}
		if len(at.order) < 2 {
			continue
		}
		for _, k := range at.order {
			kid := at.kids[k]
			if kid.procs != 1 || at.procs-1 < 2 || len(kid.members) == 0 {
				continue
			}
			m := kid.members[0]
			alone := true
			for _, k2 := range at.order {
				other := at.kids[k2]
				if other == kid {
					continue
				}
				if (m.Rank >= 0 && other.ranks.Contains(int(m.Rank))) || slices.ContainsFunc(other.members, func(x Member) bool {
					return x.Host == m.Host && x.PID == m.PID
				}) {
					alone = false
				}
			}
			if !alone {
				continue
			}
			out = append(out, LoneRank{Host: m.Host, PID: m.PID, Rank: m.Rank, Class: kid.classes[0], At: at.n.Label,
				Into: kid.n.Label, Others: at.procs - 1, Progress: kid.n.Progress, Syscall: kid.syscall})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}
