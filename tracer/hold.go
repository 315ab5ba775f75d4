package tracer

import (
	"fmt"
	"time"
)

// stopTask brings tk into a ptrace-stop and holds it there. Other wait statuses that arrive
// meanwhile are handled as usual.
func (t *Tracer) stopTask(tk *task, timeout time.Duration) error {
	if tk.stopped != running {
		tk.want = true
		return nil
	}
	if tk.exited {
		return fmt.Errorf("thread %d has exited and will not stop again", tk.tid)
	}
	tk.want = true
	if err := ptraceInterrupt(tk.tid); err != nil {
		tk.want = false
		return fmt.Errorf("interrupt %d: %w", tk.tid, err)
	}
	stopped := func() bool { return tk.stopped != running || t.tasks[tk.tid] == nil }
	// Almost every thread stops at once; only one that did not is looked at in /proc: a vfork
	// parent cannot stop before its child execs or exits, and is not waited for.
	err := t.pump(stopped, min(timeout, 100*time.Millisecond), "")
	if err != nil && inVfork(tk.pid, tk.tid) {
		err = fmt.Errorf("thread %d is a vfork parent: it cannot stop before its child execs or exits", tk.tid)
	} else if err != nil {
		err = t.pump(stopped, timeout, fmt.Sprintf("thread %d did not stop (uninterruptible sleep?)", tk.tid))
	}
	if err != nil {
		// Its stop may still come (the interrupt stays queued): it must then be resumed, not
		// held forever.
		tk.want = false
	}
	return err
}
