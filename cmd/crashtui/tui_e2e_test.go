package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// The built-in demo driven through every screen as a user would: the real binary on a pty.
func TestDemoInTheTUI(t *testing.T) {
	needRoot(t)
	buildC(t, "rank")
	const cols, rows = 140, 45
	scr := tuitest.Open(t, cols, rows)
	cmd := exec.Command(crashtuiBin, "demo")
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	proc := startWaited(t, cmd, syscall.SIGTERM) // SIGTERM: crashtui ends its demo ranks and detaches
	exited := proc.exited
	key := func(k string) { t.Helper(); scr.Key(t, k) }

	scr.WaitFor(t, 30*time.Second, "crashtui demo", "crashes 3 in 2 groups")

	key("3") // crashes: two groups, the solver's SIGSEGV twice and the assert
	scr.WaitFor(t, 5*time.Second, "SIGSEGV", "solver_step", "SIGABRT", "abort: rank: rank.c:")
	txt := scr.Text()
	if !strings.Contains(txt, "    2 SIGSEGV") && !strings.Contains(txt, "2 SIGSEGV") {
		t.Errorf("the SIGSEGV group does not show its count 2:\n%s", txt)
	}

	key("2") // the matrix: rank 2 runs under a seccomp profile, its row is red
	scr.WaitFor(t, 10*time.Second, "measured inside each process")
	// Down to rank 2's row (column 0 stays): its reads are refused by its seccomp filter.
	key("j")
	key("j")
	scr.WaitFor(t, 5*time.Second, "reason: seccomp")

	key("4") // threads: a simulated checkpoint with the correct restore
	key("c")
	scr.WaitFor(t, 5*time.Second, "correct")
	key("\r")
	scr.WaitFor(t, 20*time.Second, "read", "restart")

	key("6") // the log
	scr.WaitFor(t, 5*time.Second, "crash")

	key("q")
	scr.WaitFor(t, 5*time.Second, "quit")
	key("y")
	select {
	case <-exited:
		if proc.err != nil {
			t.Errorf("crashtui exited with %v", proc.err)
		}
	case <-patience.After(20 * time.Second):
		t.Fatal("crashtui did not quit after q, y")
	}
}

// kill -INT of `crashtui attach` in the TUI: Bubble Tea receives the SIGINT too and ends with
// ErrInterrupted, which used to make crashtui exit 1. It is a quit: crashtui detaches and
// exits 0, and the job runs on untraced.
func TestAttachTUISigint(t *testing.T) {
	needRoot(t)
	j := startJob(t, 4)
	pids := pgroupPIDs(j.pgid)
	scr := tuitest.Open(t, 120, 40)
	cmd := exec.Command(crashtuiBin, "attach", "pgid:"+strconv.Itoa(j.pgid))
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	proc := startWaited(t, cmd, 0)
	exited := proc.exited
	scr.WaitFor(t, 30*time.Second, "crashtui attach", "procs 4/4")
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-patience.After(30 * time.Second):
		t.Fatalf("crashtui did not exit 30 s after SIGINT:\n%s", scr.Text())
	}
	if proc.err != nil {
		t.Errorf("crashtui after SIGINT: %v, want exit status 0:\n%s", proc.err, scr.Text())
	}
	checkJobIntact(t, j, pids)
}

// TestViewInTheTUI: events on stdin (as from srun's merged agents), keys from the controlling
// terminal. The view follows the stream, says when it has ended, and quits on q.
func TestViewInTheTUI(t *testing.T) {
	rec, err := os.ReadFile(filepath.Join("..", "..", "demo", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	scr := tuitest.Open(t, 120, 36)
	cmd := exec.Command(crashtuiBin, "view")
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	proc := startWaited(t, cmd, syscall.SIGTERM)
	if _, err := in.Write(rec); err != nil {
		t.Fatal(err)
	}
	scr.WaitFor(t, 20*time.Second, "crashtui view", "crashes 3 in 2 groups", "● live")
	scr.Key(t, "3") // read from /dev/tty, not from the event stream
	scr.WaitFor(t, 5*time.Second, "SIGSEGV", "solver_step", "SIGABRT")
	in.Close() // the agents ended
	scr.WaitFor(t, 10*time.Second, "job finished")
	scr.Key(t, "q")
	select {
	case <-proc.exited:
		if proc.err != nil {
			t.Errorf("crashtui view exited with %v", proc.err)
		}
	case <-patience.After(10 * time.Second):
		t.Fatalf("view did not quit on q:\n%s", scr.Text())
	}
}
