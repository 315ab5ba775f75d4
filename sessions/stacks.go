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
	// Processes is how many processes are placed (len(Ranks), or more when the classes came
	// merged from reducing views, which list no process).
	Processes int `json:"processes"`
	// Aside sums up the threads put aside (helpers and the launcher), nil when none.
	Aside *Aside `json:"aside,omitempty"`
	// Goroutines are the goroutines of the job's Go processes, merged the same way; nil when
	// no sample has any.
	Goroutines *GoroutineStacks `json:"goroutines,omitempty"`
	// Tally counts the processes placed, for stacks merged from reducing views (whose Ranks
	// are only the merging view's own); nil otherwise.
	Tally *ProcessTally `json:"tally,omitempty"`
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
	// HostCount is how many hosts its threads are on, for a class merged from reducing views
	// (whose Hosts name only its first members); 0 otherwise.
	HostCount int `json:"host_count,omitempty"`
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
