package tracer

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// dispatch handles one peeked wait status: every stop and death the loop sees comes here
// (waitOwn's, inside a callback, go to dispatchOwn). It ends each stop one way: resumed,
// kept for its holders, parked (a signal stop a callback sees), or handed to the injection
// or the watcher, which decide.
func (t *Tracer) dispatch(s status) {
	tid := s.pid
	tk := t.tasks[tid]
	if s.gone() {
		consume(tid) // reaps it
		if tk == nil || tk.early {
			t.goneBeforeCreation(tid)
		}
		t.died(tid, tk, s.ws())
		return
	}
	if tk == nil {
		tk = t.newcomer(tid)
	}
	si := classify(s.ws())
	if si.class == classInterrupt || si.class == classGroup {
		tk.interrupted = false // the trap fired (an interrupt re-reports a group-stop)
	}
	switch tk.state {
	case injecting:
		tk.inj.saw(si)
		return
	case abandoned:
		if t.finishAbandoned(tk, si) {
			return
		}
	}
	if len(t.stale) > 0 {
		if p := t.procs[tk.pid]; p != nil && p.stale {
			t.freshen(p) // its exec is told before anything that follows it
		}
	}
	if t.closing {
		t.detachAtStop(tk, si)
		return
	}
	switch si.class {
	case classEvent, classInterrupt:
		later := t.event(tk, si)
		t.keepOrResume(tk, si)
		later()
	case classGroup:
		t.keepOrResume(tk, si)
	case classSyscall:
		t.syscallStop(tk, si)
	default:
		t.signalStop(tk, si)
	}
}

// dispatchOwn handles a status waitOwn found for one of the tasks it waits for, inside a
// callback: deaths and the engine's own events as dispatch does, every stop kept for its
// holders, and a signal-delivery-stop (or a syscall-stop) parked unconsumed, for the loop
// to dispatch after the callback. Nothing is told to the watcher.
func (t *Tracer) dispatchOwn(tk *task, s status) {
	if s.gone() {
		consume(tk.tid)
		t.died(tk.tid, tk, s.ws())
		return
	}
	si := classify(s.ws())
	if si.class == classInterrupt || si.class == classGroup {
		tk.interrupted = false
	}
	switch {
	case tk.state == injecting:
		tk.inj.saw(si)
	case tk.state == abandoned && t.finishAbandoned(tk, si):
	case si.class == classSignal || si.class == classSyscall:
		t.park(tk, si)
	default:
		later := func() {}
		if si.class == classEvent {
			later = t.event(tk, si)
		}
		t.keepOrResume(tk, si)
		later()
	}
}

// newcomer is a task whose first stop came before anything told of it: a child or thread the
// kernel attached for us (TRACEFORK/TRACECLONE) whose creation event has not been handled
// yet, or a process raced with during attach.
func (t *Tracer) newcomer(tid int) *task {
	if tk := t.creatorFirst(tid); tk != nil {
		return tk
	}
	pid, _ := procfs.TaskStatus(tid)
	if pid == 0 {
		pid = tid
	}
	tk := t.addTask(tid, pid)
	tk.early = true
	if p := t.procs[pid]; p != nil && !t.closing {
		t.announce(p)
	}
	return tk
}

// creatorFirst handles first the fork, vfork or clone event of the task that made tid, when
// it waits too and that task is one the loop resumed lately, and returns tid's task (nil if
// that was not so). The kernel reports its newest tracee first (ptrace_do_wait walks the
// tracer's ptraced list from its head, where ptrace_link adds a child), so a child's first
// stop comes before its parent's event whenever both wait, as they do when the loop comes
// late to them (a busy CPU: 43-136 of 300 forks of a job started by a shell). Taken in from
// its creator's event, a forked child takes its parent's image, read from /proc only at its
// exec; as a newcomer it was read at once, six /proc files before it could run.
func (t *Tracer) creatorFirst(tid int) *task {
	for i := 1; i <= len(t.resumed) && i <= t.resumedN; i++ {
		c := t.resumed[(t.resumedN-i)%len(t.resumed)]
		if ck := t.tasks[c]; ck == nil || ck.state != running {
			continue
		}
		s, e := peek(c, true)
		if e != 0 || s.pid != c || s.gone() {
			continue
		}
		if si := classify(s.ws()); si.class != classEvent ||
			(si.event != unix.PTRACE_EVENT_FORK && si.event != unix.PTRACE_EVENT_VFORK && si.event != unix.PTRACE_EVENT_CLONE) {
			continue
		}
		t.dispatch(s)
		if tk := t.tasks[tid]; tk != nil {
			t.creatorsFirst++
			return tk
		}
	}
	return nil
}

// keepOrResume ends a stop that holds no signal: kept for the task's holders, else resumed
// as the stop wants (a group-stop is listened to).
func (t *Tracer) keepOrResume(tk *task, si stopInfo) {
	if t.tasks[tk.tid] != tk {
		return
	}
	if tk.holders > 0 {
		t.keep(tk, si)
		return
	}
	tk.state, tk.stop = held, si // for resume, which consumes nothing: the status is cleared by it
	t.resumeReported(tk, 0, "resume")
}

// detachAtStop lets go of a task that stopped while the tracer is closing: a signal is
// passed on with PTRACE_DETACH (never a syscall-stop's SIGTRAP|0x80, crashtui's own).
func (t *Tracer) detachAtStop(tk *task, si stopInfo) {
	sig := 0
	if si.class == classSignal {
		sig = si.sig
	}
	if err := ptraceDetach(tk.tid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		// Not detached: take its status off the kernel, so that it is not reported again and
		// again (the kernel detaches it when the loop's thread ends; a signal it held would
		// be lost, so say so).
		consume(tk.tid)
		t.emitErr(tk.pid, "detach", fmt.Errorf("detach %d at its %s stop: %w", tk.tid, si, err))
	}
	t.forgetDetached(tk)
}

// event handles the engine's own part of an event stop: a fork or clone's child taken in, an
// exec's image read later, an exit stop's status. It asks the kernel what only the stop can
// say (PTRACE_GETEVENTMSG) and returns the rest, for the caller to do once the task runs
// again: the task does not wait while a child is announced or an image's read is started.
func (t *Tracer) event(tk *task, si stopInfo) (later func()) {
	later = func() {}
	switch si.event {
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		msg, err := geteventmsg(tk.tid)
		return func() { t.child(tk, si.event, msg, err) }
	case unix.PTRACE_EVENT_EXEC:
		// The thread that called execve now has the leader's tid; the kernel killed the
		// others (fs/exec.c de_thread). GETEVENTMSG gives the former tid, which is the
		// leader's own when the process has no other thread crashtui knows of (a thread it
		// does not know of has no task to drop): then nothing is asked before the exec'd
		// program runs. Otherwise the exec may have come from another thread, and the kernel
		// refuses every ptrace request for a tracee whose tid an exec changed (ESRCH) until
		// its exec stop has been waited for, not merely peeked (kernel/ptrace.c
		// looks_like_a_spurious_pid): peeked only, the stop was dispatched again and again,
		// the loop spun and the exec'd program never ran. Consuming the stop first loses
		// nothing (an event stop holds no signal).
		p := t.procs[tk.pid]
		msg, err := uint64(tk.tid), error(nil)
		if p == nil || len(p.tasks) != 1 || p.tasks[tk.tid] != tk {
			if ws, ok := consumeStatus(tk.tid); ok && (ws.Exited() || ws.Signaled()) {
				t.died(tk.tid, tk, ws) // killed since its stop was peeked
				return later
			}
			msg, err = geteventmsg(tk.tid)
		}
		if p != nil && p.launched && !p.execed {
			// A rank crashtui started: its image is read while it stops, to tell the exec
			// of crashtui's gate shell from its command's (which follows at once).
			t.onExec(tk, msg, err, nil)
			return later
		}
		// What the new stack says of the program is read now, before it runs (it may
		// rewrite its arguments, as setproctitle does); the rest once it runs.
		var img *image
		if t.execBuf == nil {
			t.execBuf = make([]byte, execStackSpan)
		}
		if im, ok := stackImage(tk.tid, t.execBuf); ok {
			img = &im
		}
		return func() { t.onExec(tk, msg, err, img) }
	case unix.PTRACE_EVENT_EXIT:
		// The message is the group's wait status, needed only where the process has no
		// traced leader to report its end (died): one syscall less per thread's end.
		if p := t.procs[tk.pid]; p == nil || !p.leader {
			if msg, err := geteventmsg(tk.tid); err == nil {
				tk.exitCode = int(msg)
			}
		}
	}
	return later
}

// child takes in the new task of tk's fork, vfork or clone (msg and err: its event's message).
func (t *Tracer) child(tk *task, cause int, msg uint64, err error) {
	if ck := t.tasks[int(msg)]; ck != nil {
		ck.early = false // its first stop came first
		return
	}
	if err != nil || msg == 0 {
		return
	}
	child := int(msg)
	// The child's own first stop may have come first, and the child may already have run,
	// exited and been reported gone: then it must not be added again as a task that will
	// never report anything.
	if t.earlyGone[child] {
		delete(t.earlyGone, child)
		return
	}
	// Otherwise it has not been reported at all: it waits at its first stop.
	if cause == unix.PTRACE_EVENT_CLONE && isThread(tk.pid, child) {
		t.addTask(child, tk.pid) // a thread of tk's process
		return
	}
	t.addTask(child, child)
	p := t.procs[child]
	if parent := t.procs[tk.pid]; p != nil && parent != nil {
		// A fork shows its parent's image until it execs: copy what it inherits instead of
		// reading six /proc files (read once, at exec).
		p.ppid, p.exe, p.comm, p.argv, p.uid = tk.pid, parent.exe, parent.comm, parent.argv, parent.uid
		if p.rank == sessions.NoRank {
			p.rank = parent.rank
		}
		p.inherited = true
	} else if p != nil {
		p.ppid = tk.pid
	}
	t.announce(p)
}

// isThread says whether child, new from a clone by a thread of process pid, is a thread of
// it (CLONE_THREAD) rather than a process: it is one exactly when it is not its group's
// leader.
func isThread(pid, child int) bool {
	if leader, known := procfs.IsLeader(child); known {
		return !leader
	}
	return procfs.IsThreadOf(pid, child)
}

// onExec takes in tk's exec (msg and err: its event's message, the former tid; img, when
// not nil: what its exec stop's stack said of the new program).
func (t *Tracer) onExec(tk *task, msg uint64, err error, img *image) {
	p := t.procs[tk.pid]
	if p == nil {
		return
	}
	p.gen++
	if err == nil && int(msg) != tk.tid {
		if old := t.tasks[int(msg)]; old != nil {
			delete(t.tasks, old.tid)
			delete(p.tasks, old.tid)
		}
	}
	// Other threads' exit statuses arrive on their own (died).
	delete(t.caves, p.pid) // a new image: new mappings
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
	p.stale = true
	t.stale = append(t.stale, p)
	if img != nil {
		// The stack said all but the executable's path, which /proc/PID/exe gives in one
		// readlink, read here on the loop thread while the program runs (a program gone
		// already keeps the name execve was given). A goroutine of its own for it did not
		// pay: its start, a wake of an idle thread on another CPU, cost the exec'd program
		// (waiting on the loop's CPU) as much as the readlink (41 -> 46.5 µs median from its
		// resume to the loop's switch-out, raw_syscalls tracepoints).
		if exe := procfs.Exe(p.pid); exe != "" {
			img.exe = exe
		}
		p.take(*img)
		p.inherited = true
		return
	}
	// Else its image is read while it runs again, off the loop thread (execImage): the
	// exec'ing thread does not wait for five /proc reads, nor do the job's other stops.
	p.inherited = false
	p.reading = t.execImage(p.pid)
}

// signalStop hands a signal-delivery-stop to the watcher, which decides its fate, and
// carries the decision out. The stop is peeked, never consumed: the signal is the kernel's
// until the resume passes it on.
func (t *Tracer) signalStop(tk *task, si stopInfo) {
	t.park(tk, si)
	f := fate{how: fateDeliver}
	if w := t.opts.Watcher; w != nil {
		s := &SignalStop{Thread: Thread{t: t, tk: tk}, Sig: si.sig}
		t.callback(func() { w.Signal(&Loop{t: t}, s) })
		f = s.fate
	}
	t.carryOut(tk, si.sig, f)
}

// syscallStop hands a followed thread's syscall-stop to the watcher; a thread no longer
// followed is resumed without one (a stale PTRACE_SYSCALL).
func (t *Tracer) syscallStop(tk *task, si stopInfo) {
	t.park(tk, si)
	w := t.opts.Watcher
	if !tk.follow || w == nil {
		tk.follow = false
		t.carryOut(tk, 0, fate{how: fateDeliver})
		return
	}
	s := &SyscallStop{Thread: Thread{t: t, tk: tk}, fate: fate{how: fateFollow}}
	s.Info, s.err = getSyscallInfo(tk.tid)
	t.callback(func() { w.Syscall(&Loop{t: t}, s) })
	t.carryOut(tk, 0, s.fate)
}

// carryOut resumes a peeked stop as its fate says. A task its holders want back keeps its
// pending interrupt: it is stopping again.
func (t *Tracer) carryOut(tk *task, sig int, f fate) {
	if t.tasks[tk.tid] != tk || tk.state != peeked {
		return // it died meanwhile, or the callback let it go (Release)
	}
	switch f.how {
	case fateSuppress:
		sig = 0
	case fateFollow:
		tk.follow = true
	case fateUnfollow:
		tk.follow = false
	case fateUnhandled:
		// Blocked, the signal is queued as it is resumed (ptrace_signal requeues a blocked
		// signal); the fault it came from recurs at once and, blocked, is forced to the
		// default action (kernel/signal.c force_sig_info_to_task resets the handler): as if no
		// handler were installed.
		if mask, err := getSigmask(tk.tid); err == nil {
			setSigmask(tk.tid, mask|1<<(sig-1))
		}
		tk.follow = false
	}
	if tk.follow && !tk.sysgood {
		if err := ptraceSetOptions(tk.tid, seizeOptions|unix.PTRACE_O_TRACESYSGOOD); err != nil {
			tk.follow = false
		} else {
			tk.sysgood = true
		}
	}
	t.resumeReported(tk, sig, "resume")
	if tk.interrupted && tk.state == running {
		tk.state = stopping // the holder's interrupt is still pending: it stops again
	}
}

// died handles the final wait status of a task.
func (t *Tracer) died(tid int, tk *task, ws unix.WaitStatus) {
	if tk == nil {
		return
	}
	if tk.inj != nil {
		tk.inj.gone = true
	}
	t.forget(tk)
	p := t.procs[tk.pid]
	t.tell(func(w Watcher, l *Loop) { w.TaskGone(l, tk.pid, tid) })
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
	ex := sessions.Exit{PID: p.pid}
	if ws.Exited() {
		c := ws.ExitStatus()
		ex.Code = &c
	} else {
		ex.Signal = SignalName(int(ws.Signal()))
		ex.CoreDumped = ws.CoreDump()
	}
	pid := p.pid
	t.tell(func(w Watcher, l *Loop) { w.ProcessGone(l, pid, ws) })
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
