package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// TestTourInReplay walks the guided tour through the recorded demo on a pty: each key shows
// the next capability with what matters selected and explained; esc leaves the tour and the
// session goes on.
func TestTourInReplay(t *testing.T) {
	scr := tuitest.Open(t, 100, 34)
	proc, _ := startTUI(t, scr, "replay", "--tour", filepath.Join("..", "..", "demo", "session.jsonl"))
	scr.WaitFor(t, 10*time.Second, "Tour 1/5", "a whole job under one debugger", "any key: next step")
	for _, step := range [][]string{
		{"Tour 2/5", "who can read whose memory", "may not read"},
		{"Tour 3/5", "crashes grouped by site", "SIGSEGV"},
		{"Tour 4/5", "syscall restart state", "restart"},
		{"Tour 5/5", "where every rank is now"},
	} {
		scr.Key(t, " ")
		scr.WaitFor(t, 5*time.Second, step...)
	}
	scr.Key(t, "\x1b")
	scr.WaitFor(t, 5*time.Second, "tour left")
	scr.Key(t, "q")
	select {
	case <-proc.exited:
	case <-patience.After(10 * time.Second):
		t.Fatal("replay did not quit")
	}
}

// TestTourLive walks the tour in the live demo: the steps that need a checkpoint and a stack
// sample ask the tracer for them and show them when they come.
func TestTourLive(t *testing.T) {
	needRoot(t)
	buildC(t, "rank")
	scr := tuitest.Open(t, 120, 40)
	proc, _ := startTUI(t, scr, "demo", "--tour")
	scr.WaitFor(t, 30*time.Second, "Tour 1/5", "a whole job under one debugger")
	scr.Key(t, " ")
	scr.WaitFor(t, 20*time.Second, "Tour 2/5", "→")         // a cell, measured or predicted
	scr.WaitFor(t, 30*time.Second, "crashes 3 in 2 groups") // ranks 4, 5 and 6 crash after 4, 6 and 8 s
	scr.Key(t, " ")
	scr.WaitFor(t, 10*time.Second, "Tour 3/5", "SIGSEGV")
	scr.Key(t, " ")
	// The step asks for a checkpoint; "thread" alone is in the header from the start. Wait for
	// the checkpoint's own line: arriving after esc, it would take the place of "tour left".
	scr.WaitFor(t, 20*time.Second, "Tour 4/5", "checkpoint #1 (correct): ")
	scr.Key(t, " ")
	scr.WaitFor(t, 20*time.Second, "Tour 5/5", "Class")
	scr.Key(t, "\x1b")
	scr.WaitFor(t, 5*time.Second, "tour left")
	scr.Key(t, "q")
	scr.WaitFor(t, 5*time.Second, "quit")
	scr.Key(t, "y")
	select {
	case <-proc.exited:
		if proc.err != nil {
			t.Errorf("crashtui exited with %v", proc.err)
		}
	case <-patience.After(20 * time.Second):
		t.Fatal("crashtui did not quit")
	}
}

// startTUI runs crashtui with args on the pty of scr, as a user's terminal would (its own
// session, the pty as controlling terminal), and reaps it at the end of the test (SIGTERM
// first: crashtui detaches). It returns the process and its command.
func startTUI(t *testing.T, scr *tuitest.Screen, args ...string) (*waitedProc, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(crashtuiBin, args...)
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	return startWaited(t, cmd, syscall.SIGTERM), cmd
}
