package tracer

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/tracer/procfs"
)

// The engine's white-box tests (package tracer) cannot use tracer/tracertest, which imports
// the engine (an import cycle in tests): these few helpers are theirs. The black-box tests
// (package tracer_test) use tracertest.

// piped is a program started with pipes to its stdin and from its stdout, which says
// "ready PID" first.
type piped struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	pid int
}

// startPiped starts bin with args in its own process group and waits for its ready line;
// its cleanup kills it.
func startPiped(t *testing.T, bin string, args ...string) *piped {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &piped{cmd: cmd, in: in, out: bufio.NewReader(out), pid: cmd.Process.Pid}
	t.Cleanup(func() {
		in.Close()
		syscall.Kill(p.pid, syscall.SIGKILL)
		cmd.Wait()
	})
	if line := p.line(t); line != "ready "+strconv.Itoa(p.pid) {
		t.Fatalf("%s %v: ready line %q", bin, args, line)
	}
	return p
}

func (p *piped) line(t *testing.T) string {
	t.Helper()
	l, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s %d: %v", p.cmd.Path, p.pid, err)
	}
	return strings.TrimSpace(l)
}

// taskStatusField reads one field of /proc/PID/task/TID/status.
func taskStatusField(pid, tid int, name string) string {
	return procfs.StatusField(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid), name)
}

// attachPID attaches a new Tracer to the process pid; it is closed at cleanup.
func attachPID(t *testing.T, pid int) *Tracer {
	t.Helper()
	tr := New(Options{})
	t.Cleanup(func() { tr.Close() })
	job, _ := ParseJob("pid:" + strconv.Itoa(pid))
	if _, err := tr.Attach(job); err != nil {
		t.Fatal(err)
	}
	return tr
}

// holdOne holds the traced thread tid at an interrupt stop, runs fn and lets it go. Runs on
// the tracer thread.
func (t *Tracer) holdOne(tid int, fn func(tk *task) error) error {
	tk := t.tasks[tid]
	if tk == nil {
		return fmt.Errorf("thread %d not traced", tid)
	}
	got, late := t.hold([]*task{tk}, HoldOptions{Timeout: 5 * time.Second, AtInterrupt: true})
	defer t.release(got, "test")
	if len(got) == 0 {
		return fmt.Errorf("thread %d not held: %v", tid, late)
	}
	return fn(tk)
}
