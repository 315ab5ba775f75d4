package sessions

// The MergeStacks that the sample store replaced, kept as the oracle of
// TestMergeStacksAsBefore: the same samples must give the same classes, tree and ranks.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

type legacyTrack struct {
	host    string
	pid     int
	rank    Rank
	tid     int
	keys    []string // path key per sample, oldest first
	exact   []string // exact PCs per sample
	times   []time.Time
	cpu     []uint64
	seqs    []int
	last    []Frame
	syscall string
	held    bool
}

// legacyMergeStacks merges samples into the prefix tree, the classes and each process's progress.
// Only threads in their host's latest sample are placed (where every rank is now); the older
// samples decide stuck or moving.
func legacyMergeStacks(samples []StampedSample, o StackOptions) Stacks {
	if o.Frames == "" {
		o.Frames = "function"
	}
	out := Stacks{Frames: o.Frames, Classes: []StackClass{}, Ranks: []RankState{}}
	if o.Cut != nil {
		out.Cut = o.Cut.String()
	}
	latest := map[string]int{} // host -> latest seq
	seqs := map[string]map[int]bool{}
	for _, s := range samples {
		if s.Seq > latest[s.Host] {
			latest[s.Host] = s.Seq
		}
		if seqs[s.Host] == nil {
			seqs[s.Host] = map[int]bool{}
		}
		seqs[s.Host][s.Seq] = true
	}
	// Which seqs count: each host's last Window.
	window := map[string]map[int]bool{}
	for h, set := range seqs {
		list := make([]int, 0, len(set))
		for q := range set {
			list = append(list, q)
		}
		sort.Ints(list)
		if o.Window > 0 && len(list) > o.Window {
			list = list[len(list)-o.Window:]
		}
		window[h] = map[int]bool{}
		for _, q := range list {
			window[h][q] = true
		}
		out.Samples = max(out.Samples, len(list))
	}
	sorted := append([]StampedSample(nil), samples...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	type tkey struct {
		host string
		tid  int
	}
	tracks := map[tkey]*legacyTrack{}
	var order []tkey
	for _, s := range sorted {
		if !window[s.Host][s.Seq] {
			continue
		}
		for _, th := range s.Threads {
			k := tkey{s.Host, th.TID}
			tr := tracks[k]
			if tr == nil || tr.pid != s.PID {
				tr = &legacyTrack{host: s.Host, pid: s.PID, tid: th.TID}
				if tracks[k] == nil {
					order = append(order, k)
				}
				tracks[k] = tr
			}
			tr.rank = s.Rank
			p := path(th.Frames, o)
			var key, exact strings.Builder
			for _, f := range p {
				k, _ := frameKey(f, o.Frames)
				key.WriteString(k)
				key.WriteByte('\n')
				fmt.Fprintf(&exact, "%x;", uint64(f.PC))
			}
			tr.keys = append(tr.keys, key.String())
			tr.exact = append(tr.exact, exact.String())
			tr.times = append(tr.times, s.Time)
			tr.cpu = append(tr.cpu, th.CPU)
			tr.seqs = append(tr.seqs, s.Seq)
			tr.last, tr.syscall, tr.held = p, th.Syscall, th.Held
		}
	}
	// Current threads: present in their host's latest sample.
	var cur []*legacyTrack
	for _, k := range order {
		tr := tracks[k]
		if tr.seqs[len(tr.seqs)-1] == latest[tr.host] {
			cur = append(cur, tr)
		}
	}
	progress := func(tr *legacyTrack) string {
		if len(tr.exact) < 2 {
			return Unknown
		}
		for _, e := range tr.exact[1:] {
			if e != tr.exact[0] {
				return Moving
			}
		}
		return Stuck
	}
	// combine merges two progresses: a thread seen once (unknown) does not make its class
	// mixed; stuck and moving do.
	combine := func(a, b string) string {
		switch {
		case a == "" || a == Unknown:
			return b
		case b == Unknown || a == b:
			return a
		}
		return Mixed
	}

	// Classes: distinct current paths.
	type classAcc struct {
		c       *StackClass
		threads []*legacyTrack
	}
	byKey := map[string]*classAcc{}
	var classes []*classAcc
	for _, tr := range cur {
		k := tr.keys[len(tr.keys)-1]
		ca := byKey[k]
		if ca == nil {
			ca = &classAcc{c: &StackClass{}}
			for _, f := range tr.last {
				ca.c.Frames = append(ca.c.Frames, legacyStackFrame(f))
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
		for i, tr := range ca.threads {
			c.Progress = combine(c.Progress, progress(tr))
			if i == 0 {
				sys = tr.syscall
			} else if sys != tr.syscall {
				sys = ""
			}
			c.CPUTicks += tr.cpu[len(tr.cpu)-1] - tr.cpu[0]
			c.Partial = c.Partial || !tr.held
		}
		c.Syscall = sys
		c.Ranks, c.PIDs, c.Hosts = legacyRankSet(ca.threads)
	}
	sort.SliceStable(classes, func(i, j int) bool {
		a, b := classes[i], classes[j]
		if a.c.Count != b.c.Count {
			return a.c.Count > b.c.Count
		}
		return legacyFirstRank(a.threads) < legacyFirstRank(b.threads)
	})
	// Threads on each path in each sample, from one pass over every track (the sparks).
	onPath := map[string]map[int]int{}
	for _, tr := range tracks {
		for j, k := range tr.keys {
			m := onPath[k]
			if m == nil {
				m = map[int]int{}
				onPath[k] = m
			}
			m[tr.seqs[j]]++
		}
	}
	// The window's seqs, oldest first: a spark has one count for each.
	var qs []int
	for h := range window {
		for q := range window[h] {
			qs = append(qs, q)
		}
	}
	sort.Ints(qs)
	qs = legacyCompactInts(qs)
	classOf := map[*legacyTrack]int{}
	for i, ca := range classes {
		ca.c.Class = i + 1
		for _, tr := range ca.threads {
			classOf[tr] = i + 1
		}
		if ca.c.Progress == Stuck {
			// Stuck since the oldest sample of the run of identical stacks its threads share.
			var since time.Time
			for _, tr := range ca.threads {
				j := len(tr.exact) - 1
				for j > 0 && tr.exact[j-1] == tr.exact[len(tr.exact)-1] {
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
		var counts map[int]int
		if len(ca.threads) > 0 {
			counts = onPath[ca.threads[0].keys[len(ca.threads[0].keys)-1]]
		}
		for _, q := range qs {
			ca.c.Spark = append(ca.c.Spark, counts[q])
		}
		out.Classes = append(out.Classes, *ca.c)
	}

	// The prefix tree.
	root := &StackNode{Label: "/"}
	type nodeAcc struct {
		n       *StackNode
		threads []*legacyTrack
		kids    map[string]*nodeAcc
		order   []string
	}
	rootAcc := &nodeAcc{n: root, kids: map[string]*nodeAcc{}}
	for _, ca := range classes {
		for _, tr := range ca.threads {
			at := rootAcc
			at.threads = append(at.threads, tr)
			for _, f := range tr.last {
				k, label := frameKey(f, o.Frames)
				next := at.kids[k]
				if next == nil {
					next = &nodeAcc{n: &StackNode{Label: label, Frame: legacyStackFrame(f)}, kids: map[string]*nodeAcc{}}
					at.kids[k] = next
					at.order = append(at.order, k)
				}
				next.threads = append(next.threads, tr)
				at = next
			}
		}
	}
	var build func(a *nodeAcc)
	build = func(a *nodeAcc) {
		n := a.n
		n.Count = len(a.threads)
		n.Ranks, n.PIDs, _ = legacyRankSet(a.threads)
		seen := map[int]bool{}
		for _, tr := range a.threads {
			n.Progress = combine(n.Progress, progress(tr))
			if c := classOf[tr]; !seen[c] {
				seen[c] = true
				n.Classes = append(n.Classes, c)
			}
		}
		sort.Ints(n.Classes)
		kids := make([]*nodeAcc, 0, len(a.order))
		for _, k := range a.order {
			kids = append(kids, a.kids[k])
		}
		sort.SliceStable(kids, func(i, j int) bool { return len(kids[i].threads) > len(kids[j].threads) })
		for _, k := range kids {
			build(k)
			n.Children = append(n.Children, k.n)
		}
	}
	build(rootAcc)
	if root.Progress == "" {
		root.Progress = Unknown
	}
	out.Tree = root

	// Each process's progress.
	type pkey struct {
		host string
		pid  int
	}
	procAcc := map[pkey]*RankState{}
	var porder []pkey
	for _, tr := range cur {
		k := pkey{tr.host, tr.pid}
		rs := procAcc[k]
		if rs == nil {
			rs = &RankState{Host: tr.host, PID: tr.pid, Rank: tr.rank}
			procAcc[k] = rs
			porder = append(porder, k)
		}
		rs.Progress = combine(rs.Progress, progress(tr))
		if c := classOf[tr]; !legacyContainsInt(rs.Classes, c) {
			rs.Classes = append(rs.Classes, c)
		}
	}
	sort.SliceStable(porder, func(i, j int) bool {
		a, b := procAcc[porder[i]], procAcc[porder[j]]
		return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID)
	})
	for _, k := range porder {
		rs := procAcc[k]
		sort.Ints(rs.Classes)
		out.Ranks = append(out.Ranks, *rs)
	}

	// Lone processes at the first frame where the paths part.
	procsOf := func(a *nodeAcc) map[pkey]bool {
		m := map[pkey]bool{}
		for _, tr := range a.threads {
			m[pkey{tr.host, tr.pid}] = true
		}
		return m
	}
	// Each outermost frame (a thread entry point of one executable) is its own tree: the
	// paths part somewhere below it, and a process alone on one of the branches there is lone.
	for _, rk := range rootAcc.order {
		at := rootAcc.kids[rk]
		for len(at.order) == 1 && len(at.kids[at.order[0]].threads) == len(at.threads) {
			at = at.kids[at.order[0]]
		}
		if len(at.order) < 2 {
			continue
		}
		total := len(procsOf(at))
		// Each branch's processes, and on how many branches each process has threads.
		sets := make([]map[pkey]bool, len(at.order))
		branches := map[pkey]int{}
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
			var only pkey
			for p := range ps {
				only = p
			}
			if branches[only] > 1 {
				continue // a process with threads on the other branches too is not alone
			}
			tr := kid.threads[0]
			prog, sys := "", tr.syscall
			for _, x := range kid.threads {
				prog = combine(prog, progress(x))
				if x.syscall != sys {
					sys = ""
				}
			}
			out.Lone = append(out.Lone, LoneRank{Host: only.host, PID: only.pid, Rank: tr.rank,
				Class: classOf[tr], At: at.n.Label, Into: kid.n.Label, Others: total - 1,
				Progress: prog, Syscall: sys})
		}
	}
	sort.SliceStable(out.Lone, func(i, j int) bool { return out.Lone[i].Rank < out.Lone[j].Rank })
	switch stuck := legacyLonely(out.Lone, Stuck); {
	case len(out.Lone) == 1 && !TimedWait(out.Lone[0].Syscall):
		l := out.Lone[0]
		out.Culprit = &l
	case len(stuck) == 1:
		out.Culprit = &stuck[0]
	}
	return out
}

func legacyStackFrame(f Frame) StackFrame {
	return StackFrame{Function: f.Function, Module: f.Module, Offset: f.Offset, File: f.File,
		Line: f.Line, FuncOff: f.FuncOff}
}

// lonely are the lone ranks with that progress; a stuck one only if it is not merely
// sleeping (TimedWait).
func legacyLonely(l []LoneRank, progress string) []LoneRank {
	var out []LoneRank
	for _, x := range l {
		if x.Progress == progress && !(progress == Stuck && TimedWait(x.Syscall)) {
			out = append(out, x)
		}
	}
	return out
}

func legacyContainsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func legacyCompactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func legacyFirstRank(ts []*legacyTrack) int {
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

// rankSet is the compressed rank set of some threads ("0-3,5"), processes without a rank by
// pid ("pid 412,418"), and their pids (one per process) with hosts when there are several.
func legacyRankSet(ts []*legacyTrack) (string, []int, []string) {
	type pk struct {
		host string
		pid  int
	}
	seen := map[pk]bool{}
	var ranks []int
	var unranked []string
	var pids []int
	var hosts []string
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
			ranks = append(ranks, int(t.rank))
		} else if t.host != "" {
			unranked = append(unranked, t.host+":"+strconv.Itoa(t.pid))
		} else {
			unranked = append(unranked, strconv.Itoa(t.pid))
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
	s := CompressInts(ranks)
	if len(unranked) > 0 {
		sort.Strings(unranked)
		if s != "" {
			s += " "
		}
		s += "pid " + strings.Join(unranked, ",")
	}
	return s, pids, hosts
}
