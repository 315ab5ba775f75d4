package tracer

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
)

// seizeOptions follow every fork, clone and exec and stop at exit. No PTRACE_O_EXITKILL when
// attaching: if crashtui dies, the kernel detaches and the job goes on (README.md).
const seizeOptions = unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEEXIT

// Options configure a Tracer.
type Options struct {
	// Emit receives every event, on the tracer's goroutine, in order. It must not block for
	// long: tracees wait while it runs.
	Emit func(sessions.Event)
	// Host is stamped on every event ("" for a single-host session).
	Host string
	// Crash configures crash-site grouping and cores (may be nil: crashes are still reported).
	Crash *CrashOptions
}

// held says why a task is held in a ptrace-stop instead of running.
type stopKind int

const (
	running    stopKind = iota
	stopEvent           // PTRACE_EVENT_* stop (fork, exec, exit, interrupt)
	stopGroup           // group-stop: resume with PTRACE_LISTEN so job control is unchanged
	stopSignal          // signal-delivery-stop: resume with the signal
	stopExit            // PTRACE_EVENT_EXIT
)

type task struct {
	tid, pid  int
	stopped   stopKind
	sig       int  // signal to inject on resume (stopSignal)
	want      bool // we asked for a stop (PTRACE_INTERRUPT) and hold it when it comes
	exitCode  int  // from PTRACE_EVENT_EXIT, -1 until then
	listening bool
	inject    *injection // non-nil while an injected syscall single-steps
	// cause is the PTRACE_EVENT_* of the held stop (0 for a signal-delivery-stop).
	cause int
	// exited is set once its PTRACE_EVENT_EXIT stop was resumed: the thread never stops
	// again (a leader that called pthread_exit stays a zombie until the group ends), so
	// nothing may wait for it to stop.
	exited bool
	// abandoned is an injection that never reported its stop (the syscall blocked): when the
	// stop finally comes, its registers and signal mask are put back before anything else.
	abandoned *injectSession
	// early: its first stop came before its parent's fork or clone event (handle).
	early bool
	// req is how it was last resumed: PTRACE_SYSCALL (a fault handler followed), else
	// PTRACE_CONT (also after a PTRACE_LISTEN).
	req int
}

type proc struct {
	pid, ppid int
	rank      sessions.Rank
	exe, comm string
	argv      []string
	uid       int
	tasks     map[int]*task
	launched  bool // started by crashtui run: we reap it
	// execed: a launched rank has left crashtui's gate shell for its command; it is announced
	// only then, so its process event never shows the gate (run --json is the same every time).
	execed    bool
	announced bool // its process event has been emitted
	exitCode  int  // leader's PTRACE_EVENT_EXIT status, -1 until known
	// inherited: the image fields are current without reading /proc: a forked child's copied
	// from its parent, or read since the last exec.
	inherited bool
	// stale: it has exec'd and its image fields are read after it runs again (freshen).
	stale bool
	// preStat is its stat line as the attach's scan of /proc read it: readImage takes ppid
	// and comm from it instead of reading them again.
	preStat *procStat
	// leader is true when crashtui traces the thread-group leader; a leader that was already
	// a zombie (pthread_exit) at attach cannot be seized, and the process then ends with its
	// last traced thread.
	leader bool
}

type waitResult struct {
	pid int
	ws  unix.WaitStatus
}

type request struct {
	fn   func() error
	done chan error
}

// Tracer is a running ptrace engine. Create with New; every method is safe to call from any
// goroutine.
type Tracer struct {
	opts        Options
	reqs        chan request
	sigch       chan os.Signal // SIGCHLD: a tracee stopped or exited
	done        chan struct{}  // closed when the loop has ended
	jobDone     chan struct{}
	jobDoneOnce sync.Once

	// Owned by the loop goroutine.
	tasks   map[int]*task
	procs   map[int]*proc
	started bool // at least one process was attached or launched
	closing bool
	crash   *crashState
	// lastMatrixKey is what the last live matrix was computed from (RefreshMatrix).
	lastMatrixKey *matrixKey
	// filtersUnreadable are processes whose seccomp filters could not be read (said once).
	filtersUnreadable map[int]bool
	// caves caches where each process's injection guards can go, until exec or exit.
	caves map[int][]cave
	// mapsCache keeps each process's mappings between stack samples, until exec or exit.
	mapsCache     map[int]mapsCache
	stackBufs     [][]byte     // sampling's stack copies, reused (stacks.go)
	sampleSeq     int          // the last stack sample's number
	checkpointSeq int          // the last checkpoint's number
	released      map[int]bool // processes let go of for another debugger (release.go)
	stale         []*proc      // processes that exec'd, read when the loop is idle (freshen)
	earlyGone     map[int]bool // tasks gone before their creation event (goneBeforeCreation)
	// injectCut (tests) makes an injection let its thread go at that point, as the kernel
	// does when crashtui dies: PTRACE_DETACH with no signal (inject.go, cut).
	injectCut string
	// live is RefreshMatrix's own state (it runs on its caller's goroutine).
	live liveState
	self int
	// How the loop waits (wait.go): blocking in wait4 (kickReady) or on SIGCHLD; loopTid is
	// the loop thread, idle and waiting say whether it is in (or entering) a blocking wait4.
	blocking bool
	loopTid  atomic.Int32
	idle     atomic.Bool
	waiting  atomic.Uint64 // the generation of the current wait4, 0 when none
	waitGen  uint64
}

// New starts the tracer's goroutine (locked to one OS thread) and its waiter.
func New(opts Options) *Tracer {
	if opts.Emit == nil {
		opts.Emit = func(sessions.Event) {}
	}
	t := &Tracer{
		opts:    opts,
		reqs:    make(chan request),
		sigch:   make(chan os.Signal, 1),
		done:    make(chan struct{}),
		jobDone: make(chan struct{}),
		tasks:   map[int]*task{},
		procs:   map[int]*proc{},
		self:    os.Getpid(),
	}
	t.crash = newCrashState(opts.Crash)
	t.blocking = kickReady()
	if !t.blocking {
		signal.Notify(t.sigch, unix.SIGCHLD)
	}
	// The loop must not run on the process's main thread: a goroutine locked to it that
	// ends does not end the thread (the runtime parks it), and detaching relies on the loop's
	// thread ending (detachAll). Holding the main thread while the loop starts keeps it off.
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			t.loop(nil)
			return // ends this thread
		}
		started := make(chan struct{})
		go t.loop(started)
		<-started
		runtime.UnlockOSThread()
	}()
	return t
}

// JobDone is closed when every process of the job has exited (or been detached).
func (t *Tracer) JobDone() <-chan struct{} { return t.jobDone }

// errStopped is returned by requests made after Close.
var errStopped = errors.New("tracer: stopped")

// Close detaches every tracee (running threads keep running, stopped ones stay stopped,
// pending signals are re-injected) and stops the tracer. It is idempotent.
func (t *Tracer) Close() error {
	err := t.do(func() error {
		t.closing = true
		return t.detachAll()
	})
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		return errors.New("tracer: loop did not stop")
	}
	// The threads left running are detached by the kernel as the loop's thread ends
	// (detachAll): Close returns once it has.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		var st unix.Stat_t
		if unix.Stat("/proc/self/task/"+strconv.Itoa(t.self), &st) != nil {
			break
		}
	}
	if errors.Is(err, errStopped) {
		return nil // closed before
	}
	return err
}

func (t *Tracer) emit(b sessions.Body) {
	t.opts.Emit(sessions.Event{Time: time.Now(), Host: t.opts.Host, Body: b})
}

func (t *Tracer) emitErr(pid int, op string, err error) {
	t.emit(sessions.Error{PID: pid, Op: op, Message: err.Error()})
}

// started, when not nil, is closed once the loop holds its thread.
func (t *Tracer) loop(started chan struct{}) {
	runtime.LockOSThread() // ptrace requests must come from the attaching thread; never unlocked
	// /proc's TracerPid names the tracing *thread*: this one.
	t.self = unix.Gettid()
	if started != nil {
		close(started)
	}
	t.loopTid.Store(int32(t.self))
	defer t.loopTid.Store(0)
	defer close(t.done)
	defer signal.Stop(t.sigch)
	lastExpire := time.Now()
	defer func() {
		if r := recover(); r != nil {
			// Never leave the job stopped or half-modified: detach, then re-panic.
			t.closing = true
			t.detachAll()
			t.jobDoneOnce.Do(func() { close(t.jobDone) })
			panic(r)
		}
	}()
	for {
		if t.drain() > 0 {
			t.burst()
		}
		t.freshenAll()
		if t.started && len(t.tasks) == 0 && len(t.released) == 0 {
			t.jobDoneOnce.Do(func() { close(t.jobDone) })
		}
		if t.closing && len(t.tasks) == 0 {
			return
		}
		t.await(pollInterval, true)
		if time.Since(lastExpire) >= pollInterval {
			lastExpire = time.Now()
			t.expireSteps()
		}
		if t.started && len(t.tasks) == 0 && len(t.released) == 0 {
			t.jobDoneOnce.Do(func() { close(t.jobDone) })
		}
		if t.closing && len(t.tasks) == 0 {
			t.jobDoneOnce.Do(func() { close(t.jobDone) })
			return
		}
	}
}

// The ptrace primitives are in ptrace.go.

// ---- tasks and processes ----

func (t *Tracer) addTask(tid, pid int) *task {
	if tk := t.tasks[tid]; tk != nil {
		return tk
	}
	tk := &task{tid: tid, pid: pid, exitCode: -1}
	if t.closing {
		tk.want = true
	}
	t.tasks[tid] = tk
	p := t.procs[pid]
	if p == nil {
		p = &proc{pid: pid, rank: sessions.NoRank, tasks: map[int]*task{}, exitCode: -1}
		t.procs[pid] = p
	}
	p.tasks[tid] = tk
	if tid == pid {
		p.leader = true
	}
	t.started = true
	if tid != pid && p.announced {
		t.emit(sessions.Task{PID: pid, TID: tid})
	}
	return tk
}

// announce reads /proc and emits the process event once.
func (t *Tracer) announce(p *proc) {
	if p.announced || (p.launched && !p.execed) {
		return
	}
	p.announced = true
	if !p.inherited {
		p.readImage()
		p.inherited = true
	}
	t.emit(sessions.Process{PID: p.pid, PPID: p.ppid, Rank: p.rank, Exe: p.exe, Comm: p.comm,
		Argv: p.argv, UID: p.uid, Threads: len(p.tasks)})
	for tid := range p.tasks {
		if tid != p.pid {
			t.emit(sessions.Task{PID: p.pid, TID: tid})
		}
	}
}

// readImage reads what /proc says of p's program: its parent and comm (from the attach
// scan's stat line when there is one), exe, argv, uid and rank. It touches nothing but p.
func (p *proc) readImage() {
	if st := p.preStat; st != nil {
		p.preStat = nil
		p.ppid, p.comm = st.ppid, st.comm
	} else {
		if s, err := readStat(p.pid); err == nil {
			p.ppid, p.comm = s.ppid, s.comm
		}
	}
	p.exe, p.argv = readExe(p.pid), readArgv(p.pid)
	p.uid = readUID(p.pid)
	if r := readRank(p.pid); r != sessions.NoRank {
		p.rank = r
	}
}

// forget drops a task; when the last task of a process goes, the process is gone.
func (t *Tracer) forget(tk *task) {
	delete(t.tasks, tk.tid)
	p := t.procs[tk.pid]
	if p == nil {
		return
	}
	delete(p.tasks, tk.tid)
	if tk.tid != tk.pid && p.announced && !t.closing {
		t.emit(sessions.Task{PID: p.pid, TID: tk.tid, Exited: true})
	}
}

func (t *Tracer) dropProc(p *proc) {
	for _, tk := range p.tasks {
		delete(t.tasks, tk.tid)
	}
	delete(t.procs, p.pid)
}

// resume lets a held task go the way the kernel expects for its kind of stop.
func (t *Tracer) resume(tk *task) error {
	var err error
	switch tk.stopped {
	case running:
		return nil
	case stopGroup:
		// PTRACE_LISTEN keeps the group-stop (job control unchanged) but lets the tracer be
		// told of SIGCONT and new events.
		err = ptraceListen(tk.tid)
		tk.listening = err == nil
	case stopSignal:
		err = ptraceResume(unix.PTRACE_CONT, tk.tid, tk.sig)
	default:
		err = ptraceResume(unix.PTRACE_CONT, tk.tid, 0)
	}
	if tk.stopped == stopExit && err == nil {
		tk.exited = true
	}
	tk.stopped, tk.sig, tk.want, tk.cause = running, 0, false, 0
	tk.req = unix.PTRACE_CONT
	if errors.Is(err, unix.ESRCH) {
		return nil // it died while stopped (SIGKILL): its exit status follows
	}
	if err != nil {
		return fmt.Errorf("resume %d: %w", tk.tid, err)
	}
	return nil
}

// handle processes one wait status.
func (t *Tracer) handle(w waitResult) {
	tid, ws := w.pid, w.ws
	tk := t.tasks[tid]
	if tk != nil && tk.abandoned != nil && ws.Stopped() && t.finishAbandoned(tk, ws) {
		return
	}
	if tk != nil && tk.inject != nil {
		// The stop that ends an injected single-step belongs to injectSyscall.
		if ws.Exited() || ws.Signaled() {
			tk.inject.gone = true
		} else if ws.Stopped() {
			tk.inject.ws = ws
			return
		}
	}
	if tk != nil && len(t.stale) > 0 {
		if p := t.procs[tk.pid]; p != nil && p.stale {
			t.freshen(p) // held, or gone: its exec is told before anything that follows it
		}
	}
	if ws.Exited() || ws.Signaled() {
		if tk == nil || tk.early {
			t.goneBeforeCreation(tid)
		}
		t.gone(tid, tk, ws)
		return
	}
	if !ws.Stopped() {
		return
	}
	if tk == nil {
		// A child or thread the kernel attached for us (TRACEFORK/TRACECLONE) whose creation
		// event we have not processed yet, or a process we raced with during attach.
		pid, _ := taskStatus(tid)
		if pid == 0 {
			pid = tid
		}
		tk = t.addTask(tid, pid)
		tk.early = true
		if p := t.procs[pid]; p != nil && !t.closing {
			t.announce(p)
		}
	}
	tk.listening = false
	si := classify(ws)
	switch si.class {
	case classEvent, classInterrupt:
		t.handleEvent(tk, si.event)
		return
	case classGroup:
		tk.stopped, tk.cause = stopGroup, si.event
		if !tk.want {
			t.resumeReported(tk, "resume")
		}
		return
	}
	// Signal-delivery-stop (or a syscall-stop of a followed fault handler: crash_handled.go).
	sig := si.sig
	tk.stopped, tk.sig, tk.cause = stopSignal, sig, 0
	if t.closing {
		// Held; detachAll re-injects it with PTRACE_DETACH, unless it is a stop of crashtui's
		// own making (a syscall-stop or step trap while a fault handler was being followed).
		t.crashBeforeDetach(tk, sig)
		return
	}
	t.onSignal(tk, sig)
	if !tk.want && tk.stopped != running {
		t.resumeReported(tk, "resume")
	}
}

func (t *Tracer) handleEvent(tk *task, cause int) {
	tk.stopped, tk.cause = stopEvent, cause
	switch cause {
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		msg, err := geteventmsg(tk.tid)
		if ck := t.tasks[int(msg)]; ck != nil {
			ck.early = false // its first stop came first
			break
		}
		if err == nil && msg > 0 {
			child := int(msg)
			// The child's own first stop may have come first, and the child may already have
			// run, exited and been reported gone: then it must not be added again as a task
			// that will never report anything.
			if t.earlyGone[child] {
				delete(t.earlyGone, child)
				break
			}
			// Otherwise it has not been reported at all: it waits at its first stop.
			switch {
			case cause == unix.PTRACE_EVENT_CLONE && isThreadOf(tk.pid, child):
				t.addTask(child, tk.pid) // a thread of tk's process
			default:
				t.addTask(child, child)
				p := t.procs[child]
				if parent := t.procs[tk.pid]; p != nil && parent != nil {
					// A fork shows its parent's image until it execs: copy what it inherits
					// instead of reading six /proc files (read once, at exec).
					p.ppid, p.exe, p.comm, p.argv, p.uid = tk.pid, parent.exe, parent.comm, parent.argv, parent.uid
					if p.rank == sessions.NoRank {
						p.rank = parent.rank
					}
					p.inherited = true
				} else if p != nil {
					p.ppid = tk.pid
				}
				if !t.closing {
					t.announce(p)
				}
			}
		}
	case unix.PTRACE_EVENT_EXEC:
		t.onExec(tk)
	case unix.PTRACE_EVENT_EXIT:
		tk.stopped = stopExit
		if msg, err := geteventmsg(tk.tid); err == nil {
			tk.exitCode = int(msg)
			if p := t.procs[tk.pid]; p != nil && tk.tid == tk.pid {
				p.exitCode = int(msg)
			}
		}
	}
	if !tk.want {
		t.resumeReported(tk, "resume")
	}
}

func (t *Tracer) onExec(tk *task) {
	p := t.procs[tk.pid]
	if p == nil {
		return
	}
	// The thread that called execve now has the leader's tid; the kernel killed the others
	// (fs/exec.c de_thread). GETEVENTMSG gives the former tid.
	if msg, err := geteventmsg(tk.tid); err == nil && int(msg) != tk.tid {
		if old := t.tasks[int(msg)]; old != nil {
			delete(t.tasks, old.tid)
			delete(p.tasks, old.tid)
		}
	}
	// Other threads' exit statuses arrive on their own (gone).
	delete(t.caves, p.pid) // a new image: new mappings
	delete(t.mapsCache, p.pid)
	if p.launched && !p.execed {
		// The seize may come before the exec of the gate shell itself: its exec is not the
		// rank's.
		p.readImage()
		if len(p.argv) > 3 && p.argv[3] == gateName {
			return
		}
		p.execed, p.inherited, p.stale = true, true, true // read just now: freshen tells it
		t.freshen(p)
		return
	}
	// Its image is read once it runs again, off the path of its stop (freshen): the exec'ing
	// thread does not wait for six /proc reads.
	p.stale, p.inherited = true, false
	t.stale = append(t.stale, p)
}

// freshen reads a process's image after an exec and tells it: a Process event if it was not
// announced yet, else an Exec event.
func (t *Tracer) freshen(p *proc) {
	if !p.stale {
		return
	}
	p.stale = false
	if !p.inherited {
		p.readImage()
		p.inherited = true
	}
	if !p.announced {
		t.announce(p)
		return
	}
	t.emit(sessions.Exec{PID: p.pid, Exe: p.exe, Comm: p.comm, Argv: p.argv, Rank: p.rank})
}

// freshenAll freshens every process that exec'd since the loop last went idle.
func (t *Tracer) freshenAll() {
	for _, p := range t.stale {
		if t.procs[p.pid] == p {
			t.freshen(p)
		}
	}
	clear(t.stale)
	t.stale = t.stale[:0]
}

// goneBeforeCreation remembers a task reported gone before its parent's fork or clone event
// was handled, so that the event does not add it back as a task that never reports. The set
// is bounded: forgetting an entry only means a later tid-reuse check errs on the side of
// adding a task, which its own first stop would add anyway.
func (t *Tracer) goneBeforeCreation(tid int) {
	if t.earlyGone == nil || len(t.earlyGone) > 4096 {
		t.earlyGone = map[int]bool{}
	}
	t.earlyGone[tid] = true
}

// gone handles the final wait status of a task.
func (t *Tracer) gone(tid int, tk *task, ws unix.WaitStatus) {
	if tk == nil {
		return
	}
	t.forget(tk)
	p := t.procs[tk.pid]
	if p == nil {
		return
	}
	switch {
	case tid == tk.pid:
		// The leader is reported only once the whole thread group has gone
		// (delay_group_leader).
		t.procGone(p, ws)
	case !p.leader && len(p.tasks) == 0:
		// Its leader was a zombie crashtui could not seize: the process ends with its last
		// traced thread, whose PTRACE_EVENT_EXIT message is the group's wait status.
		if tk.exitCode >= 0 {
			ws = unix.WaitStatus(tk.exitCode)
		}
		t.procGone(p, ws)
	}
}

// procGone reports the end of a process and forgets it.
func (t *Tracer) procGone(p *proc, ws unix.WaitStatus) {
	delete(t.caves, p.pid)
	delete(t.mapsCache, p.pid)
	delete(t.filtersUnreadable, p.pid)
	ex := sessions.Exit{PID: p.pid}
	if ws.Exited() {
		c := ws.ExitStatus()
		ex.Code = &c
	} else {
		ex.Signal = signalName(int(ws.Signal()))
		ex.CoreDumped = ws.CoreDump()
	}
	t.crash.onExit(t, p, ws)
	if p.launched && !p.execed {
		// A rank that died in crashtui's gate (its command could not be executed): say so.
		p.execed = true
		t.announce(p)
	}
	if p.announced {
		t.emit(ex)
	}
	t.dropProc(p)
}

func signalName(sig int) string {
	if n := unix.SignalName(syscall.Signal(sig)); n != "" {
		return n
	}
	return fmt.Sprintf("SIG%d", sig)
}
