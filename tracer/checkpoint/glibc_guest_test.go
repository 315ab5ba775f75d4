//go:build ppc64le || arm64

package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestGlibcSigpending runs the simulated checkpoint (Checkpoints.Run: attach, freeze every
// thread, capture, apply the policy, resume, detach) on demo/restart/sigpending.c, a static C
// program whose threads are blocked in glibc 2.36's own wrappers -- read (the main thread, on
// its stdin pipe), sem_wait (a futex wait), nanosleep and poll -- the shape of CRIU's
// zdtm/static/sigpending that caught the scv bug on POWER10 (seed 002). No syscall is the
// test's choice: the instruction each thread is blocked in is glibc's, and the thread events
// must say which. What each call then returned is what the program itself reports; the
// expectations per architecture and policy are in glibc_ppc64le_test.go and
// glibc_arm64_test.go (glibcSigpendingCases).
func TestGlibcSigpending(t *testing.T) {
	bin := os.Getenv("CRASHTUI_SIGPENDING")
	if bin == "" {
		t.Skip("no CRASHTUI_SIGPENDING: the QEMU guests carry demo/restart/sigpending.c, built static with the cross gcc (tracer/qemu)")
	}
	for _, c := range glibcSigpendingCases(t) {
		t.Run(c.name, func(t *testing.T) { testGlibcSigpending(t, bin, c) })
	}
}

// sigpendingCase is one checkpoint of sigpending and what must come of it.
type sigpendingCase struct {
	name    string
	policy  sessions.Policy
	args    []string          // sigpending's arguments: -s SECONDS and the threads besides the main one's read
	insn    string            // the syscall instruction every thread event must report
	code    map[string]string // per thread: the event's Code and Restore ("": not checked)
	restore map[string]arch.Action
	// result per thread: what the call returned, as the program reports it; read's byte is
	// checked when it returned 1.
	result map[string][2]int
	// abort: instead of reporting, the program is killed by SIGABRT with glibc's message.
	abort string
}

type sigpendingReady struct {
	tid, nr int
	a1      uint64
}

// glibcFutexFatal is what glibc's futex wrappers print before abort() when the kernel returns
// a code they do not know (nptl futex_fatal_error).
const glibcFutexFatal = "The futex facility returned an unexpected error code."

func testGlibcSigpending(t *testing.T, bin string, c sigpendingCase) {
	cmd := exec.Command(bin, c.args...)
	// __libc_message writes to stderr only (not /dev/tty) with this set.
	cmd.Env = append(os.Environ(), "LIBC_FATAL_STDERR_=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	pid := cmd.Process.Pid
	waited := false
	t.Cleanup(func() {
		stdin.Close()
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	out := bufio.NewReader(stdout)

	// The main thread's read, and one line per thread named in the arguments.
	want := 1
	for _, a := range c.args {
		if a == "futex" || a == "nanosleep" || a == "poll" {
			want++
		}
	}
	ready := map[string]sigpendingReady{}
	for len(ready) < want {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("sigpending ready lines: %v (stderr %q)", err, stderr.String())
		}
		f := keyValues(line)
		if !strings.HasPrefix(line, "ready ") {
			t.Fatalf("sigpending: %q before every thread was ready", line)
		}
		var r sigpendingReady
		r.tid, _ = strconv.Atoi(f["tid"])
		r.nr, _ = strconv.Atoi(f["nr"])
		r.a1, _ = strconv.ParseUint(f["a1"], 0, 64)
		ready[f["name"]] = r
	}
	for _, r := range ready {
		waitInSyscall(t, pid, r.tid, r.nr, r.a1)
	}

	log := &tracertest.EventLog{}
	tr := tracer.New(tracer.Options{Emit: log.Emit})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	job, err := tracer.ParseJob("pid:" + strconv.Itoa(pid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Attach(job); err != nil {
		t.Fatalf("attach %d: %v", pid, err)
	}
	threads, err := New(tr).Run(c.policy, nil)
	if err != nil {
		t.Fatalf("checkpoint %s: %v", c.policy, err)
	}
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	if len(threads) != len(ready) {
		t.Errorf("%d threads frozen, want sigpending's %d", len(threads), len(ready))
	}
	for name, r := range ready {
		th := threadByTID(t, threads, r.tid)
		t.Logf("%s (tid %d): insn %s syscall %s nr %d ret %d code %s on_resume %s restore %s applied %s",
			name, th.TID, th.Insn, th.Syscall, th.Nr, th.Ret, th.Code, th.OnResume, th.Restore, th.Applied)
		if !th.InSyscall || th.Insn != c.insn || th.Nr != r.nr || th.Applied != c.policy {
			t.Errorf("%s: in_syscall %v insn %q nr %d applied %q; want in a syscall through %s, nr %d, %s applied",
				name, th.InSyscall, th.Insn, th.Nr, th.Applied, c.insn, r.nr, c.policy)
		}
		if len(th.Args) == 0 || uint64(th.Args[0]) != r.a1 {
			t.Errorf("%s: args %v, want the first %#x", name, th.Args, r.a1)
		}
		if w := c.code[name]; w != "" && th.Code != w {
			t.Errorf("%s: code %q, want %q", name, th.Code, w)
		}
		if w := c.restore[name]; w != "" && th.Restore != string(w) {
			t.Errorf("%s: restore %q, want %q", name, th.Restore, w)
		}
	}

	// The control byte: the main thread's read gets it if it was restarted; in any case it
	// releases the other threads. EPIPE: the program is already gone (an abort).
	if _, err := stdin.Write([]byte{'x'}); err != nil && !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write to sigpending's stdin: %v", err)
	}
	stdin.Close()
	rest := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(out)
		rest <- b
	}()
	var tail []byte
	select {
	case tail = <-rest:
	case <-patience.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("sigpending did not end within 90s after the checkpoint (stderr %q)", stderr.String())
	}
	waitErr := cmd.Wait()
	waited = true
	signal, code := exitOf(t, waitErr, log, pid)
	t.Logf("after %s: %q, stderr %q, exit %s %d", c.policy, tail, stderr.String(), signal, code)

	results := map[string]map[string]string{}
	done := false
	for _, line := range strings.Split(string(tail), "\n") {
		switch {
		case strings.HasPrefix(line, "result "):
			f := keyValues(line)
			results[f["name"]] = f
		case line == "done":
			done = true
		}
	}
	if c.abort != "" {
		if signal != "SIGABRT" || !strings.Contains(stderr.String(), c.abort) {
			t.Errorf("want death by SIGABRT after glibc's %q; exit %s %d, stderr %q", c.abort, signal, code, stderr.String())
		}
		return
	}
	if signal != "" || code != 0 || !done {
		t.Errorf("sigpending: exit %s %d, done line %v; want exit 0 after \"done\" (stderr %q)", signal, code, done, stderr.String())
	}
	for name, w := range c.result {
		f, ok := results[name]
		if !ok {
			t.Errorf("%s: no result line", name)
			continue
		}
		ret, _ := strconv.Atoi(f["ret"])
		errno, _ := strconv.Atoi(f["errno"])
		if ret != w[0] || errno != w[1] {
			t.Errorf("%s after %s: ret %d errno %d, want ret %d errno %d", name, c.policy, ret, errno, w[0], w[1])
		}
		if name == "read" && ret == 1 && f["byte"] != strconv.Itoa('x') {
			t.Errorf("read returned 1 but byte %s, want 'x' (%d)", f["byte"], 'x')
		}
	}
}

// keyValues parses the key=value words of one protocol line.
func keyValues(line string) map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k] = v
		}
	}
	return m
}

// exitOf is how a child of the test ended: from its wait status, or, when a tracer.Tracer of the
// test reaped it (it ended while attached: the tracer thread is in its parent's thread group),
// from the tracer's exit event. signal is "" for a normal exit with code.
func exitOf(t *testing.T, waitErr error, log *tracertest.EventLog, pid int) (signal string, code int) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		return "", 0
	case errors.As(waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return unix.SignalName(ws.Signal()), 0
		}
		return "", ee.ExitCode()
	case errors.Is(waitErr, unix.ECHILD):
		for _, e := range log.Events() {
			if x, ok := e.Body.(sessions.Exit); ok && x.PID == pid && !x.Detached {
				if x.Code != nil {
					return "", *x.Code
				}
				return x.Signal, 0
			}
		}
		t.Fatalf("pid %d was reaped by the tracer, which reported no exit", pid)
	}
	t.Fatalf("wait: %v", waitErr)
	return "", 0
}
