package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// Kind names an event on the wire (the "event" field of a JSON line).
type Kind string

// The event kinds. design.md fixes process, exec, exit, crash, handled, matrix, thread,
// summary and error; session and task are additions that keep the TUI's header and thread
// counts exact.
const (
	KindSession Kind = "session"
	KindProcess Kind = "process"
	KindTask    Kind = "task"
	KindExec    Kind = "exec"
	KindExit    Kind = "exit"
	KindCrash   Kind = "crash"
	KindHandled Kind = "handled"
	KindMatrix  Kind = "matrix"
	KindThread  Kind = "thread"
	KindSummary Kind = "summary"
	KindError   Kind = "error"
	KindSample  Kind = "sample"
	// KindMatrixProgress says how far a measurement of the matrix has got.
	KindMatrixProgress Kind = "matrix_progress"
	KindStacks         Kind = "stacks"
	// KindCrashLines completes a crash told before its modules' line tables were loaded.
	KindCrashLines Kind = "crash_lines"
	// KindGoroutines completes a sample of a Go process with its goroutines.
	KindGoroutines Kind = "goroutines"
)

// Body is the kind-specific part of an Event.
type Body interface{ Kind() Kind }

// Event is one thing that happened. On the wire it is one flat JSON object:
// {"event":"crash","time":"…","host":"…", …the body's fields…}.
type Event struct {
	Time time.Time
	Host string // "" means this host
	Body Body
}

// Kind is the body's kind, "" for an empty event.
func (e Event) Kind() Kind {
	if e.Body == nil {
		return ""
	}
	return e.Body.Kind()
}

// Session opens a live or recorded session.
type Session struct {
	Job     string `json:"job"`
	Mode    string `json:"mode"` // attach, run, demo, checkpoint, matrix
	Arch    string `json:"arch"`
	Kernel  string `json:"kernel"`
	Version string `json:"version"`
	PID     int    `json:"crashtui_pid,omitempty"`
}

// Process is a process that joined the job (attached, or forked inside the job).
type Process struct {
	PID     int      `json:"pid"`
	PPID    int      `json:"ppid"`
	Rank    Rank     `json:"rank"`
	Exe     string   `json:"exe"`
	Comm    string   `json:"comm"`
	Argv    []string `json:"argv"`
	UID     int      `json:"uid"`
	Threads int      `json:"threads"`
	// Stopped is true when the process was in a job-control stop when it joined.
	Stopped bool `json:"stopped,omitempty"`
}

// Task is a thread that started or ended inside a traced process.
type Task struct {
	PID    int  `json:"pid"`
	TID    int  `json:"tid"`
	Exited bool `json:"exited,omitempty"`
}

// Exec is a successful execve in a traced process.
type Exec struct {
	PID  int      `json:"pid"`
	Exe  string   `json:"exe"`
	Comm string   `json:"comm"`
	Argv []string `json:"argv"`
	Rank Rank     `json:"rank"`
}

// Exit is the end of a traced process. Exactly one of Code and Signal is set.
type Exit struct {
	PID        int    `json:"pid"`
	Code       *int   `json:"code"`
	Signal     string `json:"signal,omitempty"`
	CoreDumped bool   `json:"core_dumped,omitempty"`
	// Detached is true when crashtui let go of the process rather than seeing it die.
	Detached bool `json:"detached,omitempty"`
}

// Frame is one frame of a symbolized stack.
type Frame struct {
	PC       Hex    `json:"pc"`
	Module   string `json:"module"`
	Offset   Hex    `json:"offset"`
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// FuncOff is the pc's offset from its function's start, when the function is known.
	FuncOff Hex `json:"func_off,omitempty"`
	// Inlined marks a function whose code was inlined into the next frame's: both frames
	// have the same pc, as gdb shows them.
	Inlined bool `json:"inlined,omitempty"`
}

// Crash is a fatal signal caught at its signal-delivery-stop.
type Crash struct {
	PID      int    `json:"pid"`
	TID      int    `json:"tid"`
	Rank     Rank   `json:"rank"`
	Exe      string `json:"exe"`
	Signal   string `json:"signal"`
	Code     string `json:"code"`
	Addr     Hex    `json:"addr"`
	PC       Hex    `json:"pc"`
	Module   string `json:"module"`
	Offset   Hex    `json:"offset"`
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// UserSent is true when the signal came from kill/tgkill (si_code <= 0).
	UserSent bool `json:"user_sent,omitempty"`

	// Grouping (crash sites, Spindle parity).
	Key            string `json:"key,omitempty"`
	Group          int    `json:"group,omitempty"`
	Representative bool   `json:"representative"`
	AbortMessage   string `json:"abort_message,omitempty"`
	// HandlerTries is how many times the process's own handler took this same fault and
	// returned without repairing it (the fault came straight back) before crashtui called it a
	// crash; 0 for a fault with no handler.
	HandlerTries int `json:"handler_tries,omitempty"`
	// Unrepaired: the process's handler returned without repairing the fault, and crashtui
	// delivered it as if no handler were installed (Spindle's rule): the process dies of it.
	Unrepaired bool    `json:"unrepaired,omitempty"`
	Stack      []Frame `json:"stack,omitempty"`
	Core       *string `json:"core"`
	// NoCore says why no core was kept for this crash where crashtui keeps them (--cores,
	// --dedup-kernel-cores) and its group has none yet; empty otherwise.
	NoCore NoCore `json:"no_core,omitempty"`
	// Regs are the crashing thread's registers by kernel name, for the detail view.
	Regs map[string]Hex `json:"regs,omitempty"`
	// Disasm is the code around the faulting pc, decoded from the start of its function.
	Disasm []Insn `json:"disasm,omitempty"`
}

// NoCore is why a crash got no core: a fact the tracer reports, worded by the views.
type NoCore string

const (
	// NoCoreNonDumpable: the process is not dumpable (prctl PR_SET_DUMPABLE 0, or a setuid,
	// setgid or file-capability exec or credential change under fs.suid_dumpable 0), so the
	// kernel writes no core for it either (fs/coredump.c do_coredump).
	NoCoreNonDumpable NoCore = "non_dumpable"
	// NoCoreDumpableUnknown: whether the process is dumpable cannot be told from outside
	// (tracer/crash/rlimit.go says when), so crashtui writes none rather than one the
	// kernel might not.
	NoCoreDumpableUnknown NoCore = "dumpable_unknown"
	// NoCoreRlimit: the process's own RLIMIT_CORE is 0, and so was every earlier member's
	// of its group.
	NoCoreRlimit NoCore = "rlimit_core_0"
	// NoCoreWriteFailed: writing the core failed (an error event with op "write core" says
	// why).
	NoCoreWriteFailed NoCore = "write_failed"
	// NoCoreMixed: the group's members lacked a core for different reasons (State only).
	NoCoreMixed NoCore = "mixed"
)

// CrashLines amends the crash of PID/TID with the key Key: the tracer tells a crash at once,
// with functions from the symbol tables, and its file:line and inlined frames when the line
// tables (DWARF, slow to load) arrive. Function, File and Line are the site's; Stack replaces
// the crash's stack.
type CrashLines struct {
	PID      int     `json:"pid"`
	TID      int     `json:"tid"`
	Key      string  `json:"key"`
	Function string  `json:"function,omitempty"`
	File     string  `json:"file,omitempty"`
	Line     int     `json:"line,omitempty"`
	Stack    []Frame `json:"stack,omitempty"`
}

// Insn is one disassembled instruction; Fault marks the one at the crash pc.
type Insn struct {
	PC    Hex    `json:"pc"`
	Bytes string `json:"bytes"` // hex
	Text  string `json:"text"`
	Fault bool   `json:"fault,omitempty"`
}

// Handled is a fault that the process's own handler repaired (a safepoint, a SIGBUS fixed by
// extending the file): not a crash.
type Handled struct {
	PID      int    `json:"pid"`
	TID      int    `json:"tid"`
	Rank     Rank   `json:"rank"`
	Signal   string `json:"signal"`
	Code     string `json:"code,omitempty"`
	Addr     Hex    `json:"addr"`
	PC       Hex    `json:"pc"`
	Module   string `json:"module"`
	Offset   Hex    `json:"offset"`
	Function string `json:"function,omitempty"`
}

// Check is one column of a matrix cell: predicted from /proc, measured inside A.
type Check struct {
	Predicted bool    `json:"predicted"`
	Measured  *bool   `json:"measured"`
	Errno     *string `json:"errno"`
	// NotRun is why a measured matrix did not run this call (it is predicted only).
	NotRun *NotRun `json:"not_run,omitempty"`
}

// NotRun is why a call of a matrix cell was not injected: nothing ran, the cell is predicted.
type NotRun struct {
	TID int       `json:"tid,omitempty"` // the thread that would have run it
	Why NotRunWhy `json:"why"`
	// Action is what the thread's seccomp filters decide for the call (NotRunSeccomp):
	// KILL_PROCESS, TRAP, ERRNO(EPERM)…
	Action string `json:"action,omitempty"`
}

// NotRunWhy is why a call was not injected.
type NotRunWhy string

const (
	NotRunSeccomp           NotRunWhy = "seccomp"            // the thread's filter does not allow it
	NotRunStrict            NotRunWhy = "seccomp_strict"     // the thread is in seccomp strict mode
	NotRunFiltersUnreadable NotRunWhy = "filters_unreadable" // its filters cannot be read (CAP_SYS_ADMIN)
	NotRunUserDispatch      NotRunWhy = "user_dispatch"      // syscall user dispatch would raise SIGSYS
	NotRunEINTR             NotRunWhy = "eintr"              // every thread is in a call an interrupt would end with EINTR
	NotRunNoThread          NotRunWhy = "no_thread"          // no thread could be held (job-control stopped, exiting)
)

// Cell is the ordered pair (From may read To), as facts: both calls' answers, the first rule
// that refuses them (Reason), the row that decided the explained call (Rule) and the
// disagreements. The sentences that explain them are the views' (views.CellWhy,
// views.CellDisagree).
//
// Explain and Disagree are sentences: those the tracer wrote into recordings of format
// version 2 and older (before Rule and Disagreements existed), and those the --json front end
// writes for people and scripts reading its output. Views show them when present, and
// otherwise word the facts.
type Cell struct {
	From    int     `json:"from"`
	To      int     `json:"to"`
	VMReadv Check   `json:"vm_readv"`
	Kcmp    Check   `json:"kcmp"`
	OpenMPI bool    `json:"openmpi"`
	Reason  *Reason `json:"reason"`
	// Rule is the row of kernel.md A.3 that decided the call Reason is about (process_vm_readv
	// when both are allowed); the zero Rule in recordings of format version 2 and older.
	Rule Rule `json:"rule,omitzero"`
	// Disagreements are dangerous disagreements between what Open MPI decides and what
	// process_vm_readv does, or between prediction and measurement, measured ones first.
	Disagreements []Disagreement `json:"disagreements,omitempty"`
	Explain       string         `json:"explain,omitempty"`
	Disagree      string         `json:"disagree,omitempty"`
}

// Matrix is the access matrix of the job's processes, complete each time.
type Matrix struct {
	PIDs  []int  `json:"pids"`
	Cells []Cell `json:"cells"`
	// Measured is true when the syscalls were run inside each A.
	Measured bool `json:"measured"`
}

// MatrixProgress is how far a measurement of the access matrix has got: Done of Total
// ordered pairs measured (each A is stopped once for all its B).
type MatrixProgress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

func (MatrixProgress) Kind() Kind { return KindMatrixProgress }

// Thread is the syscall restart state of one thread, captured at a checkpoint, as facts: what
// the registers hold, the held stop and its signal, the handler, what the restore wrote and
// what the thread did next. The sentences that explain them are the views' (views.ExplainThread,
// views.ThreadOutcome), so a recording replays in the words of the build that replays it.
//
// Explain and Outcome are sentences: those the tracer wrote into recordings of format version
// 1 (before the facts below existed; ReadRecording derives the facts from them), and those the
// --json front end writes for people and scripts reading its output. Views show them when
// present, and otherwise word the facts.
type Thread struct {
	PID       int      `json:"pid"`
	TID       int      `json:"tid"`
	Arch      string   `json:"arch"`
	PC        Hex      `json:"pc"`
	InSyscall bool     `json:"in_syscall"`
	Syscall   string   `json:"syscall,omitempty"`
	Nr        int      `json:"nr"`
	Args      []Hex    `json:"args,omitempty"`
	Insn      string   `json:"insn,omitempty"`
	Trap      *Hex     `json:"trap,omitempty"`
	Ret       int64    `json:"ret"`
	Code      string   `json:"code,omitempty"`
	OnResume  string   `json:"on_resume"`
	Restore   string   `json:"restore"`
	Applied   Policy   `json:"applied,omitempty"` // the restore policy written back ("" when none was)
	Explain   string   `json:"explain,omitempty"`
	Before    []RegVal `json:"before,omitempty"`
	After     []RegVal `json:"after,omitempty"`
	// Outcome is what the program did after the policy was applied, in a sentence (see above).
	Outcome string `json:"outcome,omitempty"`
	// Checkpoint numbers the checkpoint (per tracer, from 1) and Policy is its restore
	// policy; 0 and "" in recordings made before they were recorded.
	Checkpoint int    `json:"checkpoint,omitempty"`
	Policy     Policy `json:"policy,omitempty"`

	// InsnBytes are the instruction bytes the restart state was decoded from (arch.Decode:
	// amd64 rip-2, ppc64le nip-4, arm64 pc), hex; "" when they could not be read. With Before
	// they are everything the decoder saw.
	InsnBytes string `json:"insn_bytes,omitempty"`

	// The held stop and what resuming it does with the signal it holds: the Handler column
	// of kernel.md B.3. Stop is "" only in version 1 recordings that did not say.
	Stop StopKind `json:"stop,omitempty"`
	// Signal is the signal held at a signal-delivery-stop (re-injected on resume), by name.
	Signal string `json:"signal,omitempty"`
	// Disposition is what Signal does in this process (from /proc SigIgn and SigCgt).
	Disposition Disposition `json:"disposition,omitempty"`
	// Handler is how the kernel treats the interrupted syscall on resume: as with no handler,
	// with an SA_RESTART handler, with one without, or unknown (a caught signal whose
	// handler's flags could not be read; Sigaction says why).
	Handler HandlerKind `json:"handler,omitempty"`
	// Sigaction is what rt_sigaction run inside the process said about a caught Signal
	// (recordings of versions that held threads at signals).
	Sigaction *Sigaction `json:"sigaction,omitempty"`
	// Unfrozen is why the checkpoint left the thread running (Stop is StopNone).
	Unfrozen Unfrozen `json:"unfrozen,omitempty"`

	// What the thread did after the restore, looked at a moment later (only for a thread
	// stopped inside an interrupted syscall).
	OutcomeKind OutcomeKind `json:"outcome_kind,omitempty"`
	// Returned is what the interrupted syscall returned to the program, as the kernel's
	// negated errno (-512 for a leaked ERESTARTSYS, -4 for EINTR); nil when the restore does
	// not decide it (the call was restarted, or completed on its own).
	Returned *int64 `json:"returned,omitempty"`
	// NextNr and NextSyscall are the syscall the thread was blocked in when looked at
	// (/proc/PID/task/TID/syscall; restart_syscall when the kernel resumed a restart block);
	// nil and "" when it was in none.
	NextNr      *int   `json:"next_nr,omitempty"`
	NextSyscall string `json:"next_syscall,omitempty"`
	// Exited is true when the thread had exited by then.
	Exited bool `json:"exited,omitempty"`
}

// StopKind is the ptrace-stop a thread was frozen in.
type StopKind string

const (
	// StopInterrupt: PTRACE_EVENT_STOP of PTRACE_INTERRUPT (or another event stop), resumed
	// with signal 0: the kernel decides as with no handler.
	StopInterrupt StopKind = "interrupt"
	StopSignal    StopKind = "signal" // signal-delivery-stop: Signal is delivered on resume
	StopGroup     StopKind = "group"  // group-stop: the stop signal's action is stop
	StopExit      StopKind = "exit"   // PTRACE_EVENT_EXIT: the thread never returns to user space
	// StopNone: the checkpoint did not freeze the thread (Unfrozen says why); what /proc shows
	// of it is all there is.
	StopNone StopKind = "none"
)

// Unfrozen is why a checkpoint left a thread running.
type Unfrozen string

const (
	// UnfrozenEINTR: it is blocked in a call that an interrupt would make fail with EINTR
	// (epoll_wait, a socket call…): freezing it would change what the program sees.
	UnfrozenEINTR Unfrozen = "eintr"
	// UnfrozenVfork: a vfork parent, which cannot stop before its child execs or exits.
	UnfrozenVfork Unfrozen = "vfork"
	// UnfrozenTimeout: it did not stop in time (uninterruptible sleep).
	UnfrozenTimeout Unfrozen = "timeout"
)

// Disposition is what a held signal does in its process.
type Disposition string

const (
	DispIgnored       Disposition = "ignored"        // SigIgn: discarded
	DispCaught        Disposition = "caught"         // SigCgt: a handler runs
	DispDefaultStop   Disposition = "default_stop"   // SIG_DFL, and the default action is stop
	DispDefaultIgnore Disposition = "default_ignore" // SIG_DFL, and the default action is ignore
	DispDefaultKill   Disposition = "default_kill"   // SIG_DFL, and the default action kills
)

// HandlerKind is how the kernel's restart logic sees a held stop (arch.Handler on the wire).
type HandlerKind string

const (
	HandlerNone      HandlerKind = "none"          // no handler runs
	HandlerRestart   HandlerKind = "sa_restart"    // a handler installed with SA_RESTART runs
	HandlerNoRestart HandlerKind = "no_sa_restart" // a handler without SA_RESTART runs
	HandlerUnknown   HandlerKind = "unknown"       // a handler runs; its SA_RESTART is unknown
)

// SARestart is SA_RESTART in sa_flags, on amd64, arm64 and ppc64le alike.
const SARestart = 0x10000000

// Sigaction is what rt_sigaction(sig, NULL, &old) returned when run inside the process (a
// handler's flags are kernel-private: /proc shows only SigCgt), or why it did not run.
type Sigaction struct {
	TID int `json:"tid,omitempty"` // the thread it ran in; 0 when it did not run
	// Handler is the sa_handler it returned (0 SIG_DFL, 1 SIG_IGN: the handler went away
	// since /proc was read), Flags its sa_flags; nil when it did not return.
	Handler *Hex `json:"handler,omitempty"`
	Flags   *Hex `json:"flags,omitempty"`
	// AllHeld: not run, because every thread of the process is held at a signal, and code
	// is run only in a thread held at an interrupt stop (tracer/doc.go).
	AllHeld bool `json:"all_held,omitempty"`
	// Error is why running it failed.
	Error string `json:"error,omitempty"`
}

// OutcomeKind is what a thread did after a restore policy was applied.
type OutcomeKind string

const (
	// OutcomeRestarted: back in its syscall (directly or through restart_syscall): restarted,
	// and the program never noticed.
	OutcomeRestarted OutcomeKind = "restarted"
	// OutcomeLeft: it left its syscall (it completed, or a handler ran), or exited (Exited).
	OutcomeLeft OutcomeKind = "left"
	// OutcomeEINTR: the restore made the syscall return EINTR (a restart block cannot be
	// carried over), as after a real restore.
	OutcomeEINTR OutcomeKind = "eintr"
	// OutcomeERESTARTLeaked: the restore handed the kernel-internal ERESTART* code to the
	// program (Returned), as a restorer without CRIU's fix-up does.
	OutcomeERESTARTLeaked OutcomeKind = "erestart_leaked"
	// OutcomeJobStopped: still stopped by job control: the restore takes effect when the job
	// continues.
	OutcomeJobStopped OutcomeKind = "job_stopped"
)

// HasOutcome says whether what the thread did after the restore is known (as a fact, or as a
// version 1 recording's sentence).
func (t *Thread) HasOutcome() bool { return t.OutcomeKind != "" || t.Outcome != "" }

// CalledAgain says whether the thread was back in the syscall it was interrupted in when
// looked at after the restore: the same call, or restart_syscall resuming it.
func (t *Thread) CalledAgain() bool {
	return t.NextNr != nil && (*t.NextNr == t.Nr || t.NextSyscall == "restart_syscall")
}

// RegVal is one named register.
type RegVal struct {
	Name  string `json:"name"`
	Value Hex    `json:"value"`
}

// GroupSummary is one crash group in a summary. Its members are sets, not lists (a group
// of a million tasks is a few runs of ranks): Ranks and Hosts over every member, PIDs when
// they are all on one host (pids are per host), and the first few as Members.
type GroupSummary struct {
	Group        int     `json:"group"`
	Key          string  `json:"key"`
	Signal       string  `json:"signal"`
	Module       string  `json:"module"`
	Offset       Hex     `json:"offset"`
	Function     string  `json:"function,omitempty"`
	AbortMessage string  `json:"abort_message,omitempty"`
	Count        int     `json:"count"`
	PIDs         RankSet `json:"pids,omitzero"`
	Ranks        RankSet `json:"ranks"`
	// Unranked counts the members without a rank (not in Ranks).
	Unranked int `json:"unranked,omitempty"`
	// Hosts are the members' hosts, when events came from several (merged agents); absent
	// on one machine.
	Hosts   HostSet  `json:"hosts,omitzero"`
	Members []Member `json:"members"`
	// Representative is the pid of the member whose core and stack stand for the group, on
	// RepresentativeHost.
	Representative     int     `json:"representative"`
	RepresentativeHost string  `json:"representative_host,omitempty"`
	Core               *string `json:"core"`
	NoCore             NoCore  `json:"no_core,omitempty"` // why Core is null, when crashtui knows
}

// Summary closes a session.
type Summary struct {
	Processes int            `json:"processes"`
	Crashes   int            `json:"crashes"`
	Exits     int            `json:"exits"`
	Handled   int            `json:"handled"`
	Groups    []GroupSummary `json:"groups"`
	Errors    int            `json:"errors"`
	// Lost are the hosts whose streams ended without their summary (a view of agents).
	Lost HostSet `json:"lost,omitzero"`
}

// Error is something crashtui could not do. It never stops the session by itself.
type Error struct {
	PID     int    `json:"pid,omitempty"`
	Op      string `json:"op"`
	Message string `json:"message"`
	// Refused is why a process of the job could not be attached (op "attach"), as facts.
	Refused *Refused `json:"refused,omitempty"`
}

// Refused is why PTRACE_SEIZE of a process of the job failed: the process is then not part
// of the session, and every command says so.
type Refused struct {
	Comm  string `json:"comm,omitempty"`
	Errno string `json:"errno"` // EPERM, ESRCH...
	// TracerPID and TracerComm name the process already tracing it (strace, gdb, another
	// crashtui): /proc's TracerPid is a thread, this is its process.
	TracerPID  int    `json:"tracer_pid,omitempty"`
	TracerComm string `json:"tracer_comm,omitempty"`
	// Yama is kernel.yama.ptrace_scope when it forbids the attach (1-3), else 0.
	Yama int `json:"yama,omitempty"`
	// Root says whether crashtui ran as root (EPERM without a tracer or Yama: another
	// user's process, or a non-dumpable one).
	Root bool `json:"root,omitempty"`
}

func (Session) Kind() Kind { return KindSession }
func (Process) Kind() Kind { return KindProcess }
func (Task) Kind() Kind    { return KindTask }
func (Exec) Kind() Kind    { return KindExec }
func (Exit) Kind() Kind    { return KindExit }
func (Crash) Kind() Kind   { return KindCrash }
func (Handled) Kind() Kind { return KindHandled }
func (Matrix) Kind() Kind  { return KindMatrix }
func (Thread) Kind() Kind  { return KindThread }
func (Summary) Kind() Kind { return KindSummary }
func (Error) Kind() Kind   { return KindError }

func (CrashLines) Kind() Kind { return KindCrashLines }

// decoders are every kind of body: each decodes the wire form into the value type the tracer
// emits (so that a type switch on Body sees the same types live and in replay), starting
// from its zero value (a rank not given is NoRank, not rank 0).
var decoders = map[Kind]func(*json.Decoder) (Body, error){
	KindSession:        decodeAs(Session{}),
	KindProcess:        decodeAs(Process{Rank: NoRank}),
	KindTask:           decodeAs(Task{}),
	KindExec:           decodeAs(Exec{Rank: NoRank}),
	KindExit:           decodeAs(Exit{}),
	KindCrash:          decodeAs(Crash{Rank: NoRank}),
	KindHandled:        decodeAs(Handled{Rank: NoRank}),
	KindCrashLines:     decodeAs(CrashLines{}),
	KindMatrix:         decodeAs(Matrix{}),
	KindThread:         decodeAs(Thread{}),
	KindSummary:        decodeAs(Summary{}),
	KindError:          decodeAs(Error{}),
	KindSample:         decodeAs(Sample{Rank: NoRank}),
	KindMatrixProgress: decodeAs(MatrixProgress{}),
	KindStacks:         decodeAs(Stacks{}),
	KindGoroutines:     decodeAs(Goroutines{Rank: NoRank}),
}

func decodeAs[T Body](zero T) func(*json.Decoder) (Body, error) {
	return func(dec *json.Decoder) (Body, error) {
		v := zero
		err := dec.Decode(&v)
		return v, err
	}
}

type envelope struct {
	Event Kind      `json:"event"`
	Time  time.Time `json:"time"`
	Host  string    `json:"host,omitempty"`
}

// MarshalJSON writes the flat wire form.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends the flat wire form (MarshalJSON's bytes) to dst. A --json stream's
// writer appends each event to one buffer it reuses, and writes it with a newline: that is
// what json.Encoder writes for an Event, less a second pass of encoding/json over the bytes
// (an encoder compacts a Marshaler's output again) and two encoders and buffers an event.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	if e.Body == nil {
		return dst, fmt.Errorf("marshal event: no body")
	}
	m := rawPool.Get().(*rawEncoder)
	defer rawPool.Put(m)
	head, err := m.marshal(envelope{Event: e.Body.Kind(), Time: e.Time, Host: e.Host})
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, head...) // before the body's marshalling reuses m's buffer
	body, err := m.marshal(e.Body)
	if err != nil {
		return dst[:start], fmt.Errorf("marshal %s event: %w", e.Body.Kind(), err)
	}
	if len(body) <= 2 { // "{}"
		return dst, nil
	}
	dst[len(dst)-1] = ','
	return append(dst, body[1:]...), nil
}

// rawEncoder is json.Marshal without HTML escaping, and the buffer it writes to, kept
// between events: abort messages and paths quote '<', '>' and '&' (assertion text, "a < b"),
// which json.Marshal would write as \u003c, unreadable to a person reading the JSON Lines.
// (An encoder that escapes HTML still re-escapes this output.)
type rawEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var rawPool = sync.Pool{New: func() any {
	m := &rawEncoder{}
	m.enc = json.NewEncoder(&m.buf)
	m.enc.SetEscapeHTML(false)
	return m
}}

// marshal is v's JSON, terminal controls escaped (escapeTerminal), valid until m's next use.
func (m *rawEncoder) marshal(v any) ([]byte, error) {
	m.buf.Reset()
	if err := m.enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeTerminal(bytes.TrimSuffix(m.buf.Bytes(), []byte("\n"))), nil
}

// escapeTerminal rewrites, inside encoding/json's output, what it leaves raw but a terminal
// would obey or reorder: DEL, the C1 controls U+0080..U+009F (U+009B is a CSI) and the
// bidirectional embeddings, overrides and isolates, as \uXXXX escapes, so `cat` of a JSON
// Lines stream cannot drive the terminal. They only occur inside strings (the JSON syntax is
// ASCII), and the output still decodes to the same text.
func escapeTerminal(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// UnmarshalJSON reads the flat wire form. Unknown kinds are an error naming the kind.
func (e *Event) UnmarshalJSON(b []byte) error {
	env, ok := scanEnvelope(b)
	if !ok {
		if err := json.Unmarshal(b, &env); err != nil {
			return err
		}
	}
	decode, ok := decoders[env.Event]
	if !ok {
		return fmt.Errorf("unknown event kind %q", env.Event)
	}
	body, err := decode(json.NewDecoder(bytes.NewReader(b)))
	if err != nil {
		return fmt.Errorf("%s event: %w", env.Event, err)
	}
	e.Time, e.Host, e.Body = env.Time, env.Host, body
	return nil
}
