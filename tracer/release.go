package tracer

import (
	"errors"
	"fmt"
	"time"
)

// releasePatience is how long Release waits for a thread to leave a call that an interrupt
// would end with EINTR.
const releasePatience = 200 * time.Millisecond

// Release lets go of one process of the job (every thread detached, pending signals
// delivered, as at the end of a session) so that another debugger can attach to it; the
// rest of the job stays traced. Reacquire takes it back. While it is released, its crashes,
// forks and exits are not seen, and the job does not count as ended.
func (t *Tracer) Release(pid int) error {
	return t.Do(func(l *Loop) error {
		p := t.procs[pid]
		if p == nil {
			return fmt.Errorf("release: %d is not a traced process", pid)
		}
		var tids []int
		for _, tk := range p.tasks {
			if tk.holders > 0 || tk.state == injecting {
				return fmt.Errorf("release %d: thread %d is held by another operation; try again", pid, tk.tid)
			}
			if tk.state != exited {
				tids = append(tids, tk.tid)
			}
		}
		// A thread in epoll_wait (semop, sigtimedwait…) is given releasePatience to leave the
		// call by itself: an interrupt would end it with EINTR. It is interrupted after that:
		// the debugger it is handed to stops it anyway (its attach's SIGSTOP ends such a call
		// the same way).
		return l.Hold(tids, HoldOptions{Timeout: 2 * time.Second, EINTR: InterruptBlocked, Patience: releasePatience}, func(h *Held) error {
			if t.released == nil {
				t.released = map[int]bool{}
			}
			t.released[pid] = true
			errs := []error{h.LateErr(fmt.Sprintf("release %d", pid))}
			for _, th := range h.Threads {
				errs = append(errs, t.detachHeld(th.tk))
			}
			if t.procs[pid] == nil {
				delete(t.caves, pid)
			}
			return errors.Join(errs...)
		})
	})
}

// Reacquire seizes a process Release let go of again (every thread, as at attach: each
// starts afresh, with nothing of what the engine knew of it before).
func (t *Tracer) Reacquire(pid int) error {
	return t.do(func() error {
		if !t.released[pid] {
			return fmt.Errorf("reacquire: %d was not released", pid)
		}
		delete(t.released, pid)
		if _, err := t.seizeProcess(pid); err != nil {
			return fmt.Errorf("reacquire %d: %w", pid, err)
		}
		if p := t.procs[pid]; p != nil {
			t.announce(p)
		}
		return nil
	})
}
