package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/tui/tuitest"
)

// The TUI's second pass (issue 25) on real jobs: what the tui package's pty tests cannot
// show, because it needs a tracer, a kernel and /proc.

// TestProcDetailOfARealJob: enter on a rank of a real hung job shows what /proc says now, read
// through the controller (tracer.ReadProcDetail): its command line, its one thread blocked in
// read, its open files, its seccomp mode; the job is detached intact afterwards.
func TestProcDetailOfARealJob(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 2) // rank 0 in read, rank 1 in a futex
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 50}} {
		t.Run(strconv.Itoa(sz.w)+"x"+strconv.Itoa(sz.h), func(t *testing.T) {
			scr := tuitest.Open(t, sz.w, sz.h)
			t.Setenv("NO_COLOR", "1")
			proc, _ := startTUI(t, scr, "attach", "--matrix", "off", "--sample-every", "0", "pgid:"+strconv.Itoa(j.pgid))
			scr.WaitFor(t, 20*time.Second, "procs 2/2")
			scr.Key(t, "\r")
			scr.WaitFor(t, 20*time.Second, "pid "+strconv.Itoa(j.pids[0])+" · rank 0 · hang", "read from /proc at",
				"seccomp    disabled", "cwd ")
			for !strings.Contains(scr.Text(), "open files (") {
				if strings.Contains(scr.Text(), "limits (soft / hard)") {
					t.Fatalf("the detail has no open files:\n%s", scr.Text())
				}
				scr.Key(t, "j")
			}
			scr.WaitFor(t, 5*time.Second, "threads (1)", "in read")
			scr.Key(t, "\x1b")
			scr.WaitFor(t, 5*time.Second, "RANK")
			quitTUI(t, scr, proc)
			checkDetached(t, j.pids, []string{"S", "S"})
		})
	}
}

// TestRunOutputTab: crashtui run names the ranks' log at the start, and its Output tab shows
// what each rank writes as it writes it.
func TestRunOutputTab(t *testing.T) {
	needRoot(t)
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 50}} {
		t.Run(strconv.Itoa(sz.w)+"x"+strconv.Itoa(sz.h), func(t *testing.T) {
			scr := tuitest.Open(t, sz.w, sz.h)
			t.Setenv("NO_COLOR", "1")
			proc, _ := startTUI(t, scr, "run", "--matrix", "off", "--sample-every", "0", "-n", "2", "--",
				"/bin/sh", "-c", `echo "hello from rank $CRASHTUI_RANK"; exec sleep 1000`)
			scr.WaitFor(t, 20*time.Second, "crashtui run", "the ranks' output goes to /", ".log (7: Output)")
			scr.Key(t, "7")
			scr.WaitFor(t, 20*time.Second, "ranks' stdout and stderr", "hello from rank 0", "hello from rank 1")
			quitTUI(t, scr, proc)
		})
	}
}
