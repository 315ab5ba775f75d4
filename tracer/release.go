package tracer

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

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
		for _, tk := range p.tasks {
			if tk.exited && tk.stopped == running {
				continue
			}
			tk.want = true
			if tk.stopped == running {
				if err := ptraceInterrupt(tk.tid); err != nil && !errors.Is(err, unix.ESRCH) {
					return fmt.Errorf("release %d: interrupt %d: %w", pid, tk.tid, err)
				}
			}
		}
		held := func() bool {
			for _, tk := range p.tasks {
				if tk.stopped == running && !tk.exited {
					return false
				}
			}
			return true
		}
		err := t.pump(held, 2*time.Second, fmt.Sprintf("release %d: some threads did not stop", pid))
		if t.released == nil {
			t.released = map[int]bool{}
		}
		t.released[pid] = true
		var errs []error
		if err != nil {
			errs = append(errs, err)
		}
		for _, tk := range p.tasks {
			if tk.stopped == running {
				tk.want = false // never stopped: it is detached by the kernel when crashtui exits
				continue
			}
			sig := 0
			if tk.stopped == stopSignal {
				sig = tk.sig
			}
			if err := ptraceDetach(tk.tid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("detach %d: %w", tk.tid, err))
			}
			delete(t.tasks, tk.tid)
			delete(p.tasks, tk.tid)
		}
		if len(p.tasks) == 0 {
			delete(t.procs, pid)
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
