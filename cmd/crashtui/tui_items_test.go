package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/tracer/qemu"
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

// TestRunOutputTab: crashtui run names the ranks' logs at the start (one file per rank, in a
// directory of its own), and its Output tab shows what each rank writes as it writes it, each
// line with its rank.
func TestRunOutputTab(t *testing.T) {
	needRoot(t)
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 50}} {
		t.Run(strconv.Itoa(sz.w)+"x"+strconv.Itoa(sz.h), func(t *testing.T) {
			scr := tuitest.Open(t, sz.w, sz.h)
			t.Setenv("NO_COLOR", "1")
			proc, _ := startTUI(t, scr, "run", "--matrix", "off", "--sample-every", "0", "-n", "2", "--",
				"/bin/sh", "-c", `echo "hello from rank $CRASHTUI_RANK"; exec sleep 1000`)
			scr.WaitFor(t, 20*time.Second, "crashtui run", "the ranks' output goes to ", "crashtui-ranks-", "(7: Output)")
			scr.Key(t, "7")
			txt := scr.WaitFor(t, 20*time.Second, "ranks' stdout and stderr", "hello from rank 0", "hello from rank 1", "rank-N.log in")
			for _, r := range []string{"0", "1"} {
				if !regexp.MustCompile(`r` + r + `\s+hello from rank ` + r).MatchString(txt) {
					t.Errorf("rank %s's line is not marked as rank %s's:\n%s", r, r, txt)
				}
			}
			quitTUI(t, scr, proc)
		})
	}
}

// TestGuestDemoOnPty boots `crashtui demo --guest ppc64le --cpu power10` in the TUI (QEMU,
// as TestDemoGuest): the boot shows its stages until the guest's process comes; an sc-only
// checkpoint counts its 4 threads when they come over the console; the job then aborts on
// the leaked errno 512 and the thread detail says so; "job finished" shows at 80 columns;
// no spurious error (the one-process job's matrix is not measured). CRASHTUI_QEMU=1, as
// `make test-ppc64le` sets it.
func TestGuestDemoOnPty(t *testing.T) {
	if os.Getenv("CRASHTUI_QEMU") != "1" {
		t.Skip("boots a QEMU guest: `make test-ppc64le` runs it, or CRASHTUI_QEMU=1 go test -run TestGuestDemoOnPty ./cmd/crashtui")
	}
	a := qemu.ArchByName("ppc64le")
	if miss := a.Missing(t.Context(), ""); len(miss) > 0 {
		t.Skipf("missing %s: `make test-ppc64le` installs and fetches them", strings.Join(miss, "; "))
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 50}} {
		t.Run(strconv.Itoa(sz.w)+"x"+strconv.Itoa(sz.h), func(t *testing.T) {
			scr := tuitest.Open(t, sz.w, sz.h)
			t.Setenv("NO_COLOR", "1")
			proc, _ := startTUI(t, scr, "demo", "--guest", "ppc64le", "--cpu", "power10")
			scr.WaitFor(t, 10*time.Minute, "booting power10 ·", "s since the start") // a cold start builds first
			scr.WaitFor(t, 3*time.Minute, "sigpending", "procs 1/1 · threads 4")
			scr.Key(t, "4")
			scr.Key(t, "c")
			scr.Type("jj")
			scr.WaitFor(t, 5*time.Second, "> sc-only")
			scr.Key(t, "\r")
			scr.WaitFor(t, 2*time.Minute, "checkpoint #1 (sc-only): 4 threads")
			txt := scr.WaitFor(t, 2*time.Minute, "job finished", "crashes 1 in 1 group")
			if strings.Contains(txt, "errors ") {
				t.Errorf("an error was reported:\n%s", txt)
			}
			scr.Key(t, "\r")
			// The tracer follows the restored read to its leaked -512 when it sees it before
			// the abort; when not, the detail says the process crashed: never a blank.
			txt = scr.WaitFor(t, 5*time.Second, "policy applied: sc-only · outcome: ")
			l := strings.Join(strings.Fields(txt[strings.Index(txt, "policy applied: sc-only · outcome: "):]), " ") // unwrapped
			if l = l[:min(len(l), 200)]; !strings.Contains(l, "ERESTARTSYS (512) to the program") && !strings.Contains(l, "the process crashed with") {
				t.Errorf("the sc-only outcome is neither the leak nor the crash:\n%s", txt)
			}
			scr.Key(t, "q")
			select {
			case <-proc.exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("crashtui did not quit after q:\n%s", scr.Text())
			}
		})
	}
}
