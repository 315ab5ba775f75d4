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
	"github.com/crashtui/crashtui/tracer/procfs"
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
	// Watcher decides the stops the engine does not own (signal-delivery-stops, the
	// syscall-stops of followed threads) and hears of the job's ends: the crash feature.
	// Nil: every signal is delivered as it came.
	Watcher Watcher
}

type request struct {
	fn   func() error
	done chan error
}

// Tracer is the engine: a running ptrace loop over one job. Create with New; every method
// is safe to call from any goroutine. doc.go says what a feature may ask of it.
type Tracer struct {
	opts        Options
	reqs        chan request
	sigch       chan os.Signal // SIGCHLD: a tracee stopped or exited (no kick)
	done        chan struct{}  // closed when the loop has ended
	jobDone     chan struct{}
	jobDoneOnce sync.Once

	// Owned by the loop goroutine.
	tasks   map[int]*task
	procs   map[int]*proc
	started bool // at least one process was attached or launched
	closing bool
	// callbacks counts the watcher callbacks under way (nested in waits): while one runs, a
	// wait looks only at the tasks it waits for (waitUntil), and ends are told after it.
	callbacks int
	later     []func() // watcher calls put off until no callback runs
	// caves caches where each process's injection guards can go, until exec or exit.
	caves map[int][]cave
	// filters caches each thread's seccomp filters, by how many it had (gate.go).
	filters  map[int]threadFilters
	released map[int]bool // processes let go of for another debugger (release.go)
	stale    []*proc      // processes that exec'd, told when their image is read (freshen)
	// earlyGone are tasks gone before their creation event (goneBeforeCreation).
	earlyGone map[int]bool
	// resumed are the tids the loop resumed last (a ring, newest at resumedN-1): where a
	// new task's first stop comes before its creator's event, the creator is most likely
	// one of them (creatorFirst).
	resumed  [4]int
	resumedN int
	// creatorsFirst counts the new tasks creatorFirst took in from their creator's event.
	creatorsFirst int
	// injectCut (tests) makes an injection let its thread go at that point, as the kernel
	// does when crashtui dies: PTRACE_DETACH with no signal (inject.go, cut).
	injectCut string
	self      int
	// How the loop waits (wait.go): blocking in waitid (kickReady) or on SIGCHLD; loopTid is
	// the loop thread, idle and waiting say whether it is in (or entering) a blocking wait.
	blocking bool
	loopTid  atomic.Int32
	idle     atomic.Bool
	// pending are the events emitted and not yet handed to Options.Emit (flush), the first
	// at pendingSince; hasPending says there are some (watchWaits reads it).
	pending      []sessions.Event
	pendingSince time.Time
	hasPending   atomic.Bool
	waiting      atomic.Uint64 // the generation of the current wait, 0 when none
	waitGen      uint64
	// due says the loop's idle wait must end in time (idleDue); watching that watchWaits
	// is looking at it, and arm wakes watchWaits when it is not (it sleeps while nothing is
	// due: an idle tracer wakes no CPU of the job's node).
	due      atomic.Bool
	watching atomic.Bool
	arm      chan struct{}
	// ticking says the watcher asked for its Tick (Loop.WantTick, and Tick's answer).
	ticking  bool
	lastTick time.Time
	lastPark time.Time // when the loop goroutine last gave its P back to the scheduler (parkDue)
	// quick says how well polling for the next stop has paid lately (burst, await): 0 is
	// not at all, and then the loop does not poll.
	quick int
	// soon counts the idle blocking waits in a row that ended within burstWindow (await).
	soon int
	// execBuf holds an exec stop's new stack as stackImage reads it (the loop's alone).
	execBuf []byte
}

// New starts the tracer's goroutine (locked to one OS thread).
func New(opts Options) *Tracer {
	if opts.Emit == nil {
		opts.Emit = func(sessions.Event) {}
	}
	t := &Tracer{
		opts:    opts,
		reqs:    make(chan request),
		arm:     make(chan struct{}, 1),
		sigch:   make(chan os.Signal, 1),
		done:    make(chan struct{}),
		jobDone: make(chan struct{}),
		tasks:   map[int]*task{},
		procs:   map[int]*proc{},
		self:    os.Getpid(),
	}
	t.blocking = kickReady()
	if t.blocking {
		quietChildren()
	} else {
		signal.Notify(t.sigch, unix.SIGCHLD)
	}
	// The loop must not run on the process's main thread: a goroutine locked to it that
	// ends does not end the thread (the runtime parks it), and detaching relies on the loop's
	// thread ending (detachAll). Holding the main thread while the loop starts keeps it off.
	if t.blocking {
		go t.watchWaits()
	}
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

// ErrStopped is what a request made after Close returns.
var ErrStopped = errStopped

// Close detaches every tracee (running threads keep running, stopped ones stay stopped,
// pending signals are delivered) and stops the tracer. It is idempotent.
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

// emit queues an event for Options.Emit, which gets the queue in batches (flush): at most
// emitEvery after its first event, whenever a request ends, and before JobDone or the loop's
// end. Each batch wakes the program's readers of events once: a fork+exec loop's five events
// each, handed over one by one, woke them five times, and their runs on the job's CPUs were
// most of what crashtui added to the job's own time beyond the floor tracer's (ftrace of
// sched_switch: the job's tasks ran 15% longer, and came back to their CPUs later).
func (t *Tracer) emit(b sessions.Body) {
	if len(t.pending) == 0 {
		t.pendingSince = time.Now()
		t.hasPending.Store(true)
	}
	t.pending = append(t.pending, sessions.Event{Time: time.Now(), Host: t.opts.Host, Body: b})
	if len(t.pending) >= emitBatch {
		t.flush()
	}
}

const (
	// emitEvery is how long an emitted event may wait in the queue; emitBatch how many.
	emitEvery = 20 * time.Millisecond
	emitBatch = 1024
)

// flush hands the queued events to Options.Emit, in order.
func (t *Tracer) flush() {
	for _, e := range t.pending {
		t.opts.Emit(e)
	}
	clear(t.pending)
	t.pending = t.pending[:0]
	t.hasPending.Store(false)
}

// flushDue flushes when the oldest queued event has waited emitEvery.
func (t *Tracer) flushDue() {
	if len(t.pending) > 0 && time.Since(t.pendingSince) >= emitEvery {
		t.flush()
	}
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
	defer t.flush() // what the detach said, before done
	defer signal.Stop(t.sigch)
	t.lastTick = time.Now()
	defer func() {
		if r := recover(); r != nil {
			// Never leave the job stopped or half-modified: detach, then re-panic.
			t.closing, t.callbacks = true, 0
			t.detachAll()
			t.flush()
			t.jobDoneOnce.Do(func() { close(t.jobDone) })
			panic(r)
		}
	}()
	woke := false // the last blocking wait dispatched a stop
	for {
		// After a stop its blocking wait dispatched, a poll for the next one finds nothing
		// where stops come far apart (quick is 0: polling does not pay), and the next blocking
		// wait finds one as soon: a waitid saved per stop, a fifth of the loop's syscalls in
		// a fork+exec storm.
		if !woke || t.quick > 0 {
			if t.drain() > 0 {
				t.burst()
			}
		}
		t.freshenAll(false)
		t.checkDone()
		if t.closing && len(t.tasks) == 0 {
			return
		}
		t.flushDue()
		woke = t.await(pollInterval, true)
		if t.ticking && time.Since(t.lastTick) >= pollInterval {
			t.lastTick = time.Now()
			if w := t.opts.Watcher; w != nil && !t.closing {
				t.callback(func() { t.ticking = w.Tick(&Loop{t: t}) })
			}
		}
		t.checkDone()
		if t.closing && len(t.tasks) == 0 {
			return
		}
	}
}

// checkDone closes JobDone once every process of a started job is gone.
func (t *Tracer) checkDone() {
	if (t.started && len(t.tasks) == 0 && len(t.released) == 0) || (t.closing && len(t.tasks) == 0) {
		t.flush() // the job's last events before JobDone
		t.jobDoneOnce.Do(func() { close(t.jobDone) })
	}
}

// callback runs a watcher call: while it runs, waits look only at the tasks they wait for,
// and ends of processes it would hear of are told after it.
func (t *Tracer) callback(fn func()) {
	t.callbacks++
	func() {
		defer func() { t.callbacks-- }()
		fn()
	}()
	for t.callbacks == 0 && len(t.later) > 0 {
		next := t.later[0]
		t.later = t.later[1:]
		next()
	}
}

// tell calls the watcher now, or after the callback under way.
func (t *Tracer) tell(fn func(w Watcher, l *Loop)) {
	w := t.opts.Watcher
	if w == nil {
		return
	}
	call := func() { t.callback(func() { fn(w, &Loop{t: t}) }) }
	if t.callbacks > 0 {
		t.later = append(t.later, call)
		return
	}
	call()
}

// ---- tasks and processes ----

func (t *Tracer) addTask(tid, pid int) *task {
	if tk := t.tasks[tid]; tk != nil {
		return tk
	}
	tk := &task{tid: tid, pid: pid, exitCode: -1, inCall: -1}
	t.tasks[tid] = tk
	p := t.procs[pid]
	if p == nil {
		p = &proc{pid: pid, rank: sessions.NoRank, tasks: map[int]*task{}}
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
		p.ppid, p.comm = st.PPID, st.Comm
	} else {
		if s, err := procfs.ReadStat(p.pid); err == nil {
			p.ppid, p.comm = s.PPID, s.Comm
		}
	}
	p.exe, p.argv = procfs.Exe(p.pid), procfs.Argv(p.pid)
	p.uid = procfs.UID(p.pid)
	if r := procfs.Rank(p.pid); r != sessions.NoRank {
		p.rank = r
	}
}

// forget drops a task; when the last task of a process goes, the process is gone.
func (t *Tracer) forget(tk *task) {
	delete(t.tasks, tk.tid)
	delete(t.filters, tk.tid)
	p := t.procs[tk.pid]
	if p == nil {
		return
	}
	delete(p.tasks, tk.tid)
	if tk.tid != tk.pid && p.announced && !t.closing {
		t.emit(sessions.Task{PID: p.pid, TID: tk.tid, Exited: true})
	}
}

// forgetDetached drops a task the kernel has let go of (or will, when the loop's thread
// ends), and its process with its last task.
func (t *Tracer) forgetDetached(tk *task) {
	delete(t.tasks, tk.tid)
	delete(t.filters, tk.tid)
	if p := t.procs[tk.pid]; p != nil {
		delete(p.tasks, tk.tid)
		if len(p.tasks) == 0 {
			delete(t.procs, p.pid)
			delete(t.caves, p.pid)
		}
	}
}

func (t *Tracer) dropProc(p *proc) {
	for _, tk := range p.tasks {
		delete(t.tasks, tk.tid)
		delete(t.filters, tk.tid)
	}
	delete(t.procs, p.pid)
	delete(t.caves, p.pid)
}

// image is what a process's program is after an exec: as its exec stop's stack says
// (stackImage) or /proc (execImage).
type image struct {
	exe, comm string
	argv      []string
	uid       int
	rank      sessions.Rank
}

// take makes img p's image; a rank img does not know leaves p's as it was.
func (p *proc) take(img image) {
	p.exe, p.comm, p.argv, p.uid = img.exe, img.comm, img.argv, img.uid
	if img.rank != sessions.NoRank {
		p.rank = img.rank
	}
}

// imageRead is one read of a process's image off the loop thread: img is set when done is
// closed.
type imageRead struct {
	done chan struct{}
	img  image
}

// ready says the read is done.
func (r *imageRead) ready() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// execImage starts reading pid's image after its exec, on a goroutine of its own. A process
// fresh from an exec costs the kernel about a hundred microseconds for its first /proc files
// (its /proc/PID entries are made on the first look), and /proc/PID/stat more than any:
// read on the loop thread, as it was, they kept the job's next stops waiting (a fork+exec
// loop under crashtui took twice the floor tracer's added time, BenchmarkJobTime), and they
// need no stop. comm replaces stat (an exec changes the name, never the parent). The loop
// takes the result when the process next stops (the read is then surely done: a stopped
// process's /proc is there), or when idle once it is done. The reader does not kick an idle
// loop: the kick would take a CPU from the job (the exec'd process itself, most often) to
// tell its Exec at once; the loop's next wake tells it, within pollInterval.
func (t *Tracer) execImage(pid int) *imageRead {
	r := &imageRead{done: make(chan struct{})}
	go func() {
		r.img = image{comm: procfs.Comm(pid), exe: procfs.Exe(pid), argv: procfs.Argv(pid),
			uid: procfs.UID(pid), rank: procfs.Rank(pid)}
		close(r.done)
	}()
	return r
}

// freshen tells a process's exec once its image is read (waiting for the read under way): a
// Process event if it was not announced yet, else an Exec event.
func (t *Tracer) freshen(p *proc) {
	if !p.stale {
		return
	}
	p.stale = false
	if r := p.reading; r != nil {
		p.reading = nil
		<-r.done
		if r.img.exe != "" || r.img.comm != "" { // else gone meanwhile: what it had stays
			p.take(r.img)
		}
		p.inherited = true
	}
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

// freshenAll freshens every process that exec'd since the loop last went idle: all of them
// when wait is set (a request sees every image current), else those whose read is done.
func (t *Tracer) freshenAll(wait bool) {
	keep := t.stale[:0]
	for _, p := range t.stale {
		switch {
		case t.procs[p.pid] != p || !p.stale:
		case !wait && p.reading != nil && !p.reading.ready():
			keep = append(keep, p)
		default:
			t.freshen(p)
		}
	}
	clear(t.stale[len(keep):])
	t.stale = keep
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

// SignalName is the kernel's name of a signal ("SIGSEGV"), or "SIG<n>".
func SignalName(sig int) string {
	if n := unix.SignalName(syscall.Signal(sig)); n != "" {
		return n
	}
	return fmt.Sprintf("SIG%d", sig)
}

// KernelRelease is this machine's kernel release (uname -r), "" when uname fails: the one
// reader of it for checkpoint images, session headers and session events.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
