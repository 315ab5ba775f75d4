package sessions

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MergeStacks merges samples into the prefix tree, the classes and each process's progress.
// Only threads in their host's latest sample are placed (where every rank is now); the older
// samples decide stuck, spinning or moving. The goroutines of Go processes are merged the same
// way, from each process's latest sample that has them.
func MergeStacks(samples []StampedSample, o StackOptions) Stacks {
	st := newSampleStore()
	// In the order of their samples: what the merge lists first when counts tie.
	sorted := slices.Clone(samples)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	for _, s := range sorted {
		st.add(s.Host, s.Time, s.Sample, s.Rank, s.PPID)
		if s.Go != nil {
			st.addGoroutines(s.Host, *s.Go)
		}
	}
	return st.merge(o)
}

// MaxListedPIDs bounds the pids a merged class or tree node lists (the first, by host and
// pid); its count and rank set say how many there are.
const MaxListedPIDs = 256

// threadTrack is one thread over the samples in the window; or one goroutine.
type threadTrack struct {
	host   string
	pid    int
	proc   int32 // its process's index in the store (one per host and pid)
	class  int   // its class, once merged (mergeTracks)
	rank   Rank
	tid    int
	keys   []uint32 // path key per sample, oldest first (pathInfo.key)
	times  []int64
	cpu    []uint64
	runNS  []uint64
	framed []bool // the sample read a stack
	seqs   []int32
	last   uint32 // its latest stack
	state  byte   // in the latest sample
	// syscall is the call it was blocked in; whole that it was held, or read whole without
	// stopping it.
	syscall string
	whole   bool
	// Of the latest sample: own says a frame runs the program's own code (in its
	// executable, not the Go runtime's), goRuntime that every frame is the Go runtime's.
	own, goRuntime bool
	role           string // RoleHelper, RoleLauncher or ""
	// A goroutine's: its id, latest status and wait, whether it was on a CPU or ready for
	// one in a sample that read its stack, whether it is the runtime's, the go statement
	// that started it.
	goroutine    bool
	gid          int64
	status, wait string
	busy, system bool
	created      *Frame

	prog  string // progress(), once known
	share float64
}

// isMain says it is a process's main thread.
func (tr *threadTrack) isMain() bool { return !tr.goroutine && tr.tid == tr.pid }

// pathInfo is what a stack is under the merge's options: its path (after hide and cut, root
// first) and the path's key at the chosen granularity, interned.
type pathInfo struct {
	path []Frame
	key  uint32
}

// merge is MergeStacks of the store's samples.
func (st *sampleStore) merge(o StackOptions) Stacks {
	out, _ := st.mergeFull(o, true)
	return out
}

// mergeFull is merge, with what a reducer passes on of it (its classes of threads and of
// goroutines, what is put aside, the goroutines by wait); without tree only the classes and
// the count of processes (what a reducer sends: the tree is built at the top).
func (st *sampleStore) mergeFull(o StackOptions, tree bool) (Stacks, StackClasses) {
	if o.Frames == "" {
		o.Frames = "function"
	}
	out := Stacks{Frames: o.Frames, Classes: []StackClass{}, Ranks: []RankState{}}
	if o.Cut != nil {
		out.Cut = o.Cut.String()
	}
	w := st.window(o)
	out.Samples = w.n
	m := newMerger(st, o)
	m.hostIDs()
	refs := m.refs(w)
	all, cur := m.threadTracks(refs, w)
	alive := make([]bool, st.procs.len()) // by the process's index in the store
	for _, tr := range cur {
		alive[tr.proc] = true
	}
	gall, gcur, unread, goProcs := m.goroutineTracks(refs, alive)
	launchers := m.launchers(refs)
	setRoles(all, launchers)
	setRoles(gall, launchers)

	mt := m.mergeTracks(cur, all, w.qs, 1)
	out.Classes = mt.classes
	counted := make([]bool, st.procs.len())
	for _, tr := range cur {
		if !counted[tr.proc] {
			counted[tr.proc] = true
			out.Processes++
		}
	}
	red := StackClasses{Samples: out.Samples, Frames: out.Frames, Cut: out.Cut, Processes: out.Processes,
		Classes: mt.reduced(), Aside: reducedAside(cur), Tally: tallyTracks(cur, mt.classes, st.procs.len())}
	var g *mergedTracks
	if len(gcur) > 0 || len(unread) > 0 {
		g = m.mergeTracks(gcur, gall, w.qs, len(out.Classes)+1)
		rg := &ReducedGoroutines{Processes: goProcs, Count: len(gcur), Classes: g.reduced(), Waits: reducedWaits(gcur),
			Unread: unread[:min(len(unread), MaxListedPIDs)], Unreadable: len(unread), Aside: reducedAside(gcur)}
		for _, tr := range gcur {
			if tr.system {
				rg.System++
			}
		}
		red.Goroutines = rg
	}
	if tree {
		out.Tree = mt.tree(m)
		out.Ranks = sortRankStates(processStates(cur, st.procs.len()))
		out.Lone = loneRanks(mt.root, mt.classOf)
		out.Culprit = culprit(out.Lone)
		out.Aside = asideOf(cur, mt.classOf)
		if g != nil {
			out.Goroutines = &GoroutineStacks{Processes: goProcs, Count: len(gcur), System: red.Goroutines.System,
				Classes: g.classes, Tree: g.tree(m), Waits: goroutineWaits(gcur, g.classOf), Unread: unread,
				Aside: asideOf(gcur, g.classOf)}
		}
	}
	return out, red
}

// reduced are the classes as a reducer passes them on.
func (mt *mergedTracks) reduced() []ReducedClass {
	parts := make([]ReducedClass, len(mt.accs))
	for i, ca := range mt.accs {
		c := mt.classes[i]
		parts[i] = ReducedClass{Frames: c.Frames, Count: c.Count, Procs: ca.rs.procs, Ranks: ca.rs.set,
			Unranked: ca.rs.unranked, Hosts: ca.rs.hostSet, Progress: c.Progress, Syscall: c.Syscall, Since: c.Since,
			CPUTicks: c.CPUTicks, CPUShare: c.CPUShare, Partial: c.Partial, Spark: c.Spark, Role: c.Role, Main: c.Main,
			Members: ca.rs.members, Status: c.Status, WaitReason: c.WaitReason, CreatedBy: c.CreatedBy}
	}
	return parts
}

// tallyOf counts the processes of ranks (in any order) by kind and progress, with their
// places among classes, each with its first process in rank order.
func tallyOf(ranks []RankState, classes []StackClass) *ProcessTally {
	tl := newTallier(classes)
	for _, r := range ranks {
		tl.add(r.Host, r.PID, r.Rank, r.Launcher, r.Progress, r.Classes)
	}
	sortPlaces(tl.t)
	return tl.t
}

// tallyTracks is tallyOf of the processes of the current tracks (processStates), without
// listing them: a reducing view's tally of tens of thousands of processes. nprocs is the size
// of the store the tracks come from.
func tallyTracks(cur []*threadTrack, classes []StackClass, nprocs int) *ProcessTally {
	// The tracks by process: a counting sort on their index in the store.
	start := make([]int32, nprocs+1)
	for _, tr := range cur {
		start[tr.proc+1]++
	}
	for p := 1; p <= nprocs; p++ {
		start[p] += start[p-1]
	}
	byProc := make([]*threadTrack, len(cur))
	next := slices.Clone(start[:nprocs])
	for _, tr := range cur {
		byProc[next[tr.proc]] = tr
		next[tr.proc]++
	}
	tl := newTallier(classes)
	var nums []int
	for p := 0; p < nprocs; p++ {
		ts := byProc[start[p]:start[p+1]]
		if len(ts) == 0 {
			continue
		}
		// As processStates: its own threads' progress, its helpers' when it has no other.
		own, helpers, any, launcher := "", "", false, false
		nums = nums[:0]
		for _, tr := range ts {
			if tr.role == RoleHelper {
				helpers = combineProgress(helpers, tr.progress())
			} else {
				own, any = combineProgress(own, tr.progress()), true
			}
			launcher = launcher || tr.role == RoleLauncher
			if !slices.Contains(nums, tr.class) {
				nums = append(nums, tr.class)
			}
		}
		if !any {
			own = helpers
		}
		tl.add(ts[0].host, ts[0].pid, ts[0].rank, launcher, own, nums)
	}
	sortPlaces(tl.t)
	return tl.t
}

// tallier makes a ProcessTally, a process at a time.
type tallier struct {
	t       *ProcessTally
	byNum   map[int]int // class number -> index in classes
	classes []StackClass
	keys    []tallyKey // of each class: its innermost frame by function, and its call
	at      map[string]int
	places  map[string]map[tallyKey]int
	// Reused buffers, each its own array.
	ownBuf, allBuf, sameBuf []int
	seen                    []tallyKey
}

type tallyKey struct{ at, sys string }

func newTallier(classes []StackClass) *tallier {
	tl := &tallier{t: &ProcessTally{By: []ProgressTally{}}, byNum: make(map[int]int, len(classes)), classes: classes,
		keys: make([]tallyKey, len(classes)), at: map[string]int{}, places: map[string]map[tallyKey]int{}}
	for i, c := range classes {
		tl.byNum[c.Class] = i
		if len(c.Frames) > 0 {
			k, _ := stackFrameKey(c.Frames[len(c.Frames)-1], "function")
			tl.keys[i] = tallyKey{k, c.Syscall}
		}
	}
	return tl
}

// add counts one process, in the classes numbered nums, at their innermost frames: those of
// its own threads (its helpers' when it has no other), of its progress when it has such.
func (tl *tallier) add(host string, pid int, rank Rank, launcher bool, progress string, nums []int) {
	t := tl.t
	switch {
	case launcher:
		t.Launchers++
		return
	case rank >= 0:
		t.Ranked++
	default:
		t.Others++
	}
	i, ok := tl.at[progress]
	if !ok {
		i = len(t.By)
		tl.at[progress] = i
		t.By = append(t.By, ProgressTally{Progress: progress, Places: []ProcessPlace{}})
		tl.places[progress] = map[tallyKey]int{}
	}
	pt := &t.By[i]
	pt.Procs++
	own, all, same := tl.ownBuf[:0], tl.allBuf[:0], tl.sameBuf[:0]
	for _, n := range nums {
		if j, ok := tl.byNum[n]; ok && len(tl.classes[j].Frames) > 0 {
			all = append(all, j)
			if tl.classes[j].Role == "" {
				own = append(own, j)
			}
		}
	}
	tl.ownBuf, tl.allBuf = own, all
	if len(own) == 0 {
		own = all
	}
	for _, j := range own {
		if tl.classes[j].Progress == progress {
			same = append(same, j)
		}
	}
	tl.sameBuf = same
	if len(same) > 0 {
		own = same
	}
	tl.seen = tl.seen[:0] // a process is in each of its places once
	me := Member{Host: host, PID: pid, Rank: rank}
	for _, j := range own {
		pk := tl.keys[j]
		if slices.Contains(tl.seen, pk) {
			continue
		}
		tl.seen = append(tl.seen, pk)
		k, ok := tl.places[progress][pk]
		if !ok {
			k = len(pt.Places)
			tl.places[progress][pk] = k
			c := tl.classes[j]
			pt.Places = append(pt.Places, ProcessPlace{Frame: c.Frames[len(c.Frames)-1], Syscall: c.Syscall, First: me})
		}
		pl := &pt.Places[k]
		pl.Procs++
		if rankOrder(me.Host, me.Rank, me.PID, pl.First.Host, pl.First.Rank, pl.First.PID) {
			pl.First = me
		}
	}
}

// sortPlaces orders each progress's places by their first process, in rank order.
func sortPlaces(t *ProcessTally) {
	for i := range t.By {
		slices.SortStableFunc(t.By[i].Places, func(a, b ProcessPlace) int {
			switch {
			case rankOrder(a.First.Host, a.First.Rank, a.First.PID, b.First.Host, b.First.Rank, b.First.PID):
				return -1
			case rankOrder(b.First.Host, b.First.Rank, b.First.PID, a.First.Host, a.First.Rank, a.First.PID):
				return 1
			}
			return 0
		})
	}
}

// mergeTallies adds up reducers' tallies (nil when none has one): their hosts are apart.
func mergeTallies(list []*ProcessTally) *ProcessTally {
	var out *ProcessTally
	before := func(a, b Member) bool { return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID) }
	for _, t := range list {
		if t == nil {
			continue
		}
		if out == nil {
			out = &ProcessTally{By: []ProgressTally{}}
		}
		out.Ranked += t.Ranked
		out.Launchers += t.Launchers
		out.Others += t.Others
		for _, pt := range t.By {
			i := slices.IndexFunc(out.By, func(x ProgressTally) bool { return x.Progress == pt.Progress })
			if i < 0 {
				i = len(out.By)
				out.By = append(out.By, ProgressTally{Progress: pt.Progress, Places: []ProcessPlace{}})
			}
			o := &out.By[i]
			o.Procs += pt.Procs
			for _, pl := range pt.Places {
				fk, _ := stackFrameKey(pl.Frame, "function")
				j := slices.IndexFunc(o.Places, func(x ProcessPlace) bool {
					xk, _ := stackFrameKey(x.Frame, "function")
					return xk == fk && x.Syscall == pl.Syscall
				})
				if j < 0 {
					o.Places = append(o.Places, pl)
					continue
				}
				o.Places[j].Procs += pl.Procs
				if before(pl.First, o.Places[j].First) {
					o.Places[j].First = pl.First
				}
			}
		}
	}
	if out != nil {
		sortPlaces(out)
	}
	return out
}

// reducedAside is asideOf as a reducer passes it on: its processes as a rank set and a count.
func reducedAside(cur []*threadTrack) *ReducedAside {
	at := tallyAside(cur)
	if len(at.ts) == 0 {
		return nil
	}
	a := &ReducedAside{Count: len(at.ts), Helpers: at.helpers, Launcher: at.launcher, Progress: at.progress, CPUShare: at.share}
	rs := rankSet(at.ts)
	a.Procs, a.Ranks, a.Unranked, a.Hosts = rs.procs, rs.set, rs.unranked, rs.hostSet
	a.Members = unrankedFirst(rs.unrankedMembers, rs.members)
	return a
}

// reducedWaits is goroutineWaits as a reducer passes it on.
func reducedWaits(cur []*threadTrack) []ReducedWait {
	by := map[[2]string][]*threadTrack{}
	var order [][2]string
	for _, tr := range cur {
		if tr.role != "" {
			continue
		}
		k := [2]string{tr.status, tr.wait}
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], tr)
	}
	out := make([]ReducedWait, 0, len(order))
	for _, k := range order {
		ts := by[k]
		w := ReducedWait{Status: k[0], WaitReason: k[1], Count: len(ts)}
		for _, tr := range ts {
			w.Progress = combineProgress(w.Progress, tr.progress())
		}
		rs := rankSet(ts)
		w.Ranks, w.Unranked, w.Members = rs.set, rs.unranked, unrankedFirst(rs.unrankedMembers, rs.members)
		out = append(out, w)
	}
	return out
}

// storeWindow is which samples a merge counts: each host's last Window.
type storeWindow struct {
	latest map[string]int32          // host -> latest seq
	in     map[string]map[int32]bool // host -> the seqs that count
	qs     []int32                   // every seq that counts, oldest first: a spark has one count each
	n      int                       // the most samples a host has in it
}

// window picks each host's last o.Window seqs (all that are kept when 0).
func (st *sampleStore) window(o StackOptions) storeWindow {
	seqs := map[string]map[int32]bool{}
	w := storeWindow{latest: map[string]int32{}, in: map[string]map[int32]bool{}}
	for i := range int32(st.procs.len()) {
		p := st.procs.at(i)
		set := seqs[p.host]
		if set == nil {
			set = map[int32]bool{}
			seqs[p.host] = set
		}
		for _, h := range p.heads {
			set[h.seq] = true
			if h.seq > w.latest[p.host] {
				w.latest[p.host] = h.seq
			}
		}
	}
	for h, set := range seqs {
		list := make([]int32, 0, len(set))
		for q := range set {
			list = append(list, q)
		}
		slices.Sort(list)
		if o.Window > 0 && len(list) > o.Window {
			list = list[len(list)-o.Window:]
		}
		w.in[h] = map[int32]bool{}
		for _, q := range list {
			w.in[h][q] = true
		}
		w.qs = append(w.qs, list...)
		w.n = max(w.n, len(list))
	}
	slices.Sort(w.qs)
	w.qs = slices.Compact(w.qs)
	return w
}

// merger holds what one merge derives from the store's stacks.
type merger struct {
	st *sampleStore
	o  StackOptions
	// hostID numbers each process's host (by its index in the store), for keys without
	// strings.
	hostID []int32
	slab   trackSlab
	info   []*pathInfo       // by stack id
	ids    map[string]uint32 // interned path keys
	pair   map[[2]uint32]uint32
	code   map[[2]uint32]uint8 // (stack, exe) -> ownCode | goRuntimeOnly<<1
	// lastCode is the last code looked up (the same stack in the same executable comes in
	// runs), valid when hasLast.
	lastKey  [2]uint32
	lastCode uint8
	hasLast  bool
}

func newMerger(st *sampleStore, o StackOptions) *merger {
	return &merger{st: st, o: o, info: make([]*pathInfo, len(st.tab.stacks)), ids: map[string]uint32{},
		pair: map[[2]uint32]uint32{}, code: map[[2]uint32]uint8{}}
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
	var key strings.Builder
	for _, f := range p {
		k, _ := frameKey(f, m.o.Frames)
		key.WriteString(k)
		key.WriteByte('\n')
	}
	pi := &pathInfo{path: p, key: m.intern(key.String())}
	m.info[id] = pi
	return pi
}

// waitKey is a goroutine's path key: the wait is part of it (the same frames parked for
// another reason are another place).
func (m *merger) waitKey(wait, key uint32) uint32 {
	k := [2]uint32{wait, key}
	if id, ok := m.pair[k]; ok {
		return id
	}
	id := uint32(1<<31 + len(m.pair)) // apart from the paths' keys
	m.pair[k] = id
	return id
}

// codeOf is ownCode and goRuntimeOnly of a stack in executable exe, once per merge.
func (m *merger) codeOf(stack, exe uint32) (own, goRuntime bool) {
	k := [2]uint32{stack, exe}
	if m.hasLast && m.lastKey == k {
		return m.lastCode&1 != 0, m.lastCode&2 != 0
	}
	c, ok := m.code[k]
	if !ok {
		frames := m.st.tab.stacks[stack]
		if ownCode(frames, m.st.strs[exe]) {
			c |= 1
		}
		if goRuntimeOnly(frames) {
			c |= 2
		}
		m.code[k] = c
	}
	m.lastKey, m.lastCode, m.hasLast = k, c, true
	return c&1 != 0, c&2 != 0
}

// sampleRef is one sample in the window: its process, its head and its first thread, and
// where it goes in the merge's order (seq, then the order added).
type sampleRef struct {
	order   int64
	p, h, t int32
}

// refs are the samples in the window in the order they were added (MergeStacks: by seq, then
// as given).
func (m *merger) refs(w storeWindow) []sampleRef {
	n := 0
	for i := range int32(m.st.procs.len()) {
		n += len(m.st.procs.at(i).heads)
	}
	refs := make([]sampleRef, 0, n)
	for i := range int32(m.st.procs.len()) {
		p := m.st.procs.at(i)
		in := w.in[p.host]
		t := int32(0)
		for j, h := range p.heads {
			if in[h.seq] {
				refs = append(refs, sampleRef{int64(h.seq)<<40 | h.ord&(1<<40-1), int32(i), int32(j), t})
			}
			t += h.n
		}
	}
	slices.SortFunc(refs, func(a, b sampleRef) int { return cmp.Compare(a.order, b.order) })
	return refs
}

// newTrack is a track of process proc with room for n samples.
func (m *merger) newTrack(proc int32, tid, n int) *threadTrack {
	p := m.st.procs.at(proc)
	return m.slab.track(threadTrack{host: p.host, pid: int(p.pid), proc: proc, tid: tid}, n)
}

// hostIDs numbers the hosts of the store's processes (merger.hostID).
func (m *merger) hostIDs() {
	ids := map[string]int32{}
	m.hostID = make([]int32, m.st.procs.len())
	for i := range int32(m.st.procs.len()) {
		h := m.st.procs.at(i).host
		id, ok := ids[h]
		if !ok {
			id = int32(len(ids))
			ids[h] = id
		}
		m.hostID[i] = id
	}
}

// trackSlab makes tracks and their per-sample slices out of bigger arrays: a merge makes
// one track a thread, tens of thousands at a tree's first level.
type trackSlab struct {
	tracks []threadTrack
	u32    []uint32
	i32    []int32
	i64    []int64
	u64    []uint64
	bools  []bool
}

const slabTracks = 1024

// track is a copy of t in the slab, with room for n samples in each of its slices.
func (sl *trackSlab) track(t threadTrack, n int) *threadTrack {
	if len(sl.tracks) == 0 {
		sl.tracks = make([]threadTrack, slabTracks)
	}
	if len(sl.u32) < n {
		sl.u32, sl.i32 = make([]uint32, slabTracks*n), make([]int32, slabTracks*n)
		sl.i64, sl.u64 = make([]int64, slabTracks*n), make([]uint64, 2*slabTracks*n)
		sl.bools = make([]bool, slabTracks*n)
	}
	tr := &sl.tracks[0]
	sl.tracks = sl.tracks[1:]
	*tr = t
	// Each slice ends at its room: appending beyond it copies, never into the next track's.
	tr.keys, sl.u32 = sl.u32[:0:n], sl.u32[n:]
	tr.seqs, sl.i32 = sl.i32[:0:n], sl.i32[n:]
	tr.times, sl.i64 = sl.i64[:0:n], sl.i64[n:]
	tr.cpu, tr.runNS, sl.u64 = sl.u64[:0:n], sl.u64[n:n:2*n], sl.u64[2*n:]
	tr.framed, sl.bools = sl.bools[:0:n], sl.bools[n:]
	return tr
}

// threadTracks are the tracks of the threads in the window, in the order first seen (all),
// and those in their host's latest sample (cur).
func (m *merger) threadTracks(refs []sampleRef, w storeWindow) (all, cur []*threadTrack) {
	type tkey struct {
		host int32 // hostID
		tid  int32
	}
	byKey := make(map[tkey]*threadTrack, len(refs))
	var order []tkey
	for _, r := range refs {
		p := m.st.procs.at(r.p)
		h := &p.heads[r.h]
		for _, t := range p.threads[r.t : r.t+h.n] {
			k := tkey{m.hostID[r.p], t.tid}
			tr := byKey[k]
			if tr == nil || tr.pid != int(p.pid) {
				if tr == nil {
					order = append(order, k)
				}
				tr = m.newTrack(r.p, int(t.tid), w.n)
				byKey[k] = tr
			}
			pi := m.path(t.stack)
			tr.rank = Rank(h.rank)
			tr.keys = append(tr.keys, pi.key)
			tr.times = append(tr.times, h.time)
			tr.framed = append(tr.framed, len(m.st.tab.stacks[t.stack]) > 0)
			tr.seqs = append(tr.seqs, t.seq)
			tr.cpu = append(tr.cpu, t.cpu)
			tr.runNS = append(tr.runNS, t.runNS)
			tr.last, tr.state = t.stack, t.state
			tr.syscall, tr.whole = m.st.strs[t.sys], t.flags != 0
			tr.own, tr.goRuntime = m.codeOf(t.stack, h.exe)
		}
	}
	for _, k := range order {
		tr := byKey[k]
		all = append(all, tr)
		if tr.seqs[len(tr.seqs)-1] == w.latest[tr.host] {
			cur = append(cur, tr)
		}
	}
	return all, cur
}

// goroutineTracks are the tracks of the goroutines in the window (all), those of each live
// process's latest sample that has them (cur; a process's goroutines come after its threads,
// so its latest sample may not have them yet), the live Go processes whose latest reading of
// goroutines failed, and how many were read.
//
// alive says which processes are live, by their index in the store.
func (m *merger) goroutineTracks(refs []sampleRef, alive []bool) (all, cur []*threadTrack, unread []GoroutinesUnread, procs int) {
	type gkey struct {
		host string
		pid  int32
		id   int64
	}
	latest := map[pkey]sampleRef{}
	tracks := map[gkey]*threadTrack{}
	var order []gkey
	for _, r := range refs {
		p := m.st.procs.at(r.p)
		h := &p.heads[r.h]
		if !h.hasGo {
			continue
		}
		latest[pkey{p.host, int(p.pid)}] = r
		for _, g := range h.gor {
			k := gkey{p.host, p.pid, g.id}
			tr := tracks[k]
			if tr == nil {
				tr = &threadTrack{host: p.host, pid: int(p.pid), proc: r.p, goroutine: true, gid: g.id}
				tracks[k] = tr
				order = append(order, k)
			}
			pi := m.path(g.stack)
			framed := len(m.st.tab.stacks[g.stack]) > 0
			tr.rank = Rank(h.rank)
			tr.keys = append(tr.keys, m.waitKey(g.wait, pi.key))
			tr.times = append(tr.times, h.time)
			tr.framed = append(tr.framed, framed)
			tr.seqs = append(tr.seqs, h.seq)
			tr.cpu, tr.runNS = append(tr.cpu, 0), append(tr.runNS, 0)
			tr.last = g.stack
			tr.status, tr.wait, tr.system = m.st.strs[g.status], m.st.strs[g.wait], g.system
			tr.created = nil
			if g.created != 0 {
				tr.created = &m.st.tab.stacks[g.created-1][0]
			}
			tr.whole = !g.partial
			tr.busy = tr.busy || (framed && goBusy(tr.status))
		}
	}
	var keys []pkey
	for k, r := range latest {
		if !alive[r.p] {
			continue
		}
		if m.st.procs.at(r.p).heads[r.h].goNote != 0 {
			keys = append(keys, k)
			continue
		}
		procs++
	}
	rank := func(k pkey) Rank { r := latest[k]; return Rank(m.st.procs.at(r.p).heads[r.h].rank) }
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return rankOrder(a.host, rank(a), a.pid, b.host, rank(b), b.pid)
	})
	for _, k := range keys {
		r := latest[k]
		unread = append(unread, GoroutinesUnread{Host: k.host, PID: k.pid, Rank: rank(k),
			Note: m.st.strs[m.st.procs.at(r.p).heads[r.h].goNote]})
	}
	for _, k := range order {
		tr := tracks[k]
		all = append(all, tr)
		pk := pkey{k.host, int(k.pid)}
		if r := latest[pk]; alive[tr.proc] && tr.seqs[len(tr.seqs)-1] == m.st.procs.at(r.p).heads[r.h].seq {
			cur = append(cur, tr)
		}
	}
	return all, cur, unread, procs
}

// launchers are the processes without a rank that are ancestors of ranks, by the parents
// the samples name. Samples that name none (recorded before they did) leave only the ranks
// to go by: then every process without a rank in a job with ranks is its launcher.
//
// They are said by the processes' index in the store (a process is one host and pid).
func (m *merger) launchers(refs []sampleRef) []bool {
	n := m.st.procs.len()
	in := make([]bool, n)    // in the window
	rank := make([]Rank, n)  // its latest sample's
	parent := make([]int, n) // its latest sample's that names one; 0 for none
	known := false
	for _, r := range refs {
		h := m.st.procs.at(r.p).heads[r.h]
		in[r.p], rank[r.p] = true, Rank(h.rank)
		if h.ppid != 0 {
			parent[r.p], known = int(h.ppid), true
		}
	}
	out := make([]bool, n)
	ranked := false
	for k := range n {
		if !in[k] || rank[k] < 0 {
			continue
		}
		ranked = true
		byPID := m.st.index[m.st.procs.at(int32(k)).host]
		at := int32(k)
		for range 64 { // a parent chain is short; a cycle (pid reuse) ends here
			pp := parent[at]
			if pp == 0 {
				break
			}
			i, ok := byPID[int32(pp)]
			if !ok || !in[i] {
				break // a process out of the window names no parent, and has no rank
			}
			at = i
			if rank[at] < 0 {
				out[at] = true
			}
		}
	}
	if !known && ranked {
		for k := range n {
			if in[k] && rank[k] < 0 {
				out[k] = true
			}
		}
	}
	return out
}

// setRoles gives each track its role (RoleHelper, RoleLauncher), launchers being the
// launchers' processes. A thread with no stack read keeps the program's: nothing says it is
// a helper.
func setRoles(tracks []*threadTrack, launchers []bool) {
	for _, tr := range tracks {
		switch {
		case launchers[tr.proc]:
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

// progress is the thread's progress over its samples (see Stuck); a goroutine has no CPU
// counters of its own: on the same path every time it is spinning if it was on a CPU or
// ready for one, else stuck.
func (tr *threadTrack) progress() string {
	if tr.prog == "" {
		tr.prog = tr.progressOf()
	}
	return tr.prog
}

func (tr *threadTrack) progressOf() string {
	if tr.state == 'T' || tr.state == 't' {
		return Stopped
	}
	first, last := -1, -1
	for j, ok := range tr.framed {
		if ok {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
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

// cpuShare is the share of one CPU the thread used between its first and last sample: its
// run time from schedstat when both have it, else its stat ticks (USER_HZ, 100 a second).
func (tr *threadTrack) cpuShare() float64 {
	if tr.share < 0 {
		return 0
	}
	if tr.share > 0 {
		return tr.share
	}
	n := len(tr.times)
	wall := time.Duration(0)
	if n >= 2 {
		wall = time.Duration(tr.times[n-1] - tr.times[0])
	}
	if wall <= 0 {
		tr.share = -1
		return 0
	}
	var used time.Duration
	if tr.runNS[0] > 0 && tr.runNS[n-1] >= tr.runNS[0] {
		used = time.Duration(tr.runNS[n-1] - tr.runNS[0])
	} else if tr.cpu[n-1] >= tr.cpu[0] {
		used = time.Duration(tr.cpu[n-1]-tr.cpu[0]) * 10 * time.Millisecond
	}
	tr.share = float64(used) / float64(wall)
	if tr.share == 0 {
		tr.share = -1
		return 0
	}
	return tr.share
}

// classAcc is one class and its current threads.
type classAcc struct {
	c       *StackClass
	threads []*threadTrack
	rs      threadRanks
}

// mergedTracks are the classes of some tracks, and what their tree is built from.
type mergedTracks struct {
	classes []StackClass
	accs    []*classAcc
	classOf map[*threadTrack]int
	root    *nodeAcc
}

// classKey is a class's identity: one path, in one role and (goroutines) one status.
type classKey struct {
	role, status string
	key          uint32
}

// mergeTracks makes the classes (numbered from first) of the current tracks cur; all are
// every track of the window (the sparks count them).
func (m *merger) mergeTracks(cur, all []*threadTrack, qs []int32, first int) *mergedTracks {
	byKey := map[classKey]*classAcc{}
	var classes []*classAcc
	for _, tr := range cur {
		k := classKey{tr.role, tr.status, tr.keys[len(tr.keys)-1]}
		ca := byKey[k]
		if ca == nil {
			ca = &classAcc{c: &StackClass{Role: tr.role, Status: tr.status, WaitReason: tr.wait}}
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
		rs := rankSet(ca.threads)
		c.Ranks, c.Unranked, c.PIDs, c.Hosts = rs.text, rs.unrankedText, rs.pids, rs.hosts
		ca.rs = rs
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
		return firstRank(classes[i].threads) < firstRank(classes[j].threads)
	})
	// Threads on each path in each sample, from one pass over every track (the sparks).
	type pathKey struct {
		role string
		key  uint32
	}
	onPath := map[pathKey]map[int32]int{}
	for _, tr := range all {
		for j, k := range tr.keys {
			pk := pathKey{tr.role, k}
			c := onPath[pk]
			if c == nil {
				c = map[int32]int{}
				onPath[pk] = c
			}
			c[tr.seqs[j]]++
		}
	}
	out := &mergedTracks{classes: []StackClass{}, accs: classes, classOf: map[*threadTrack]int{}}
	for i, ca := range classes {
		ca.c.Class = first + i
		for _, tr := range ca.threads {
			out.classOf[tr] = first + i
			tr.class = first + i
		}
		if ca.c.Progress == Stuck || ca.c.Progress == Spinning {
			// Stuck since the oldest sample of the run of identical stacks its threads share.
			var since int64
			for _, tr := range ca.threads {
				j := len(tr.keys) - 1
				for j > 0 && tr.keys[j-1] == tr.keys[len(tr.keys)-1] {
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
		t0 := ca.threads[0]
		counts := onPath[pathKey{t0.role, t0.keys[len(t0.keys)-1]}]
		for _, q := range qs {
			ca.c.Spark = append(ca.c.Spark, counts[q])
		}
		out.classes = append(out.classes, *ca.c)
	}
	return out
}

// nodeAcc is one node of the prefix tree being built, and the threads through it.
type nodeAcc struct {
	n       *StackNode
	threads []*threadTrack
	kids    map[string]*nodeAcc
	order   []string
}

// tree is the prefix tree of the classes' threads; its outermost frames are split by role,
// so that a branch is all the program's, or all helpers', or all the launcher's.
func (mt *mergedTracks) tree(m *merger) *StackNode {
	root := &StackNode{Label: "/"}
	rootAcc := &nodeAcc{n: root, kids: map[string]*nodeAcc{}}
	for _, ca := range mt.accs {
		// Every thread of a class has the same path and role: walk it once per class.
		var nodes []*nodeAcc
		at := rootAcc
		role := ca.c.Role
		for i, f := range m.path(ca.threads[0].last).path {
			k, label := frameKey(f, m.o.Frames)
			if i == 0 {
				k = role + "\x00" + k
			}
			next := at.kids[k]
			if next == nil {
				next = &nodeAcc{n: &StackNode{Label: label, Frame: stackFrame(f), Role: role}, kids: map[string]*nodeAcc{}}
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
	var build func(a *nodeAcc, top bool)
	build = func(a *nodeAcc, top bool) {
		n := a.n
		n.Count = len(a.threads)
		rs := rankSet(a.threads)
		n.Ranks, n.Unranked, n.PIDs = rs.text, rs.unrankedText, rs.pids
		seen := map[int]bool{}
		for _, tr := range a.threads {
			n.Progress = combineProgress(n.Progress, tr.progress())
			n.CPUShare += tr.cpuShare() / float64(len(a.threads))
			if c := mt.classOf[tr]; !seen[c] {
				seen[c] = true
				n.Classes = append(n.Classes, c)
			}
		}
		sort.Ints(n.Classes)
		kids := make([]*nodeAcc, 0, len(a.order))
		for _, k := range a.order {
			kids = append(kids, a.kids[k])
		}
		sort.SliceStable(kids, func(i, j int) bool {
			if top {
				// The program's branches first, those of the main threads first among them.
				if ri, rj := roleOrder(kids[i].n.Role), roleOrder(kids[j].n.Role); ri != rj {
					return ri < rj
				}
				if mi, mj := anyMain(kids[i].threads), anyMain(kids[j].threads); mi != mj {
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
	mt.root = rootAcc
	return root
}

// asideTally is what the tracks with a role have in common, in the flat and the reduced
// summary alike: which they are, how many of each role, their progress and mean CPU share.
type asideTally struct {
	ts                []*threadTrack
	helpers, launcher int
	progress          string
	share             float64
}

func tallyAside(cur []*threadTrack) asideTally {
	var at asideTally
	for _, tr := range cur {
		switch tr.role {
		case RoleHelper:
			at.helpers++
		case RoleLauncher:
			at.launcher++
		default:
			continue
		}
		at.ts = append(at.ts, tr)
	}
	for _, tr := range at.ts {
		at.progress = combineProgress(at.progress, tr.progress())
		at.share += tr.cpuShare() / float64(len(at.ts))
	}
	return at
}

// asideOf sums up the tracks with a role (nil when none has one).
func asideOf(cur []*threadTrack, classOf map[*threadTrack]int) *Aside {
	at := tallyAside(cur)
	if len(at.ts) == 0 {
		return nil
	}
	ts := at.ts
	a := &Aside{Count: len(ts), Helpers: at.helpers, Launcher: at.launcher, Progress: at.progress, CPUShare: at.share}
	for _, tr := range ts {
		if c := classOf[tr]; !containsInt(a.Classes, c) {
			a.Classes = append(a.Classes, c)
		}
	}
	sort.Ints(a.Classes)
	rs := rankSet(ts)
	a.Ranks, a.Unranked, a.PIDs = rs.text, rs.unrankedText, rs.pids
	return a
}

func anyMain(ts []*threadTrack) bool {
	for _, t := range ts {
		if t.isMain() {
			return true
		}
	}
	return false
}

type pkey struct {
	host string
	pid  int
}

// processStates is each current process's progress (RankState), in the order first seen:
// that of its own threads, its helpers left out when it has any other. nprocs is the size of
// the store the tracks come from (their proc).
func processStates(cur []*threadTrack, nprocs int) []RankState {
	type acc struct {
		own, helpers string
		any          bool // it has threads that are not helpers
	}
	at := make([]int32, nprocs) // a process's index in the store -> 1 + its state's
	out := []RankState{}
	var accs []acc
	for _, tr := range cur {
		i := at[tr.proc] - 1
		if i < 0 {
			i = int32(len(out))
			at[tr.proc] = i + 1
			out = append(out, RankState{Host: tr.host, PID: tr.pid, Rank: tr.rank})
			accs = append(accs, acc{})
		}
		rs, a := &out[i], &accs[i]
		if tr.role == RoleHelper {
			a.helpers = combineProgress(a.helpers, tr.progress())
		} else {
			a.own, a.any = combineProgress(a.own, tr.progress()), true
		}
		rs.Launcher = rs.Launcher || tr.role == RoleLauncher
		if !containsInt(rs.Classes, tr.class) {
			rs.Classes = append(rs.Classes, tr.class)
		}
	}
	for i := range out {
		out[i].Progress = accs[i].own
		if !accs[i].any {
			out[i].Progress = accs[i].helpers
		}
		sort.Ints(out[i].Classes)
	}
	return out
}

// sortRankStates sorts states in rank order (by host, ranked first by rank, then by pid).
func sortRankStates(states []RankState) []RankState {
	slices.SortStableFunc(states, func(a, b RankState) int {
		switch {
		case rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID):
			return -1
		case rankOrder(b.Host, b.Rank, b.PID, a.Host, a.Rank, a.PID):
			return 1
		}
		return 0
	})
	return states
}

// loneRanks are the processes alone on their branch at the first frame where the program's
// paths part. Each outermost frame (a thread entry point of one executable) is its own tree:
// the paths part somewhere below it, and a process alone on one of the branches there is
// lone. Helpers' and the launcher's branches tell nothing of the ranks' own waits.
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
				prog = combineProgress(prog, x.progress())
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

// culprit is the lone rank the classic deadlock reading points at, when one does. It stays
// where it is: blocked, or spinning there (an MPI library's progress loop polls at full CPU
// in a deadlock as much as a blocked read waits). A lone rank blocked outranks a lone rank
// spinning: beside a receive nobody sends, the rank that computes on one path is the one the
// others wait for only if nothing else is blocked.
func culprit(lone []LoneRank) *LoneRank {
	stuck, spinning := lonely(lone, Stuck), lonely(lone, Spinning)
	switch {
	case len(lone) == 1 && !TimedWait(lone[0].Syscall):
		l := lone[0]
		return &l
	case len(stuck) == 1:
		return &stuck[0]
	case len(stuck) == 0 && len(spinning) == 1:
		return &spinning[0]
	}
	return nil
}

// goroutineWaits counts the goroutines that are not the runtime's by status and wait.
func goroutineWaits(cur []*threadTrack, classOf map[*threadTrack]int) []GoroutineWait {
	type acc struct {
		w       GoroutineWait
		threads []*threadTrack
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
		rs := rankSet(a.threads)
		a.w.Ranks, a.w.Unranked = rs.text, rs.unrankedText
		sort.Ints(a.w.Classes)
		out = append(out, a.w)
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
	text string // the rank set
	// unrankedText names the processes without a rank by pid (host:pid across hosts), the
	// first maxUnrankedListed of them.
	unrankedText string
	set          RankSet
	procs        int      // processes
	pids         []int    // the first MaxListedPIDs, by host and pid
	hosts        []string // index for index with pids, when there are several hosts
	hostSet      HostSet
	// unranked counts the processes without a rank; members are the first few processes,
	// unrankedMembers the first few without a rank.
	unranked        int
	members         []Member
	unrankedMembers []Member
}

// maxUnrankedListed bounds the processes without a rank that a rank set's text names.
const maxUnrankedListed = 256

// rankSet is the ranks of some threads' processes, those without a rank by pid ("412,418",
// host:pid across hosts), and their pids (one per process) with hosts when there are several.
func rankSet(ts []*threadTrack) threadRanks {
	seen := make(map[int32]bool, len(ts)) // by the process's index in the store
	type procRank struct {
		pkey
		rank Rank
	}
	var add RankAdder
	var unranked []pkey
	var procs []procRank
	multi := false
	var hostNames []string
	for _, t := range ts {
		if seen[t.proc] {
			continue
		}
		seen[t.proc] = true
		k := pkey{t.host, t.pid}
		procs = append(procs, procRank{k, t.rank})
		if t.host != "" {
			multi = true
			if len(hostNames) == 0 || hostNames[len(hostNames)-1] != t.host {
				hostNames = append(hostNames, t.host)
			}
		}
		if t.rank >= 0 {
			add.Add(int(t.rank))
		} else {
			unranked = append(unranked, k)
		}
	}
	// By host, then pid: the same however the streams interleaved.
	byHostPID := func(a, b pkey) int {
		if a.host != b.host {
			return strings.Compare(a.host, b.host)
		}
		return a.pid - b.pid
	}
	slices.SortFunc(procs, func(a, b procRank) int { return byHostPID(a.pkey, b.pkey) })
	r := threadRanks{set: add.Set(), procs: len(procs), hostSet: HostSetOf(hostNames...), unranked: len(unranked),
		pids: make([]int, 0, min(len(procs), MaxListedPIDs))}
	for i, p := range procs[:min(len(procs), MaxListedPIDs)] {
		r.pids = append(r.pids, p.pid)
		r.hosts = append(r.hosts, p.host)
		if i < MaxReducedMembers {
			r.members = append(r.members, Member{Host: p.host, PID: p.pid, Rank: p.rank})
		}
	}
	if !multi {
		r.hosts = nil
	}
	r.text = r.set.String()
	if len(unranked) > 0 {
		slices.SortFunc(unranked, byHostPID)
		var b strings.Builder
		for i, o := range unranked[:min(len(unranked), maxUnrankedListed)] {
			if i > 0 {
				b.WriteByte(',')
			}
			if o.host != "" {
				b.WriteString(o.host + ":")
			}
			b.WriteString(strconv.Itoa(o.pid))
		}
		if len(unranked) > maxUnrankedListed {
			fmt.Fprintf(&b, " +%d more", len(unranked)-maxUnrankedListed)
		}
		r.unrankedText = b.String()
		for _, o := range unranked[:min(len(unranked), MaxReducedMembers)] {
			r.unrankedMembers = append(r.unrankedMembers, Member{Host: o.host, PID: o.pid, Rank: NoRank})
		}
	}
	return r
}
