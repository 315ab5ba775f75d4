package sessions

import (
	"fmt"
	"sort"
	"time"
)

// ProcKey names a process across hosts: pids are unique only per host.
type ProcKey struct {
	Host string
	PID  int
}

func (k ProcKey) String() string {
	if k.Host == "" {
		return fmt.Sprint(k.PID)
	}
	return fmt.Sprintf("%s:%d", k.Host, k.PID)
}

// TaskKey names a thread across hosts.
type TaskKey struct {
	Host string
	TID  int
}

// Proc is what State knows of one process.
type Proc struct {
	Host string
	Process
	Alive   bool
	Exit    *Exit
	Tasks   map[int]bool // live tids
	Crashes int
	Handled int
	Joined  time.Time
}

// CrashRef is one crash inside a group.
type CrashRef struct {
	Host  string
	Crash Crash
	Time  time.Time
}

// LogEntry is one event in the timeline.
type LogEntry struct {
	Seq   int
	Event Event
}

// What State keeps in detail, whatever its input claims: beyond these it keeps counts and
// rank sets (issue 21: memory bounded by what a screen shows, not by the job). The
// recording keeps everything.
const (
	// MaxLog bounds the timeline.
	MaxLog = 20000
	// MaxProcs bounds the processes kept in detail (Procs: argv, threads, exit); the
	// others are counted per host in 16 bytes each (rank, threads, alive) so counts stay
	// exact.
	MaxProcs = 1 << 14
	// MaxErrors bounds the error events kept (the first ones); NErrors counts them all.
	MaxErrors = 1000
	// MaxHandled bounds the handled faults kept (the first ones); NHandled counts them all.
	MaxHandled = 10000
)

// State is everything the events have said so far. Apply is a pure reducer: the live TUI,
// the --json summary and replay all build State the same way, and so does every level of a
// tree of reducing views (reduced.go): a State applies its agents' events and its subtrees'
// reduced events side by side.
type State struct {
	Session Session
	Procs   map[ProcKey]*Proc // the first MaxProcs processes
	Order   []ProcKey         // first-seen order of Procs
	Groups  []*Group
	groupOf map[string]*Group
	groupID map[int]bool // the Group IDs in use
	maxID   int
	Handled []CrashRef // the first MaxHandled handled faults, as refs with the fields that apply
	Matrix  map[string]*Matrix
	// Measuring is the progress of a measurement under way, per host (nil when none).
	Measuring map[string]*MatrixProgress
	// Threads are the threads of the latest checkpoint (Checkpoints[len-1]); the earlier
	// checkpoints stay browsable in Checkpoints (at most MaxCheckpoints).
	Threads     map[TaskKey]*Thread
	Checkpoints []*Checkpoint
	Log         []LogEntry
	Errors      []Error // the first MaxErrors
	// The counts, over every host: the local agents' and those reducers speak for.
	NProcs   int
	Exits    int
	Crashes  int
	NHandled int
	NErrors  int
	Seq      int
	Last     time.Time
	Closed   *Summary // the summary event, once seen
	// Samples are the latest stack samples (at most MaxSamples) of each process in Procs,
	// oldest first; every process's are merged (Stacks).
	Samples      map[ProcKey][]StampedSample
	SampleEvents int // how many Sample (and Goroutines) events were applied (a cheap change counter)
	// Lost are the hosts whose streams ended without their summary (Lost events).
	Lost HostSet
	// Details are the latest answers to detail requests (at most MaxDetails), oldest first.
	Details []HostDetail

	hostAnswers []HostAnswer // the latest HostProcesses answers (MaxHostAnswers)

	lite    map[string]map[int32]liteProc // the processes beyond MaxProcs, per host
	hosts   map[string]*hostAcc           // per-host counts of the events applied here
	subs    map[string]*subtree           // what each reducer (by its event Host) said
	subList []string                      // their names, first seen first
	store   *sampleStore
	// ver counts the changes a Reducer passes on: each host count, group, matrix and
	// checkpoint carries the ver of its last change; stacksVer that of the samples'.
	ver       int
	stacksVer int
	matrixVer map[string]int // of each host's Matrix
	ckptVer   map[string]int // of each host's latest checkpoint
	lost      []Lost         // the Lost events, in order
	noDetail  bool           // NoDetail
}

// liteProc is a process beyond MaxProcs: what its host's counts need.
type liteProc struct {
	rank    int32
	threads int32
	alive   bool
}

// hostAcc is one host's counts, from the events applied here.
type hostAcc struct {
	HostCount
	ranks RankAdder
	ver   int
}

// subtree is what one reducer said: the latest of each snapshot.
type subtree struct {
	hosts     map[string]HostCount
	hostVer   map[string]int
	classes   *StackClasses
	matrix    map[string]HostMatrix
	matrixVer map[string]int
	ckpt      map[string]HostCheckpoint
	ckptVer   map[string]int
}

// NewState returns an empty State.
func NewState() *State {
	return &State{
		Procs:   map[ProcKey]*Proc{},
		groupOf: map[string]*Group{},
		groupID: map[int]bool{},
		Matrix:  map[string]*Matrix{}, Measuring: map[string]*MatrixProgress{},
		Threads:   map[TaskKey]*Thread{},
		Samples:   map[ProcKey][]StampedSample{},
		lite:      map[string]map[int32]liteProc{},
		hosts:     map[string]*hostAcc{},
		subs:      map[string]*subtree{},
		store:     newSampleStore(),
		matrixVer: map[string]int{}, ckptVer: map[string]int{},
	}
}

// NoDetail makes the State keep only what a Reducer passes on, for a reducing view (crashtui
// view --reduce, which has no screen): no timeline (Log), no process in detail (Procs: each is
// counted as one beyond MaxProcs is, its agent answers what else is asked of it) and no
// process's samples in detail (Samples; the merge's store keeps every process's, as in any
// State). Call it before the first Apply.
func (s *State) NoDetail() { s.noDetail = true }

// SiteKey is the crash-site key used when the tracer did not give one: exe|module+offset, or
// the abort message for SIGABRT (Spindle's key, kernel.md §C).
func SiteKey(c Crash) string {
	if c.Key != "" {
		return c.Key
	}
	if c.AbortMessage != "" {
		return c.Exe + "|abort:" + c.AbortMessage
	}
	return fmt.Sprintf("%s|%s+%s", c.Exe, c.Module, c.Offset)
}

func (s *State) host(h string) *hostAcc {
	a := s.hosts[h]
	if a == nil {
		a = &hostAcc{HostCount: HostCount{Host: h}}
		s.hosts[h] = a
	}
	s.ver++
	a.ver = s.ver
	return a
}

// procView is what the counts need of one process, detailed or not.
type procView struct {
	exists, alive bool
	threads       int
	rank          Rank
}

// look returns the process's view and where it lives: p for one in Procs, lp (with ok)
// for one beyond MaxProcs.
func (s *State) look(h string, pid int) (v procView, p *Proc, lp liteProc, ok bool) {
	if p = s.Procs[ProcKey{h, pid}]; p != nil {
		return procView{true, p.Alive, len(p.Tasks), p.Rank}, p, lp, false
	}
	if lp, ok = s.lite[h][int32(pid)]; ok {
		return procView{true, lp.alive, int(lp.threads), Rank(lp.rank)}, nil, lp, true
	}
	return procView{rank: NoRank}, nil, lp, false
}

// change applies fn to the process (made when new: in Procs while there is room) and
// keeps its host's counts.
func (s *State) change(h string, pid int, fn func(v *procView, p *Proc)) {
	before, p, _, _ := s.look(h, pid)
	if !before.exists {
		s.NProcs++
		if !s.noDetail && len(s.Procs) < MaxProcs {
			k := ProcKey{h, pid}
			p = &Proc{Host: h, Process: Process{PID: pid, Rank: NoRank}, Alive: true, Tasks: map[int]bool{}}
			s.Procs[k] = p
			s.Order = append(s.Order, k)
		}
	}
	after := before
	after.exists = true
	if !before.exists {
		after.alive, after.rank = true, NoRank
	}
	fn(&after, p)
	if p != nil {
		after.alive, after.threads, after.rank = p.Alive, len(p.Tasks), p.Rank
	} else {
		m := s.lite[h]
		if m == nil {
			m = map[int32]liteProc{}
			s.lite[h] = m
		}
		m[int32(pid)] = liteProc{rank: int32(after.rank), threads: int32(after.threads), alive: after.alive}
	}
	a := s.host(h)
	if !before.exists {
		a.Processes++
	}
	if before.alive {
		a.Alive--
		a.Threads -= before.threads
	}
	if after.alive {
		a.Alive++
		a.Threads += after.threads
	}
	switch {
	case before.exists && before.rank < 0 && after.rank >= 0:
		a.Unranked--
	case (!before.exists || before.rank >= 0) && after.rank < 0:
		a.Unranked++
	}
	a.ranks.Add(int(after.rank))
}

// Apply reduces one event into the State.
func (s *State) Apply(e Event) {
	s.Seq++
	if e.Time.After(s.Last) {
		s.Last = e.Time
	}
	// The timeline leaves out the periodic facts (a stack sample is one event per process
	// every few seconds, progress four a second): they would push everything else out of
	// it. The recording keeps them.
	if k := e.Kind(); !s.noDetail && k != KindSample && k != KindGoroutines && k != KindMatrixProgress && k != KindHosts && k != KindStackClasses {
		s.Log = append(s.Log, LogEntry{Seq: s.Seq, Event: e})
	}
	if len(s.Log) > MaxLog {
		// A new array (the TUI may hold rows of the old one), with room for the next
		// MaxLog/2 events: appends do not grow it again.
		l := make([]LogEntry, MaxLog/2, MaxLog+1)
		copy(l, s.Log[len(s.Log)-MaxLog/2:])
		s.Log = l
	}
	h := e.Host
	switch b := e.Body.(type) {
	case Session:
		s.Session = b
	case Process:
		s.change(h, b.PID, func(v *procView, p *Proc) {
			v.alive, v.rank = true, b.Rank
			if v.threads == 0 {
				v.threads = 1
			}
			if p != nil {
				p.Process, p.Alive, p.Exit, p.Joined = b, true, nil, e.Time
				if len(p.Tasks) == 0 {
					p.Tasks[b.PID] = true
				}
			}
		})
	case Task:
		s.change(h, b.PID, func(v *procView, p *Proc) {
			if p != nil {
				if b.Exited {
					delete(p.Tasks, b.TID)
				} else {
					p.Tasks[b.TID] = true
				}
				p.Threads = len(p.Tasks)
			} else if b.Exited {
				v.threads = max(v.threads-1, 0)
			} else {
				v.threads++
			}
		})
	case Exec:
		s.change(h, b.PID, func(v *procView, p *Proc) {
			if b.Rank != NoRank {
				v.rank = b.Rank
			}
			v.threads = 1 // exec leaves one thread
			if p != nil {
				p.Exe, p.Comm, p.Argv = b.Exe, b.Comm, b.Argv
				if b.Rank != NoRank {
					p.Rank = b.Rank
				}
				p.Tasks = map[int]bool{b.PID: true}
				p.Threads = 1
			}
		})
	case Exit:
		s.change(h, b.PID, func(v *procView, p *Proc) {
			if v.alive {
				s.Exits++
				s.host(h).Exits++
			}
			v.alive, v.threads = false, 0
			if p != nil {
				ex := b
				p.Alive, p.Exit = false, &ex
				p.Tasks = map[int]bool{}
				p.Threads = 0
			}
		})
	case Crash:
		s.applyCrash(h, e.Time, b)
	case CrashLines:
		if g := s.groupOf[b.Key]; g != nil {
			g.amend(h, b)
			s.ver++
			g.ver = s.ver
		}
	case Handled:
		s.NHandled++
		s.host(h).Handled++
		s.change(h, b.PID, func(_ *procView, p *Proc) {
			if p != nil {
				p.Handled++
			}
		})
		if len(s.Handled) < MaxHandled {
			s.Handled = append(s.Handled, CrashRef{Host: h, Time: e.Time, Crash: Crash{
				PID: b.PID, TID: b.TID, Rank: b.Rank, Signal: b.Signal, Code: b.Code, Addr: b.Addr,
				PC: b.PC, Module: b.Module, Offset: b.Offset, Function: b.Function}})
		}
	case Matrix:
		m := b
		s.Matrix[h] = &m
		if m.Measured {
			delete(s.Measuring, h)
		}
		s.ver++
		s.matrixVer[h] = s.ver
	case MatrixProgress:
		p := b
		s.Measuring[h] = &p
	case Thread:
		s.applyThread(h, e.Time, b)
		s.ver++
		s.ckptVer[h] = s.ver
	case Sample:
		s.SampleEvents++
		s.stacksVer = s.Seq
		k := ProcKey{h, b.PID}
		v, p, _, lite := s.look(h, b.PID)
		ppid := 0
		if p != nil {
			ppid = p.PPID // a recording from before samples named the parent
		}
		s.store.add(h, e.Time, b, v.rank, ppid)
		// Kept in detail for the processes kept in detail, and for those no event named
		// (a stream of samples alone) while there is room for them.
		if _, kept := s.Samples[k]; !s.noDetail && (p != nil || kept || (!lite && !v.exists && len(s.Samples) < MaxProcs)) {
			l := append(s.Samples[k], StampedSample{Host: h, Time: e.Time, Sample: b})
			if len(l) > MaxSamples {
				l = append(l[:0:0], l[len(l)-MaxSamples:]...)
			}
			s.Samples[k] = l
			if b.Rank == NoRank && p != nil {
				l[len(l)-1].Rank = p.Rank
			}
			if b.PPID == 0 {
				l[len(l)-1].PPID = ppid
			}
		}
	case Goroutines:
		// They complete the sample of the same number (emitted before them); one that is
		// no longer kept has nothing left to complete.
		if s.store.addGoroutines(h, b) {
			s.SampleEvents++
			s.stacksVer = s.Seq
		}
		l := s.Samples[ProcKey{h, b.PID}]
		for i := len(l) - 1; i >= 0; i-- {
			if l[i].Seq == b.Seq {
				g := b
				l[i].Go = &g
				break
			}
		}
	case Error:
		s.NErrors++
		s.host(h).Errors++
		if len(s.Errors) < MaxErrors {
			s.Errors = append(s.Errors, b)
		}
	case Summary:
		sum := b
		s.Closed = &sum
	case Detail:
		s.applyDetail(h, b)
	case HostProcesses:
		s.applyHostProcesses(h, b)
	default:
		s.applyReduced(h, e.Time, b)
	}
}

func (s *State) applyCrash(h string, at time.Time, b Crash) {
	s.Crashes++
	s.host(h).Crashes++
	s.change(h, b.PID, func(v *procView, p *Proc) {
		if p != nil {
			p.Crashes++
		}
		if b.Rank == NoRank {
			b.Rank = v.rank
		}
	})
	g := s.group(b.Group, SiteKey(b), b.Signal, b.Module, b.Offset, b.Function, b.AbortMessage, at)
	g.add(h, at, b)
	s.ver++
	g.ver = s.ver
}

// group returns the group of key, made when new.
func (s *State) group(id int, key, signal, module string, offset Hex, function, abort string, at time.Time) *Group {
	g := s.groupOf[key]
	if g == nil {
		g = &Group{ID: s.newGroupID(id), Key: key, Signal: signal, Module: module, Offset: offset,
			Function: function, AbortMessage: abort, First: at, hosts: map[string]bool{}, pidsOne: true}
		s.Groups = append(s.Groups, g)
		s.groupOf[key] = g
	}
	return g
}

func (s *State) applyThread(h string, at time.Time, b Thread) {
	t := b
	k := TaskKey{h, b.TID}
	var cur *Checkpoint
	if n := len(s.Checkpoints); n > 0 {
		cur = s.Checkpoints[n-1]
	}
	// A new checkpoint: another number, or (recordings without numbers) a thread the
	// current one already has, unless it is that thread's outcome arriving.
	old := (*Thread)(nil)
	if cur != nil {
		old = cur.Threads[k]
	}
	update := old != nil && old.PC == b.PC && old.Applied == b.Applied && !old.HasOutcome() && b.HasOutcome()
	if cur == nil || cur.Host != h || cur.ID != b.Checkpoint || (b.Checkpoint == 0 && old != nil && !update) {
		cur = &Checkpoint{Host: h, ID: b.Checkpoint, Policy: b.Policy, Time: at, Threads: map[TaskKey]*Thread{}}
		s.Checkpoints = append(s.Checkpoints, cur)
		if len(s.Checkpoints) > MaxCheckpoints {
			s.Checkpoints = append(s.Checkpoints[:0:0], s.Checkpoints[len(s.Checkpoints)-MaxCheckpoints:]...)
		}
		s.Threads = cur.Threads
	}
	cur.Threads[k] = &t
}

// Stacks merges the samples (MergeStacks) with the classes reducers sent: the threads of
// each host's latest sample, so a process that ended before it is not placed, and one that
// ended after it keeps its last known place (a finished or replayed session still shows
// where every rank was).
func (s *State) Stacks(o StackOptions) Stacks {
	local, red := s.store.mergeFull(o, true)
	var subs []*StackClasses
	for _, name := range s.subList {
		if c := s.subs[name].classes; c != nil {
			subs = append(subs, c)
		}
	}
	if len(subs) == 0 {
		return local
	}
	return mergeReducedStacks(local, &red, subs, o)
}

// newGroupID is the ID of a new group whose first crash the tracer put in group n: n, unless
// another group has it already (another host's tracer numbered its own groups) or there is
// none (n is 0), and then the next free one.
func (s *State) newGroupID(n int) int {
	if n <= 0 || s.groupID[n] {
		n = s.maxID + 1
	}
	s.groupID[n] = true
	s.maxID = max(s.maxID, n)
	return n
}

// Checkpoint is one simulated checkpoint's threads.
type Checkpoint struct {
	Host    string
	ID      int // 0 in recordings made before checkpoints were numbered
	Policy  Policy
	Time    time.Time // its first thread event
	Threads map[TaskKey]*Thread
}

// MaxCheckpoints bounds the checkpoints State keeps.
const MaxCheckpoints = 32

// GroupByKey returns the group with that site key, or nil.
func (s *State) GroupByKey(key string) *Group { return s.groupOf[key] }

// Summary derives the closing summary from the State.
func (s *State) Summary() Summary {
	sum := Summary{Processes: s.NProcs, Crashes: s.Crashes, Exits: s.Exits,
		Handled: s.NHandled, Errors: s.NErrors, Groups: []GroupSummary{}, Lost: s.Lost}
	for _, g := range s.Groups {
		gs := GroupSummary{Group: g.ID, Key: g.Key, Signal: g.Signal, Module: g.Module,
			Offset: g.Offset, Function: g.Function, AbortMessage: g.AbortMessage,
			Count: g.Count(), Ranks: g.Ranks(), Unranked: g.Unranked(),
			Representative: g.Representative.PID, RepresentativeHost: g.Representative.Host,
			Core: g.Core, NoCore: g.NoCore}
		gs.Hosts = g.Hosts()
		if pids, ok := g.PIDs(); ok {
			gs.PIDs = pids
		}
		for _, m := range g.Members[:min(len(g.Members), MaxReducedMembers)] {
			gs.Members = append(gs.Members, memberOf(m))
		}
		sum.Groups = append(sum.Groups, gs)
	}
	return sum
}

func memberOf(m CrashRef) Member {
	return Member{Host: m.Host, PID: m.Crash.PID, TID: m.Crash.TID, Rank: m.Crash.Rank, Code: m.Crash.Code, Time: m.Time}
}

// SortedProcs returns the processes in Procs ordered by host, rank (ranked first) and pid.
func (s *State) SortedProcs() []*Proc {
	out := make([]*Proc, 0, len(s.Procs))
	for _, k := range s.Order {
		out = append(out, s.Procs[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return rankOrder(a.Host, a.Rank, a.PID, b.Host, b.Rank, b.PID)
	})
	return out
}

// rankOrder is the order processes are listed in: by host, ranked ones first by rank, then
// by pid.
func rankOrder(ha string, ra Rank, pa int, hb string, rb Rank, pb int) bool {
	if ha != hb {
		return ha < hb
	}
	if (ra >= 0) != (rb >= 0) {
		return ra >= 0
	}
	if ra != rb {
		return ra < rb
	}
	return pa < pb
}

// Live counts processes and threads still alive, on every host.
func (s *State) Live() (procs, threads int) {
	for _, hc := range s.HostCounts() {
		procs += hc.Alive
		threads += hc.Threads
	}
	return
}

// HostCounts are the counts of every host, sorted by name: the hosts of the events applied
// here, and those reducers speak for.
func (s *State) HostCounts() []HostCount {
	var out []HostCount
	for _, a := range s.hosts {
		hc := a.HostCount
		hc.Ranks = a.ranks.Set()
		hc.Lost = hc.Lost || s.Lost.Contains(hc.Host)
		out = append(out, hc)
	}
	for _, name := range s.subList {
		for _, hc := range s.subs[name].hosts {
			hc.Lost = hc.Lost || s.Lost.Contains(hc.Host)
			out = append(out, hc)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	// A host both here and under a reducer (a stream given twice): one row, summed.
	merged := out[:0]
	for _, hc := range out {
		if n := len(merged); n > 0 && merged[n-1].Host == hc.Host {
			m := &merged[n-1]
			m.Processes += hc.Processes
			m.Alive += hc.Alive
			m.Threads += hc.Threads
			m.Exits += hc.Exits
			m.Crashes += hc.Crashes
			m.Handled += hc.Handled
			m.Errors += hc.Errors
			m.Ranks = m.Ranks.Union(hc.Ranks)
			m.Unranked += hc.Unranked
			m.Lost = m.Lost || hc.Lost
			continue
		}
		merged = append(merged, hc)
	}
	return merged
}
