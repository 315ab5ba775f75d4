package access

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// renamedTo says whether the log has a process event that renames pid to comm.
func renamedTo(log *tracertest.EventLog, pid int, comm string) bool {
	for _, e := range log.Events() {
		if p, ok := e.Body.(sessions.Process); ok && p.PID == pid && p.Comm == comm {
			return true
		}
	}
	return false
}

// Refresh reads /proc again at once for a job whose processes changed (a fork, an exec, an
// exit), and only every quietEvery for one whose processes are the images they were: a
// rename, which no ptrace event tells, shows at the next read.
// quietEvery is set for the test (an hour, then none): no wait in it depends on the clock.
func TestRefreshReadsAQuietJobLess(t *testing.T) {
	old := quietEvery
	t.Cleanup(func() { quietEvery = old })
	quietEvery = time.Hour // no read for time's sake in this test: only for a change

	// A shell that renames itself (its own write to /proc/self/comm), then starts a child.
	sh := tracertest.StartPiped(t, 0, "sh", "-c", `echo ready $$; read x; printf renamed > /proc/self/comm; echo done; `+
		`read y; sleep 600 & echo started; read z; printf again > /proc/self/comm; echo again; read w`)
	pid := sh.PID
	t.Cleanup(func() {
		for _, p := range tracertest.PgroupMembers(pid) {
			syscall.Kill(p, syscall.SIGKILL) // the sleep the shell started (StartPiped ends the shell)
		}
	})
	in := sh.In
	readLine := func(want string) {
		t.Helper()
		if line := sh.Line(t); line != want {
			t.Fatalf("the shell said %q, want %q", line, want)
		}
	}

	log := &tracertest.EventLog{}
	tr := tracer.New(tracer.Options{Emit: log.Emit})
	t.Cleanup(func() { tr.Close() })
	job, _ := tracer.ParseJob("pgid:" + strconv.Itoa(pid))
	if res, err := tr.Attach(job); err != nil || res.Processes != 1 {
		t.Fatalf("attach: %+v %v", res, err)
	}
	x := New(tr)
	if _, err := x.Refresh(false); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "rename")
	readLine("done")
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(b)) != "renamed" {
		t.Fatalf("the shell's comm is %q", b)
	}
	if _, err := x.Refresh(false); err != nil {
		t.Fatal(err)
	}
	if renamedTo(log, pid, "renamed") {
		t.Fatal("a job whose processes are the images they were was read again before quietEvery")
	}
	fmt.Fprintln(in, "fork")
	readLine("started")
	// The sleep is the job's once the tracer has told its process event.
	for dl := patience.New(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := 0
		for _, e := range log.Events() {
			if p, ok := e.Body.(sessions.Process); ok && p.PID != pid {
				n++
			}
		}
		if n > 0 {
			break
		}
		if dl.Passed() {
			t.Fatal("the shell's child was never told")
		}
	}
	if _, err := x.Refresh(false); err != nil {
		t.Fatal(err)
	}
	if !renamedTo(log, pid, "renamed") {
		t.Error("a job that forked was not read again at once: the rename is not told")
	}
	// Once quietEvery has passed, a quiet job is read again.
	fmt.Fprintln(in, "rename again")
	readLine("again")
	quietEvery = 0
	if _, err := x.Refresh(false); err != nil {
		t.Fatal(err)
	}
	if !renamedTo(log, pid, "again") {
		t.Error("a quiet job was not read again after quietEvery")
	}
}
