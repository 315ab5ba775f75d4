package main

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// TestThreadsTabAt80x24 drives the Threads tab at 80×24 on a real job as a user would: a
// correct checkpoint rewinds the blocked read, and the register it changed is on screen; a
// second checkpoint (none) becomes the one shown, the first stays browsable with <, and a
// thread's full detail opens with enter and scrolls.
func TestThreadsTabAt80x24(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 2) // rank 0 in read, rank 1 in a futex
	scr := tuitest.Open(t, 80, 24)
	proc, _ := startTUI(t, scr, "attach", "--matrix", "off", "--sample-every", "0", "pgid:"+strconv.Itoa(j.pgid))
	scr.WaitFor(t, 20*time.Second, "procs 2/2")
	scr.Key(t, "4")
	scr.Key(t, "c")
	scr.WaitFor(t, 5*time.Second, "correct")
	scr.Key(t, "\r")
	// The leader of rank 0 is first: its read was rewound, rip moved back over the syscall.
	scr.WaitFor(t, 20*time.Second, "checkpoint #1 (correct)", "read", "changed")
	scr.Key(t, "c")
	scr.Type("jjj") // none
	scr.WaitFor(t, 5*time.Second, "> none")
	scr.Key(t, "\r")
	scr.WaitFor(t, 20*time.Second, "checkpoint #2 (none)", "2 of 2")
	scr.Key(t, "<")
	scr.WaitFor(t, 5*time.Second, "checkpoint #1 (correct)", "1 of 2")
	scr.Key(t, "\r")
	scr.WaitFor(t, 5*time.Second, "register", "before", "after")
	scr.Key(t, "G") // the end of the detail
	scr.Key(t, "\x1b")
	scr.WaitFor(t, 5*time.Second, "PID", "TID", "SYSCALL")
	quitTUI(t, scr, proc)
	checkDetached(t, j.pids, []string{"S", "S"})
}

// TestCheckpointSCOnlyEqualsCorrectHere: on amd64 (and arm64) the restorer before CRIU's scv
// fix does what correct does — there is no scv — and says so: the blocked read is rewound and
// runs again, the program never notices.
func TestCheckpointSCOnlyEqualsCorrectHere(t *testing.T) {
	needRoot(t)
	if runtime.GOARCH == "ppc64le" {
		t.Skip("on ppc64le sc-only differs from correct for scv: the ppc64le stage tests it")
	}
	j := startHung(t, buildC(t, "hang"), 2)
	out, err := exec.Command(crashtuiBin, "checkpoint", "--restore=sc-only", "pgid:"+strconv.Itoa(j.pgid)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"sc-only equals correct here", "criu#2261", "back in read: the syscall was restarted"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	evs, _, code := crashtuiJSON(t, nil, "checkpoint", "--json", "--restore=sc-only", "pgid:"+strconv.Itoa(j.pgid))
	rewound := 0
	for _, e := range evs {
		if th, ok := e.Body.(sessions.Thread); ok && th.Syscall == "read" {
			if th.Applied != "sc-only" || th.Restore != "rewind" || th.Policy != "sc-only" {
				t.Errorf("read thread: applied %q restore %q policy %q", th.Applied, th.Restore, th.Policy)
			}
			rewound++
		}
	}
	if code != 0 || rewound == 0 {
		t.Errorf("exit %d, %d read threads", code, rewound)
	}
	checkDetached(t, j.pids, []string{"S", "S"})
}
