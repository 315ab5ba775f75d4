package tracer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// vforkGrace is how long holdTasks waits for a thread before it looks whether it is a vfork
// parent, which cannot stop before its child execs or exits, and is not waited for.
const vforkGrace = 100 * time.Millisecond

// holdTasks brings each of tks into a held ptrace-stop: one that is running is interrupted
// (PTRACE_INTERRUPT; a blocking syscall is left with its restart code) and the loop's wait
// statuses are handled, as usual, until each is stopped, gone or past its exit stop, or
// timeout passes. Every one of them is wanted (held) afterwards, but those that did not
// stop: they are returned, no longer wanted (a late stop is then resumed by handle), with an
// error naming them and why. Detach, the checkpoint's freeze, Release, a core's other
// threads and a single stopTask all hold threads this way.
//
// patience is for a thread blocked in a call that an interrupt ends with EINTR whatever its
// handler (noInterrupt: epoll_wait, semop…): it is given that long to leave the call by
// itself, and interrupted only if it has not (0: at once).
func (t *Tracer) holdTasks(tks []*task, timeout, patience time.Duration, what string) ([]*task, error) {
	start := time.Now()
	var errs []error
	var waiting, gentle []*task
	interrupt := func(tk *task) {
		// ESRCH: it is no longer a tracee of this thread (a zombie tracee would still be
		// interrupted): no stop will come, and there is nothing to wait for.
		switch err := ptraceInterrupt(tk.tid); {
		case err == nil:
			waiting = append(waiting, tk)
		case errors.Is(err, unix.ESRCH):
			tk.want = false
		default:
			errs = append(errs, fmt.Errorf("interrupt %d: %w", tk.tid, err))
			tk.want = false
		}
	}
	for _, tk := range tks {
		tk.want = true
		switch {
		case tk.stopped != running || tk.exited:
		case patience > 0 && !interruptible(tk):
			gentle = append(gentle, tk)
		default:
			interrupt(tk)
		}
	}
	stillRunning := func(tk *task) bool { return t.tasks[tk.tid] == tk && tk.stopped == running && !tk.exited }
	if len(gentle) > 0 {
		// Each poll of the loop looks whether they are still in the call.
		t.pump(func() bool {
			gentle = slices.DeleteFunc(gentle, func(tk *task) bool {
				if !stillRunning(tk) {
					return true
				}
				if interruptible(tk) {
					interrupt(tk)
					return true
				}
				return false
			})
			return len(gentle) == 0
		}, min(patience, timeout), "")
		for _, tk := range gentle {
			interrupt(tk)
		}
	}
	done := func() bool {
		waiting = slices.DeleteFunc(waiting, func(tk *task) bool { return !stillRunning(tk) })
		return len(waiting) == 0
	}
	var vforks []*task
	if t.pump(done, min(vforkGrace, timeout-time.Since(start)), "") != nil {
		waiting = slices.DeleteFunc(waiting, func(tk *task) bool {
			if inVfork(tk.pid, tk.tid) {
				vforks = append(vforks, tk)
				return true
			}
			return false
		})
		t.pump(done, timeout-time.Since(start), "")
	}
	// A vfork parent whose child exec'd meanwhile has stopped (its interrupt was queued).
	vforks = slices.DeleteFunc(vforks, func(tk *task) bool { return !stillRunning(tk) })
	late := append(waiting, vforks...)
	if len(late) > 0 {
		var names []string
		for _, tk := range late {
			tk.want = false
			why := "uninterruptible sleep?"
			if slices.Contains(vforks, tk) {
				why = "a vfork parent: it cannot stop before its child execs or exits"
			}
			names = append(names, fmt.Sprintf("%d (%s)", tk.tid, why))
		}
		errs = append(errs, fmt.Errorf("%s: %d thread(s) did not stop within %v: %s", what, len(late), timeout, strings.Join(names, ", ")))
	}
	return late, errors.Join(errs...)
}

// stopTask brings tk into a ptrace-stop and holds it there (holdTasks).
func (t *Tracer) stopTask(tk *task, timeout time.Duration) error {
	if tk.stopped == running && tk.exited {
		return fmt.Errorf("thread %d has exited and will not stop again", tk.tid)
	}
	_, err := t.holdTasks([]*task{tk}, timeout, 0, "stop")
	if err == nil && t.tasks[tk.tid] == tk && tk.stopped == running && !tk.exited {
		return fmt.Errorf("interrupt %d: %w", tk.tid, unix.ESRCH) // not a tracee of ours any more
	}
	return err
}
