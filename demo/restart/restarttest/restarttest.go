package restarttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"golang.org/x/sys/unix"
)

// Build compiles demo/restart/restart.c into a temporary directory and returns the binary.
// It skips the test when gcc is missing.
func Build(tb testing.TB) string {
	tb.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Skip("gcc is missing: cannot build demo/restart/restart.c (make apt-deps installs it)")
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("restarttest: cannot locate its own source file")
	}
	src := filepath.Join(filepath.Dir(self), "..", "restart.c")
	bin := filepath.Join(tb.TempDir(), "restart")
	if out, err := exec.Command(gcc, "-O1", "-g", "-Wall", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		tb.Fatalf("gcc %s: %v\n%s", src, err, out)
	}
	return bin
}

// Thread is one case of the program, from its ready line.
type Thread struct {
	Name string
	TID  int
	Nr   int
}

// Result is a result line.
type Result struct {
	Name  string
	TID   int
	Ret   int64
	Errno int
	OK    bool
}

// Proc is a running restart program. It is not a child of the test process (it is started
// through setsid -f), so a tracer running in the test never reaps it and the test never has
// to: Cleanup kills it by pid and waits on a pidfd.
type Proc struct {
	PID     int
	Threads []Thread // in ready order; the main thread is named "main"
	stdin   *os.File
	lines   chan string
	pidfd   int
	mu      sync.Mutex
	stderr  bytes.Buffer
	errDone chan struct{}
}

// Start runs bin (Build's result) with args, reads its pid and ready lines, and waits until
// every thread sleeps inside its syscall.
func Start(tb testing.TB, bin string, args ...string) *Proc {
	tb.Helper()
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		tb.Skip("setsid (util-linux) is missing: cannot start the program outside the test's children")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(setsid, append([]string{"-f", bin}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// setsid -f forks and its parent exits at once: Run returns when the program is started.
	runErr := cmd.Run()
	inR.Close()
	outW.Close()
	errW.Close()
	if runErr != nil {
		tb.Fatalf("setsid -f %s: %v", bin, runErr)
	}
	p := &Proc{stdin: inW, lines: make(chan string, 64), pidfd: -1, errDone: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		outR.Close()
	}()
	go func() {
		var b [4096]byte
		for {
			n, err := errR.Read(b[:])
			p.mu.Lock()
			p.stderr.Write(b[:n])
			p.mu.Unlock()
			if err != nil {
				break
			}
		}
		errR.Close()
		close(p.errDone)
	}()

	first := p.Line(tb, 10*time.Second)
	var n int
	if _, err := fmt.Sscanf(first, "pid=%d threads=%d", &p.PID, &n); err != nil {
		tb.Fatalf("restart: first line %q: %v", first, err)
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		unix.Kill(p.PID, unix.SIGKILL)
		tb.Fatalf("pidfd_open %d: %v", p.PID, err)
	}
	p.pidfd = fd
	tb.Cleanup(p.kill)
	for len(p.Threads) < n {
		line := p.Line(tb, 10*time.Second)
		var th Thread
		if _, err := fmt.Sscanf(line, "ready name=%s tid=%d nr=%d", &th.Name, &th.TID, &th.Nr); err != nil {
			tb.Fatalf("restart: ready line %q: %v", line, err)
		}
		p.Threads = append(p.Threads, th)
	}
	for _, th := range p.Threads {
		p.waitBlocked(tb, th)
	}
	return p
}

// waitBlocked waits until th sleeps inside syscall th.Nr. There is no event for "went to sleep
// in a syscall", so this polls /proc/PID/task/TID/syscall; the thread printed its ready line just
// before the call, so it takes microseconds.
func (p *Proc) waitBlocked(tb testing.TB, th Thread) {
	tb.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/syscall", p.PID, th.TID)
	deadline := patience.New(20 * time.Second)
	var last string
	for !deadline.Passed() {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("read %s: %v", path, err)
		}
		last = strings.TrimSpace(string(b))
		if f := strings.Fields(last); len(f) > 0 && f[0] == strconv.Itoa(th.Nr) && threadState(p.PID, th.TID) == "S" {
			return
		}
		time.Sleep(time.Millisecond)
	}
	tb.Fatalf("%s (thread %s) never slept in syscall %d; last %q", path, th.Name, th.Nr, last)
}

// threadState is the state letter of /proc/PID/task/TID/stat ("S", "t", ...), "" if gone.
func threadState(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+3 > len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}

// ThreadStates returns the state letter of every thread of the program (a tracing stop is
// "t") and the TracerPid of the process. A program that has exited and been reaped has no
// threads and no tracer.
func (p *Proc) ThreadStates(tb testing.TB) (map[int]string, int) {
	tb.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.PID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0
	}
	if err != nil {
		tb.Fatalf("list threads of %d: %v", p.PID, err)
	}
	out := map[int]string{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		out[tid] = threadState(p.PID, tid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil, 0
	}
	if err != nil {
		tb.Fatalf("read status of %d: %v", p.PID, err)
	}
	tracer := -1
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			tracer, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return out, tracer
}

// TID returns the tid of the thread called name.
func (p *Proc) TID(tb testing.TB, name string) int {
	tb.Helper()
	for _, th := range p.Threads {
		if th.Name == name {
			return th.TID
		}
	}
	tb.Fatalf("restart: no thread %q", name)
	return 0
}

// Line returns the next stdout line, failing the test when none comes within timeout (a safety
// net: the line is waited for, not slept for) or stdout ends.
func (p *Proc) Line(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			tb.Fatalf("restart: stdout ended; stderr %q", p.Stderr())
		}
		return l
	case <-patience.After(timeout):
		tb.Fatalf("restart: no output within %v; stderr %q", timeout, p.Stderr())
	}
	return ""
}

// Result reads the next line and parses it as a result line.
func (p *Proc) Result(tb testing.TB, timeout time.Duration) Result {
	tb.Helper()
	l := p.Line(tb, timeout)
	r, err := ParseResult(l)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// ParseResult parses "result name=N tid=T ret=R errno=E ok=0|1".
func ParseResult(l string) (Result, error) {
	var r Result
	var ok int
	if _, err := fmt.Sscanf(l, "result name=%s tid=%d ret=%d errno=%d ok=%d", &r.Name, &r.TID, &r.Ret, &r.Errno, &ok); err != nil {
		return r, fmt.Errorf("restart: result line %q: %v", l, err)
	}
	r.OK = ok == 1
	return r, nil
}

// Go tells the program to wake every thread the normal way.
func (p *Proc) Go(tb testing.TB) {
	tb.Helper()
	if _, err := p.stdin.WriteString("go\n"); err != nil {
		tb.Fatalf("restart: write go: %v", err)
	}
}

// Rest returns every remaining stdout line, until the program closes stdout.
func (p *Proc) Rest(tb testing.TB, timeout time.Duration) []string {
	tb.Helper()
	var out []string
	deadline := patience.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-deadline:
			tb.Fatalf("restart: still running after %v; output so far %q; stderr %q", timeout, out, p.Stderr())
		}
	}
}

// WaitExit waits until the program has exited (pidfd becomes readable).
func (p *Proc) WaitExit(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	if err := waitPidfd(p.pidfd, timeout); err != nil {
		tb.Fatalf("restart %d: %v", p.PID, err)
	}
}

// Stderr is what the program wrote to stderr so far (all of it once WaitExit returned and
// stderr was closed).
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// StderrAll waits for stderr to be closed and returns it.
func (p *Proc) StderrAll(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case <-p.errDone:
	case <-patience.After(timeout):
		tb.Fatalf("restart: stderr still open after %v", timeout)
	}
	return p.Stderr()
}

func (p *Proc) kill() {
	p.stdin.Close()
	if p.pidfd < 0 {
		return
	}
	unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	waitPidfd(p.pidfd, 10*time.Second)
	unix.Close(p.pidfd)
	p.pidfd = -1
}

// waitPidfd waits for the process of fd to exit, for timeout of a quiet machine (polled in
// slices of 100 ms, so that the limit stretches with the load).
func waitPidfd(fd int, timeout time.Duration) error {
	deadline := patience.New(timeout)
	for {
		if deadline.Passed() {
			return fmt.Errorf("did not exit in %v", deadline.Waited())
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll pidfd: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}
