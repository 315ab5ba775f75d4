package sessions

import (
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sample is one stack sample of one process: every thread's stack, taken while the process
// (and only it) was held.
type Sample struct {
	Seq     int            `json:"seq"`
	PID     int            `json:"pid"`
	Rank    Rank           `json:"rank"`
	Threads []ThreadSample `json:"threads"`
	// HeldUS is how long the process was held stopped, in microseconds.
	HeldUS int `json:"held_us"`
	// Stopped counts the threads stopped to be read; Unstopped those read while they stayed
	// blocked in a syscall (/proc gave pc and sp, CFI did the rest): no EINTR, no restart.
	Stopped   int `json:"stopped"`
	Unstopped int `json:"unstopped"`
	// Exe is the process's executable: a thread with no frame in it runs library code only
	// (an MPI or PMIx progress thread), a helper. PPID is its parent: a process without a
	// rank that started ranks is their launcher.
	Exe  string `json:"exe,omitempty"`
	PPID int    `json:"ppid,omitempty"`
}

// ThreadSample is one thread's stack in a Sample, innermost frame first.
type ThreadSample struct {
	TID int `json:"tid"`
	// State is the thread's state letter as ps shows it (R, S, D, T, t), before sampling.
	State string `json:"state"`
	// Held is true when the registers were read in a ptrace-stop; false when the thread was
	// read from /proc while blocked (Note says why) and its stack may be partial.
	Held bool `json:"held"`
	// Unstopped is true when it was read while it stayed blocked, without stopping it, and
	// CFI from /proc's pc and sp reached its stack's end: the stack is whole.
	Unstopped bool   `json:"unstopped,omitempty"`
	Syscall   string `json:"syscall,omitempty"` // the call it was blocked in
	CPU       uint64 `json:"cpu"`               // utime+stime so far, in clock ticks
	// RunNS is the time it has spent on a CPU so far, in nanoseconds (schedstat; 0 where the
	// kernel does not keep it): what tells a spinning thread from a blocked one.
	RunNS  uint64  `json:"run_ns,omitempty"`
	Frames []Frame `json:"frames"`
	Note   string  `json:"note,omitempty"`
}

// Stacks is the merged view of the samples (STAT's prefix tree and equivalence classes, over
// time): written by crashtui stacks --json after its samples.
type Stacks struct {
	Samples int          `json:"samples"`
	Frames  string       `json:"frames"` // function, line or offset
	Cut     string       `json:"cut,omitempty"`
	Classes []StackClass `json:"classes"`
	Tree    *StackNode   `json:"tree"`
	Ranks   []RankState  `json:"ranks"`
	// Lone are the processes alone on their branch where the job's paths first part (Progress
	// is that of its threads on the branch); Culprit
	// is the one of them that the classic deadlock reading points at, when one does.
	Lone    []LoneRank `json:"lone,omitempty"`
	Culprit *LoneRank  `json:"culprit,omitempty"`
	// Aside sums up the threads put aside (helpers and the launcher), nil when none.
	Aside *Aside `json:"aside,omitempty"`
	// Goroutines are the goroutines of the job's Go processes, merged the same way; nil when
	// no sample has any.
	Goroutines *GoroutineStacks `json:"goroutines,omitempty"`
}

// Aside sums up the threads (or goroutines) with a role: those a reading of the job puts
// aside, the views fold them under one line.
type Aside struct {
	Count    int     `json:"count"`
	Helpers  int     `json:"helpers"`  // of them with RoleHelper
	Launcher int     `json:"launcher"` // of them the launcher's
	Ranks    string  `json:"ranks"`
	Unranked string  `json:"unranked,omitempty"`
	PIDs     []int   `json:"pids"`
	Progress string  `json:"progress"`
	CPUShare float64 `json:"cpu_share"` // on average, as StackClass's
	Classes  []int   `json:"classes"`
}

// Roles of threads and goroutines that a reading of the job puts aside: a helper runs no code
// of the program's own (an MPI or PMIx progress thread, an event loop of a library, the Go
// runtime's idle threads, the runtime's own goroutines), a launcher is a process without a
// rank that is the parent, or an ancestor, of ranks (mpirun, prted, srun, the shell of a
// wrapper script). The program's own threads have no role ("").
const (
	RoleHelper   = "helper"
	RoleLauncher = "launcher"
)

// roleOrder puts the program's own threads first, then the helpers, then the launcher.
func roleOrder(r string) int {
	switch r {
	case RoleHelper:
		return 1
	case RoleLauncher:
		return 2
	}
	return 0
}

// Progress over the samples, from the stacks and the kernel's own counters (each thread's
// state and CPU time, /proc/TID/stat and schedstat): the same call path every time and no CPU
// used (stuck: blocked), the same call path and CPU used (spinning: a busy wait, a livelock,
// or one long loop), a call path that changed (moving), stopped by job control (stopped), a
// mix of these among a class's threads (mixed), or unknown (fewer than two samples with a
// stack). A sample that read no stack is no change of stack.
const (
	Stuck    = "stuck"
	Spinning = "spinning"
	Moving   = "moving"
	Stopped  = "stopped"
	Mixed    = "mixed"
	Unknown  = "unknown"
)

// SpinShare is the share of one CPU a thread must have used over the samples, on the same
// path, to be spinning rather than stuck: a blocked thread uses none, one that wakes to poll
// every millisecond 1-3%, a busy wait all of one (still a third of one with six runnable
// threads on a loaded 2-CPU machine).
const SpinShare = 0.10

// StackFrame is one frame of a merged path.
type StackFrame struct {
	Function string `json:"function,omitempty"`
	Module   string `json:"module"`
	Offset   Hex    `json:"offset"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	FuncOff  Hex    `json:"func_off,omitempty"`
}

// StackClass is one distinct call path (an equivalence class), with the threads on it.
type StackClass struct {
	Class int `json:"class"`
	Count int `json:"count"` // threads (goroutines)
	// Ranks is the ranks' set, compressed: 0-63,65. Unranked are the processes without a
	// rank, by pid (host:pid across hosts): 22145,22150.
	Ranks    string       `json:"ranks"`
	Unranked string       `json:"unranked,omitempty"`
	PIDs     []int        `json:"pids"`
	Hosts    []string     `json:"hosts,omitempty"` // index for index with PIDs, when several
	Progress string       `json:"progress"`
	Frames   []StackFrame `json:"frames"` // root first
	Syscall  string       `json:"syscall,omitempty"`
	// Since is when its threads were first seen on this same stack, for a stuck class.
	Since *time.Time `json:"since,omitempty"`
	// CPUTicks is the CPU time its threads used over the samples (clock ticks).
	CPUTicks uint64 `json:"cpu_ticks"`
	// CPUShare is the share of one CPU each of its threads used on average over the
	// samples (0.0-1.0 and up, from schedstat or the ticks): what makes a class spinning.
	CPUShare float64 `json:"cpu_share"`
	// Partial is true when some of its threads were read from /proc, not stopped.
	Partial bool `json:"partial,omitempty"`
	// Spark is how many threads were on this path in each sample, oldest first.
	Spark []int `json:"spark,omitempty"`
	// Role is RoleHelper or RoleLauncher for threads put aside, "" for the program's own.
	Role string `json:"role,omitempty"`
	// Main counts the processes' main threads in it (tid = pid): the ranks' main threads
	// come first.
	Main int `json:"main,omitempty"`
	// Status and WaitReason are those of a class of goroutines (Status is never empty for
	// one, always for threads); CreatedBy is the go statement that started them all, when
	// they share one.
	Status     string      `json:"status,omitempty"`
	WaitReason string      `json:"wait_reason,omitempty"`
	CreatedBy  *StackFrame `json:"created_by,omitempty"`
}

// Goroutine says the class is of goroutines, not threads.
func (c StackClass) Goroutine() bool { return c.Status != "" }

// StackNode is one node of the prefix tree: a frame, and the threads whose path goes through
// it.
type StackNode struct {
	Frame    StackFrame `json:"frame"`
	Label    string     `json:"label"`
	Count    int        `json:"count"`
	Ranks    string     `json:"ranks"`
	Unranked string     `json:"unranked,omitempty"`
	PIDs     []int      `json:"pids"`
	Progress string     `json:"progress"`
	// CPUShare is the share of one CPU its threads used on average over the samples.
	CPUShare float64 `json:"cpu_share"`
	// Role is that of every thread through it (the tree's outermost frames are split by
	// role): RoleHelper, RoleLauncher or "".
	Role     string       `json:"role,omitempty"`
	Classes  []int        `json:"classes"` // the classes whose path goes through it
	Children []*StackNode `json:"children,omitempty"`
}

// RankState is one process's progress over the samples.
type RankState struct {
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid"`
	Rank Rank   `json:"rank"`
	// Progress is that of its own threads, its helpers left out when it has any other (a
	// deadlocked rank's progress thread that wakes now and then does not make it moving).
	Progress string `json:"progress"`
	Classes  []int  `json:"classes"`
	Launcher bool   `json:"launcher,omitempty"`
}

// LoneRank is a process alone on its branch at the frame where the paths part.
type LoneRank struct {
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid"`
	Rank     Rank   `json:"rank"`
	Class    int    `json:"class"`
	At       string `json:"at"`     // the deepest frame it shares with the others
	Into     string `json:"into"`   // its own next frame
	Others   int    `json:"others"` // processes on the other branches
	Progress string `json:"progress"`
	// Syscall is the call its threads on the branch are blocked in, when they share one.
	Syscall string `json:"syscall,omitempty"`
}

// TimedWait says whether a thread blocked in syscall is only sleeping for a while (it wakes
// on its own): not the wait of a deadlock. restart_syscall is a timed wait resumed after an
// interrupt.
func TimedWait(syscall string) bool {
	switch syscall {
	case "nanosleep", "clock_nanosleep", "clock_nanosleep_time64", "restart_syscall":
		return true
	}
	return false
}

func (Sample) Kind() Kind { return KindSample }
func (Stacks) Kind() Kind { return KindStacks }

// StackOptions say how samples merge.
type StackOptions struct {
	// Frames is the node identity: "function" (default), "line" or "offset".
	Frames string
	// Cut drops every frame below (called from) the first frame, from the root, whose
	// function matches it: STAT's cut under MPI_. nil cuts nothing.
	Cut *regexp.Regexp
	// HideUnsymbolized drops frames without a function name.
	HideUnsymbolized bool
	// Window is how many of each process's latest samples count (0: all that State keeps).
	Window int
}

// DefaultCut is the cut crashtui stacks applies unless told otherwise: frames under the MPI
// call a rank is in are the MPI library's own progress engine.
const DefaultCut = `^P?MPI_`

// DefaultCutRE is DefaultCut compiled.
var DefaultCutRE = regexp.MustCompile(DefaultCut)

// StampedSample is a Sample with where and when it was taken.
type StampedSample struct {
	Host string
	Time time.Time
	Sample
	// Go completes the sample of a Go process (nil until its Goroutines event, and for
	// other programs).
	Go *Goroutines
}

// MaxSamples bounds the samples State keeps per process.
const MaxSamples = 16

// frameKey is a frame's identity at the chosen granularity, and its label.
func frameKey(f Frame, by string) (key, label string) {
	mod := ModuleBase(f.Module)
	off := mod + "+" + f.Offset.String()
	switch by {
	case "offset":
		return off, off
	case "line":
		if f.Function == "" {
			return off, off
		}
		l := f.Function + " " + off
		if f.File != "" {
			l = f.Function + " " + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		return mod + "`" + l, l
	}
	if f.Function == "" {
		return off, off
	}
	return mod + "`" + f.Function, f.Function
}

// path is one thread's stack after hide and cut, root first.
func path(frames []Frame, o StackOptions) []Frame {
	out := make([]Frame, 0, len(frames))
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
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

// threadTrack is one thread's samples in the window, oldest first; or one goroutine's.
type threadTrack struct {
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
func (tr *threadTrack) add(s *StampedSample, p []Frame, o StackOptions, framed bool, extra string) {
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
func (tr *threadTrack) isMain() bool { return !tr.goroutine && tr.tid == tr.pid }

// sampleWindow is which samples a merge counts: each host's last Window.
type sampleWindow struct {
	latest map[string]int          // host -> latest seq
	in     map[string]map[int]bool // host -> the seqs that count
	qs     []int                   // every seq that counts, oldest first: a spark has one count each
	n      int                     // the most samples a host has in it
}

func windowOf(samples []StampedSample, size int) sampleWindow {
	w := sampleWindow{latest: map[string]int{}, in: map[string]map[int]bool{}}
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

// procKey is a process of a merge.
type procKey struct {
	host string
	pid  int
}

// MergeStacks merges samples into the prefix tree, the classes and each process's progress.
// Only threads in their host's latest sample are placed (where every rank is now); the older
// samples decide stuck or moving. The goroutines of Go processes are merged the same way,
// from each process's latest sample that has them.
func MergeStacks(samples []StampedSample, o StackOptions) Stacks {
	if o.Frames == "" {
		o.Frames = "function"
	}
	out := Stacks{Frames: o.Frames, Classes: []StackClass{}, Ranks: []RankState{}}
	if o.Cut != nil {
		out.Cut = o.Cut.String()
	}
	w := windowOf(samples, o.Window)
	out.Samples = w.n
	sorted := append([]StampedSample(nil), samples...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	all, cur := threadTracks(sorted, w, o)
	alive := map[procKey]bool{}
	for _, tr := range cur {
		alive[procKey{tr.host, tr.pid}] = true
	}
	gall, gcur, unread, goProcs := goroutineTracks(sorted, w, o, alive)
	launchers := launchersOf(sorted, w)
	setRoles(all, launchers)
	setRoles(gall, launchers)

	m := mergeTracks(cur, all, w.qs, o, 1)
	out.Classes, out.Tree = m.classes, m.tree
	out.Ranks = rankStates(cur, m.classOf)
	out.Lone, out.Culprit = loneRanks(m.root, m.classOf)
	out.Aside = asideOf(cur, m.classOf)
	if len(gcur) > 0 || len(unread) > 0 {
		g := mergeTracks(gcur, gall, w.qs, o, len(out.Classes)+1)
		gs := &GoroutineStacks{Processes: goProcs, Count: len(gcur), Classes: g.classes, Tree: g.tree,
			Waits: goroutineWaits(gcur, g.classOf), Unread: unread, Aside: asideOf(gcur, g.classOf)}
		for _, tr := range gcur {
			if tr.system {
				gs.System++
			}
		}
		out.Goroutines = gs
	}
	return out
}

// threadTracks are the tracks of the threads in the window, in the order first seen (all),
// and those in their host's latest sample (cur).
func threadTracks(sorted []StampedSample, w sampleWindow, o StackOptions) (all, cur []*threadTrack) {
	type tkey struct {
		host string
		tid  int
	}
	tracks := map[tkey]*threadTrack{}
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
				tr = &threadTrack{host: s.Host, pid: s.PID, tid: th.TID}
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

// goroutineTracks are the tracks of the goroutines in the window (all), those of each live
// process's latest sample that has them (cur; a process's goroutines come after its threads,
// so its latest sample may not have them yet), the live Go processes whose latest reading of
// goroutines failed, and how many were read.
func goroutineTracks(sorted []StampedSample, w sampleWindow, o StackOptions, alive map[procKey]bool) (all, cur []*threadTrack, unread []GoroutinesUnread, procs int) {
	type gkey struct {
		host string
		pid  int
		id   int64
	}
	latest := map[procKey]*StampedSample{}
	tracks := map[gkey]*threadTrack{}
	var order []gkey
	for i := range sorted {
		s := &sorted[i]
		if !w.in[s.Host][s.Seq] || s.Go == nil {
			continue
		}
		latest[procKey{s.Host, s.PID}] = s
		for _, g := range s.Go.Goroutines {
			k := gkey{s.Host, s.PID, g.ID}
			tr := tracks[k]
			if tr == nil {
				tr = &threadTrack{host: s.Host, pid: s.PID, goroutine: true, gid: g.ID}
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
	var keys []procKey
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
		if s := latest[procKey{k.host, k.pid}]; alive[procKey{k.host, k.pid}] && tr.seqs[len(tr.seqs)-1] == s.Seq {
			cur = append(cur, tr)
		}
	}
	return all, cur, unread, procs
}

// mainModule is the module of the main thread's outermost frame: the executable (_start,
// Go's runtime.rt0_go), "" when that thread has no frames.
func mainModule(s Sample) string {
	for _, th := range s.Threads {
		if th.TID == s.PID && len(th.Frames) > 0 {
			return th.Frames[len(th.Frames)-1].Module
		}
	}
	return ""
}

// ownCode says whether frames run code of the program's own: a frame in its executable exe
// that is not the Go runtime's. Without exe it cannot tell, and says yes.
func ownCode(frames []Frame, exe string) bool {
	if exe == "" {
		return true
	}
	for _, f := range frames {
		if f.Module == exe && !goRuntimeFunc(f.Function) {
			return true
		}
	}
	return false
}

// goRuntimeOnly says every frame is the Go runtime's (a pseudo-frame such as a signal
// frame aside): a thread that runs no goroutine now, idle in the scheduler, or sysmon.
func goRuntimeOnly(frames []Frame) bool {
	n := 0
	for _, f := range frames {
		switch {
		case strings.HasPrefix(f.Function, "<"):
		case !goRuntimeFunc(f.Function):
			return false
		default:
			n++
		}
	}
	return n > 0
}

func goRuntimeFunc(fn string) bool {
	return strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/runtime/")
}

// launchersOf are the processes without a rank that are ancestors of ranks, by the parents
// the samples name. Samples that name none (recorded before they did) leave only the ranks
// to go by: then every process without a rank in a job with ranks is its launcher.
func launchersOf(sorted []StampedSample, w sampleWindow) map[procKey]bool {
	parent := map[procKey]int{}
	rank := map[procKey]Rank{}
	known := false
	for i := range sorted {
		s := &sorted[i]
		if !w.in[s.Host][s.Seq] {
			continue
		}
		k := procKey{s.Host, s.PID}
		rank[k] = s.Rank
		if s.PPID != 0 {
			parent[k], known = s.PPID, true
		}
	}
	out := map[procKey]bool{}
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
			at = procKey{k.host, pp}
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

// setRoles gives each track its role (RoleHelper, RoleLauncher), launchers being the
// launchers' processes. A thread with no stack read keeps the program's: nothing says it is
// a helper.
func setRoles(tracks []*threadTrack, launchers map[procKey]bool) {
	for _, tr := range tracks {
		switch {
		case launchers[procKey{tr.host, tr.pid}]:
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
func combineProgress(a, b string) string {
	switch {
	case a == "" || a == Unknown:
		return b
	case b == Unknown || a == b:
		return a
	case (a == Stuck && b == Spinning) || (a == Spinning && b == Stuck):
		return Spinning // none left its path; some used CPU there
	}
	return Mixed
}

// nodeAcc is a node of the prefix tree being built.
type nodeAcc struct {
	n       *StackNode
	threads []*threadTrack
	kids    map[string]*nodeAcc
	order   []string
}

// mergedTracks are the classes and the tree of some tracks.
type mergedTracks struct {
	classes []StackClass
	classOf map[*threadTrack]int
	tree    *StackNode
	root    *nodeAcc
}

// mergeTracks makes the classes (numbered from first) and the prefix tree of the current
// tracks cur; all are every track of the window (the sparks count them).
func mergeTracks(cur, all []*threadTrack, qs []int, o StackOptions, first int) mergedTracks {
	// Classes: distinct current paths, in one role (and, for goroutines, one status).
	type classAcc struct {
		c       *StackClass
		threads []*threadTrack
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
		c.Ranks, c.Unranked, c.PIDs, c.Hosts = rankSet(ca.threads)
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
	out := mergedTracks{classes: []StackClass{}, classOf: map[*threadTrack]int{}}
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
	rootAcc := &nodeAcc{n: root, kids: map[string]*nodeAcc{}}
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
					next = &nodeAcc{n: &StackNode{Label: label, Frame: stackFrame(f), Role: tr.role}, kids: map[string]*nodeAcc{}}
					at.kids[k] = next
					at.order = append(at.order, k)
				}
				next.threads = append(next.threads, tr)
				at = next
			}
		}
	}
	var build func(a *nodeAcc, top bool)
	build = func(a *nodeAcc, top bool) {
		n := a.n
		n.Count = len(a.threads)
		n.Ranks, n.Unranked, n.PIDs, _ = rankSet(a.threads)
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
	out.tree, out.root = root, rootAcc
	return out
}

// asideOf sums up the tracks with a role (nil when none has one).
func asideOf(cur []*threadTrack, classOf map[*threadTrack]int) *Aside {
	var ts []*threadTrack
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
	a.Ranks, a.Unranked, a.PIDs, _ = rankSet(ts)
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

// rankStates are each process's progress, in rank order.
func rankStates(cur []*threadTrack, classOf map[*threadTrack]int) []RankState {
	type acc struct {
		rs           RankState
		own, helpers string
		any          bool // it has threads that are not helpers
	}
	procs := map[procKey]*acc{}
	var order []procKey
	for _, tr := range cur {
		k := procKey{tr.host, tr.pid}
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

// loneRanks are the processes alone on their branch at the first frame where the program's
// paths part, and the culprit among them.
func loneRanks(rootAcc *nodeAcc, classOf map[*threadTrack]int) ([]LoneRank, *LoneRank) {
	var lone []LoneRank
	procsOf := func(a *nodeAcc) map[procKey]bool {
		m := map[procKey]bool{}
		for _, tr := range a.threads {
			m[procKey{tr.host, tr.pid}] = true
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
		sets := make([]map[procKey]bool, len(at.order))
		branches := map[procKey]int{}
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
			var only procKey
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
		a.w.Ranks, a.w.Unranked, _, _ = rankSet(a.threads)
		sort.Ints(a.w.Classes)
		out = append(out, a.w)
	}
	return out
}

// progress is the thread's progress over its samples (see Stuck); a goroutine has no CPU
// counters of its own: on the same path every time it is spinning if it was on a CPU or
// ready for one, else stuck.
func (tr *threadTrack) progress() string {
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
func (tr *threadTrack) framedRange() (first, last int) {
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
func (tr *threadTrack) cpuShare() float64 {
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

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func compactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
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

// rankSet is the compressed rank set of some threads ("0-3,5"), apart from the processes
// without a rank by pid ("412,418", host:pid across hosts), and their pids (one per process)
// with hosts when there are several.
func rankSet(ts []*threadTrack) (ranks, unranked string, pids []int, hosts []string) {
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
func CompressInts(v []int) string {
	if len(v) == 0 {
		return ""
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	s = compactInts(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}
