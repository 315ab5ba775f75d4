package tracer_test

import (
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// An exec under tracing, from a thread that is not the process's leader (fs/exec.c de_thread:
// it takes the leader's tid, and the kernel ends the other threads; the engine asks
// PTRACE_GETEVENTMSG for the former tid) and from a process's only thread (the engine knows
// the former tid is the leader's own, and does not ask): either way the engine is left with
// the one thread the kernel has, tells the new image, lets the new program run, and the
// process's end is told as the end of the job's last task. (From a thread, the exec stop
// used to be dispatched again and again: the kernel refuses ptrace requests for a tracee
// whose tid an exec changed until its stop is waited for, and the program never ran.)
func TestExecFromAThreadAndFromTheLeader(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	if sleep, err = filepath.EvalSymlinks(sleep); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode    string
		threads int
	}{{"thread", 2}, {"main", 1}} {
		t.Run(c.mode, func(t *testing.T) {
			cmd, in, lines := tracertest.StartProgram(t, "threxec", c.mode, sleep, "600")
			pid := cmd.Process.Pid
			lines.Expect(t, "ready", 10*time.Second)
			tracertest.WaitProc(t, "its threads to start", func() bool { return len(procfs.Tasks(pid)) == c.threads })

			var log tracertest.EventLog
			tr := tracer.New(tracer.Options{Emit: log.Emit})
			t.Cleanup(func() { tr.Close() })
			res, err := tr.Attach(tracer.Job{Kind: tracer.JobPID, ID: pid, Spec: "pid"})
			if err != nil || res.Threads != c.threads {
				t.Fatalf("attach: %+v %v, want %d threads", res, err, c.threads)
			}
			io.WriteString(in, "x")

			var seen tracer.Process
			tracertest.WaitProc(t, "the exec to be told", func() bool {
				tr.Do(func(l *tracer.Loop) error { seen, _ = l.Process(pid); return nil })
				return seen.Exe == sleep
			})
			if !slices.Equal(seen.TIDs, []int{pid}) {
				t.Errorf("after the exec the engine has %+v, want the one thread %d", seen, pid)
			}
			// The exec'd program runs: it sleeps, not held at its exec stop (state t).
			tracertest.WaitState(t, pid, 'S')
			if tasks := procfs.Tasks(pid); !slices.Equal(tasks, []int{pid}) {
				t.Errorf("the kernel has threads %v, want %d alone", tasks, pid)
			}
			var execs []sessions.Exec
			tracertest.WaitProc(t, "the Exec event", func() bool {
				execs = tracertest.Of[sessions.Exec](&log)
				return len(execs) > 0
			})
			if e := execs[len(execs)-1]; e.PID != pid || e.Exe != sleep || !slices.Equal(e.Argv, []string{sleep, "600"}) {
				t.Errorf("exec event %+v, want pid %d running %s 600", e, pid, sleep)
			}

			syscall.Kill(pid, syscall.SIGKILL)
			tasks := -1
			tracertest.WaitProc(t, "the engine to let the killed process go", func() bool {
				tr.Do(func(l *tracer.Loop) error { tasks = l.Tasks(); return nil })
				return tasks == 0
			})
			if exits := tracertest.Of[sessions.Exit](&log); len(exits) != 1 || exits[0].PID != pid || exits[0].Signal != "SIGKILL" {
				t.Errorf("exit events %+v, want pid %d killed by SIGKILL", exits, pid)
			}
		})
	}
}
