package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tracer/qemu"
)

// TestDemoGuest boots `crashtui demo --guest ARCH --cpu CPU --json` for real (QEMU, Debian's
// kernel, crashtui and sigpending cross-built for the guest): sigpending's process and task
// events must come back over the guest's console, a "checkpoint correct" request sent down
// the same console must bring back one thread event per blocked thread, each entered with
// glibc's own instruction (scv on POWER9/10, sc on POWER8, svc on arm64), and "detach" must
// end it all with a summary and status 0. `make test-ppc64le` runs it on power10 and `make
// test-arm64` on max (CRASHTUI_QEMU=1, CRASHTUI_DEMO_GUEST=ARCH[:CPU]).
func TestDemoGuest(t *testing.T) {
	if os.Getenv("CRASHTUI_QEMU") != "1" {
		t.Skip("boots a QEMU guest: `make test-ppc64le` (or `make test-arm64`) runs it, or CRASHTUI_QEMU=1 [CRASHTUI_DEMO_GUEST=arm64] go test -run TestDemoGuest ./cmd/crashtui")
	}
	archName, cpu, _ := strings.Cut(os.Getenv("CRASHTUI_DEMO_GUEST"), ":")
	if archName == "" {
		archName = "ppc64le"
	}
	a := qemu.ArchByName(archName)
	if a == nil {
		t.Fatalf("CRASHTUI_DEMO_GUEST=%q: want ppc64le or arm64", archName)
	}
	if cpu == "" {
		cpu = a.CPUs[len(a.CPUs)-1]
	}
	if miss := a.Missing(t.Context(), ""); len(miss) > 0 {
		t.Skipf("missing %s: `make test-%s` installs and fetches them", strings.Join(miss, "; "), a.GOARCH)
	}
	want := map[string]string{"arm64": "svc", "power8": "sc"}[a.GOARCH]
	if want == "" {
		want = map[string]string{"power8": "sc"}[cpu]
	}
	if want == "" {
		want = "scv"
	}

	start := time.Now()
	// SIGTERM at cleanup: the agent detaches and the guest powers off; QEMU dies with crashtui anyway.
	cmd := exec.Command(crashtuiBin, "demo", "--guest", a.GOARCH, "--cpu", cpu, "--json", "--duration", "30m") // the test ends it (detach) long before
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := startCrashtuiCmd(t, cmd, syscall.SIGTERM)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("request %q: %v", line, err)
		}
	}

	// sigpending and its three threads, attached by the agent in the guest.
	var pid int
	evs := waitGuest(t, c, "sigpending's process event and three task events from the guest", 3*time.Minute, func(evs []event) bool {
		tasks := 0
		for _, e := range evs {
			if e.kind() == "process" && e.str("comm") == "sigpending" && e.str("host") == "guest" {
				pid = e.int("pid")
			}
			if e.kind() == "task" && pid != 0 && e.int("pid") == pid && e["exited"] == nil {
				tasks++
			}
		}
		return tasks >= 3
	})
	t.Logf("%s %s: sigpending (pid %d) and its threads on the host %.1fs after start, %d events",
		a.GOARCH, cpu, pid, time.Since(start).Seconds(), len(evs))
	for _, e := range evs {
		if e.kind() == "unparsable" {
			t.Errorf("crashtui --json wrote a line that is not JSON: %q", e.str("line"))
		}
	}

	send("checkpoint correct")
	// Four threads blocked in read, futex, clock_nanosleep and poll. On ppc64le the thread
	// events that carry an outcome are the checkpoint's last word on each; on arm64 the
	// kernel has already rewound an interrupted svc and restored x0 when the agent's
	// PTRACE_INTERRUPT stops it, so there is no restart code to restore and no outcome, only
	// the capture.
	final := func(e event) bool {
		return e.kind() == "thread" && e.int("pid") == pid && (a.GOARCH == "arm64" || e.str("outcome") != "")
	}
	evs = waitGuest(t, c, "the checkpoint's thread events", 2*time.Minute, func(evs []event) bool {
		tids := map[int]bool{}
		for _, e := range evs {
			if final(e) {
				tids[e.int("tid")] = true
			}
		}
		return len(tids) >= 4
	})
	calls := map[string]bool{}
	for _, e := range evs {
		if !final(e) {
			continue
		}
		calls[e.str("syscall")] = true
		if e.str("insn") != want || e["in_syscall"] != true || e.str("policy") != "correct" || e.str("host") != "guest" {
			t.Errorf("thread %d in %s: insn %q in_syscall %v policy %q host %q; want %s, in a syscall, correct, guest",
				e.int("tid"), e.str("syscall"), e.str("insn"), e["in_syscall"], e.str("policy"), e.str("host"), want)
		}
		if s := e.str("syscall"); a.GOARCH == "ppc64le" && (s == "read" || s == "futex") && !strings.Contains(e.str("outcome"), "restarted") {
			t.Errorf("thread %d in %s after the correct restore: %q; want it restarted", e.int("tid"), s, e.str("outcome"))
		}
	}
	for _, s := range []string{"read", "futex"} {
		if !calls[s] {
			t.Errorf("no checkpointed thread in %s; got %v", s, calls)
		}
	}
	t.Logf("checkpoint correct: thread events with insn %s for %v, %.1fs after start", want, calls, time.Since(start).Seconds())

	send("detach")
	select {
	case <-c.done:
	case <-patience.After(30 * time.Second):
		t.Fatal("crashtui demo --guest did not end within 30s of detach")
	}
	err = c.cmd.Wait()
	evs = c.snapshot()
	if err != nil || len(evs) == 0 || evs[len(evs)-1].kind() != "summary" {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("after detach: %v, last of %d events not a summary; stderr: %s", err, len(evs), c.stderr.String())
	}
	t.Logf("detached and ended %.1fs after start", time.Since(start).Seconds())
}

// waitGuest is waitFor, with the events so far in the failure's message.
func waitGuest(t *testing.T, c *crashtuiProc, what string, timeout time.Duration, cond func([]event) bool) []event {
	t.Helper()
	deadline := patience.After(timeout)
	for {
		evs := c.snapshot()
		if cond(evs) {
			return evs
		}
		select {
		case <-c.more:
			continue
		case <-c.done:
			if evs := c.snapshot(); cond(evs) {
				return evs
			}
		case <-deadline:
		}
		var b strings.Builder
		for _, e := range c.snapshot() {
			j, _ := json.Marshal(e)
			b.Write(j)
			b.WriteByte('\n')
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("no %s (crashtui ended or timed out); events:\n%s\nstderr: %s", what, b.String(), c.stderr.String())
	}
}
