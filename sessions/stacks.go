package sessions

import (
	"path/filepath"
	"regexp"
	"slices"
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
}

// ThreadSample is one thread's stack in a Sample, innermost frame first.
type ThreadSample struct {
	TID int `json:"tid"`
	// State is the thread's state letter as ps shows it (R, S, D, T, t), before sampling.
	State string `json:"state"`
	// Held is true when the registers were read in a ptrace-stop; false when the thread was
	// read from /proc while blocked (Note says why) and its stack may be partial.
	Held    bool    `json:"held"`
	Syscall string  `json:"syscall,omitempty"` // the call it was blocked in
	CPU     uint64  `json:"cpu"`               // utime+stime so far, in clock ticks
	Frames  []Frame `json:"frames"`
	Note    string  `json:"note,omitempty"`
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
	// Processes is how many processes are placed (len(Ranks), or more when the classes came
	// merged from reducing views, which list no process).
	Processes int `json:"processes"`
	// Lone are the processes alone on their branch where the job's paths first part (Progress
	// is that of its threads on the branch); Culprit
	// is the one of them that the classic deadlock reading points at, when one does.
	Lone    []LoneRank `json:"lone,omitempty"`
	Culprit *LoneRank  `json:"culprit,omitempty"`
}

// Progress over the samples: the same innermost pc and stack every time, a stack that
// changed, a mix of both among a class's threads, or unknown (one sample only).
const (
	Stuck   = "stuck"
	Moving  = "moving"
	Mixed   = "mixed"
	Unknown = "unknown"
)

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
	// CPUTicks is the CPU time its threads used over the samples (clock ticks): a stuck
	// class that uses CPU is spinning, one that uses none is blocked.
	CPUTicks uint64 `json:"cpu_ticks"`
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

// CompressInts writes a set of integers as ranges: 0-63,65,70-127.
func CompressInts(v []int) string {
	if len(v) == 0 {
		return ""
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	s = slices.Compact(s)
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
