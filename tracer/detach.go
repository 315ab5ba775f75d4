package tracer

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// detachAll lets go of every tracee, and stops none that runs. A thread that runs as its own
// (running, listening, stopping, past its exit, or abandoned to an injection's guard) is
// forgotten, and the kernel detaches it without a stop when the loop's thread ends
// (kernel/ptrace.c exit_ptrace, what a SIGKILL of crashtui does too: its registers, mask and
// pending signals are its own; syscall tracing and a pending interrupt are cleared; a
// job-control stop is re-armed). So detaching a job of any size, forking as fast as it can,
// takes one pass, and no epoll_wait returns EINTR because of it. A thread in a stop is
// detached where it is: a signal-delivery-stop passes its signal on with PTRACE_DETACH. This
// relies on the loop's thread ending, which New sees to (never the main thread).
func (t *Tracer) detachAll() error {
	t.closing = true
	// Every status that has come is dispatched first: while closing, each stop is detached
	// where it is and each death reported. A job that forks as fast as it can keeps
	// reporting new children: after a bounded number of rounds the rest is the kernel's.
	for round := 0; round < 64 && t.drain() == drainMax; round++ {
	}
	var firstErr error
	dying := t.dyingProcs()
	for _, tk := range t.tasks {
		switch {
		case tk.state == held || tk.state == peeked:
			if err := t.detachHeld(tk); err != nil && firstErr == nil {
				firstErr = err
			}
		case tk.state == exited && dying[tk.pid]:
			// Its whole process is dying: reaped below, so its exit is reported and its parent
			// gets it.
		default:
			t.forgetDetached(tk)
		}
	}
	t.reapDying(dying)
	// Whatever is left is detached by the kernel when the loop's thread exits (exit_ptrace):
	// forget it, so the loop ends and its thread does exit.
	for _, tk := range t.tasks {
		t.forgetDetached(tk)
	}
	return firstErr
}

// dyingProcs names the processes every thread of which is past its exit stop.
func (t *Tracer) dyingProcs() map[int]bool {
	dying := map[int]bool{}
	for pid, p := range t.procs {
		all := len(p.tasks) > 0
		for _, tk := range p.tasks {
			if tk.state != exited {
				all = false
				break
			}
		}
		if all {
			dying[pid] = true
		}
	}
	return dying
}

// reapDying waits, briefly, for the final wait status of every thread of a dying process.
// Until the tracer has waited for it, a traced zombie is held back from its parent and still
// shows crashtui as its TracerPid; it is reported as an Exit like any other end.
func (t *Tracer) reapDying(dying map[int]bool) {
	if len(dying) == 0 {
		return
	}
	reaped := func() bool {
		for pid := range dying {
			if t.procs[pid] != nil {
				return false
			}
		}
		return true
	}
	t.waitUntil(nil, reaped, 2*time.Second)
}

// detachHeld detaches tk, which is in a ptrace-stop, passing on the signal of a
// signal-delivery-stop (never a syscall-stop's SIGTRAP|0x80, which is crashtui's own), and
// forgets it. A task that died meanwhile (ESRCH) is not an error.
func (t *Tracer) detachHeld(tk *task) error {
	sig := 0
	if tk.state == peeked && tk.stop.class == classSignal {
		sig = tk.stop.sig
	}
	err := ptraceDetach(tk.tid, sig)
	t.forgetDetached(tk)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("detach %d: %w", tk.tid, err)
	}
	return nil
}
