package tracer

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How the loop waits (see also doc.go). Every tracee is traced by the loop's one locked
// thread, and every stop is a wait status for that thread. Idle, the loop blocks in wait4
// itself, as a C tracer does: the kernel wakes it straight from the tracee's stop, with no
// SIGCHLD, no os/signal goroutine and no channel hand-off to the locked thread in between.
// Other goroutines reach it with a request (do) and a kick: kickSignal sent to the loop
// thread alone with tgkill, whose Go handler has SA_RESTART cleared so that the blocking
// wait4 returns EINTR. A kick that lands just before wait4 is entered is lost; the requester
// kicks again every millisecond until its request is taken, and a wait with a deadline is
// kicked every millisecond past it, so nothing waits longer than that. Where the kick cannot
// be set up (Go's handler is not installed for the signal) the loop falls back to SIGCHLD
// through os/signal.

// waitFlags: __WALL sees clone children (threads); __WNOTHREAD limits wait4 to the children
// and tracees of the loop's own thread, so a program that embeds a Tracer (a test binary)
// keeps its other children to itself. Ranks of Launch are forked by the loop thread too.
const waitFlags = unix.WALL | unix.WNOTHREAD | unix.WNOHANG

// pollInterval bounds an idle wait: handled faults whose single-step verdict is due are
// decided (expireSteps) at least this often.
const pollInterval = 100 * time.Millisecond

// kickSignal is the real-time signal that interrupts the loop's blocking wait4. crashtui
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
	if sa[0] == 0 || sa[0] == 1 { // SIG_DFL, SIG_IGN: not Go's handler; a kick would kill or do nothing
		return false
	}
	sa[1] &^= saRestart
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(kickSignal), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); e != 0 {
		return false
	}
	return true
})

// kick interrupts the loop thread's blocking wait4, if it is in one.
func (t *Tracer) kick() {
	if tid := t.loopTid.Load(); tid != 0 {
		unix.Tgkill(unix.Getpid(), int(tid), kickSignal)
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
		// The loop is busy, or blocked in wait4: kick it until it takes the request.
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
		return errStopped
	}
}

// serve runs a request on the loop thread, with every process's image current.
func (t *Tracer) serve(r request) {
	t.freshenAll()
	r.done <- r.fn()
}

// drainMax bounds one drain: in a storm of stops, requests are served between drains (burst).
const drainMax = 256

// drain handles the wait statuses that are ready (at most drainMax), without blocking. It
// must run on the loop thread (the tracer thread of every tracee).
func (t *Tracer) drain() int {
	n := 0
	for n < drainMax {
		// WNOHANG does not wait for a stop: a raw syscall, the scheduler not told (as ptrace's).
		var ws unix.WaitStatus
		r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(&ws)), waitFlags, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || int(r) <= 0 {
			return n
		}
		t.handle(waitResult{pid: int(r), ws: ws})
		n++
	}
	return n
}

// burstWindow is how long the loop keeps polling for the next stop after handling one
// before it blocks again: events come in bursts (a signal storm, a fork storm, a thread pool
// starting), and the next stop of a burst is cheaper to find polling than to be woken for.
// Requests are served between polls. It costs at most this much CPU after an event that
// ends a burst, and each poll yields the CPU to whatever else is runnable; measured against
// the floor (BenchmarkEventCost), 40 µs left a signal storm's ratio at 1.1-1.35, 100 µs at
// 0.99-1.12: a tracee kept off its CPU a little longer than the window costs a blocking wake.
const burstWindow = 100 * time.Microsecond

// burst polls for stops for up to burstWindow after the last one; it says whether any came.
func (t *Tracer) burst() bool {
	got := false
	for deadline := time.Now().Add(burstWindow); time.Now().Before(deadline); {
		if t.drain() > 0 {
			got = true
			deadline = time.Now().Add(burstWindow)
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
	return got
}

// await blocks in wait4 until a tracee's wait status comes (it is handled), d passes, or
// (idle) a request is made; it says whether a status was handled. Without a kick, or with
// nothing to wait for, it waits on SIGCHLD or d instead.
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
	timer := time.AfterFunc(d, func() {
		// Past the deadline: kick until this wait is over (a kick just before wait4 is lost).
		for t.waiting.Load() == gen {
			t.kick()
			time.Sleep(time.Millisecond)
		}
	})
	var ws unix.WaitStatus
	pid, err := unix.Wait4(-1, &ws, waitFlags&^unix.WNOHANG, nil)
	t.waiting.Store(0)
	t.idle.Store(false)
	timer.Stop()
	switch {
	case err == nil && pid > 0:
		t.handle(waitResult{pid: pid, ws: ws})
		return true
	case errors.Is(err, unix.ECHILD):
		// Tasks the kernel no longer reports (they are being reaped): do not spin.
		time.Sleep(time.Millisecond)
	}
	return false
}

// pump handles wait statuses until cond holds or the timeout passes. Requests from other
// goroutines wait until the current one is done.
func (t *Tracer) pump(cond func() bool, timeout time.Duration, what string) error {
	deadline := time.Now().Add(timeout)
	for {
		t.drain()
		if cond() {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New(what)
		}
		t.await(min(left, pollInterval/10), false)
	}
}
