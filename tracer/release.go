package tracer

import (
	"errors"
	"fmt"
	"time"
)

// releasePatience is how long Release waits for a thread to leave a call that an interrupt
// would end with EINTR.
const releasePatience = 200 * time.Millisecond

// Release lets go of one process of the job (every thread detached, held signals
// re-injected, as at the end of a session) so that another debugger can attach to it; the
// rest of the job stays traced. Reacquire takes it back. While it is released, its crashes,
// forks and exits are not seen, and the job does not count as ended.
func (t *Tracer) Release(pid int) error {
	return t.do(func() error {
		p := t.procs[pid]
		if p == nil {
			return fmt.Errorf("release: %d is not a traced process", pid)
		}
		for _, tk := range p.tasks {
			if tk.want {
				return fmt.Errorf("release %d: thread %d is held by another operation; try again", pid, tk.tid)
			}
		}
		var tks []*task
		for _, tk := range p.tasks {
			if !tk.exited || tk.stopped != running {
				tks = append(tks, tk)
			}
		}
		// A thread in epoll_wait (semop, sigtimedwait…) is given releasePatience to leave the
		// call by itself: an interrupt would end it with EINTR. It is interrupted after that:
		// the debugger it is handed to stops it anyway (its attach's SIGSTOP ends such a
		// call the same way).
		_, err := t.holdTasks(tks, 2*time.Second, releasePatience, fmt.Sprintf("release %d", pid))
		if t.released == nil {
			t.released = map[int]bool{}
		}
		t.released[pid] = true
		errs := []error{err}
		for _, tk := range tks {
			if t.tasks[tk.tid] != tk || tk.stopped == running {
				continue // gone, or never stopped: the kernel detaches it when crashtui exits
			}
			errs = append(errs, t.detachHeld(tk))
		}
		if t.procs[pid] == nil {
			delete(t.caves, pid)
			delete(t.mapsCache, pid)
		}
		return errors.Join(errs...)
	})
}

// Reacquire seizes a process Release let go of again (every thread, as at attach).
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
