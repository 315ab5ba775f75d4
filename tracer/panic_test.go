package tracer

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// TestPanicDetaches: a panic on the tracer's goroutine (here, in the Emit callback, when a
// matrix is emitted on the loop while the whole job is attached) must not leave the job traced
// or stopped: the loop detaches every tracee before the panic ends the process. The panicking
// tracer runs in a child process (this test binary re-executed), as crashtui would. (A panic
// in the middle of an injection is not provoked here: Emit is never called during one.)
func TestPanicDetaches(t *testing.T) {
	if pg := os.Getenv("CRASHTUI_PANIC_HELPER"); pg != "" {
		panicHelper(pg)
		return
	}
	pgid, pids := startJobN(t, 6)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicDetaches$", "-test.v")
	cmd.Env = append(os.Environ(), "CRASHTUI_PANIC_HELPER="+strconv.Itoa(pgid))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || !strings.Contains(out.String(), "panic: emit exploded") {
		t.Fatalf("the helper did not panic as planned: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "attached 6") {
		t.Fatalf("the helper never attached the job:\n%s", out.String())
	}
	for _, pid := range pids {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			t.Errorf("pid %d is gone after the tracer panicked", pid)
			continue
		}
		if st.State == 't' || st.State == 'T' {
			t.Errorf("pid %d left in state %c", pid, st.State)
		}
		if _, tp := procfs.TaskStatus(pid); tp != 0 {
			t.Errorf("pid %d still traced by %d", pid, tp)
		}
	}
}

func panicHelper(pg string) {
	pgid, _ := strconv.Atoi(pg)
	armed := false
	tr := New(Options{Emit: func(e sessions.Event) {
		if armed && e.Kind() == sessions.KindMatrix {
			panic("emit exploded")
		}
	}})
	res, err := tr.Attach(Job{Kind: JobPGID, ID: pgid, Spec: "pgid:" + pg})
	if err != nil {
		os.Stdout.WriteString("attach failed: " + err.Error() + "\n")
		os.Exit(3)
	}
	os.Stdout.WriteString("attached " + strconv.Itoa(res.Processes) + "\n")
	armed = true
	// The panic comes when a matrix is emitted, on the loop (as a feature emits it).
	err = tr.Do(func(l *Loop) error { l.Emit(sessions.Matrix{}); return nil })
	// The loop closes its done channel while it unwinds from the panic (after detaching), so
	// Matrix may return "tracer: stopped" just before the panic ends the process: give the
	// panic the time to do so; exiting here would race it.
	time.Sleep(patience.Scale(10 * time.Second))
	os.Stdout.WriteString("matrix returned without the planned panic: " + fmt.Sprint(err) + "\n")
	os.Exit(4)
}
