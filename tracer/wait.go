package tracer

import (
	"encoding/binary"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How the loop waits (see also doc.go). Every tracee is traced by the loop's one locked
// thread, and every stop is a wait status for that thread. Idle, the loop blocks in waitid
// itself, as a C tracer does: the kernel wakes it straight from the tracee's stop, with no
// SIGCHLD, no os/signal goroutine and no channel hand-off to the locked thread in between.
// Other goroutines reach it with a request (do) and a kick: kickSignal sent to the loop
// thread alone with tgkill, whose Go handler has SA_RESTART cleared so that the blocking
// waitid returns EINTR. A kick that lands just before waitid is entered is lost; the
// requester kicks again every millisecond until its request is taken, and a wait with a
// deadline is kicked every millisecond past it, so nothing waits longer than that. Where the
// kick cannot be set up (Go's handler is not installed for the signal) the loop falls back
// to SIGCHLD through os/signal. In a storm of stops the loop goroutine only makes syscalls;
// every parkEvery it parks for a moment before its idle wait (parkDue), or the runtime's
// sysmon would preempt it and take its P, and wake 50 times for each.
//
// Every wait peeks (WNOWAIT): the status stays the kernel's until the engine decides. A
// signal-delivery-stop is never consumed: it ends only by a resume that passes the signal
// on, so a crashtui killed at any moment leaves the signal in the tracee's exit_code, where
// the kernel delivers it (kernel.md D.3). A stop that holds no signal is consumed when a
// holder keeps it (keep), and a death when it is reaped; a stop the engine resumes at once
// needs no consuming (PTRACE_CONT clears it). A peeked status the loop neither resumes nor
// consumes is reported again by the next wait, so while a feature decides a stop (a
// callback) every wait looks only at the tasks it waits for (waitOwn), never at all.

// peekFlags: __WALL sees clone children (threads); __WNOTHREAD limits the wait to the
// children and tracees of the loop's own thread, so a program that embeds a Tracer (a test
// binary) keeps its other children to itself. Ranks of Launch are forked by the loop thread
// too. WNOWAIT leaves the status to be consumed (or not) by the engine.
const peekFlags = unix.WEXITED | unix.WSTOPPED | unix.WALL | unix.WNOTHREAD | unix.WNOWAIT

// pollInterval bounds an idle wait that something is due from (idleDue): the watcher's Tick
// runs this often while it asks for it.
const pollInterval = 100 * time.Millisecond

// kickSignal is the real-time signal that interrupts the loop's blocking wait. crashtui
// never uses it otherwise, and only ever sends it to the loop thread.
const kickSignal = unix.Signal(63)

// kickReady is whether kickSignal interrupts a blocking syscall (set up once per process).
var kickReady = sync.OnceValue(func() bool {
	// The kernel's struct sigaction: handler, flags, restorer, mask (the flags are the second
	// word on amd64, arm64 and ppc64le alike); the other words are written back as read.
	var sa [4]uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(kickSignal), 0, uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
		return false
	}
	if sa[0] == sigDfl || sa[0] == sigIgn { // not Go's handler; a kick would kill or do nothing
		return false
	}
	sa[1] &^= saRestart
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(kickSignal), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); e != 0 {
		return false
	}
	return true
})

// saRestart is SA_RESTART on amd64, arm64 and ppc64le alike.
const saRestart = 0x10000000

// quietChildren sets SIGCHLD's action back to the kernel's default, once, where the Go
// runtime's handler is installed: then no tracee's stop or death signals crashtui. The loop
// learns of both from waitid alone (kickReady), which the kernel wakes whether a signal is
// sent or not (kernel/signal.c do_notify_parent, __wake_up_parent). Each such signal was
// only a handler run for nothing: several per thread a job creates and one per signal it
// delivers (stops), and one per traced death, taken by the loop thread itself (a tracee's
// ptrace parent) between the death and its reap, which the dead child's parent waits for
// (raw_syscalls of 300 fork+exec: 297 handler returns on the loop thread, 13 µs each before
// the reap). SIG_DFL, unlike SIG_IGN or SA_NOCLDWAIT, keeps crashtui's own children
// waitable (os/exec reaps them by pid, never by SIGCHLD), and os/signal never hears of
// SIGCHLD again: nothing in crashtui asks it. It says whether SIGCHLD is quiet now.
var quietChildren = sync.OnceValue(func() bool {
	var sa [4]uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
		return false
	}
	switch sa[0] {
	case sigDfl:
		return true
	case sigIgn: // not ours to change: children are reaped by the kernel there
		return false
	}
	dfl := [4]uint64{sigDfl}
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	return e == 0
})

// The handler values of SIG_DFL and SIG_IGN.
const (
	sigDfl = 0
	sigIgn = 1
)

// kick interrupts the loop thread's blocking wait, if it is in one.
func (t *Tracer) kick() {
	if tid := t.loopTid.Load(); tid != 0 {
		unix.Tgkill(unix.Getpid(), int(tid), kickSignal)
	}
}

// si_code values of SIGCHLD (include/uapi/asm-generic/siginfo.h).
const (
	cldExited  = 1
	cldKilled  = 2
	cldDumped  = 3
	cldTrapped = 4
	cldStopped = 5
)

// status is one peeked wait status, from waitid's siginfo.
type status struct {
	pid  int
	code int32 // si_code: cldExited, cldKilled, cldDumped, cldTrapped (cldStopped is never asked for)
	val  int32 // si_status: the exit code, the killing signal, or a ptrace stop's exit_code
}

// gone says the task is dead (its status is its death, to be reaped).
func (s status) gone() bool {
	return s.code == cldExited || s.code == cldKilled || s.code == cldDumped
}

// ws is the status as wait4 would have reported it (classify and the exit events read that).
func (s status) ws() unix.WaitStatus {
	switch s.code {
	case cldExited:
		return unix.WaitStatus((s.val & 0xff) << 8)
	case cldKilled:
		return unix.WaitStatus(s.val & 0x7f)
	case cldDumped:
		return unix.WaitStatus(s.val&0x7f | 0x80)
	}
	// A ptrace stop: exit_code is the signal, with the event in bits 8-15 (or 0x80 for a
	// syscall-stop), reported by wait4 as (exit_code << 8) | 0x7f.
	return unix.WaitStatus(uint32(s.val)<<8 | 0x7f)
}

// peek is one waitid(WNOWAIT) for id (P_ALL when pid is 0, else P_PID), without blocking
// when nohang. It returns the status, or pid 0 when there is none (or an error: ECHILD when
// nothing is left to wait for, EINTR when kicked).
func peek(pid int, nohang bool) (status, unix.Errno) {
	var si [128]byte
	idtype, flags := unix.P_ALL, peekFlags
	if pid > 0 {
		idtype = unix.P_PID
	}
	if nohang {
		flags |= unix.WNOHANG
	}
	call := unix.RawSyscall6 // WNOHANG does not wait: the scheduler not told (as ptrace's)
	if !nohang {
		call = unix.Syscall6
	}
	_, _, e := call(unix.SYS_WAITID, uintptr(idtype), uintptr(pid), uintptr(unsafe.Pointer(&si)), uintptr(flags), 0, 0)
	if e != 0 {
		return status{}, e
	}
	// siginfo_t for SIGCHLD: si_signo, si_errno, si_code, then si_pid, si_uid, si_status.
	le := binary.NativeEndian
	return status{pid: int(int32(le.Uint32(si[16:]))), code: int32(le.Uint32(si[8:])), val: int32(le.Uint32(si[24:]))}, 0
}

// consume takes tid's reported status off the kernel (wait4 of that one task): a stop kept
// for a holder, or a death (which reaps it).
func consume(tid int) { consumeStatus(tid) }

// consumeStatus takes tid's reported status off the kernel, as consume does, and returns it
// (ok: there was one): the stop that was peeked or, if the task was killed since, its death.
func consumeStatus(tid int) (ws unix.WaitStatus, ok bool) {
	for {
		pid, _, e := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(tid), uintptr(unsafe.Pointer(&ws)),
			unix.WALL|unix.WNOTHREAD|unix.WNOHANG, 0, 0, 0)
		if e != unix.EINTR {
			return ws, e == 0 && int(pid) == tid
		}
	}
}

// do runs fn on the tracer thread and returns its error.
func (t *Tracer) do(fn func() error) error {
	r := request{fn: fn, done: make(chan error, 1)}
	select {
	case t.reqs <- r:
	case <-t.done:
		return errStopped
	default:
		// The loop is busy, or blocked in waitid: kick it until it takes the request.
		tick := time.NewTicker(time.Millisecond)
	hand:
		for {
			if t.idle.Load() {
				t.kick()
			}
			select {
			case t.reqs <- r:
				break hand
			case <-t.done:
				tick.Stop()
				return errStopped
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	select {
	case err := <-r.done:
		return err
	case <-t.done:
		select {
		case err := <-r.done: // it was served, and the loop ended after it (Close)
			return err
		default:
			return errStopped
		}
	}
}

// serve runs a request on the loop thread, with every process's image current.
func (t *Tracer) serve(r request) {
	t.freshenAll(true)
	err := r.fn()
	t.flush() // the request's events before its answer
	r.done <- err
}

// drainMax bounds one drain: in a storm of stops, requests are served between drains (burst).
const drainMax = 256

// drain dispatches the wait statuses that are ready (at most drainMax), without blocking,
// and says how many. It must run on the loop thread outside a callback.
func (t *Tracer) drain() int { return t.drainUntil(nil) }

// drainUntil is drain that stops as soon as done (when not nil) holds: a stop its caller
// waits for may be left peeked (an injection's signal stop), and the next peek would report
// it again, to be dispatched as the loop's before its owner has handled it.
func (t *Tracer) drainUntil(done func() bool) int {
	n := 0
	for n < drainMax {
		if done != nil && done() {
			return n
		}
		s, e := peek(0, true)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || s.pid <= 0 {
			return n
		}
		t.dispatch(s)
		n++
	}
	return n
}

// burstWindow is how long the loop keeps polling for the next stop after handling one
// before it blocks again: events come in bursts (a signal storm, a thread pool starting),
// and the next stop of a burst is cheaper to find polling than to be woken for. Requests are
// served between polls. Measured against the floor (BenchmarkEventCost), 40 µs left a signal
// storm's ratio at 1.1-1.35, 100 µs at 0.99-1.12: a tracee kept off its CPU a little longer
// than the window costs a blocking wake.
const burstWindow = 100 * time.Microsecond

// quickMax bounds Tracer.quick: how many polls that found nothing, or waits longer than
// burstWindow, in a row end the polling after a run of ones that paid.
const quickMax = 4

// soonRun is how many idle blocking waits in a row must end within burstWindow before one
// more raises quick. A fork+exec storm has two such waits in a row and then a long one (a
// child's death, then its parent's SIGCHLD stop, then the parent's next fork): one alone
// raised quick, and the next stop's poll yielded the loop's CPU to the parent just resumed
// there, which ran its fork for some 200 us while its child's first stop, on the other CPU,
// waited for the loop (perf sched: 35 such yields in 300 fork+exec). A storm of signals or
// threads, whose every wait ends soon, starts polling on its third stop.
const soonRun = 3

// burst polls for stops for up to burstWindow after the last one, while polling pays
// (quick); it says whether any came.
//
// Polling does not pay where stops come far apart, as in a storm of fork+exec (the next
// stop is the exec'd program's, a millisecond on). There every poll was 100 µs of a CPU
// spent for nothing, and worse: the scheduler sees a tracer that never sleeps, and a task it
// wakes on the loop's CPU (the job's own, just resumed) preempts it between the peek of the
// next stop and its resume, for 100-500 µs (getrusage's nivcsw around each stop: 250 such
// preemptions in a 300 fork+exec run with polling, 34 without; the job's time over the
// floor's, BenchmarkJobTime's measure, 1.46 -> 1.25 median of 10 interleaved rounds). So
// the loop polls only while recent stops came soon: a poll that found one, or the third
// blocking wait in a row that ended within burstWindow (soonRun), raises quick; a poll that
// found none, or a wait that lasted longer, lowers it.
func (t *Tracer) burst() bool {
	if t.quick == 0 {
		return false
	}
	got := false
	for deadline := time.Now().Add(burstWindow); time.Now().Before(deadline); {
		if t.drain() > 0 {
			got = true
			deadline = time.Now().Add(burstWindow)
			t.flushDue()
		}
		select {
		case r := <-t.reqs:
			t.serve(r)
			return got
		default:
		}
		if t.closing {
			return got
		}
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	t.paid(got)
	return got
}

// paid moves quick up when waiting for the next stop by polling paid (or would have: a
// blocking wait ended soon) and down when it did not.
func (t *Tracer) paid(yes bool) {
	if yes {
		t.quick = min(t.quick+1, quickMax)
	} else if t.quick > 0 {
		t.quick--
	}
}

// await blocks until a tracee's wait status comes (it is dispatched), d passes, or (idle) a
// request is made; it says whether a status was dispatched. Without a kick, or with nothing
// to wait for, it waits on SIGCHLD or d instead.
func (t *Tracer) await(d time.Duration, idle bool) bool {
	if !t.blocking || len(t.tasks) == 0 {
		var reqs chan request // nil unless idle: never ready
		if idle {
			reqs = t.reqs
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case r := <-reqs:
			t.serve(r)
		case <-t.sigch:
		case <-timer.C:
		}
		return false
	}
	t.waitGen++
	gen := t.waitGen
	t.waiting.Store(gen)
	if idle {
		t.idle.Store(true)
		select {
		case r := <-t.reqs:
			t.idle.Store(false)
			t.waiting.Store(0)
			t.serve(r)
			return false
		default:
		}
	}
	// The loop's own idle wait is ended by watchWaits; a shorter one (a holder's) by a timer
	// of its own: a timer set and stopped at every wait of the loop, after every burst of a
	// fork+exec storm, was a netpoller wake apiece.
	stop := func() bool { return false }
	if d < pollInterval {
		stop = time.AfterFunc(d, func() {
			// Past the deadline: kick until this wait is over (a kick just before waitid is lost).
			for t.waiting.Load() == gen {
				t.kick()
				time.Sleep(time.Millisecond)
			}
		}).Stop
	}
	if idle {
		t.idleDue()
		t.parkDue()
	}
	began := time.Now()
	s, e := peek(0, false)
	t.waiting.Store(0)
	t.idle.Store(false)
	stop()
	switch {
	case e == 0 && s.pid > 0:
		if idle {
			if time.Since(began) >= burstWindow {
				t.soon = 0
				t.paid(false)
			} else if t.soon++; t.soon >= soonRun {
				t.paid(true)
			}
		}
		t.dispatch(s)
		return true
	case e == unix.ECHILD:
		// Tasks the kernel no longer reports (they are being reaped): do not spin.
		time.Sleep(time.Millisecond)
	}
	return false
}

// parkEvery is how long the loop goroutine may go without being scheduled before parkDue
// parks it: under the runtime's forcePreemptNS (10 ms).
const parkEvery = 8 * time.Millisecond

// parkDue parks the loop goroutine for a moment, through the Go scheduler, once it has run
// parkEvery without being scheduled, just before its idle wait (it would block now anyway;
// never in a wait for a hold's or a request's own stops, which a park would only delay). A loop busy with a storm of stops only makes syscalls and is never rescheduled:
// after 10 ms the runtime's sysmon preempts it, and if it is in a syscall then, takes its P
// (runtime.retake skips its recent-syscall check for a preempted P), which resets sysmon to
// polling every 20 µs: some 50 wakes of a thread on a CPU the job needs, 100 times a second
// (perf sched: 2,700-3,300 sysmon wakes in a 300 fork+exec run). A timer's park (not
// runtime.Gosched, whose global run queue a locked goroutine can wait in for long) is put
// back on its P's run queue as soon as it fires.
func (t *Tracer) parkDue() {
	now := time.Now()
	if now.Sub(t.lastPark) < parkEvery {
		return
	}
	time.Sleep(time.Microsecond)
	t.lastPark = time.Now()
}

// idleDue says, before the loop's idle wait, whether it must end in time: events wait in
// the queue (flush), an exec'd image is being read (freshenAll), or the watcher asked for
// its Tick. Then watchWaits ends it within pollInterval; else only a stop or a request does.
func (t *Tracer) idleDue() {
	due := t.hasPending.Load() || len(t.stale) > 0 || t.ticking
	t.due.Store(due)
	if due && !t.watching.Load() {
		select {
		case t.arm <- struct{}{}:
		default:
		}
	}
}

// watchWaits kicks the loop out of a blocking wait that has lasted from one of its looks to
// the next, emitEvery apart, when events wait in its queue (flush), and out of any after
// pollInterval while something is due (idleDue); a kick lost just before waitid is
// repeated. While nothing is due it sleeps until the loop arms it: a tracer of an idle job
// wakes nothing 50 times a second (each wake of a thread returning from a blocking wait
// also made the runtime's sysmon poll again). It ends with the loop.
func (t *Tracer) watchWaits() {
	t.watching.Store(true)
	tick := time.NewTicker(emitEvery)
	defer tick.Stop()
	var last uint64
	seen := 0 // looks that saw the wait last
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		g := t.waiting.Load()
		if g == 0 || g != last {
			last, seen = g, 1
			continue
		}
		seen++
		if !t.due.Load() && !t.hasPending.Load() {
			// The same idle wait, nothing due: sleep until the loop arms a wait that is.
			// watching goes false before due is looked at again, and idleDue stores due
			// before it looks at watching: one of the two sees the other.
			tick.Stop()
			t.watching.Store(false)
			if !t.due.Load() {
				select {
				case <-t.done:
					return
				case <-t.arm:
				}
			}
			t.watching.Store(true)
			tick.Reset(emitEvery)
			last, seen = 0, 0
			continue
		}
		if t.hasPending.Load() || time.Duration(seen)*emitEvery > pollInterval {
			t.kick()
		}
	}
}

// waitUntil handles wait statuses until cond holds or timeout passes, and says whether cond
// held. Outside a callback it looks at every task and dispatches what it finds, so the job's
// other stops are served meanwhile (requests wait until the caller is done). Inside a
// callback it looks only at own (waitOwn).
func (t *Tracer) waitUntil(own []*task, cond func() bool, timeout time.Duration) bool {
	if t.callbacks > 0 {
		return t.waitOwn(own, cond, timeout)
	}
	deadline := time.Now().Add(timeout)
	for {
		t.drainUntil(cond)
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// Most stops that are waited for come within microseconds: poll a little first.
		if t.spinOwn(own, cond) {
			return true
		}
		t.await(min(left, pollInterval/10), false)
	}
}

// waitOwn handles the statuses of own alone until cond holds or timeout passes. A stop of
// one of them is kept (its holders wait for it), handled by the engine (a fork's child is
// taken in) or parked (a signal-delivery-stop, left unconsumed for the loop to dispatch
// after the callback); nothing is told to a feature.
func (t *Tracer) waitOwn(own []*task, cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for spin := 0; ; spin++ {
		for _, tk := range own {
			if !t.waitable(tk) {
				continue
			}
			s, e := peek(tk.tid, true)
			if e == 0 && s.pid == tk.tid {
				t.dispatchOwn(tk, s)
			}
		}
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if spin < 64 {
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) // let a tracee on our CPU reach its stop
		} else {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// spinOwn polls own's statuses directly for a few rounds (waitid of each task): kcmp and a
// 1-byte process_vm_readv return within microseconds, and reaping the stop directly saves a
// blocking wake. Whatever comes is dispatched as usual.
func (t *Tracer) spinOwn(own []*task, cond func() bool) bool {
	if len(own) == 0 || len(own) > 64 {
		return false
	}
	for spin := 0; spin < 32; spin++ {
		for _, tk := range own {
			if !t.waitable(tk) {
				continue
			}
			s, e := peek(tk.tid, true)
			if e == 0 && s.pid == tk.tid {
				t.dispatch(s)
			}
			if cond() {
				return true
			}
		}
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return false
}

// waitable says whether a task may report a status the waiter has not seen: not one at a
// stop already (held, at a signal) or gone.
func (t *Tracer) waitable(tk *task) bool {
	return t.tasks[tk.tid] == tk && tk.state != held && tk.state != peeked
}
