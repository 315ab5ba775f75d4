package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/demo/testuser"
)

// The control socket (ctlsock.go, ctlask.go): tests on real jobs held by a real crashtui.

// ctlDialEnv makes this test binary a bare control socket client (TestControlSocketPeerCred
// runs a copy of it as another user): it sends a request to the socket named and copies the
// answer to stdout.
const ctlDialEnv = "CRASHTUI_TEST_CTL_DIAL"

func init() {
	if path := os.Getenv(ctlDialEnv); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		io.WriteString(c, "pids 1\nsample\n")
		c.(*net.UnixConn).CloseWrite()
		io.Copy(os.Stdout, c)
		os.Exit(0)
	}
}

// startHolder starts crashtui attach --json on spec and waits until it holds n processes and
// its control socket is up; it returns the holder and the socket's path.
func startHolder(t *testing.T, n int, args ...string) (*crashtuiProc, string) {
	t.Helper()
	h := startCrashtui(t, args...)
	h.waitFor(t, fmt.Sprintf("%d process events", n), 20*time.Second, func(evs []event) bool { return count(evs, "process") >= n })
	sock := filepath.Join(ctlRoot, ctlName(h.cmd.Process.Pid))
	if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return isSocketFile(sock) }) {
		t.Fatalf("no control socket %s; stderr: %s", sock, h.stderr.String())
	}
	for path, mode := range map[string]uint32{ctlRoot: 0o700, sock: 0o600} {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil || st.Uid != 0 || st.Mode&0o7777 != mode {
			t.Errorf("%s: uid %d mode %04o (%v), want root's, %04o", path, st.Uid, st.Mode&0o7777, err, mode)
		}
	}
	return h, sock
}

func isSocketFile(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}

// crashtuiOut runs crashtui with args and returns its stdout, stderr and exit status.
func crashtuiOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(crashtuiBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// shape is what a --json output looks like, whatever the values: each kind of event in the
// order they first come, how many of each, and the fields each kind has.
func shape(evs []event) string {
	var order []string
	n := map[string]int{}
	fields := map[string]map[string]bool{}
	for _, e := range evs {
		k := e.kind()
		if n[k] == 0 {
			order = append(order, k)
			fields[k] = map[string]bool{}
		}
		n[k]++
		for f := range e {
			fields[k][f] = true
		}
	}
	var b strings.Builder
	for _, k := range order {
		var fs []string
		for f := range fields[k] {
			fs = append(fs, f)
		}
		sort.Strings(fs)
		fmt.Fprintf(&b, "%s x%d {%s}\n", k, n[k], strings.Join(fs, " "))
	}
	return b.String()
}

// TestControlSocketAnswersForItsJob: while crashtui attach --json holds a job (three ranks of
// demo/c/hang), crashtui stacks, matrix and checkpoint of one rank (pid:N) and of the whole
// job (pgid:N) are answered by it over its control socket: exit 0, no attach refusal, the
// holder's stream shows the samples, the measurement and the checkpoint it made for them (a
// checkpoint of one rank freezes that rank only), and the job stays traced by the holder. Then
// the holder quits and the same commands run directly: their output is the same text, and the
// same --json events.
func TestControlSocketAnswersForItsJob(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 3)
	pg := "pgid:" + strconv.Itoa(j.pgid)
	h, _ := startHolder(t, 3, "attach", "--json", pg)
	tracer := tracerPID(j.pids[0])
	one := "pid:" + strconv.Itoa(j.pids[1])
	cases := []struct {
		name string
		args []string
		pids []int
	}{
		{"stacks one rank", []string{"stacks", "--samples", "2", "--interval", "50ms", one}, j.pids[1:2]},
		{"stacks job", []string{"stacks", "--samples", "2", "--interval", "50ms", pg}, j.pids},
		{"matrix one rank", []string{"matrix", one}, j.pids[1:2]},
		{"matrix job", []string{"matrix", pg}, j.pids},
		{"matrix predicted", []string{"matrix", "--measure=false", pg}, j.pids},
		{"checkpoint one rank", []string{"checkpoint", one}, j.pids[1:2]},
		{"checkpoint job", []string{"checkpoint", pg}, j.pids},
	}
	type result struct{ text, json string }
	asked := map[string]result{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.snapshot())
			out, stderr, code := crashtuiOut(t, append([]string{tc.args[0], "--json"}, tc.args[1:]...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			evs := jsonEvents(t, []byte(out))
			checkAnswer(t, tc.args[0], evs, tc.pids)
			// The holder did it: its own stream has the events, for the asked processes only
			// where the command acts on them (a checkpoint's freeze).
			hevs := h.waitFor(t, "the holder's events of the request", 10*time.Second, func(evs []event) bool {
				if tc.args[1] == "--measure=false" {
					return true // a prediction is made from /proc by the asker: nothing stopped
				}
				for _, e := range evs[before:] {
					if k := e.kind(); k == "sample" || k == "matrix" || k == "thread" {
						return true
					}
				}
				return false
			})[before:]
			for _, e := range hevs {
				if e.kind() == "thread" && !slices.Contains(tc.pids, e.int("pid")) {
					t.Errorf("the holder's checkpoint froze pid %d, which was not asked for", e.int("pid"))
				}
				if e.kind() == "error" {
					t.Errorf("the holder failed: %v", e)
				}
			}
			for _, p := range j.pids {
				if tp := tracerPID(p); tp != tracer {
					t.Errorf("pid %d is traced by %d after the request, not by the holder's %d", p, tp, tracer)
				}
			}
			text, stderr, code := crashtuiOut(t, tc.args...)
			if code != 0 || strings.Contains(text, "not attached") {
				t.Fatalf("text: exit %d: %s\n%s", code, stderr, text)
			}
			asked[tc.name] = result{text, shape(evs)}
		})
	}
	if code, _ := h.stop(t); code != 0 {
		t.Fatalf("holder: exit %d", code)
	}
	for _, p := range j.pids {
		if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return tracerPID(p) == 0 }) {
			t.Fatalf("pid %d still traced after the holder quit", p)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name+" direct", func(t *testing.T) {
			out, stderr, code := crashtuiOut(t, append([]string{tc.args[0], "--json"}, tc.args[1:]...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			evs := jsonEvents(t, []byte(out))
			checkAnswer(t, tc.args[0], evs, tc.pids)
			if got, want := asked[tc.name].json, shape(evs); got != want {
				t.Errorf("--json through the socket:\n%s\ndirectly:\n%s", got, want)
			}
			text, stderr, code := crashtuiOut(t, tc.args...)
			if code != 0 {
				t.Fatalf("text: exit %d: %s", code, stderr)
			}
			if got := asked[tc.name].text; got != text {
				t.Errorf("text through the socket:\n%s\ndirectly:\n%s", got, text)
			}
		})
	}
}

// checkAnswer checks a one-shot command's --json events about pids: one process event each,
// the command's own events about them only, a clean summary last.
func checkAnswer(t *testing.T, cmd string, evs []event, pids []int) {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].kind() != "summary" {
		t.Fatalf("no summary last: %v", evs)
	}
	sum := evs[len(evs)-1]
	if sum.int("processes") != len(pids) || sum.int("errors") != 0 {
		t.Errorf("summary %v, want %d processes and no error", sum, len(pids))
	}
	got := processPIDs(evs)
	for _, p := range pids {
		if !got[p] {
			t.Errorf("no process event for pid %d", p)
		}
	}
	if len(got) != len(pids) || count(evs, "process") != len(pids) {
		t.Errorf("process events %v, want one each of %v", got, pids)
	}
	for _, e := range evs {
		switch e.kind() {
		case "error":
			t.Errorf("error event: %v", e)
		case "sample", "thread":
			if !slices.Contains(pids, e.int("pid")) {
				t.Errorf("%s event of pid %d, not asked for", e.kind(), e.int("pid"))
			}
		}
	}
	switch cmd {
	case "stacks":
		if n := count(evs, "sample"); n != 2*len(pids) {
			t.Errorf("%d sample events, want %d", n, 2*len(pids))
		}
		for _, e := range evs {
			if e.kind() == "sample" && e.int("seq") != 1 && e.int("seq") != 2 {
				t.Errorf("sample seq %d, want 1 or 2", e.int("seq"))
			}
		}
		if count(evs, "stacks") != 1 {
			t.Errorf("%d stacks events, want 1", count(evs, "stacks"))
		}
	case "matrix":
		if count(evs, "matrix") != 1 {
			t.Fatalf("%d matrix events, want 1", count(evs, "matrix"))
		}
		for _, e := range evs {
			if e.kind() == "matrix" {
				got, _ := e["pids"].([]any)
				cells, _ := e["cells"].([]any)
				if len(got) != len(pids) || len(cells) != len(pids)*(len(pids)-1) {
					t.Errorf("matrix of %v with %d cells, want %v and %d", got, len(cells), pids, len(pids)*(len(pids)-1))
				}
			}
		}
	case "checkpoint":
		tids := map[int]bool{}
		for _, e := range evs {
			if e.kind() == "thread" {
				tids[e.int("tid")] = true
				if e.int("checkpoint") != 1 {
					t.Errorf("thread event of checkpoint %d, want 1", e.int("checkpoint"))
				}
			}
		}
		for _, p := range pids {
			if !tids[p] {
				t.Errorf("no thread event for pid %d's main thread", p)
			}
		}
	}
}

// TestControlSocketOtherUser: a user who is neither root nor the holder's gets nothing from
// it: crashtui stacks as that user says who holds the job and whom it answers (exit 1), and
// the holder samples nothing.
func TestControlSocketOtherUser(t *testing.T) {
	needRoot(t)
	u := testuser.New(t)
	bin := filepath.Join(testuser.PublicDir(t), "crashtui")
	copyFile(t, crashtuiBin, bin, 0o755)
	j := startHung(t, buildC(t, "hang"), 2)
	h, _ := startHolder(t, 2, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	code, stderr := exitOf(t, u.Command(bin, "stacks", "--samples", "1", "pid:"+strconv.Itoa(j.pids[0])))
	want := fmt.Sprintf("crashtui pid %d", h.cmd.Process.Pid)
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "answers only root and uid 0") ||
		!strings.Contains(stderr, "you are uid "+strconv.Itoa(u.UID)) {
		t.Errorf("as uid %d: exit %d, stderr %q; want 1 and %q, whom it answers", u.UID, code, stderr, want)
	}
	if n := count(h.snapshot(), "sample"); n != 0 {
		t.Errorf("the holder sampled %d processes for another user", n)
	}
}

// TestControlSocketPeerCred: the holder itself checks who connects (SO_PEERCRED), whatever
// the directory lets through: a socket another user can reach (a copy of this test binary,
// run as that user, connects) answers an error naming the rule, and nothing else.
func TestControlSocketPeerCred(t *testing.T) {
	needRoot(t)
	u := testuser.New(t)
	dir := testuser.PublicDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "ctl.test")
	copyFile(t, self, client, 0o755)
	sock := filepath.Join(dir, "open.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	// No tracer behind it: a refused asker never reaches one.
	cs := &ctlServer{ln: ln, path: sock, sem: make(chan struct{}, 1)}
	go cs.accept()
	t.Cleanup(cs.stop)
	cmd := u.Command(client)
	cmd.Env = append(cmd.Env, ctlDialEnv+"="+sock)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client as uid %d: %v", u.UID, err)
	}
	evs := jsonEvents(t, out)
	if len(evs) != 2 || evs[0].kind() != "error" || evs[1].kind() != "summary" ||
		!strings.Contains(evs[0].str("message"), fmt.Sprintf("uid %d may not ask", u.UID)) ||
		!strings.Contains(evs[0].str("message"), "only root and uid 0 may") {
		t.Errorf("answer to uid %d: %s; want one error naming the rule, then the summary", u.UID, out)
	}
}

// TestControlSocketStale: a crashtui killed with SIGKILL leaves its socket behind, and lets
// go of the job (the kernel detaches); crashtui stacks then attaches directly, and the next
// crashtui that serves removes the dead one's socket. A socket named for a live process that
// is no crashtui (this test, tracing a sleep itself) is not believed: one that another process
// listens on is refused before a word is sent to it, and a stale one is removed, and crashtui
// stacks says who traces the job.
func TestControlSocketStale(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 2)
	pg := "pgid:" + strconv.Itoa(j.pgid)
	dead, sock := startHolder(t, 2, "attach", "--json", pg)
	dead.cmd.Process.Kill()
	<-dead.done
	if !isSocketFile(sock) {
		t.Fatalf("the killed crashtui left no socket at %s: nothing stale to test", sock)
	}
	for _, p := range j.pids {
		if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return tracerPID(p) == 0 }) {
			t.Fatalf("pid %d still traced after its crashtui was killed", p)
		}
	}
	out, stderr, code := crashtuiOut(t, "stacks", "--json", "--samples", "1", pg)
	if code != 0 {
		t.Fatalf("stacks after the holder died: exit %d: %s", code, stderr)
	}
	if evs := jsonEvents(t, []byte(out)); count(evs, "sample") != 2 || count(evs, "error") != 0 {
		t.Errorf("stacks after the holder died: %s", out)
	}
	live, liveSock := startHolder(t, 2, "attach", "--json", pg)
	if isSocketFile(sock) {
		t.Errorf("%s is still there once crashtui pid %d serves", sock, live.cmd.Process.Pid)
	}
	if out, stderr, code := crashtuiOut(t, "stacks", "--json", "--samples", "1", pg); code != 0 || count(jsonEvents(t, []byte(out)), "sample") != 2 {
		t.Errorf("stacks through the new holder: exit %d: %s\n%s", code, stderr, out)
	}

	// This test traces a sleep itself, and a socket bears its pid: first a name for the
	// live holder's socket (someone else listening there), then a stale one.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	tid := seizeFromThread(t, sleeper.Process.Pid)
	planted := filepath.Join(ctlRoot, ctlName(os.Getpid()))
	if err := os.Link(liveSock, planted); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(planted) })
	samples := count(live.snapshot(), "sample")
	_, stderr, code = crashtuiOut(t, "stacks", "--samples", "1", "pid:"+strconv.Itoa(sleeper.Process.Pid))
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("answered by pid %d", live.cmd.Process.Pid)) || !strings.Contains(stderr, "not believed") {
		t.Errorf("stacks of a sleep this test traces, its socket name another crashtui's: exit %d, %q; want 1, not believed", code, stderr)
	}
	if n := count(live.snapshot(), "sample"); n != samples {
		t.Errorf("the crashtui listening under another's name was asked for %d samples", n-samples)
	}
	os.Remove(planted)
	live.stop(t)
	plantStale(t, planted)
	_, stderr, code = crashtuiOut(t, "stacks", "--samples", "1", "pid:"+strconv.Itoa(sleeper.Process.Pid))
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("already traced by pid %d", tid)) {
		t.Errorf("stacks of a sleep this test traces: exit %d, %q; want 1, already traced by pid %d", code, stderr, tid)
	}
	if isSocketFile(planted) {
		t.Errorf("the stale %s was not removed", planted)
	}

	// A stale socket bearing the pid of one of the job's own processes (a dead crashtui's
	// pid, taken since) does not make that process a crashtui: it is sampled.
	plantStale(t, filepath.Join(ctlRoot, ctlName(j.pids[1])))
	out, stderr, code = crashtuiOut(t, "stacks", "--json", "--samples", "1", pg)
	if evs := jsonEvents(t, []byte(out)); code != 0 || count(evs, "sample") != 2 || count(evs, "error") != 0 {
		t.Errorf("stacks of a job whose rank %d has a stale socket's pid: exit %d: %s\n%s", j.pids[1], code, stderr, out)
	}
	if isSocketFile(filepath.Join(ctlRoot, ctlName(j.pids[1]))) {
		t.Errorf("the stale socket of pid %d was not removed", j.pids[1])
	}
}

// plantStale leaves a socket nobody listens on at path (removed at the end of the test).
func plantStale(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	t.Cleanup(func() { os.Remove(path) })
}

// seizeFromThread seizes pid from an OS thread of this test that ends with the test: its end
// detaches pid (the kernel's exit_ptrace). It returns the tracing thread's id.
func seizeFromThread(t *testing.T, pid int) int {
	t.Helper()
	tidc, errc, done := make(chan int, 1), make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := unix.PtraceSeize(pid); err != nil {
			errc <- err
			return
		}
		tidc <- unix.Gettid()
		<-done
	}()
	t.Cleanup(func() { close(done) })
	select {
	case err := <-errc:
		t.Fatalf("seize %d: %v", pid, err)
	case tid := <-tidc:
		return tid
	}
	return 0
}

// TestControlSocketRefusesCrashtuiItself: crashtui never samples or checkpoints a crashtui:
// stacks, matrix and checkpoint of pid:N of a running crashtui run (and of the bare N), and
// attach of it, exit 2 with an error that names the job to give instead (the ranks' process
// group), and the crashtui is never traced; the ranks' process group is answered through the
// socket.
func TestControlSocketRefusesCrashtuiItself(t *testing.T) {
	needRoot(t)
	h := startCrashtui(t, "run", "--json", "-n", "2", "--", "sleep", "60")
	evs := h.waitFor(t, "two ranks", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 2 })
	c := h.cmd.Process.Pid
	sock := filepath.Join(ctlRoot, ctlName(c))
	if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return isSocketFile(sock) }) {
		t.Fatalf("no control socket %s", sock)
	}
	var rank int
	for _, e := range evs {
		if e.kind() == "process" {
			rank = e.int("pid")
		}
	}
	g, err := syscall.Getpgid(rank)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"stacks", "pid:" + strconv.Itoa(c)},
		{"stacks", strconv.Itoa(c)},
		{"matrix", "--json", "pid:" + strconv.Itoa(c)},
		{"checkpoint", "pid:" + strconv.Itoa(c)},
		{"attach", "--json", "pid:" + strconv.Itoa(c)},
	} {
		out, stderr, code := crashtuiOut(t, args...)
		if code != 2 || !strings.Contains(stderr, fmt.Sprintf("is crashtui itself (pid %d", c)) ||
			!strings.Contains(stderr, fmt.Sprintf("pgid:%d", g)) || strings.Contains(out, "sample") {
			t.Errorf("%v: exit %d, %q; want 2, crashtui itself, pgid:%d", args, code, stderr, g)
		}
		if tp := tracerPID(c); tp != 0 {
			t.Errorf("%v: crashtui pid %d is traced by %d", args, c, tp)
		}
	}
	out, stderr, code := crashtuiOut(t, "stacks", "--json", "--samples", "1", "pgid:"+strconv.Itoa(g))
	if evs := jsonEvents(t, []byte(out)); code != 0 || count(evs, "sample") != 2 || count(evs, "error") != 0 {
		t.Errorf("stacks pgid:%d: exit %d: %s\n%s", g, code, stderr, out)
	}
	// --image is the checkpointing tracer's to write: refused before any file is made.
	img := filepath.Join(t.TempDir(), "image.json")
	if _, stderr, code := crashtuiOut(t, "checkpoint", "--image", img, "pgid:"+strconv.Itoa(g)); code != 2 || !strings.Contains(stderr, "cannot write its image here") {
		t.Errorf("checkpoint --image of a held job: exit %d, %q", code, stderr)
	}
	if _, err := os.Lstat(img); err == nil {
		t.Errorf("checkpoint --image of a held job left %s", img)
	}
}

// TestControlSocketHolderQuits: the holder quits (SIGINT) while crashtui stacks is taking its
// samples through it: the job is no longer traced, and the asker ends with exit 1, an error
// that says the holder went away and what to do, and its summary.
func TestControlSocketHolderQuits(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 2)
	pg := "pgid:" + strconv.Itoa(j.pgid)
	h, _ := startHolder(t, 2, "attach", "--json", pg)
	ask := exec.Command(crashtuiBin, "stacks", "--json", "--samples", "16", "--interval", "1s", pg)
	var stdout, stderr bytes.Buffer
	ask.Stdout, ask.Stderr = &stdout, &stderr
	w := startWaited(t, ask, syscall.SIGINT)
	h.waitFor(t, "two of the asker's samples", 20*time.Second, func(evs []event) bool { return count(evs, "sample") >= 4 })
	if code, _ := h.stop(t); code != 0 {
		t.Fatalf("holder: exit %d", code)
	}
	for _, p := range j.pids {
		if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return tracerPID(p) == 0 }) {
			t.Errorf("pid %d still traced after the holder quit", p)
		}
		if procState(p) != "S" {
			t.Errorf("pid %d is %q after the holder quit, not sleeping in its call", p, procState(p))
		}
	}
	select {
	case <-w.exited:
	case <-patience.After(20 * time.Second):
		t.Fatal("the asker did not end after its holder quit")
	}
	code := 0
	if ee, ok := w.err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 1 || !strings.Contains(stderr.String(), fmt.Sprintf("crashtui pid %d", h.cmd.Process.Pid)) ||
		!strings.Contains(stderr.String(), "went away before it answered") || !strings.Contains(stderr.String(), "run this command again") {
		t.Errorf("asker: exit %d, stderr %q; want 1 and that the holder went away", code, stderr.String())
	}
	evs := jsonEvents(t, stdout.Bytes())
	if len(evs) == 0 || evs[len(evs)-1].kind() != "summary" || count(evs, "sample") < 2 {
		t.Errorf("asker's output: %s; want its samples so far, then a summary", stdout.String())
	}
}

// TestControlSocketUserHolder: a crashtui of another user than root keeps its socket in a
// directory of that user's, 0700: $XDG_RUNTIME_DIR/crashtui, else $TMPDIR/crashtui-UID. Root
// and that user are answered there. A directory at that name that is not the user's is not
// used, and the session says why.
func TestControlSocketUserHolder(t *testing.T) {
	needRoot(t)
	u := testuser.New(t)
	bin := filepath.Join(testuser.PublicDir(t), "crashtui")
	copyFile(t, crashtuiBin, bin, 0o755)
	for _, tc := range []struct{ name, env, dir string }{
		{"XDG_RUNTIME_DIR", "XDG_RUNTIME_DIR", "crashtui"},
		{"TMPDIR", "TMPDIR", "crashtui-" + strconv.Itoa(u.UID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(u.Home, "run-"+tc.name)
			if err := os.Mkdir(base, 0o700); err != nil {
				t.Fatal(err)
			}
			u.Own(t, base)
			cmd := u.Command(bin, "run", "--json", "-n", "2", "--", "sleep", "60")
			var env []string
			for _, kv := range cmd.Env {
				if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(env, tc.env+"="+base)
			h := startCrashtuiCmd(t, cmd, syscall.SIGINT)
			evs := h.waitFor(t, "two ranks", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 2 })
			sock := filepath.Join(base, tc.dir, ctlName(h.cmd.Process.Pid))
			if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return isSocketFile(sock) }) {
				t.Fatalf("no control socket %s; stderr: %s", sock, h.stderr.String())
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Dir(sock), &st); err != nil || int(st.Uid) != u.UID || st.Mode&0o777 != 0o700 {
				t.Errorf("%s: uid %d mode %o (%v), want uid %d mode 0700", filepath.Dir(sock), st.Uid, st.Mode&0o777, err, u.UID)
			}
			var rank int
			for _, e := range evs {
				if e.kind() == "process" {
					rank = e.int("pid")
				}
			}
			g, err := syscall.Getpgid(rank)
			if err != nil {
				t.Fatal(err)
			}
			for _, who := range []struct {
				name string
				cmd  *exec.Cmd
			}{
				{"root", exec.Command(bin, "stacks", "--json", "--samples", "1", "pgid:"+strconv.Itoa(g))},
				{u.Name, u.Command(bin, "stacks", "--json", "--samples", "1", "pgid:"+strconv.Itoa(g))},
			} {
				var stderr bytes.Buffer
				who.cmd.Stderr = &stderr
				out, err := who.cmd.Output()
				if evs := jsonEvents(t, out); err != nil || count(evs, "sample") != 2 || count(evs, "error") != 0 {
					t.Errorf("stacks as %s: %v: %s\n%s", who.name, err, stderr.String(), out)
				}
			}
			// The holder answers an asker before its own stdout's copy of the samples reaches
			// this test (under load, by a whole batch): wait for the four, then count them.
			evs = h.waitFor(t, "the holder's four samples", 20*time.Second, func(evs []event) bool { return count(evs, "sample") >= 4 })
			if n := count(evs, "sample"); n != 4 {
				t.Errorf("the holder took %d process samples, want 2 for each asker", n)
			}
		})
	}
	// A control directory that is not the user's own (root made it first) is refused: no
	// socket, and the session says why.
	t.Run("another user's directory", func(t *testing.T) {
		base := filepath.Join(u.Home, "run-planted")
		if err := os.Mkdir(base, 0o700); err != nil {
			t.Fatal(err)
		}
		u.Own(t, base)
		planted := filepath.Join(base, "crashtui-"+strconv.Itoa(u.UID))
		if err := os.Mkdir(planted, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := u.Command(bin, "run", "--json", "--", "sleep", "60")
		var env []string
		for _, kv := range cmd.Env {
			if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, "TMPDIR="+base)
		h := startCrashtuiCmd(t, cmd, syscall.SIGINT)
		evs := h.waitFor(t, "the control socket's error", 20*time.Second, func(evs []event) bool {
			for _, e := range evs {
				if e.kind() == "error" && e.str("op") == "control" {
					return true
				}
			}
			return false
		})
		for _, e := range evs {
			if e.kind() == "error" && e.str("op") == "control" && !strings.Contains(e.str("message"), planted+" belongs to uid 0") {
				t.Errorf("control socket error %q does not say whose %s is", e.str("message"), planted)
			}
		}
		if ents, _ := os.ReadDir(planted); len(ents) != 0 {
			t.Errorf("crashtui wrote into root's %s: %v", planted, ents)
		}
	})
}

// TestControlSocketDemoAndAgent: crashtui demo and crashtui agent answer too. The demo's
// rank 0 (threads blocked in read, nanosleep, futex and poll) is sampled through the demo;
// an agent's events carry its host, and what the asker prints carries its own (none here).
func TestControlSocketDemoAndAgent(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 2)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"demo", []string{"demo", "--json", "--duration", "5m"}},
		{"agent", []string{"agent", "--json", "--host", "node7", "--matrix", "off", "--sample-every", "0", "pgid:" + strconv.Itoa(j.pgid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startCrashtui(t, tc.args...)
			evs := h.waitFor(t, "its processes", 30*time.Second, func(evs []event) bool { return count(evs, "process") >= 2 })
			sock := filepath.Join(ctlRoot, ctlName(h.cmd.Process.Pid))
			if !patience.Until(10*time.Second, 5*time.Millisecond, func() bool { return isSocketFile(sock) }) {
				t.Fatalf("no control socket %s; stderr: %s", sock, h.stderr.String())
			}
			rank := j.pids[0]
			for _, e := range evs {
				if tc.name == "demo" && e.kind() == "process" && e["rank"] == 0.0 {
					rank = e.int("pid")
				}
			}
			out, stderr, code := crashtuiOut(t, "stacks", "--json", "--samples", "1", "pid:"+strconv.Itoa(rank))
			if code != 0 {
				t.Fatalf("stacks of pid %d held by %s: exit %d: %s", rank, tc.name, code, stderr)
			}
			got := jsonEvents(t, []byte(out))
			checkOne := func(kind string, want int) {
				if n := count(got, kind); n != want {
					t.Errorf("%d %s events, want %d: %s", n, kind, want, out)
				}
			}
			checkOne("process", 1)
			checkOne("sample", 1)
			checkOne("error", 0)
			for _, e := range got {
				if e.str("host") != "" {
					t.Errorf("an event with host %q: the asker's own events have none", e.str("host"))
				}
				if e.kind() == "sample" {
					if th, _ := e["threads"].([]any); e.int("pid") != rank || len(th) == 0 {
						t.Errorf("sample of pid %d with %d threads, want pid %d's", e.int("pid"), len(th), rank)
					}
				}
			}
		})
	}
}

// TestControlSocketSkipsCrashtuiInJob: a crashtui inside a JOB (a crashtui view in the job's
// process group) is left out, the log says why, and the rest of the job is sampled, measured
// or attached.
func TestControlSocketSkipsCrashtuiInJob(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 1)
	view := exec.Command(crashtuiBin, "view", "--json")
	view.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: j.pgid}
	in, err := view.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := startWaited(t, view, 0)
	t.Cleanup(func() { in.Close() }) // view ends at the end of its input
	for _, args := range [][]string{
		{"stacks", "--json", "--samples", "1", "pgid:" + strconv.Itoa(j.pgid)},
		{"matrix", "--json", "pgid:" + strconv.Itoa(j.pgid)},
	} {
		out, stderr, code := crashtuiOut(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		evs := jsonEvents(t, []byte(out))
		if got := processPIDs(evs); len(got) != 1 || !got[j.pids[0]] {
			t.Errorf("%v: processes %v, want only the rank %d", args, got, j.pids[0])
		}
		said := false
		for _, e := range evs {
			if e.kind() == "error" && e.int("pid") == view.Process.Pid && strings.Contains(e.str("message"), "is a crashtui") {
				said = true
			}
		}
		if !said {
			t.Errorf("%v: no event says crashtui view (pid %d) was left out: %s", args, view.Process.Pid, out)
		}
	}
	h := startCrashtui(t, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	evs := h.waitFor(t, "the rank, and why the view is left out", 20*time.Second, func(evs []event) bool {
		return count(evs, "process") >= 1 && count(evs, "error") >= 1
	})
	if got := processPIDs(evs); len(got) != 1 || !got[j.pids[0]] || tracerPID(view.Process.Pid) != 0 {
		t.Errorf("attach: processes %v, the view traced by %d; want only the rank %d", got, tracerPID(view.Process.Pid), j.pids[0])
	}
	h.stop(t)
	select {
	case <-w.exited:
		t.Errorf("crashtui view ended while the job was traced: %v", w.err)
	default:
	}
}
