package sessions

// The MergeStacks that the sample store replaced (wt-go's, over decoded samples: progress
// from the kernel's counters, roles, goroutines), kept as the oracle of
// TestMergeStacksAsBefore: the same samples must give the same classes, tree and ranks.

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

type legacyThreadTrack struct {
	host    string
	pid     int
	rank    Rank
	tid     int
	keys    []string // path key per sample, oldest first
	times   []time.Time
	cpu     []uint64
	runNS   []uint64
	framed  []bool // the sample read a stack
	state   string // in the latest sample
	seqs    []int
	last    []Frame
	syscall string
	held    bool
	whole   bool // held, or read whole without stopping it
	// Of the latest sample: own says a frame runs the program's own code (in its
	// executable, not the Go runtime's), goRuntime that every frame is the Go runtime's.
	own, goRuntime bool
	role           string // RoleHelper, RoleLauncher or ""
	// A goroutine's (goroutine set): its id, latest status and wait, whether it was on a
	// CPU or ready for one in a sample that read its stack, whether it is the runtime's,
	// the go statement that started it.
	goroutine    bool
	gid          int64
	status, wait string
	busy, system bool
	created      *Frame
}

// add appends one sample's path (extra is prepended to its key).
func (tr *legacyThreadTrack) add(s *StampedSample, p []Frame, o StackOptions, framed bool, extra string) {
	var key strings.Builder
	key.WriteString(extra)
	for _, f := range p {
		k, _ := frameKey(f, o.Frames)
		key.WriteString(k)
		key.WriteByte('\n')
	}
	tr.keys = append(tr.keys, key.String())
	tr.times = append(tr.times, s.Time)
	tr.framed = append(tr.framed, framed)
	tr.seqs = append(tr.seqs, s.Seq)
	tr.last = p
}

// isMain says it is a process's main thread.
func (tr *legacyThreadTrack) isMain() bool { return !tr.goroutine && tr.tid == tr.pid }

// legacySampleWindow is which samples a merge counts: each host's last Window.
type legacySampleWindow struct {
	latest map[string]int          // host -> latest seq
	in     map[string]map[int]bool // host -> the seqs that count
	qs     []int                   // every seq that counts, oldest first: a spark has one count each
	n      int                     // the most samples a host has in it
}

func legacyWindowOf(samples []StampedSample, size int) legacySampleWindow {
	w := legacySampleWindow{latest: map[string]int{}, in: map[string]map[int]bool{}}
	seqs := map[string]map[int]bool{}
	for _, s := range samples {
		if s.Seq > w.latest[s.Host] {
			w.latest[s.Host] = s.Seq
		}
		if seqs[s.Host] == nil {
			seqs[s.Host] = map[int]bool{}
		}
		seqs[s.Host][s.Seq] = true
	}
	for h, set := range seqs {
		list := make([]int, 0, len(set))
		for q := range set {
			list = append(list, q)
		}
		sort.Ints(list)
		if size > 0 && len(list) > size {
			list = list[len(list)-size:]
		}
		w.in[h] = map[int]bool{}
		for _, q := range list {
			w.in[h][q] = true
			w.qs = append(w.qs, q)
		}
		w.n = max(w.n, len(list))
	}
	sort.Ints(w.qs)
	w.qs = compactInts(w.qs)
	return w
}

// legacyProcKey is a process of a merge.
type legacyProcKey struct {
	host string
	pid  int
}

// legacyMergeStacks merges samples into the prefix tree, the classes and each process's progress.
// Only threads in their host's latest sample are placed (where every rank is now); the older
// samples decide stuck or moving. The goroutines of Go processes are merged the same way,
// from each process's latest sample that has them.
func legacyMergeStacks(samples []StampedSample, o StackOptions) Stacks {
	if o.Frames == "" {
		o.Frames = "function"
	}
	out := Stacks{Frames: o.Frames, Classes: []StackClass{}, Ranks: []RankState{}}
	if o.Cut != nil {
		out.Cut = o.Cut.String()
	}
	w := legacyWindowOf(samples, o.Window)
	out.Samples = w.n
	sorted := append([]StampedSample(nil), samples...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	all, cur := legacyThreadTracks(sorted, w, o)
	alive := map[legacyProcKey]bool{}
	for _, tr := range cur {
		alive[legacyProcKey{tr.host, tr.pid}] = true
	}
	gall, gcur, unread, goProcs := legacyGoroutineTracks(sorted, w, o, alive)
	launchers := legacyLaunchersOf(sorted, w)
	legacySetRoles(all, launchers)
	legacySetRoles(gall, launchers)

	m := legacyMergeTracks(cur, all, w.qs, o, 1)
	out.Classes, out.Tree = m.classes, m.tree
	out.Ranks = legacyRankStates(cur, m.classOf)
	out.Lone, out.Culprit = legacyLoneRanks(m.root, m.classOf)
	out.Aside = legacyAsideOf(cur, m.classOf)
	if len(gcur) > 0 || len(unread) > 0 {
		g := legacyMergeTracks(gcur, gall, w.qs, o, len(out.Classes)+1)
		gs := &GoroutineStacks{Processes: goProcs, Count: len(gcur), Classes: g.classes, Tree: g.tree,
			Waits: legacyGoroutineWaits(gcur, g.classOf), Unread: unread, Aside: legacyAsideOf(gcur, g.classOf)}
		for _, tr := range gcur {
			if tr.system {
				gs.System++
			}
		}
		out.Goroutines = gs
	}
	return out
}

// legacyThreadTracks are the tracks of the threads in the window, in the order first seen (all),
// and those in their host's latest sample (cur).
func legacyThreadTracks(sorted []StampedSample, w legacySampleWindow, o StackOptions) (all, cur []*legacyThreadTrack) {
	type tkey struct {
		host string
		tid  int
	}
	tracks := map[tkey]*legacyThreadTrack{}
	var order []tkey
	for i := range sorted {
		s := &sorted[i]
		if !w.in[s.Host][s.Seq] {
			continue
		}
		exe := s.Exe
		if exe == "" {
			exe = mainModule(s.Sample) // a recording from before samples named it
		}
		for _, th := range s.Threads {
			k := tkey{s.Host, th.TID}
			tr := tracks[k]
			if tr == nil || tr.pid != s.PID {
				tr = &legacyThreadTrack{host: s.Host, pid: s.PID, tid: th.TID}
				if tracks[k] == nil {
					order = append(order, k)
				}
				tracks[k] = tr
			}
			tr.rank = s.Rank
			tr.add(s, path(th.Frames, o), o, len(th.Frames) > 0, "")
			tr.cpu = append(tr.cpu, th.CPU)
			tr.runNS = append(tr.runNS, th.RunNS)
			tr.state = th.State
			tr.syscall, tr.held, tr.whole = th.Syscall, th.Held, th.Held || th.Unstopped
			tr.own, tr.goRuntime = ownCode(th.Frames, exe), goRuntimeOnly(th.Frames)
		}
	}
	for _, k := range order {
		tr := tracks[k]
		all = append(all, tr)
		if tr.seqs[len(tr.seqs)-1] == w.latest[tr.host] {
			cur = append(cur, tr)
		}
	}
	return all, cur
}

// legacyGoroutineTracks are the tracks of the goroutines in the window (all), those of each live
// process's latest sample that has them (cur; a process's goroutines come after its threads,
// so its latest sample may not have them yet), the live Go processes whose latest reading of
// goroutines failed, and how many were read.
func legacyGoroutineTracks(sorted []StampedSample, w legacySampleWindow, o StackOptions, alive map[legacyProcKey]bool) (all, cur []*legacyThreadTrack, unread []GoroutinesUnread, procs int) {
	type gkey struct {
		host string
		pid  int
		id   int64
	}
	latest := map[legacyProcKey]*StampedSample{}
	tracks := map[gkey]*legacyThreadTrack{}
	var order []gkey
	for i := range sorted {
		s := &sorted[i]
		if !w.in[s.Host][s.Seq] || s.Go == nil {
			continue
		}
		latest[legacyProcKey{s.Host, s.PID}] = s
		for _, g := range s.Go.Goroutines {
			k := gkey{s.Host, s.PID, g.ID}
			tr := tracks[k]
			if tr == nil {
				tr = &legacyThreadTrack{host: s.Host, pid: s.PID, goroutine: true, gid: g.ID}
				tracks[k] = tr
				order = append(order, k)
			}
			tr.rank = s.Rank
			// The wait is part of the path's key: the same frames parked for another
			// reason are another place.
			tr.add(s, path(g.Frames, o), o, len(g.Frames) > 0, g.WaitReason+"\n")
			tr.cpu, tr.runNS = append(tr.cpu, 0), append(tr.runNS, 0)
			tr.status, tr.wait, tr.system, tr.created = g.Status, g.WaitReason, g.System, g.CreatedBy
			tr.whole = g.Note == ""
			tr.busy = tr.busy || (len(g.Frames) > 0 && goBusy(g.Status))
		}
	}
	var keys []legacyProcKey
	for k, s := range latest {
		if !alive[k] {
			continue
		}
		if s.Go.Note != "" {
			keys = append(keys, k)
			continue
		}
		procs++
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := latest[keys[i]], latest[keys[j]]
		return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID)
	})
	for _, k := range keys {
		s := latest[k]
		unread = append(unread, GoroutinesUnread{Host: s.Host, PID: s.PID, Rank: s.Rank, Note: s.Go.Note})
	}
	for _, k := range order {
		tr := tracks[k]
		all = append(all, tr)
		if s := latest[legacyProcKey{k.host, k.pid}]; alive[legacyProcKey{k.host, k.pid}] && tr.seqs[len(tr.seqs)-1] == s.Seq {
			cur = append(cur, tr)
		}
	}
	return all, cur, unread, procs
}

// mainModule is the module of the main thread's outermost frame: the executable (_start,
// Go's runtime.rt0_go), "" when that thread has no frames.
func legacyLaunchersOf(sorted []StampedSample, w legacySampleWindow) map[legacyProcKey]bool {
	parent := map[legacyProcKey]int{}
	rank := map[legacyProcKey]Rank{}
	known := false
	for i := range sorted {
		s := &sorted[i]
		if !w.in[s.Host][s.Seq] {
			continue
		}
		k := legacyProcKey{s.Host, s.PID}
		rank[k] = s.Rank
		if s.PPID != 0 {
			parent[k], known = s.PPID, true
		}
	}
	out := map[legacyProcKey]bool{}
	ranked := false
	for k, r := range rank {
		if r < 0 {
			continue
		}
		ranked = true
		at := k
		for range 64 { // a parent chain is short; a cycle (pid reuse) ends here
			pp, ok := parent[at]
			if !ok {
				break
			}
			at = legacyProcKey{k.host, pp}
			if ar, ok := rank[at]; ok && ar < 0 {
				out[at] = true
			}
		}
	}
	if !known && ranked {
		for k, r := range rank {
			if r < 0 {
				out[k] = true
			}
		}
	}
	return out
}

// legacySetRoles gives each track its role (RoleHelper, RoleLauncher), launchers being the
// launchers' processes. A thread with no stack read keeps the program's: nothing says it is
// a helper.
func legacySetRoles(tracks []*legacyThreadTrack, launchers map[legacyProcKey]bool) {
	for _, tr := range tracks {
		switch {
		case launchers[legacyProcKey{tr.host, tr.pid}]:
			tr.role = RoleLauncher
		case tr.goroutine:
			if tr.system {
				tr.role = RoleHelper
			}
		case tr.goRuntime:
			tr.role = RoleHelper // the Go runtime's own threads, the main one too: goroutines say more
		case !tr.isMain() && tr.framed[len(tr.framed)-1] && !tr.own:
			tr.role = RoleHelper
		}
	}
}

// combineProgress merges two progresses: a thread seen once (unknown) does not make its class
// mixed; stuck and moving do.
type legacyNodeAcc struct {
	n       *StackNode
	threads []*legacyThreadTrack
	kids    map[string]*legacyNodeAcc
	order   []string
}

// legacyMergedTracks are the classes and the tree of some tracks.
type legacyMergedTracks struct {
	classes []StackClass
	classOf map[*legacyThreadTrack]int
	tree    *StackNode
	root    *legacyNodeAcc
}

// legacyMergeTracks makes the classes (numbered from first) and the prefix tree of the current
// tracks cur; all are every track of the window (the sparks count them).
func legacyMergeTracks(cur, all []*legacyThreadTrack, qs []int, o StackOptions, first int) legacyMergedTracks {
	// Classes: distinct current paths, in one role (and, for goroutines, one status).
	type classAcc struct {
		c       *StackClass
		threads []*legacyThreadTrack
	}
	byKey := map[string]*classAcc{}
	var classes []*classAcc
	for _, tr := range cur {
		k := tr.role + "\x00" + tr.status + "\x00" + tr.keys[len(tr.keys)-1]
		ca := byKey[k]
		if ca == nil {
			ca = &classAcc{c: &StackClass{Role: tr.role, Status: tr.status, WaitReason: tr.wait}}
			for _, f := range tr.last {
				ca.c.Frames = append(ca.c.Frames, stackFrame(f))
			}
			byKey[k] = ca
			classes = append(classes, ca)
		}
		ca.threads = append(ca.threads, tr)
	}
	for _, ca := range classes {
		c := ca.c
		c.Count = len(ca.threads)
		var sys string
		created := ca.threads[0].created
		for i, tr := range ca.threads {
			c.Progress = combineProgress(c.Progress, tr.progress())
			if i == 0 {
				sys = tr.syscall
			} else if sys != tr.syscall {
				sys = ""
			}
			if created != nil && (tr.created == nil || stackFrame(*tr.created) != stackFrame(*created)) {
				created = nil
			}
			c.CPUTicks += tr.cpu[len(tr.cpu)-1] - tr.cpu[0]
			c.CPUShare += tr.cpuShare() / float64(len(ca.threads))
			c.Partial = c.Partial || !tr.whole
			if tr.isMain() {
				c.Main++
			}
		}
		if created != nil {
			f := stackFrame(*created)
			c.CreatedBy = &f
		}
		c.Syscall = sys
		c.Ranks, c.Unranked, c.PIDs, c.Hosts = legacyRankSet(ca.threads)
	}
	// The program's own threads first, the ranks' main threads first among them, then the
	// biggest.
	sort.SliceStable(classes, func(i, j int) bool {
		a, b := classes[i].c, classes[j].c
		if ra, rb := roleOrder(a.Role), roleOrder(b.Role); ra != rb {
			return ra < rb
		}
		if (a.Main > 0) != (b.Main > 0) {
			return a.Main > 0
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return legacyFirstRank(classes[i].threads) < legacyFirstRank(classes[j].threads)
	})
	// Threads on each path in each sample, from one pass over every track (the sparks).
	onPath := map[string]map[int]int{}
	for _, tr := range all {
		for j, k := range tr.keys {
			k = tr.role + "\x00" + k
			m := onPath[k]
			if m == nil {
				m = map[int]int{}
				onPath[k] = m
			}
			m[tr.seqs[j]]++
		}
	}
	out := legacyMergedTracks{classes: []StackClass{}, classOf: map[*legacyThreadTrack]int{}}
	for i, ca := range classes {
		ca.c.Class = first + i
		for _, tr := range ca.threads {
			out.classOf[tr] = first + i
		}
		if ca.c.Progress == Stuck || ca.c.Progress == Spinning {
			// Stuck since the oldest sample of the run of identical stacks its threads share.
			var since time.Time
			for _, tr := range ca.threads {
				j := len(tr.keys) - 1
				for j > 0 && tr.keys[j-1] == tr.keys[len(tr.keys)-1] {
					j--
				}
				if since.IsZero() || tr.times[j].After(since) {
					since = tr.times[j]
				}
			}
			if !since.IsZero() {
				s := since
				ca.c.Since = &s
			}
		}
		// Spark: threads on this path in each window sample, oldest first.
		t0 := ca.threads[0]
		counts := onPath[t0.role+"\x00"+t0.keys[len(t0.keys)-1]]
		for _, q := range qs {
			ca.c.Spark = append(ca.c.Spark, counts[q])
		}
		out.classes = append(out.classes, *ca.c)
	}

	// The prefix tree; its outermost frames are split by role, so that a branch is all the
	// program's, or all helpers', or all the launcher's.
	root := &StackNode{Label: "/"}
	rootAcc := &legacyNodeAcc{n: root, kids: map[string]*legacyNodeAcc{}}
	for _, ca := range classes {
		for _, tr := range ca.threads {
			at := rootAcc
			at.threads = append(at.threads, tr)
			for i, f := range tr.last {
				k, label := frameKey(f, o.Frames)
				if i == 0 {
					k = tr.role + "\x00" + k
				}
				next := at.kids[k]
				if next == nil {
					next = &legacyNodeAcc{n: &StackNode{Label: label, Frame: stackFrame(f), Role: tr.role}, kids: map[string]*legacyNodeAcc{}}
					at.kids[k] = next
					at.order = append(at.order, k)
				}
				next.threads = append(next.threads, tr)
				at = next
			}
		}
	}
	var build func(a *legacyNodeAcc, top bool)
	build = func(a *legacyNodeAcc, top bool) {
		n := a.n
		n.Count = len(a.threads)
		n.Ranks, n.Unranked, n.PIDs, _ = legacyRankSet(a.threads)
		seen := map[int]bool{}
		for _, tr := range a.threads {
			n.Progress = combineProgress(n.Progress, tr.progress())
			n.CPUShare += tr.cpuShare() / float64(len(a.threads))
			if c := out.classOf[tr]; !seen[c] {
				seen[c] = true
				n.Classes = append(n.Classes, c)
			}
		}
		sort.Ints(n.Classes)
		kids := make([]*legacyNodeAcc, 0, len(a.order))
		for _, k := range a.order {
			kids = append(kids, a.kids[k])
		}
		sort.SliceStable(kids, func(i, j int) bool {
			if top {
				// The program's branches first, those of the main threads first among them.
				if ri, rj := roleOrder(kids[i].n.Role), roleOrder(kids[j].n.Role); ri != rj {
					return ri < rj
				}
				if mi, mj := legacyAnyMain(kids[i].threads), legacyAnyMain(kids[j].threads); mi != mj {
					return mi
				}
			}
			return len(kids[i].threads) > len(kids[j].threads)
		})
		for _, k := range kids {
			build(k, false)
			n.Children = append(n.Children, k.n)
		}
	}
	build(rootAcc, true)
	if root.Progress == "" {
		root.Progress = Unknown
	}
	out.tree, out.root = root, rootAcc
	return out
}

// legacyAsideOf sums up the tracks with a role (nil when none has one).
func legacyAsideOf(cur []*legacyThreadTrack, classOf map[*legacyThreadTrack]int) *Aside {
	var ts []*legacyThreadTrack
	a := &Aside{}
	for _, tr := range cur {
		switch tr.role {
		case RoleHelper:
			a.Helpers++
		case RoleLauncher:
			a.Launcher++
		default:
			continue
		}
		ts = append(ts, tr)
	}
	if len(ts) == 0 {
		return nil
	}
	a.Count = len(ts)
	for _, tr := range ts {
		a.Progress = combineProgress(a.Progress, tr.progress())
		a.CPUShare += tr.cpuShare() / float64(len(ts))
		if c := classOf[tr]; !containsInt(a.Classes, c) {
			a.Classes = append(a.Classes, c)
		}
	}
	sort.Ints(a.Classes)
	a.Ranks, a.Unranked, a.PIDs, _ = legacyRankSet(ts)
	return a
}

func legacyAnyMain(ts []*legacyThreadTrack) bool {
	for _, t := range ts {
		if t.isMain() {
			return true
		}
	}
	return false
}

// legacyRankStates are each process's progress, in rank order.
func legacyRankStates(cur []*legacyThreadTrack, classOf map[*legacyThreadTrack]int) []RankState {
	type acc struct {
		rs           RankState
		own, helpers string
		any          bool // it has threads that are not helpers
	}
	procs := map[legacyProcKey]*acc{}
	var order []legacyProcKey
	for _, tr := range cur {
		k := legacyProcKey{tr.host, tr.pid}
		a := procs[k]
		if a == nil {
			a = &acc{rs: RankState{Host: tr.host, PID: tr.pid, Rank: tr.rank}}
			procs[k] = a
			order = append(order, k)
		}
		if tr.role == RoleHelper {
			a.helpers = combineProgress(a.helpers, tr.progress())
		} else {
			a.own, a.any = combineProgress(a.own, tr.progress()), true
		}
		a.rs.Launcher = a.rs.Launcher || tr.role == RoleLauncher
		if c := classOf[tr]; !containsInt(a.rs.Classes, c) {
			a.rs.Classes = append(a.rs.Classes, c)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := procs[order[i]].rs, procs[order[j]].rs
		return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID)
	})
	out := make([]RankState, 0, len(order))
	for _, k := range order {
		a := procs[k]
		a.rs.Progress = a.own
		if !a.any {
			a.rs.Progress = a.helpers
		}
		sort.Ints(a.rs.Classes)
		out = append(out, a.rs)
	}
	return out
}

// legacyLoneRanks are the processes alone on their branch at the first frame where the program's
// paths part, and the culprit among them.
func legacyLoneRanks(rootAcc *legacyNodeAcc, classOf map[*legacyThreadTrack]int) ([]LoneRank, *LoneRank) {
	var lone []LoneRank
	procsOf := func(a *legacyNodeAcc) map[legacyProcKey]bool {
		m := map[legacyProcKey]bool{}
		for _, tr := range a.threads {
			m[legacyProcKey{tr.host, tr.pid}] = true
		}
		return m
	}
	// Each outermost frame (a thread entry point of one executable) is its own tree: the
	// paths part somewhere below it, and a process alone on one of the branches there is
	// lone. Helpers' and the launcher's branches tell nothing of the ranks' own waits.
	for _, rk := range rootAcc.order {
		at := rootAcc.kids[rk]
		if at.n.Role != "" {
			continue
		}
		for len(at.order) == 1 && len(at.kids[at.order[0]].threads) == len(at.threads) {
			at = at.kids[at.order[0]]
		}
		if len(at.order) < 2 {
			continue
		}
		total := len(procsOf(at))
		// Each branch's processes, and on how many branches each process has threads.
		sets := make([]map[legacyProcKey]bool, len(at.order))
		branches := map[legacyProcKey]int{}
		for i, k := range at.order {
			sets[i] = procsOf(at.kids[k])
			for p := range sets[i] {
				branches[p]++
			}
		}
		for i, k := range at.order {
			kid := at.kids[k]
			ps := sets[i]
			if len(ps) != 1 || total-1 < 2 {
				continue
			}
			var only legacyProcKey
			for p := range ps {
				only = p
			}
			if branches[only] > 1 {
				continue // a process with threads on the other branches too is not alone
			}
			tr := kid.threads[0]
			prog, sys := "", tr.syscall
			for _, x := range kid.threads {
				prog = combineProgress(prog, x.progress())
				if x.syscall != sys {
					sys = ""
				}
			}
			lone = append(lone, LoneRank{Host: only.host, PID: only.pid, Rank: tr.rank,
				Class: classOf[tr], At: at.n.Label, Into: kid.n.Label, Others: total - 1,
				Progress: prog, Syscall: sys})
		}
	}
	sort.SliceStable(lone, func(i, j int) bool { return lone[i].Rank < lone[j].Rank })
	// The culprit stays where it is: blocked, or spinning there (an MPI library's progress
	// loop polls at full CPU in a deadlock as much as a blocked read waits).
	// A lone rank blocked outranks a lone rank spinning: beside a receive nobody sends, the
	// rank that computes on one path is the one the others wait for only if nothing else is
	// blocked.
	stuck, spinning := lonely(lone, Stuck), lonely(lone, Spinning)
	switch {
	case len(lone) == 1 && !TimedWait(lone[0].Syscall):
		l := lone[0]
		return lone, &l
	case len(stuck) == 1:
		return lone, &stuck[0]
	case len(stuck) == 0 && len(spinning) == 1:
		return lone, &spinning[0]
	}
	return lone, nil
}

// legacyGoroutineWaits counts the goroutines that are not the runtime's by status and wait.
func legacyGoroutineWaits(cur []*legacyThreadTrack, classOf map[*legacyThreadTrack]int) []GoroutineWait {
	type acc struct {
		w       GoroutineWait
		threads []*legacyThreadTrack
	}
	by := map[string]*acc{}
	var order []*acc
	for _, tr := range cur {
		if tr.role != "" {
			continue
		}
		k := tr.status + "\x00" + tr.wait
		a := by[k]
		if a == nil {
			a = &acc{w: GoroutineWait{Status: tr.status, WaitReason: tr.wait}}
			by[k] = a
			order = append(order, a)
		}
		a.threads = append(a.threads, tr)
		a.w.Progress = combineProgress(a.w.Progress, tr.progress())
		if c := classOf[tr]; !containsInt(a.w.Classes, c) {
			a.w.Classes = append(a.w.Classes, c)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		if len(order[i].threads) != len(order[j].threads) {
			return len(order[i].threads) > len(order[j].threads)
		}
		return order[i].w.Status+order[i].w.WaitReason < order[j].w.Status+order[j].w.WaitReason
	})
	out := make([]GoroutineWait, 0, len(order))
	for _, a := range order {
		a.w.Count = len(a.threads)
		a.w.Ranks, a.w.Unranked, _, _ = legacyRankSet(a.threads)
		sort.Ints(a.w.Classes)
		out = append(out, a.w)
	}
	return out
}

// progress is the thread's progress over its samples (see Stuck); a goroutine has no CPU
// counters of its own: on the same path every time it is spinning if it was on a CPU or
// ready for one, else stuck.
func (tr *legacyThreadTrack) progress() string {
	if tr.state == "T" || tr.state == "t" {
		return Stopped
	}
	first, last := tr.framedRange()
	if first < 0 || first == last {
		return Unknown
	}
	for j := first + 1; j <= last; j++ {
		if tr.framed[j] && tr.keys[j] != tr.keys[first] {
			return Moving
		}
	}
	if tr.goroutine {
		if tr.busy {
			return Spinning
		}
		return Stuck
	}
	if tr.cpuShare() >= SpinShare {
		return Spinning
	}
	return Stuck
}

// framedRange is the first and the last of the thread's samples that read a stack (-1s when
// none did).
func (tr *legacyThreadTrack) framedRange() (first, last int) {
	first, last = -1, -1
	for j, ok := range tr.framed {
		if ok {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	return first, last
}

// cpuShare is the share of one CPU the thread used between its first and last sample: its
// run time from schedstat when both have it, else its stat ticks (USER_HZ, 100 a second).
func (tr *legacyThreadTrack) cpuShare() float64 {
	n := len(tr.times)
	if n < 2 {
		return 0
	}
	wall := tr.times[n-1].Sub(tr.times[0])
	if wall <= 0 {
		return 0
	}
	var used time.Duration
	if tr.runNS[0] > 0 && tr.runNS[n-1] >= tr.runNS[0] {
		used = time.Duration(tr.runNS[n-1] - tr.runNS[0])
	} else if tr.cpu[n-1] >= tr.cpu[0] {
		used = time.Duration(tr.cpu[n-1]-tr.cpu[0]) * 10 * time.Millisecond
	}
	return float64(used) / float64(wall)
}

func legacyFirstRank(ts []*legacyThreadTrack) int {
	best := int(^uint(0) >> 1)
	for _, t := range ts {
		v := int(t.rank)
		if t.rank < 0 {
			v = 1<<30 + t.pid
		}
		best = min(best, v)
	}
	return best
}

// legacyRankSet is the compressed rank set of some threads ("0-3,5"), apart from the processes
// without a rank by pid ("412,418", host:pid across hosts), and their pids (one per process)
// with hosts when there are several.
func legacyRankSet(ts []*legacyThreadTrack) (ranks, unranked string, pids []int, hosts []string) {
	type pk struct {
		host string
		pid  int
	}
	seen := map[pk]bool{}
	var rs []int
	var others []pk
	multi := false
	for _, t := range ts {
		k := pk{t.host, t.pid}
		if seen[k] {
			continue
		}
		seen[k] = true
		pids = append(pids, t.pid)
		hosts = append(hosts, t.host)
		multi = multi || t.host != ""
		if t.rank >= 0 {
			rs = append(rs, int(t.rank))
		} else {
			others = append(others, k)
		}
	}
	// By host, then pid: the same however the streams interleaved.
	idx := make([]int, len(pids))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		if hosts[idx[a]] != hosts[idx[b]] {
			return hosts[idx[a]] < hosts[idx[b]]
		}
		return pids[idx[a]] < pids[idx[b]]
	})
	sp, sh := make([]int, len(pids)), make([]string, len(pids))
	for i, j := range idx {
		sp[i], sh[i] = pids[j], hosts[j]
	}
	pids, hosts = sp, sh
	if !multi {
		hosts = nil
	}
	sort.Slice(others, func(a, b int) bool {
		if others[a].host != others[b].host {
			return others[a].host < others[b].host
		}
		return others[a].pid < others[b].pid
	})
	var b strings.Builder
	for i, o := range others {
		if i > 0 {
			b.WriteByte(',')
		}
		if o.host != "" {
			b.WriteString(o.host + ":")
		}
		b.WriteString(strconv.Itoa(o.pid))
	}
	return CompressInts(rs), b.String(), pids, hosts
}

// CompressInts writes a set of integers as ranges: 0-63,65,70-127.
