package tracer

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// TestCreatorsEventFirst: forks that find the loop busy leave the child's first stop waiting
// beside its parent's fork event, and the kernel reports the child first (ptrace_do_wait
// walks the tracer's tracees newest first). The child is taken in from its parent's event
// all the same (creatorFirst): told once, as its parent's child, with its parent's image,
// and the job runs to its end.
func TestCreatorsEventFirst(t *testing.T) {
	var mu sync.Mutex
	procs := map[int]sessions.Process{} // as first told
	execs := map[int]sessions.Exec{}    // the last exec of each
	tr := New(Options{Emit: func(e sessions.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch b := e.Body.(type) {
		case sessions.Process:
			if _, seen := procs[b.PID]; seen {
				t.Errorf("process %d told twice", b.PID)
			}
			procs[b.PID] = b
		case sessions.Exec:
			execs[b.PID] = b
		}
	}})
	t.Cleanup(func() { tr.Close() })
	const forks = 12
	// The forks are the rank's child's: a tracer's own children come before its other tracees
	// in the kernel's look (do_wait_thread, then ptrace_do_wait).
	loop := "i=0; while [ $i -lt " + strconv.Itoa(forks) + " ]; do /bin/true; i=$((i+1)); done"
	if _, err := tr.Launch(LaunchSpec{N: 1, Argv: []string{"/bin/sh", "-c", "/bin/sh -c '" + loop + "'; true"}}); err != nil {
		t.Fatal(err)
	}
	// The loop is kept busy in requests of 20 ms, back to back, until the job ends: a fork
	// during one finds both stops waiting when it ends.
	var taken int
	deadline := time.After(time.Minute)
	for done := false; !done; {
		select {
		case <-tr.JobDone():
			done = true
		case <-deadline:
			t.Fatal("the job did not end in a minute")
		default:
			tr.do(func() error {
				time.Sleep(20 * time.Millisecond)
				taken = tr.creatorsFirst
				return nil
			})
		}
	}
	mu.Lock()
	defer mu.Unlock()
	shell := 0 // the inner shell, which forks
	for pid, x := range execs {
		if len(x.Argv) == 3 && x.Argv[2] == loop {
			shell = pid
		}
	}
	if shell == 0 {
		t.Fatalf("no exec of /bin/sh -c %q among those told: %v", loop, execs)
	}
	children := 0
	for _, p := range procs {
		if p.PPID != shell {
			continue
		}
		children++
		// Told at its fork, before its own exec: its parent's image.
		if x := execs[shell]; p.Exe != x.Exe || p.Comm != x.Comm || strings.Join(p.Argv, " ") != strings.Join(x.Argv, " ") {
			t.Errorf("child %d told as %q %q %q, not with its parent's image %q %q %q", p.PID, p.Exe, p.Comm, p.Argv, x.Exe, x.Comm, x.Argv)
		}
	}
	if children != forks {
		t.Errorf("%d children of the shell told, want %d", children, forks)
	}
	if taken == 0 {
		t.Errorf("no child's first stop came before its parent's fork event in %d forks behind a busy loop: the test proves nothing", forks)
	}
	t.Logf("%d of %d children taken in from their parent's fork event after their own first stop", taken, forks)
}
