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
	Class    int          `json:"class"`
	Count    int          `json:"count"` // threads
	Ranks    string       `json:"ranks"` // compressed: 0-63,65 (pids where no rank)
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
}

// StackNode is one node of the prefix tree: a frame, and the threads whose path goes through
// it.
type StackNode struct {
	Frame    StackFrame   `json:"frame"`
	Label    string       `json:"label"`
	Count    int          `json:"count"`
	Ranks    string       `json:"ranks"`
	PIDs     []int        `json:"pids"`
	Progress string       `json:"progress"`
	Classes  []int        `json:"classes"` // the classes whose path goes through it
	Children []*StackNode `json:"children,omitempty"`
}

// RankState is one process's progress over the samples.
type RankState struct {
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid"`
	Rank     Rank   `json:"rank"`
	Progress string `json:"progress"`
	Classes  []int  `json:"classes"`
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
}

// MergeStacks merges samples into the prefix tree, the classes and each process's progress.
// Only threads in their host's latest sample are placed (where every rank is now); the older
// samples decide stuck or moving.
func MergeStacks(samples []StampedSample, o StackOptions) Stacks {
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
	tracks := map[tkey]*threadTrack{}
	var order []tkey
	for _, s := range sorted {
		if !window[s.Host][s.Seq] {
			continue
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
			p := path(th.Frames, o)
			var key strings.Builder
			for _, f := range p {
				k, _ := frameKey(f, o.Frames)
				key.WriteString(k)
				key.WriteByte('\n')
			}
			tr.keys = append(tr.keys, key.String())
			tr.times = append(tr.times, s.Time)
			tr.cpu = append(tr.cpu, th.CPU)
			tr.runNS = append(tr.runNS, th.RunNS)
			tr.framed = append(tr.framed, len(th.Frames) > 0)
			tr.state = th.State
			tr.seqs = append(tr.seqs, s.Seq)
			tr.last, tr.syscall, tr.held, tr.whole = p, th.Syscall, th.Held, th.Held || th.Unstopped
		}
	}
	// Current threads: present in their host's latest sample.
	var cur []*threadTrack
	for _, k := range order {
		tr := tracks[k]
		if tr.seqs[len(tr.seqs)-1] == latest[tr.host] {
			cur = append(cur, tr)
		}
	}
	progress := func(tr *threadTrack) string { return tr.progress() }
	// combine merges two progresses: a thread seen once (unknown) does not make its class
	// mixed; stuck and moving do.
	combine := func(a, b string) string {
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

	// Classes: distinct current paths.
	type classAcc struct {
		c       *StackClass
		threads []*threadTrack
	}
	byKey := map[string]*classAcc{}
	var classes []*classAcc
	for _, tr := range cur {
		k := tr.keys[len(tr.keys)-1]
		ca := byKey[k]
		if ca == nil {
			ca = &classAcc{c: &StackClass{}}
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
		for i, tr := range ca.threads {
			c.Progress = combine(c.Progress, progress(tr))
			if i == 0 {
				sys = tr.syscall
			} else if sys != tr.syscall {
				sys = ""
			}
			c.CPUTicks += tr.cpu[len(tr.cpu)-1] - tr.cpu[0]
			c.CPUShare += tr.cpuShare() / float64(len(ca.threads))
			c.Partial = c.Partial || !tr.whole
		}
		c.Syscall = sys
		c.Ranks, c.PIDs, c.Hosts = rankSet(ca.threads)
	}
	sort.SliceStable(classes, func(i, j int) bool {
		a, b := classes[i], classes[j]
		if a.c.Count != b.c.Count {
			return a.c.Count > b.c.Count
		}
		return firstRank(a.threads) < firstRank(b.threads)
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
	qs = compactInts(qs)
	classOf := map[*threadTrack]int{}
	for i, ca := range classes {
		ca.c.Class = i + 1
		for _, tr := range ca.threads {
			classOf[tr] = i + 1
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
		threads []*threadTrack
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
					next = &nodeAcc{n: &StackNode{Label: label, Frame: stackFrame(f)}, kids: map[string]*nodeAcc{}}
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
		n.Ranks, n.PIDs, _ = rankSet(a.threads)
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
		if c := classOf[tr]; !containsInt(rs.Classes, c) {
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
	// The culprit stays where it is: blocked, or spinning there (an MPI library's progress
	// loop polls at full CPU in a deadlock as much as a blocked read waits). A lone rank
	// blocked outranks a lone rank spinning: beside a receive nobody sends, the rank that
	// computes on one path is the one the others wait for only if nothing else is blocked.
	stuck, spinning := lonely(out.Lone, Stuck), lonely(out.Lone, Spinning)
	switch {
	case len(out.Lone) == 1 && !TimedWait(out.Lone[0].Syscall):
		l := out.Lone[0]
		out.Culprit = &l
	case len(stuck) == 1:
		out.Culprit = &stuck[0]
	case len(stuck) == 0 && len(spinning) == 1:
		out.Culprit = &spinning[0]
	}
	return out
}

// progress is the thread's progress over its samples (see Stuck).
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

// rankSet is the compressed rank set of some threads ("0-3,5"), processes without a rank by
// pid ("pid 412,418"), and their pids (one per process) with hosts when there are several.
func rankSet(ts []*threadTrack) (string, []int, []string) {
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
