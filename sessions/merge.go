package sessions

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MergeStacks merges samples into the prefix tree, the classes and each process's progress.
// Only threads in their host's latest sample are placed (where every rank is now); the older
// samples decide stuck or moving.
func MergeStacks(samples []StampedSample, o StackOptions) Stacks {
	st := newSampleStore()
	// In the order of their samples: what the merge lists first when counts tie.
	sorted := slices.Clone(samples)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	for _, s := range sorted {
		st.add(s.Host, s.Time, s.Sample, s.Rank)
	}
	return st.merge(o)
}

// MaxListedPIDs bounds the pids a merged class or tree node lists (the first, by host and
// pid); its count and rank set say how many there are.
const MaxListedPIDs = 256

// threadTrack is one thread over the samples in the window.
type threadTrack struct {
	host     string
	pid      int
	rank     Rank
	tid      int
	keys     []uint32 // path key per sample, oldest first (pathInfo.key)
	exact    []uint32 // exact pcs of the path per sample (pathInfo.exact)
	times    []int64
	cpu      []uint64
	seqs     []int32
	last     uint32 // its latest stack
	syscall  string
	held     bool
	progress string
}

// pathInfo is what a stack is under the merge's options: its path (after hide and cut, root
// first), the path's key at the chosen granularity and its exact pcs, both interned.
type pathInfo struct {
	path       []Frame
	key, exact uint32
}

// merge is MergeStacks of the store's samples.
func (st *sampleStore) merge(o StackOptions) Stacks {
	out, _ := st.mergeFull(o, true)
	return out
}

// mergeFull is merge, with its classes as a reducer passes them on; without tree only the
// classes and the count of processes (what a reducer sends: the tree is built at the top).
func (st *sampleStore) mergeFull(o StackOptions, tree bool) (Stacks, []ReducedClass) {
	if o.Frames == "" {
		o.Frames = "function"
	}
	out := Stacks{Frames: o.Frames, Classes: []StackClass{}, Ranks: []RankState{}}
	if o.Cut != nil {
		out.Cut = o.Cut.String()
	}
	window, latest, qs := st.window(o, &out)
	m := newMerger(st, o)
	tracks := m.tracks(window)
	// Current threads: present in their host's latest sample.
	var cur []*threadTrack
	for _, tr := range tracks {
		if tr.seqs[len(tr.seqs)-1] == latest[tr.host] {
			cur = append(cur, tr)
		}
	}
	for _, tr := range tracks {
		tr.progress = trackProgress(tr)
	}
	classes := m.classes(cur, tracks, qs)
	classOf := map[*threadTrack]int{}
	for i, ca := range classes {
		for _, tr := range ca.threads {
			classOf[tr] = i + 1
		}
		out.Classes = append(out.Classes, *ca.c)
	}
	if tree {
		root, rootAcc := m.tree(classes, classOf)
		out.Tree = root
		out.Ranks = rankStates(cur, classOf)
		out.Processes = len(out.Ranks)
		out.Lone = loneRanks(rootAcc, classOf)
		out.Culprit = culprit(out.Lone)
	} else {
		procs := map[pkey]bool{}
		for _, tr := range cur {
			procs[pkey{tr.host, tr.pid}] = true
		}
		out.Processes = len(procs)
	}
	parts := make([]ReducedClass, len(classes))
	for i, ca := range classes {
		c := ca.c
		parts[i] = ReducedClass{Frames: c.Frames, Count: c.Count, Procs: ca.rs.procs, Ranks: ca.rs.set,
			Unranked: ca.rs.unranked, Hosts: ca.rs.hostSet, Progress: c.Progress, Syscall: c.Syscall, Since: c.Since,
			CPUTicks: c.CPUTicks, Partial: c.Partial, Spark: c.Spark, Members: ca.rs.members}
	}
	return out, parts
}

// window picks each host's last o.Window seqs (all that are kept when 0); it returns them,
// each host's latest seq and every seq in a window, sorted (a spark has one count for each).
func (st *sampleStore) window(o StackOptions, out *Stacks) (map[string]map[int32]bool, map[string]int32, []int32) {
	seqs := map[string]map[int32]bool{}
	latest := map[string]int32{}
	for i := range st.procs {
		p := &st.procs[i]
		set := seqs[p.host]
		if set == nil {
			set = map[int32]bool{}
			seqs[p.host] = set
		}
		for j, t := range p.threads {
			if j == 0 || t.seq != p.threads[j-1].seq {
				set[t.seq] = true
				if t.seq > latest[p.host] {
					latest[p.host] = t.seq
				}
			}
		}
	}
	window := map[string]map[int32]bool{}
	var qs []int32
	for h, set := range seqs {
		list := make([]int32, 0, len(set))
		for q := range set {
			list = append(list, q)
		}
		slices.Sort(list)
		if o.Window > 0 && len(list) > o.Window {
			list = list[len(list)-o.Window:]
		}
		window[h] = map[int32]bool{}
		for _, q := range list {
			window[h][q] = true
		}
		qs = append(qs, list...)
		out.Samples = max(out.Samples, len(list))
	}
	slices.Sort(qs)
	return window, latest, slices.Compact(qs)
}

// merger holds what one merge derives from the store's stacks.
type merger struct {
	st   *sampleStore
	o    StackOptions
	info map[uint32]*pathInfo
	ids  map[string]uint32 // interned keys and exact pc lists
}

func newMerger(st *sampleStore, o StackOptions) *merger {
	return &merger{st: st, o: o, info: map[uint32]*pathInfo{}, ids: map[string]uint32{}}
}

func (m *merger) intern(s string) uint32 {
	if id, ok := m.ids[s]; ok {
		return id
	}
	id := uint32(len(m.ids))
	m.ids[s] = id
	return id
}

// path is the pathInfo of stack id, computed once per merge.
func (m *merger) path(id uint32) *pathInfo {
	if pi := m.info[id]; pi != nil {
		return pi
	}
	p := path(m.st.tab.stacks[id], m.o)
	var key, exact strings.Builder
	for _, f := range p {
		k, _ := frameKey(f, m.o.Frames)
		key.WriteString(k)
		key.WriteByte('\n')
		fmt.Fprintf(&exact, "%x;", uint64(f.PC))
	}
	pi := &pathInfo{path: p, key: m.intern("k" + key.String()), exact: m.intern("x" + exact.String())}
	m.info[id] = pi
	return pi
}

// tracks are the threads of the samples in the window, in the order of their first sample
// (and of the processes' first samples when those tie), as the merge lists them.
func (m *merger) tracks(window map[string]map[int32]bool) []*threadTrack {
	// Every record in the window, sample by sample: a tid that a later process reuses
	// (after the first one ended) is that process's thread from then on.
	type ref struct{ p, t int32 }
	var refs []ref
	for i := range m.st.procs {
		p := &m.st.procs[i]
		in := window[p.host]
		for j, t := range p.threads {
			if in[t.seq] {
				refs = append(refs, ref{int32(i), int32(j)})
			}
		}
	}
	sort.SliceStable(refs, func(a, b int) bool {
		return m.st.procs[refs[a].p].threads[refs[a].t].seq < m.st.procs[refs[b].p].threads[refs[b].t].seq
	})
	type tkey struct {
		host string
		tid  int32
	}
	byKey := map[tkey]*threadTrack{}
	var order []tkey
	for _, r := range refs {
		p := &m.st.procs[r.p]
		t := p.threads[r.t]
		k := tkey{p.host, t.tid}
		tr := byKey[k]
		if tr == nil || tr.pid != int(p.pid) {
			if tr == nil {
				order = append(order, k)
			}
			tr = &threadTrack{host: p.host, pid: int(p.pid), tid: int(t.tid)}
			byKey[k] = tr
		}
		pi := m.path(t.stack)
		tr.rank = Rank(t.rank)
		tr.keys = append(tr.keys, pi.key)
		tr.exact = append(tr.exact, pi.exact)
		tr.times = append(tr.times, t.time)
		tr.cpu = append(tr.cpu, t.cpu)
		tr.seqs = append(tr.seqs, t.seq)
		tr.last, tr.syscall, tr.held = t.stack, m.st.sys[t.sys], t.held
	}
	out := make([]*threadTrack, len(order))
	for i, k := range order {
		out[i] = byKey[k]
	}
	return out
}

// trackProgress: the same exact path every sample is stuck, a change moving, one sample
// unknown.
func trackProgress(tr *threadTrack) string {
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

// combine merges two progresses: a thread seen once (unknown) does not make its class mixed;
// stuck and moving do.
func combine(a, b string) string {
	switch {
	case a == "" || a == Unknown:
		return b
	case b == Unknown || a == b:
		return a
	}
	return Mixed
}

// classAcc is one class and its current threads.
type classAcc struct {
	c       *StackClass
	threads []*threadTrack
	rs      threadRanks
}

// classes are the distinct current paths, the largest first, numbered from 1.
func (m *merger) classes(cur, all []*threadTrack, qs []int32) []*classAcc {
	byKey := map[uint32]*classAcc{}
	var classes []*classAcc
	for _, tr := range cur {
		k := tr.keys[len(tr.keys)-1]
		ca := byKey[k]
		if ca == nil {
			ca = &classAcc{c: &StackClass{}}
			for _, f := range m.path(tr.last).path {
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
		for i, tr := range ca.threads {
			c.Progress = combine(c.Progress, tr.progress)
			if i == 0 {
				sys = tr.syscall
			} else if sys != tr.syscall {
				sys = ""
			}
			c.CPUTicks += tr.cpu[len(tr.cpu)-1] - tr.cpu[0]
			c.Partial = c.Partial || !tr.held
		}
		c.Syscall = sys
		rs := rankSet(ca.threads)
		c.Ranks, c.PIDs, c.Hosts = rs.text, rs.pids, rs.hosts
		ca.rs = rs
	}
	sort.SliceStable(classes, func(i, j int) bool {
		a, b := classes[i], classes[j]
		if a.c.Count != b.c.Count {
			return a.c.Count > b.c.Count
		}
		return firstRank(a.threads) < firstRank(b.threads)
	})
	// Threads on each path in each sample, from one pass over every track (the sparks).
	onPath := map[uint32]map[int32]int{}
	for _, tr := range all {
		for j, k := range tr.keys {
			c := onPath[k]
			if c == nil {
				c = map[int32]int{}
				onPath[k] = c
			}
			c[tr.seqs[j]]++
		}
	}
	for i, ca := range classes {
		ca.c.Class = i + 1
		if ca.c.Progress == Stuck {
			// Stuck since the oldest sample of the run of identical stacks its threads share.
			var since int64
			for _, tr := range ca.threads {
				j := len(tr.exact) - 1
				for j > 0 && tr.exact[j-1] == tr.exact[len(tr.exact)-1] {
					j--
				}
				if since == 0 || tr.times[j] > since {
					since = tr.times[j]
				}
			}
			if since != 0 {
				s := time.Unix(0, since)
				ca.c.Since = &s
			}
		}
		counts := onPath[ca.threads[0].keys[len(ca.threads[0].keys)-1]]
		for _, q := range qs {
			ca.c.Spark = append(ca.c.Spark, counts[q])
		}
	}
	return classes
}

// nodeAcc is one node of the prefix tree being built, and the threads through it.
type nodeAcc struct {
	n       *StackNode
	threads []*threadTrack
	kids    map[string]*nodeAcc
	order   []string
}

// tree is the prefix tree of the current threads' paths.
func (m *merger) tree(classes []*classAcc, classOf map[*threadTrack]int) (*StackNode, *nodeAcc) {
	root := &StackNode{Label: "/"}
	rootAcc := &nodeAcc{n: root, kids: map[string]*nodeAcc{}}
	for _, ca := range classes {
		// Every thread of a class has the same path: walk it once per class.
		var nodes []*nodeAcc
		at := rootAcc
		for _, f := range m.path(ca.threads[0].last).path {
			k, label := frameKey(f, m.o.Frames)
			next := at.kids[k]
			if next == nil {
				next = &nodeAcc{n: &StackNode{Label: label, Frame: stackFrame(f)}, kids: map[string]*nodeAcc{}}
				at.kids[k] = next
				at.order = append(at.order, k)
			}
			nodes = append(nodes, next)
			at = next
		}
		rootAcc.threads = append(rootAcc.threads, ca.threads...)
		for _, n := range nodes {
			n.threads = append(n.threads, ca.threads...)
		}
	}
	var build func(a *nodeAcc)
	build = func(a *nodeAcc) {
		n := a.n
		n.Count = len(a.threads)
		rs := rankSet(a.threads)
		n.Ranks, n.PIDs = rs.text, rs.pids
		seen := map[int]bool{}
		for _, tr := range a.threads {
			n.Progress = combine(n.Progress, tr.progress)
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
	return root, rootAcc
}

type pkey struct {
	host string
	pid  int
}

// rankStates is each current process's progress, in rank order.
func rankStates(cur []*threadTrack, classOf map[*threadTrack]int) []RankState {
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
		rs.Progress = combine(rs.Progress, tr.progress)
		if c := classOf[tr]; !slices.Contains(rs.Classes, c) {
			rs.Classes = append(rs.Classes, c)
		}
	}
	sort.SliceStable(porder, func(i, j int) bool {
		a, b := procAcc[porder[i]], procAcc[porder[j]]
		return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID)
	})
	out := make([]RankState, 0, len(porder))
	for _, k := range porder {
		rs := procAcc[k]
		sort.Ints(rs.Classes)
		out = append(out, *rs)
	}
	return out
}

// loneRanks are the processes alone on their branch at the first frame where the paths part.
// Each outermost frame (a thread entry point of one executable) is its own tree: the paths
// part somewhere below it, and a process alone on one of the branches there is lone.
func loneRanks(rootAcc *nodeAcc, classOf map[*threadTrack]int) []LoneRank {
	procsOf := func(a *nodeAcc) map[pkey]bool {
		m := map[pkey]bool{}
		for _, tr := range a.threads {
			m[pkey{tr.host, tr.pid}] = true
		}
		return m
	}
	var out []LoneRank
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
				prog = combine(prog, x.progress)
				if x.syscall != sys {
					sys = ""
				}
			}
			out = append(out, LoneRank{Host: only.host, PID: only.pid, Rank: tr.rank,
				Class: classOf[tr], At: at.n.Label, Into: kid.n.Label, Others: total - 1,
				Progress: prog, Syscall: sys})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// culprit is the lone rank the classic deadlock reading points at, when one does.
func culprit(lone []LoneRank) *LoneRank {
	switch stuck := lonely(lone, Stuck); {
	case len(lone) == 1 && !TimedWait(lone[0].Syscall):
		l := lone[0]
		return &l
	case len(stuck) == 1:
		return &stuck[0]
	}
	return nil
}

func stackFrame(f Frame) StackFrame {
	return StackFrame{Function: f.Function, Module: f.Module, Offset: f.Offset, File: f.File,
		Line: f.Line, FuncOff: f.FuncOff}
}

// lonely are the lone ranks with that progress; a stuck one only if it is not merely
// sleeping (TimedWait).
func lonely(l []LoneRank, progress string) []LoneRank {
	var out []LoneRank
	for _, x := range l {
		if x.Progress == progress && !(progress == Stuck && TimedWait(x.Syscall)) {
			out = append(out, x)
		}
	}
	return out
}

func firstRank(ts []*threadTrack) int {
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

// threadRanks is rankSet's answer.
type threadRanks struct {
	text    string // the rank set, then "pid …" for processes without a rank
	set     RankSet
	procs   int      // processes
	pids    []int    // the first MaxListedPIDs, by host and pid
	hosts   []string // index for index with pids, when there are several hosts
	hostSet HostSet
	// unranked counts the processes without a rank; members are the first few processes.
	unranked int
	members  []Member
}

// maxUnrankedListed bounds the processes without a rank that a rank set's text names.
const maxUnrankedListed = 32

// rankSet is the ranks of some threads' processes, those without a rank by pid ("pid
// 412,418"), and their pids (one per process) with hosts when there are several.
func rankSet(ts []*threadTrack) threadRanks {
	seen := map[pkey]Rank{}
	var add RankAdder
	var unranked []string
	var procs []pkey
	multi := false
	var hostNames []string
	for _, t := range ts {
		k := pkey{t.host, t.pid}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = t.rank
		procs = append(procs, k)
		if t.host != "" {
			multi = true
			if len(hostNames) == 0 || hostNames[len(hostNames)-1] != t.host {
				hostNames = append(hostNames, t.host)
			}
		}
		if t.rank >= 0 {
			add.Add(int(t.rank))
		} else if t.host != "" {
			unranked = append(unranked, t.host+":"+strconv.Itoa(t.pid))
		} else {
			unranked = append(unranked, strconv.Itoa(t.pid))
		}
	}
	// By host, then pid: the same however the streams interleaved.
	sort.Slice(procs, func(a, b int) bool {
		if procs[a].host != procs[b].host {
			return procs[a].host < procs[b].host
		}
		return procs[a].pid < procs[b].pid
	})
	r := threadRanks{set: add.Set(), procs: len(procs), hostSet: HostSetOf(hostNames...), unranked: len(unranked)}
	for i, p := range procs[:min(len(procs), MaxListedPIDs)] {
		r.pids = append(r.pids, p.pid)
		r.hosts = append(r.hosts, p.host)
		if i < MaxReducedMembers {
			r.members = append(r.members, Member{Host: p.host, PID: p.pid, Rank: seen[p]})
		}
	}
	if !multi {
		r.hosts = nil
	}
	r.text = r.set.String()
	if len(unranked) > 0 {
		sort.Strings(unranked)
		if r.text != "" {
			r.text += " "
		}
		more := ""
		if len(unranked) > maxUnrankedListed {
			more = fmt.Sprintf(" +%d more", len(unranked)-maxUnrankedListed)
			unranked = unranked[:maxUnrankedListed]
		}
		r.text += "pid " + strings.Join(unranked, ",") + more
	}
	return r
}
