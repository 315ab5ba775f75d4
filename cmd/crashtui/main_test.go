package main

import (
	"bufio"
	"encoding/json"
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

	"github.com/crashtui/crashtui/demo"
	"github.com/crashtui/crashtui/demo/patience"
)

// crashtuiBin is the real binary, built once for this test package: end-to-end tests run it
// as a user would, against real processes.
var crashtuiBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crashtui-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crashtuiBin = filepath.Join(dir, "crashtui")
	out, err := exec.Command("go", "build", "-o", crashtuiBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build crashtui: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildC compiles the demo program NAME (demo/c/NAME.c) with gcc, once per source.
func buildC(t testing.TB, name string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (make test installs it with apt-get)")
	}
	p, err := demo.Program(name, flags...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// event is one decoded JSON line.
type event map[string]any

func (e event) kind() string { s, _ := e["event"].(string); return s }
func (e event) int(k string) int {
	f, _ := e[k].(float64)
	return int(f)
}
func (e event) str(k string) string { s, _ := e[k].(string); return s }

// crashtuiProc is a running crashtui --json whose events are read as they come.
type crashtuiProc struct {
	cmd    *exec.Cmd
	stderr strings.Builder
	mu     sync.Mutex
	events []event
	more   chan struct{}
	done   chan struct{}
}

func startCrashtui(t testing.TB, args ...string) *crashtuiProc {
	t.Helper()
	return startCrashtuiCmd(t, exec.Command(crashtuiBin, args...), syscall.SIGINT)
}

// startCrashtuiCmd is startCrashtui for a command the caller prepared (a stdin pipe, say);
// stop is the signal that ends it at cleanup.
func startCrashtuiCmd(t testing.TB, cmd *exec.Cmd, stop syscall.Signal) *crashtuiProc {
	t.Helper()
	c := &crashtuiProc{cmd: cmd, more: make(chan struct{}, 1), done: make(chan struct{})}
	c.cmd.Stderr = &syncWriter{w: &c.stderr, mu: &c.mu}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cmd.Process.Signal(stop) // detaches; never kills the job
		select {
		case <-c.done:
		case <-patience.After(15 * time.Second):
			c.cmd.Process.Kill()
		}
		c.cmd.Wait()
	})
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = event{"event": "unparsable", "line": sc.Text()}
			}
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (c *crashtuiProc) snapshot() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.events...)
}

// waitFor waits until cond holds on the events so far, or fails the test.
func (c *crashtuiProc) waitFor(t testing.TB, what string, timeout time.Duration, cond func([]event) bool) []event {
	t.Helper()
	deadline := patience.After(timeout)
	for {
		evs := c.snapshot()
		if cond(evs) {
			return evs
		}
		select {
		case <-c.more:
		case <-c.done:
			if evs := c.snapshot(); cond(evs) {
				return evs
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("crashtui ended before %s; stderr: %s", what, c.stderr.String())
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("timed out waiting for %s; %d events; stderr: %s", what, len(c.events), c.stderr.String())
		}
	}
}

// stop sends SIGINT (crashtui detaches and writes its summary) and waits for the exit.
func (c *crashtuiProc) stop(t *testing.T) (int, []event) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-patience.After(20 * time.Second):
		t.Fatal("crashtui did not exit after SIGINT")
	}
	err := c.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, c.snapshot()
}

func count(evs []event, kind string) int {
	n := 0
	for _, e := range evs {
		if e.kind() == kind {
			n++
		}
	}
	return n
}

func processPIDs(evs []event) map[int]bool {
	pids := map[int]bool{}
	for _, e := range evs {
		if e.kind() == "process" {
			pids[e.int("pid")] = true
		}
	}
	return pids
}

// procState is the state letter of /proc/PID/stat ("" if gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	return string(b[i+2 : i+3])
}

func tracerPID(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// pgroupPIDs lists the processes of a process group from /proc.
func pgroupPIDs(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// job is a running demo/c/job.c started by the test in its own process group.
type job struct {
	cmd     *exec.Cmd
	pgid    int
	lines   chan string
	backlog []string // lines read while waiting for another prefix
}

func startJob(t *testing.T, n int) *job {
	t.Helper()
	bin := buildC(t, "job")
	j := &job{cmd: exec.Command(bin, strconv.Itoa(n)), lines: make(chan string, 4096)}
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	j.pgid = j.cmd.Process.Pid
	t.Cleanup(func() {
		// The job's workers are ours too (our job forked them): end each by pid, then reap the leader.
		for _, pid := range pgroupPIDs(j.pgid) {
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		j.cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
		close(j.lines)
	}()
	j.waitLines(t, "ready", n)
	return j
}

func (j *job) waitLines(t *testing.T, prefix string, n int) []string {
	t.Helper()
	var got []string
	keep := j.backlog[:0:0]
	for _, l := range j.backlog {
		if len(got) < n && strings.HasPrefix(l, prefix) {
			got = append(got, l)
		} else {
			keep = append(keep, l)
		}
	}
	j.backlog = keep
	deadline := patience.After(20 * time.Second)
	for len(got) < n {
		select {
		case l, ok := <-j.lines:
			if !ok {
				t.Fatalf("job output ended after %d %q lines", len(got), prefix)
			}
			if strings.HasPrefix(l, prefix) {
				got = append(got, l)
			} else {
				j.backlog = append(j.backlog, l)
			}
		case <-deadline:
			t.Fatalf("timed out: %d of %d %q lines", len(got), n, prefix)
		}
	}
	return got
}

func needRoot(t testing.TB) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (ptrace of other users' processes, prlimit, uid switches)")
	}
}

var _ = runtime.GOARCH

// waitedProc is a process a test started and waits for once. Its cleanup gives it grace to
// exit (after the optional stop signal) and then kills it, so no test leaves a crashtui behind.
type waitedProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's result, valid once exited is closed
}

func startWaited(t *testing.T, cmd *exec.Cmd, stop syscall.Signal) *waitedProc {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &waitedProc{cmd: cmd, exited: make(chan struct{})}
	go func() { w.err = cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		select {
		case <-w.exited:
			return
		default:
		}
		if stop != 0 {
			cmd.Process.Signal(stop)
		}
		select {
		case <-w.exited:
		case <-patience.After(15 * time.Second):
			cmd.Process.Kill()
			<-w.exited
		}
	})
	return w
}
