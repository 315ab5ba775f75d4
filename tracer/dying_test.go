package tracer

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/restart/restarttest"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// TestCloseReapsDyingProcess: a process that is dying when the tracer detaches (every thread
// past its PTRACE_EVENT_EXIT stop, its final status not yet waited for) is reaped by the
// tracer, so it reaches its parent and no longer names crashtui as its TracerPid. The tracer
// thread is still alive when this is checked (inside do), so the kernel's exit_ptrace cannot
// be what released it.
func TestCloseReapsDyingProcess(t *testing.T) {
	p := restarttest.Start(t, restarttest.Build(t), "sem")
	var exits []sessions.Exit
	tr := New(Options{Emit: func(e sessions.Event) {
		if x, ok := e.Body.(sessions.Exit); ok {
			exits = append(exits, x) // on the loop thread
		}
	}})
	t.Cleanup(func() { tr.Close() })
	job, _ := ParseJob("pid:" + strconv.Itoa(p.PID))
	if _, err := tr.Attach(job); err != nil {
		t.Fatal(err)
	}
	var tracerPid int
	var seen []sessions.Exit
	err := tr.do(func() error {
		pr := tr.procs[p.PID]
		tks := make([]*task, 0, len(pr.tasks))
		for _, tk := range pr.tasks {
			tks = append(tks, tk)
		}
		// Every thread held, then the SIGTERM; let go with their holds kept, they take the
		// signal (delivered: no thread is held at a signal) and stop for their holder at
		// PTRACE_EVENT_EXIT.
		got, late := tr.hold(tks, HoldOptions{Timeout: 5 * time.Second})
		if len(late) > 0 {
			return fmt.Errorf("not held: %v", late)
		}
		if err := unix.Kill(p.PID, unix.SIGTERM); err != nil {
			return err
		}
		for _, tk := range got {
			if err := tr.resume(tk, 0); err != nil {
				return err
			}
		}
		atExit := func() bool {
			for _, tk := range got {
				if tr.tasks[tk.tid] == tk && !(tk.state == held && tk.stop.event == unix.PTRACE_EVENT_EXIT) {
					return false
				}
			}
			return true
		}
		if !tr.waitUntil(got, atExit, 10*time.Second) {
			var states []string
			for _, tk := range got {
				states = append(states, fmt.Sprintf("%d %s %s", tk.tid, tk.state, tk.stop))
			}
			return fmt.Errorf("threads did not reach their exit stops: %v", states)
		}
		for _, tk := range got {
			if tr.tasks[tk.tid] == tk {
				tk.holders = 0
				tr.resume(tk, 0) // now exited: it never stops again
			}
		}
		if err := tr.detachAll(); err != nil {
			return err
		}
		_, tracerPid = procfs.TaskStatus(p.PID) // 0 once reaped
		tr.flush()                              // the events so far, handed over now
		seen = exits
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tracerPid != 0 {
		t.Fatalf("dying process %d still traced by %d after detach", p.PID, tracerPid)
	}
	var exit *sessions.Exit
	for _, x := range seen {
		if x.PID == p.PID {
			exit = &x
		}
	}
	if exit == nil || exit.Signal != "SIGTERM" {
		t.Fatalf("exit event %+v, want the process's end by SIGTERM", exit)
	}
}
