package sessions

import (
	"encoding/json"
	"time"
)

// Reduced events: what a reducing view (crashtui view --reduce) passes up a tree instead of
// its inputs' per-task events, as STAT's MRNet filters pass merged call-path trees with rank
// sets (design.md "Beyond one machine"). Each is a snapshot: it replaces what the same
// reducer (the event's Host names it: a subtree of the tree) said before about the same
// thing (a host, a crash-site key), so a stream can be cut anywhere and what was last said
// is what is known. State applies them beside the per-task events of local agents: one
// reducer for live, JSON and replay, at every level of the tree. None of them grows with
// the number of tasks beyond the rank-set encoding (RankSet); they grow with hosts, crash
// sites and call paths.
const (
	// KindHosts: process counts by state, per host.
	KindHosts Kind = "hosts"
	// KindCrashGroup: one crash group, with its members as a rank set.
	KindCrashGroup Kind = "crash_group"
	// KindStackClasses: the merged call paths and the ranks on each.
	KindStackClasses Kind = "stack_classes"
	// KindMatrixCounts: each host's access matrix as cells by reason.
	KindMatrixCounts Kind = "matrix_counts"
	// KindCheckpointCounts: each host's latest checkpoint as threads by decision.
	KindCheckpointCounts Kind = "checkpoint_counts"
	// KindLost: hosts whose stream ended without its summary (an agent or a view died).
	KindLost Kind = "lost"
)

// HostCount is what is known of one host's processes.
type HostCount struct {
	Host      string `json:"host"`
	Processes int    `json:"processes"` // every process seen
	Alive     int    `json:"alive"`
	Threads   int    `json:"threads"` // of the live processes
	Exits     int    `json:"exits"`
	Crashes   int    `json:"crashes"`
	Handled   int    `json:"handled"`
	Errors    int    `json:"errors"`
	// Ranks are its processes' ranks; Unranked counts those without one.
	Ranks    RankSet `json:"ranks"`
	Unranked int     `json:"unranked,omitempty"`
	// Lost: its stream ended without its summary; these are the last counts it sent.
	Lost bool `json:"lost,omitempty"`
}

// Hosts are the counts of the hosts that changed since the reducer's last Hosts.
type Hosts struct {
	Hosts []HostCount `json:"hosts"`
}

// Member is one member of a crash group or stack class, named across hosts.
type Member struct {
	Host string    `json:"host,omitempty"`
	PID  int       `json:"pid"`
	TID  int       `json:"tid,omitempty"`
	Rank Rank      `json:"rank"`
	Code string    `json:"code,omitempty"`
	Time time.Time `json:"time,omitzero"`
}

// CrashGroup is one crash-site group as a reducer knows it: every member it saw (its own
// inputs' and its subtrees'), as a count and a rank set.
type CrashGroup struct {
	// Group is the reducer's number of the group (its first crash's tracer's, Crash.Group).
	Group        int     `json:"group,omitempty"`
	Key          string  `json:"key"`
	Signal       string  `json:"signal"`
	Module       string  `json:"module"`
	Offset       Hex     `json:"offset"`
	Function     string  `json:"function,omitempty"`
	File         string  `json:"file,omitempty"`
	Line         int     `json:"line,omitempty"`
	AbortMessage string  `json:"abort_message,omitempty"`
	Count        int     `json:"count"`
	Ranks        RankSet `json:"ranks"`
	Unranked     int     `json:"unranked,omitempty"`
	Hosts        HostSet `json:"hosts"`
	// Members are the first few (MaxReducedMembers), in the order they crashed.
	Members        []Member `json:"members"`
	Representative Member   `json:"representative"`
	// Core is the representative's core, on its host.
	Core   *string   `json:"core"`
	NoCore NoCore    `json:"no_core,omitempty"`
	Stack  []Frame   `json:"stack,omitempty"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	// Covers are the hosts the reducer speaks for.
	Covers HostSet `json:"covers"`
}

// MaxReducedMembers is how many members of a group or class a reduced event names.
const MaxReducedMembers = 8

// ReducedClass is one call path (an equivalence class) and the threads on it.
type ReducedClass struct {
	Frames   []StackFrame `json:"frames"` // root first
	Count    int          `json:"count"`  // threads
	Procs    int          `json:"procs"`  // processes
	Ranks    RankSet      `json:"ranks"`
	Unranked int          `json:"unranked,omitempty"`
	Hosts    HostSet      `json:"hosts"`
	Progress string       `json:"progress"`
	Syscall  string       `json:"syscall,omitempty"`
	Since    *time.Time   `json:"since,omitempty"`
	CPUTicks uint64       `json:"cpu_ticks"`
	// CPUShare is the share of one CPU each of its threads used on average (StackClass's).
	CPUShare float64  `json:"cpu_share"`
	Partial  bool     `json:"partial,omitempty"`
	Spark    []int    `json:"spark,omitempty"`
	Role     string   `json:"role,omitempty"` // RoleHelper, RoleLauncher or ""
	Main     int      `json:"main,omitempty"` // main threads
	Members  []Member `json:"members"`        // the first few
	// Status and WaitReason are a class of goroutines' (StackClass's); CreatedBy the go
	// statement that started them all, when they share one.
	Status     string      `json:"status,omitempty"`
	WaitReason string      `json:"wait_reason,omitempty"`
	CreatedBy  *StackFrame `json:"created_by,omitempty"`
}

// ReducedAside sums up the threads (or goroutines) put aside, helpers and the launcher's, as
// Aside does, with its processes as a rank set and a count.
type ReducedAside struct {
	Count    int     `json:"count"`
	Helpers  int     `json:"helpers"`
	Launcher int     `json:"launcher"`
	Procs    int     `json:"procs"`
	Ranks    RankSet `json:"ranks"`
	Unranked int     `json:"unranked,omitempty"`
	Hosts    HostSet `json:"hosts"`
	Progress string  `json:"progress"`
	CPUShare float64 `json:"cpu_share"`
	// Members are its first few processes (MaxReducedMembers).
	Members []Member `json:"members"`
}

// ReducedWait is how many goroutines of the program are in one status and wait
// (GoroutineWait), their processes as a rank set and a count.
type ReducedWait struct {
	Status     string   `json:"status"`
	WaitReason string   `json:"wait_reason,omitempty"`
	Count      int      `json:"count"`
	Ranks      RankSet  `json:"ranks"`
	Unranked   int      `json:"unranked,omitempty"`
	Progress   string   `json:"progress"`
	Members    []Member `json:"members"`
}

// ReducedGoroutines are the goroutines of the Go processes a reducer speaks for, merged
// (GoroutineStacks): their classes, by call path, status and wait, and their counts by wait.
type ReducedGoroutines struct {
	Processes int            `json:"processes"`
	Count     int            `json:"count"`
	System    int            `json:"system"`
	Classes   []ReducedClass `json:"classes"`
	Waits     []ReducedWait  `json:"waits"`
	// Unread are the first Go processes whose goroutines could not be read
	// (MaxListedPIDs of them); Unreadable counts them all.
	Unread     []GoroutinesUnread `json:"unread,omitempty"`
	Unreadable int                `json:"unreadable,omitempty"`
	Aside      *ReducedAside      `json:"aside,omitempty"`
}

// StackClasses is a reducer's merged stacks: its classes (the tree is theirs merged by
// prefix, so it is not sent), made with Frames and Cut.
type StackClasses struct {
	Samples int            `json:"samples"`
	Frames  string         `json:"frames"`
	Cut     string         `json:"cut,omitempty"`
	Classes []ReducedClass `json:"classes"`
	// Processes is how many processes are placed.
	Processes int     `json:"processes"`
	Covers    HostSet `json:"covers"`
	// Aside sums up the threads of its classes with a role (nil when none has one);
	// Goroutines are the Go processes' goroutines (nil when no sample had any).
	Aside      *ReducedAside      `json:"aside,omitempty"`
	Goroutines *ReducedGoroutines `json:"goroutines,omitempty"`
	// Tally counts the processes placed by kind and progress (nil from a reducer older
	// than it).
	Tally *ProcessTally `json:"tally,omitempty"`
}

// ProcessTally counts the processes a merge places, by kind and, but for the launchers, by
// progress, each progress with the places its processes are at: what a root says of them in
// the heading and the verdict of its stacks, where a merge of threads lists every process
// (Stacks.Ranks).
type ProcessTally struct {
	Ranked    int             `json:"ranked"` // processes with a rank, but the launchers
	Launchers int             `json:"launchers"`
	Others    int             `json:"others"` // neither
	By        []ProgressTally `json:"by"`
}

// ProgressTally is the processes of one progress (RankState's), and where they are.
type ProgressTally struct {
	Progress string `json:"progress"`
	Procs    int    `json:"procs"`
	// Places are the innermost frames of the classes their own threads are in (their
	// helpers' when they have no other), those of their progress when they have such: where
	// a verdict says they block or spin. A process is in each of its places once.
	Places []ProcessPlace `json:"places"`
}

// ProcessPlace is one class's innermost frame (by function) and call, and the processes
// there; the first of them by host and rank orders the places as a merge of threads does.
type ProcessPlace struct {
	Frame   StackFrame `json:"frame"`
	Syscall string     `json:"syscall,omitempty"`
	Procs   int        `json:"procs"`
	First   Member     `json:"first"`
}

// HostMatrix is one host's access matrix as counts: cells by reason ("" for the pairs that
// may read each other), and the pairs where Open MPI's single-copy transport works.
type HostMatrix struct {
	Host      string         `json:"host"`
	Measured  bool           `json:"measured"`
	Processes int            `json:"processes"`
	Cells     int            `json:"cells"`
	ByReason  map[string]int `json:"by_reason"`
	OpenMPI   int            `json:"openmpi"`
	Disagree  int            `json:"disagree,omitempty"`
}

// MatrixCounts are the matrices of the hosts whose matrix changed.
type MatrixCounts struct {
	Hosts []HostMatrix `json:"hosts"`
}

// HostCheckpoint is one host's latest checkpoint as counts of its threads: by the decision
// applied (Thread.Applied), by what they did after (Thread.OutcomeKind).
type HostCheckpoint struct {
	Host       string         `json:"host"`
	Checkpoint int            `json:"checkpoint"`
	Policy     Policy         `json:"policy,omitempty"`
	Threads    int            `json:"threads"`
	InSyscall  int            `json:"in_syscall"`
	ByDecision map[string]int `json:"by_decision"`
	ByOutcome  map[string]int `json:"by_outcome,omitempty"`
}

// CheckpointCounts are the checkpoints of the hosts that took one since.
type CheckpointCounts struct {
	Hosts []HostCheckpoint `json:"hosts"`
}

// Lost names hosts whose stream ended without its summary: an agent, or a view and every
// host under it, went away. What they said before stays known.
type Lost struct {
	Hosts HostSet `json:"hosts"`
	// Source is the stream that ended (a view's SOURCE, or the reducer under it).
	Source string `json:"source,omitempty"`
	Why    string `json:"why"`
}

func (Hosts) Kind() Kind            { return KindHosts }
func (CrashGroup) Kind() Kind       { return KindCrashGroup }
func (StackClasses) Kind() Kind     { return KindStackClasses }
func (MatrixCounts) Kind() Kind     { return KindMatrixCounts }
func (CheckpointCounts) Kind() Kind { return KindCheckpointCounts }
func (Lost) Kind() Kind             { return KindLost }

func init() {
	for k, d := range map[Kind]func(*json.Decoder) (Body, error){
		KindHosts:            decodeAs(Hosts{}),
		KindCrashGroup:       decodeAs(CrashGroup{}),
		KindStackClasses:     decodeAs(StackClasses{}),
		KindMatrixCounts:     decodeAs(MatrixCounts{}),
		KindCheckpointCounts: decodeAs(CheckpointCounts{}),
		KindLost:             decodeAs(Lost{}),
	} {
		decoders[k] = d
	}
}

// Reduced says whether an event is a reducer's (a snapshot of a subtree), not a task's.
func Reduced(k Kind) bool {
	switch k {
	case KindHosts, KindCrashGroup, KindStackClasses, KindMatrixCounts, KindCheckpointCounts:
		return true
	}
	return false
}
