package sessions

// Goroutines completes a Sample of a Go process with its goroutines, as the runtime's own list
// of them (runtime.allgs) says: read from the process's memory after its threads were let go,
// so nothing is stopped for them and the Sample's times are the threads' own. It follows the
// Sample it completes (the same Seq and PID) and is emitted only for Go programs.
type Goroutines struct {
	Seq        int               `json:"seq"`
	PID        int               `json:"pid"`
	Rank       Rank              `json:"rank"`
	Goroutines []GoroutineSample `json:"goroutines"`
	// Note says why none could be read (a binary without DWARF, a Go the reader does not
	// understand); Goroutines is empty then.
	Note string `json:"note,omitempty"`
}

func (Goroutines) Kind() Kind { return KindGoroutines }

// GoroutineSample is one goroutine in a Goroutines event, innermost frame first.
type GoroutineSample struct {
	ID int64 `json:"id"`
	// Status is the runtime's _G state without its prefix: waiting, runnable, running,
	// syscall, preempted, copystack, idle ("status N" for one the reader does not know).
	Status string `json:"status"`
	// WaitReason is why a waiting goroutine waits, in the runtime's own words (its
	// waitReasonStrings, as a goroutine dump prints them): "chan receive", "select",
	// "sync.Mutex.Lock", "sleep", "IO wait"...
	WaitReason string `json:"wait_reason,omitempty"`
	// TID is the thread it runs on, when that thread was stopped for the sample.
	TID int `json:"tid,omitempty"`
	// System marks the runtime's own goroutines (GC workers, the finalizer...), as the
	// runtime's isSystemGoroutine does.
	System bool    `json:"system,omitempty"`
	Frames []Frame `json:"frames"`
	// CreatedBy is the go statement that started it (nil for the main goroutine).
	CreatedBy *Frame `json:"created_by,omitempty"`
	// Note says why Frames stop early or are empty.
	Note string `json:"note,omitempty"`
}

// The goroutine statuses whose words the merge and the views depend on.
const (
	GoWaiting  = "waiting"
	GoRunning  = "running"
	GoRunnable = "runnable"
	GoSyscall  = "syscall"
	GoPreempt  = "preempted"
)

// GoroutineStacks is the merge of the goroutines of the job's Go processes, as Stacks is of
// their threads: a prefix tree of call paths and classes, each class one call path in one
// status and wait (so the goroutines parked in a chan receive and those in a select at the
// same function are two classes), and the goroutines counted by wait.
type GoroutineStacks struct {
	// Processes is how many Go processes' goroutines were read.
	Processes int `json:"processes"`
	// Count is how many goroutines are placed; System of them are the runtime's own (their
	// classes have RoleHelper).
	Count   int          `json:"count"`
	System  int          `json:"system"`
	Classes []StackClass `json:"classes"`
	Tree    *StackNode   `json:"tree"`
	// Waits are the goroutines that are not the runtime's by status and wait reason, the
	// most first.
	Waits []GoroutineWait `json:"waits"`
	// Unread are the Go processes whose goroutines could not be read, and why: every one,
	// or, merged from reducing views, the first MaxListedPIDs and UnreadMore the others.
	Unread     []GoroutinesUnread `json:"unread,omitempty"`
	UnreadMore int                `json:"unread_more,omitempty"`
	// Aside sums up the runtime's own goroutines (nil when none).
	Aside *Aside `json:"aside,omitempty"`
}

// GoroutineWait is how many goroutines are in one status and wait.
type GoroutineWait struct {
	Status     string `json:"status"`
	WaitReason string `json:"wait_reason,omitempty"`
	Count      int    `json:"count"`
	Ranks      string `json:"ranks"`
	Unranked   string `json:"unranked,omitempty"`
	Progress   string `json:"progress"`
	Classes    []int  `json:"classes"`
}

// GoroutinesUnread is a Go process whose goroutines were not read.
type GoroutinesUnread struct {
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid"`
	Rank Rank   `json:"rank"`
	Note string `json:"note"`
}

// goBusy says whether a goroutine in status st is on a CPU or ready for one: on the same
// path in every sample, it is spinning, not parked.
func goBusy(st string) bool {
	return st == GoRunning || st == GoRunnable || st == GoPreempt
}
