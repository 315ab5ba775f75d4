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

// Group is the crashes that share a crash-site key. Which crashes belong together and which
// is the representative is the tracer's decision (tracer/crash: it applies the core policy by
// them before the signal goes on), carried by each crash event (Key, Group, Representative);
// the State takes it from there and decides nothing of its own, but for the merge of many
// hosts' streams: the groups of one key are one group whatever the host.
type Group struct {
	// ID is the tracer's group number (Crash.Group) of the group's first crash. Each host's
	// tracer numbers its own groups, so in a view of many hosts a number another host's group
	// already has is replaced by the next free one (as is a missing one).
	ID           int
	Key          string
	Signal       string
	Module       string
	Offset       Hex
	Function     string
	AbortMessage string
	Members      []CrashRef
	// Representative is the member the tracer named representative (Crash.Representative,
	// the one whose core is kept); the zero ProcKey while none was, because no member could
	// have a core (each says why: NoCore).
	Representative ProcKey
	Core           *string
	// NoCore is why Core is nil: the reason every member without a core gave, or
	// NoCoreMixed when they gave different ones; empty once the group has a core.
	NoCore      NoCore
	Stack       []Frame
	First, Last time.Time
}

// Count is the number of crashes in the group.
func (g *Group) Count() int { return len(g.Members) }

// LogEntry is one event in the timeline.
type LogEntry struct {
	Seq   int
	Event Event
}

// MaxLog bounds the timeline kept in memory; the recording keeps everything.
const MaxLog = 20000

// State is everything the events have said so far. Apply is a pure reducer: the live TUI,
// the --json summary and replay all build State the same way.
type State struct {
	Session Session
	Procs   map[ProcKey]*Proc
	Order   []ProcKey // first-seen order
	Groups  []*Group
	groupOf map[string]*Group
	groupID map[int]bool // the Group IDs in use
	maxID   int
	Handled []CrashRef // handled faults, as refs with the fields that apply
	Matrix  map[string]*Matrix
	// Measuring is the progress of a measurement under way, per host (nil when none).
	Measuring map[string]*MatrixProgress
	// Threads are the threads of the latest checkpoint (Checkpoints[len-1]); the earlier
	// checkpoints stay browsable in Checkpoints (at most MaxCheckpoints).
	Threads     map[TaskKey]*Thread
	Checkpoints []*Checkpoint
	Log         []LogEntry
	Errors      []Error
	Exits       int
	Crashes     int
	NHandled    int
	Seq         int
	Last        time.Time
	Closed      *Summary // the summary event, once seen
	// Samples are each process's latest stack samples (at most MaxSamples), oldest first;
	Samples      map[ProcKey][]StampedSample
	SampleEvents int // how many Sample (and Goroutines) events were applied (a cheap change counter)
}

// NewState returns an empty State.
func NewState() *State {
	return &State{
		Procs:   map[ProcKey]*Proc{},
		groupOf: map[string]*Group{},
		groupID: map[int]bool{},
		Matrix:  map[string]*Matrix{}, Measuring: map[string]*MatrixProgress{},
		Threads: map[TaskKey]*Thread{},
		Samples: map[ProcKey][]StampedSample{},
	}
}

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

func (s *State) proc(host string, pid int) *Proc {
	k := ProcKey{host, pid}
	p := s.Procs[k]
	if p == nil {
		p = &Proc{Host: host, Process: Process{PID: pid, Rank: NoRank}, Alive: true, Tasks: map[int]bool{}}
		s.Procs[k] = p
		s.Order = append(s.Order, k)
	}
	return p
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
	if k := e.Kind(); k != KindSample && k != KindGoroutines && k != KindMatrixProgress {
		s.Log = append(s.Log, LogEntry{Seq: s.Seq, Event: e})
	}
	if len(s.Log) > MaxLog {
		s.Log = append(s.Log[:0:0], s.Log[len(s.Log)-MaxLog/2:]...)
	}
	h := e.Host
	switch b := e.Body.(type) {
	case Session:
		s.Session = b
	case Process:
		p := s.proc(h, b.PID)
		p.Process, p.Alive, p.Exit, p.Joined = b, true, nil, e.Time
		if len(p.Tasks) == 0 {
			p.Tasks[b.PID] = true
		}
	case Task:
		p := s.proc(h, b.PID)
		if b.Exited {
			delete(p.Tasks, b.TID)
		} else {
			p.Tasks[b.TID] = true
		}
		p.Threads = len(p.Tasks)
	case Exec:
		p := s.proc(h, b.PID)
		p.Exe, p.Comm, p.Argv = b.Exe, b.Comm, b.Argv
		if b.Rank != NoRank {
			p.Rank = b.Rank
		}
		p.Tasks = map[int]bool{b.PID: true} // exec leaves one thread
		p.Threads = 1
	case Exit:
		p := s.proc(h, b.PID)
		if p.Alive {
			s.Exits++
		}
		ex := b
		p.Alive, p.Exit = false, &ex
		p.Tasks = map[int]bool{}
		p.Threads = 0
	case Crash:
		s.Crashes++
		p := s.proc(h, b.PID)
		p.Crashes++
		if b.Rank == NoRank {
			b.Rank = p.Rank
		}
		key := SiteKey(b)
		g := s.groupOf[key]
		if g == nil {
			g = &Group{ID: s.newGroupID(b.Group), Key: key, Signal: b.Signal, Module: b.Module,
				Offset: b.Offset, Function: b.Function, AbortMessage: b.AbortMessage,
				Stack: b.Stack, First: e.Time}
			s.Groups = append(s.Groups, g)
			s.groupOf[key] = g
		}
		if b.Representative {
			g.Representative = ProcKey{h, b.PID}
			if len(b.Stack) > 0 {
				g.Stack = b.Stack
			}
		}
		switch {
		case b.Core != nil:
			g.Core, g.NoCore = b.Core, ""
		case g.Core == nil && b.NoCore != "" && g.NoCore == "":
			g.NoCore = b.NoCore
		case g.Core == nil && b.NoCore != "" && g.NoCore != b.NoCore:
			g.NoCore = NoCoreMixed
		}
		g.Last = e.Time
		g.Members = append(g.Members, CrashRef{Host: h, Crash: b, Time: e.Time})
	case CrashLines:
		g := s.groupOf[b.Key]
		if g == nil {
			break
		}
		for i := range g.Members {
			m := &g.Members[i]
			if m.Host != h || m.Crash.PID != b.PID || m.Crash.TID != b.TID {
				continue
			}
			m.Crash.Function, m.Crash.File, m.Crash.Line, m.Crash.Stack = b.Function, b.File, b.Line, b.Stack
			if i == 0 {
				g.Function = b.Function // the group is named after its first crash
			}
			if g.Representative == (ProcKey{h, b.PID}) && len(b.Stack) > 0 {
				g.Stack = b.Stack
			}
		}
	case Handled:
		s.NHandled++
		s.proc(h, b.PID).Handled++
		s.Handled = append(s.Handled, CrashRef{Host: h, Time: e.Time, Crash: Crash{
			PID: b.PID, TID: b.TID, Rank: b.Rank, Signal: b.Signal, Code: b.Code, Addr: b.Addr,
			PC: b.PC, Module: b.Module, Offset: b.Offset, Function: b.Function}})
	case Matrix:
		m := b
		s.Matrix[h] = &m
		if m.Measured {
			delete(s.Measuring, h)
		}
	case MatrixProgress:
		p := b
		s.Measuring[h] = &p
	case Thread:
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
			cur = &Checkpoint{Host: h, ID: b.Checkpoint, Policy: b.Policy, Time: e.Time, Threads: map[TaskKey]*Thread{}}
			s.Checkpoints = append(s.Checkpoints, cur)
			if len(s.Checkpoints) > MaxCheckpoints {
				s.Checkpoints = append(s.Checkpoints[:0:0], s.Checkpoints[len(s.Checkpoints)-MaxCheckpoints:]...)
			}
			s.Threads = cur.Threads
		}
		cur.Threads[k] = &t
	case Sample:
		s.SampleEvents++
		k := ProcKey{h, b.PID}
		l := append(s.Samples[k], StampedSample{Host: h, Time: e.Time, Sample: b})
		if len(l) > MaxSamples {
			l = append(l[:0:0], l[len(l)-MaxSamples:]...)
		}
		s.Samples[k] = l
		if p := s.Procs[k]; p != nil && b.Rank == NoRank {
			l[len(l)-1].Rank = p.Rank
		}
		if p := s.Procs[k]; p != nil && b.PPID == 0 {
			l[len(l)-1].PPID = p.PPID // a recording from before samples named the parent
		}
	case Goroutines:
		// They complete the sample of the same number (emitted before them); one that is
		// no longer kept has nothing left to complete.
		l := s.Samples[ProcKey{h, b.PID}]
		for i := len(l) - 1; i >= 0; i-- {
			if l[i].Seq == b.Seq {
				g := b
				l[i].Go = &g
				s.SampleEvents++
				break
			}
		}
	case Error:
		s.Errors = append(s.Errors, b)
	case Summary:
		sum := b
		s.Closed = &sum
	}
}

// Stacks merges the samples (MergeStacks): the threads of each host's latest sample, so a
// process that ended before it is not placed, and one that ended after it keeps its last
// known place (a finished or replayed session still shows where every rank was).
func (s *State) Stacks(o StackOptions) Stacks {
	var all []StampedSample
	for _, k := range s.Order {
		all = append(all, s.Samples[k]...)
	}
	return MergeStacks(all, o)
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

// GroupByKey returns the group with that site key, or nil.
func (s *State) GroupByKey(key string) *Group { return s.groupOf[key] }

// Summary derives the closing summary from the State.
func (s *State) Summary() Summary {
	sum := Summary{Processes: len(s.Procs), Crashes: s.Crashes, Exits: s.Exits,
		Handled: s.NHandled, Errors: len(s.Errors), Groups: []GroupSummary{}}
	for _, g := range s.Groups {
		gs := GroupSummary{Group: g.ID, Key: g.Key, Signal: g.Signal, Module: g.Module,
			Offset: g.Offset, Function: g.Function, AbortMessage: g.AbortMessage,
			Count: g.Count(), Representative: g.Representative.PID, Core: g.Core, NoCore: g.NoCore}
		hosts := false
		for _, m := range g.Members {
			gs.PIDs = append(gs.PIDs, m.Crash.PID)
			gs.Ranks = append(gs.Ranks, m.Crash.Rank)
			gs.Hosts = append(gs.Hosts, m.Host)
			hosts = hosts || m.Host != ""
		}
		if !hosts {
			gs.Hosts = nil
		}
		sum.Groups = append(sum.Groups, gs)
	}
	return sum
}

// SortedProcs returns the processes ordered by host, rank (ranked first) and pid.
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

// Live counts processes and threads still alive.
func (s *State) Live() (procs, threads int) {
	for _, p := range s.Procs {
		if p.Alive {
			procs++
			threads += len(p.Tasks)
		}
	}
	return
}
