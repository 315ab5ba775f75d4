package tracer

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// detachAll stops and detaches every tracee. Held signals are re-injected through
// PTRACE_DETACH's data argument; group-stopped tasks stay stopped (kernel/ptrace.c
// __ptrace_detach re-arms the group stop).
//
// A thread that runs as its own is not stopped at all: it is forgotten, and the kernel
// detaches it without a stop when the loop's thread ends (exit_ptrace, what a SIGKILL of
// crashtui does too: its registers, mask and pending signals are its own; syscall tracing is
// cleared; a job-control stop is re-armed). So detaching a job of any size stops none of its
// running threads, and an epoll_wait is never interrupted. Only held threads (a signal to
// re-inject with PTRACE_DETACH's data), threads crashtui resumed with PTRACE_SYSCALL (a fault
// handler followed, an injection not yet back) are stopped and detached one by one. This
// relies on the loop's thread ending, which New sees to (never the main thread).
func (t *Tracer) detachAll() error {
	t.closing = true
	var firstErr error
	// Every stop that has come is handled first, so that a thread that looks running is.
	for t.drain() == drainMax {
	}
	for _, tk := range t.tasks {
		if tk.stopped == running && !tk.exited && !tk.want && tk.req != unix.PTRACE_SYSCALL && tk.inject == nil && tk.abandoned == nil {
			t.forgetDetached(tk)
		}
	}
	// New children of held threads keep appearing for a round or two; a thread that does not
	// stop within a round is looked at in /proc: gone, or no longer ours, it is forgotten; a
	// live one (uninterruptible sleep, a vfork parent) is given a few more rounds, then left
	// to the kernel's exit_ptrace when crashtui exits (it is not harmed: it detaches it).
	deadline := time.Now().Add(8 * time.Second)
	for round := 0; len(t.tasks) > 0 && time.Now().Before(deadline); round++ {
		var hold []*task
		for _, tk := range t.tasks {
			if round == 0 && tk.stopped == running && !tk.exited && !interruptible(tk) {
				// An interrupt would make its epoll_wait (semop, sigtimedwait…) fail with
				// EINTR: it is left to the kernel, which detaches it without a stop when
				// the loop's thread exits (exit_ptrace).
				t.forgetDetached(tk)
				continue
			}
			hold = append(hold, tk)
		}
		// A vfork parent cannot stop before its child execs or exits, which may be never:
		// it is left to the kernel's exit_ptrace at once, as is a thread that is gone or no
		// longer ours. Any other that did not stop is tried again next round.
		late, err := t.holdTasks(hold, 2*time.Second, 0, "detach")
		for _, tk := range late {
			if t.tasks[tk.tid] == tk && (inVfork(tk.pid, tk.tid) || tracerOf(tk.tid) != t.self) {
				t.forgetDetached(tk)
			}
		}
		if err != nil && len(t.tasks) > 0 && time.Now().Add(2*time.Second).After(deadline) && firstErr == nil {
			firstErr = fmt.Errorf("%w; still running: %s", err, t.lateThreads())
		}
		dying := t.dyingProcs()
		for _, tk := range t.tasks {
			if tk.exited && tk.stopped == running {
				// Past its exit stop it never stops again and cannot be detached. If its
				// whole process is dying it is reaped below; otherwise (a zombie leader
				// whose threads live on) the kernel releases it when crashtui exits.
				if !dying[tk.pid] {
					t.forgetDetached(tk)
				}
				continue
			}
			if tk.stopped == running {
				continue
			}
			if err := t.detachHeld(tk); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		t.reapDying(dying)
	}
	// Whatever is left is detached by the kernel when the loop's thread exits (exit_ptrace):
	// forget it, so the loop ends and its thread does exit.
	for _, tk := range t.tasks {
		t.forgetDetached(tk)
	}
	return firstErr
}

// lateThreads describes the threads that are running as far as the tracer knows: tid, the
// /proc state letter, the syscall they are in and their tracer.
func (t *Tracer) lateThreads() string {
	var out []string
	for _, tk := range t.tasks {
		if tk.stopped == running && !tk.exited {
			st := "?"
			if s, err := readStat(tk.tid); err == nil {
				st = string(s.state)
			}
			sc, _ := os.ReadFile(procPath(tk.tid, "syscall"))
			_, tp := taskStatus(tk.tid)
			out = append(out, fmt.Sprintf("%d (state %s, syscall %q, TracerPid %d)", tk.tid, st, strings.TrimSpace(string(sc)), tp))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// dyingProcs names the processes every thread of which is past its exit stop.
func (t *Tracer) dyingProcs() map[int]bool {
	dying := map[int]bool{}
	for pid, p := range t.procs {
		all := len(p.tasks) > 0
		for _, tk := range p.tasks {
			if !tk.exited || tk.stopped != running {
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
	if t.pump(reaped, 2*time.Second, "dying threads were not reported") == nil {
		return
	}
	for pid := range dying {
		if p := t.procs[pid]; p != nil {
			for _, tk := range p.tasks {
				t.forgetDetached(tk)
			}
		}
	}
}

// detachHeld detaches tk, which is in a ptrace-stop, re-injecting the signal of a held
// signal-delivery-stop (never a syscall-stop's SIGTRAP|0x80, which is crashtui's own), and
// forgets it. A task that died meanwhile (ESRCH) is not an error.
func (t *Tracer) detachHeld(tk *task) error {
	sig := 0
	if tk.stopped == stopSignal && tk.sig != sigSyscallStop {
		sig = tk.sig
	}
	err := ptraceDetach(tk.tid, sig)
	t.forgetDetached(tk)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("detach %d: %w", tk.tid, err)
	}
	return nil
}

func (t *Tracer) forgetDetached(tk *task) {
	delete(t.tasks, tk.tid)
	if p := t.procs[tk.pid]; p != nil {
		delete(p.tasks, tk.tid)
		if len(p.tasks) == 0 {
			delete(t.procs, p.pid)
		}
	}
}
