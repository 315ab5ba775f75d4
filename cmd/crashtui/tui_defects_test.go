package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// TestTUIDefectsOnAPty drives the recorded demo on a pty at 80×24 under NO_COLOR, as the
// issue's user did: a burst of keys moves once per key and the cursor marker survives
// NO_COLOR; in a replay → opens a crash group instead of stepping; the crash detail scrolls
// to its end and back without a dead zone, and the next group opens at its top; ? lists the
// tab's own keys first.
func TestTUIDefectsOnAPty(t *testing.T) {
	scr := tuitest.Open(t, 80, 24)
	t.Setenv("NO_COLOR", "1")
	proc, _ := startTUI(t, scr, "replay", filepath.Join("..", "..", "demo", "session.jsonl"))
	scr.WaitFor(t, 10*time.Second, "crashtui replay")
	scr.Key(t, "}")
	scr.WaitFor(t, 10*time.Second, "■ end")
	scr.Type("jjj") // one burst: three rows down, not one
	scr.WaitFor(t, 5*time.Second, ">3 ")
	scr.Key(t, "3")
	scr.WaitFor(t, 5*time.Second, "solver_step")
	scr.Key(t, "\x1b[C") // →
	txt := scr.WaitFor(t, 5*time.Second, "group 1", "[94/94]")
	if strings.Contains(txt, "[93/94]") {
		t.Errorf("→ stepped the replay:\n%s", txt)
	}
	scr.Key(t, "G") // the end of the detail
	scr.WaitFor(t, 5*time.Second, "members")
	scr.Key(t, "k") // one line back: no dead zone to climb out of first
	scr.WaitFor(t, 5*time.Second, "lines 36-52/53")
	scr.Key(t, "g") // the top (D is gdb on the core)
	scr.WaitFor(t, 5*time.Second, "group 1", "siginfo")
	scr.Key(t, "\x1b[D") // ← back to the list
	scr.Type("j")
	scr.WaitFor(t, 5*time.Second, "> 2     1 SIGABRT")
	scr.Key(t, "\r")
	scr.WaitFor(t, 5*time.Second, "group 2", "SIGABRT")
	scr.Key(t, "?")
	scr.WaitFor(t, 5*time.Second, "Crashes keys")
	scr.Key(t, "q")
	select {
	case <-proc.exited:
	case <-patience.After(10 * time.Second):
		t.Fatal("replay did not quit")
	}
}
