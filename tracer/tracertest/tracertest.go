// Package tracertest holds what the tests of the engine and of its features share: real
// programs started and reaped, an event log, /proc waits. It is for tests only.
package tracertest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// DemoProgram builds (once) and returns demo/c/NAME.c.
func DemoProgram(tb testing.TB, name string) string {
	tb.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		tb.Skip("gcc is not installed (make test installs it)")
	}
	p, err := demo.Program(name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// FloorPrograms compiles the floor tracer and the event workload (tracer/testdata/floor:
// floor.c and events.c), the two halves of every benchmark against the floor.
func FloorPrograms(tb testing.TB) (floor, events string) {
	tb.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		tb.Skip("gcc is not installed (make test installs it)")
	}
	src := filepath.Join(ModuleRoot(), "tracer", "testdata", "floor")
	dir := tb.TempDir()
	floor, events = filepath.Join(dir, "floor"), filepath.Join(dir, "events")
	for _, c := range [][]string{
		{"gcc", "-O2", "-o", floor, filepath.Join(src, "floor.c")},
		{"gcc", "-O2", "-pthread", "-o", events, filepath.Join(src, "events.c")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			tb.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	return floor, events
}

// StartJobN starts demo/c/job.c with n processes in its own process group and waits until
// all are running. Its cleanup kills them by pid.
func StartJobN(tb testing.TB, n int) (pgid int, pids []int) {
	tb.Helper()
	cmd := exec.Command(DemoProgram(tb, "job"), strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for len(pids) < n && sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "ready" {
			p, _ := strconv.Atoi(f[1])
			pids = append(pids, p)
		}
	}
	tb.Cleanup(func() {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	if len(pids) != n {
		tb.Fatalf("job started %d of %d processes", len(pids), n)
	}
	return cmd.Process.Pid, pids
}

// PGID is the Job of process group pgid.
func PGID(pgid int) tracer.Job {
	return tracer.Job{Kind: tracer.JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}
}

// PID is the Job of process pid and its descendants.
func PID(tb testing.TB, pid int) tracer.Job {
	tb.Helper()
	job, err := tracer.ParseJob("pid:" + strconv.Itoa(pid))
	if err != nil {
		tb.Fatal(err)
	}
	return job
}

// Attach starts a Tracer with o, attaches it to job and closes it in Cleanup.
func Attach(tb testing.TB, o tracer.Options, job tracer.Job) *tracer.Tracer {
	tb.Helper()
	tr := tracer.New(o)
	tb.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(job); err != nil {
		tb.Fatal(err)
	}
	return tr
}

// Piped is a program started with a pipe to its stdin and from its stdout, which says
// "ready PID" first.
type Piped struct {
	Cmd *exec.Cmd
	In  io.WriteCloser
	Out *bufio.Reader
	PID int
}

// StartPiped starts bin with args in process group pgid (0: its own) and waits for its
// "ready PID" line. Its cleanup kills it.
func StartPiped(t testing.TB, pgid int, bin string, args ...string) *Piped {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
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
	p := &Piped{Cmd: cmd, In: in, Out: bufio.NewReader(out), PID: cmd.Process.Pid}
	t.Cleanup(func() {
		in.Close()
		syscall.Kill(p.PID, syscall.SIGKILL)
		cmd.Wait()
	})
	if line := p.Line(t); line != "ready "+strconv.Itoa(p.PID) {
		t.Fatalf("%s %v: ready line %q", bin, args, line)
	}
	return p
}

// Line reads the program's next line.
func (p *Piped) Line(t testing.TB) string {
	t.Helper()
	l, err := p.Out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s %d: %v", p.Cmd.Path, p.PID, err)
	}
	return strings.TrimSpace(l)
}

// ModuleRoot is the repository's top directory (where go.mod is).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// GuestProgram returns the guest helper tracer/qemu/guest/NAME: the one the guest image
// carries (its path in env), or one built now with this test's Go toolchain.
func GuestProgram(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = "/usr/local/go/bin/go"
	}
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no %s and no go toolchain to build tracer/qemu/guest/%s", env, name)
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(gobin, "build", "-o", out, "./tracer/qemu/guest/"+name)
	cmd.Dir = ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	return out
}

// AllowCores raises this process's soft RLIMIT_CORE to the hard limit (its children, the
// programs a test starts, inherit it), and puts it back in Cleanup.
func AllowCores(t testing.TB) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &old); err != nil || old.Max == 0 {
		t.Skip("hard RLIMIT_CORE is 0: the ranks cannot be given a core")
	}
	lim := unix.Rlimit{Cur: old.Max, Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_CORE, &old) })
}

// NeedAMD64 skips a test whose expectations are amd64's.
func NeedAMD64(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the values asserted here are amd64's; on %s the ppc64le and arm64 guest tests cover it", runtime.GOARCH)
	}
}

// EventLog collects what a Tracer emits (Options.Emit: l.Emit).
type EventLog struct {
	mu  sync.Mutex
	evs []sessions.Event
}

// Emit is an Options.Emit.
func (l *EventLog) Emit(e sessions.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

// Events are the events so far.
func (l *EventLog) Events() []sessions.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sessions.Event(nil), l.evs...)
}

// Of is the bodies of the events so far of type T.
func Of[T sessions.Body](l *EventLog) []T {
	var out []T
	for _, e := range l.Events() {
		if b, ok := e.Body.(T); ok {
			out = append(out, b)
		}
	}
	return out
}

// TaskStatusField reads one field of /proc/PID/task/TID/status.
func TaskStatusField(pid, tid int, name string) string {
	return procfs.StatusField(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid), name)
}

// PgroupMembers are the processes of a process group.
func PgroupMembers(pgid int) []int {
	pids, _ := procfs.ScanStat(func(s procfs.Stat) bool { return s.Pgrp == pgid })
	return pids
}

// Wait is how long a test waits for something the machine will do: d on a quiet machine,
// stretched by the race detector and the load (demo/patience).
func Wait(d time.Duration) time.Duration { return patience.Scale(d * RaceSlowdown) }

// WaitProc polls /proc (there is nothing to wait on) until cond holds.
func WaitProc(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := patience.New(10 * time.Second * RaceSlowdown)
	for !cond() {
		if deadline.Passed() {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitState waits until pid's /proc state letter is want.
func WaitState(t testing.TB, pid int, want byte) {
	t.Helper()
	WaitProc(t, fmt.Sprintf("pid %d in state %c", pid, want), func() bool {
		st, err := procfs.ReadStat(pid)
		return err == nil && st.State == want
	})
}

// WaitBlocked waits until every thread of pid is blocked in a system call (/proc/TID/syscall
// names one): a program's "ready" line comes before its other threads reach their calls, and
// on a loaded machine they may not for a while.
func WaitBlocked(t testing.TB, pid int) {
	t.Helper()
	WaitProc(t, fmt.Sprintf("every thread of %d blocked in a call", pid), func() bool {
		tids := procfs.Tasks(pid)
		for _, tid := range tids {
			if !procfs.ReadTaskSyscall(pid, tid).InSyscall() {
				return false
			}
		}
		return len(tids) > 0
	})
}

// WaitInCall waits until a thread of pid is blocked in system call nr: a program prints
// "ready" before its threads reach their calls.
func WaitInCall(t testing.TB, pid, nr int) {
	t.Helper()
	WaitProc(t, fmt.Sprintf("a thread of %d in syscall %d", pid, nr), func() bool {
		for _, tid := range procfs.Tasks(pid) {
			if procfs.ReadTaskSyscall(pid, tid).Nr == nr {
				return true
			}
		}
		return false
	})
}

// LineReader collects a program's output lines.
type LineReader chan string

// ReadLines reads r's lines into a LineReader.
func ReadLines(r io.Reader) LineReader {
	ch := make(LineReader, 1024)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	return ch
}

// Expect waits for a line starting with prefix and returns it.
func (ch LineReader) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := patience.After(timeout * RaceSlowdown)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before a %q line", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q line within %v", prefix, timeout)
		}
	}
}

// StartProgram starts a demo program with args in its own process group with stdin and
// stdout pipes. Its cleanup kills the whole group, by pid.
func StartProgram(t testing.TB, name string, args ...string) (*exec.Cmd, io.WriteCloser, LineReader) {
	t.Helper()
	cmd := exec.Command(DemoProgram(t, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range PgroupMembers(cmd.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	return cmd, in, ReadLines(out)
}

// Untraced fails t for each thread of pid that is traced or left in a tracing stop.
func Untraced(t testing.TB, pid int) {
	t.Helper()
	for _, tid := range procfs.Tasks(pid) {
		if tp := TaskStatusField(pid, tid, "TracerPid"); tp != "0" && tp != "" {
			t.Errorf("thread %d of %d still traced by %s", tid, pid, tp)
		}
		if st, err := procfs.ReadTaskStat(pid, tid); err == nil && st.State == 't' {
			t.Errorf("thread %d of %d left in a tracing stop", tid, pid)
		}
	}
}
