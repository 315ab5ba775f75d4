package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"golang.org/x/sys/unix"
)

// jsonProc is a crashtui --json command started by a test, its events read as they come.
type jsonProc struct {
	cmd    *exec.Cmd
	events chan event
	exited chan struct{}
	err    error
	stderr bytes.Buffer // what crashtui said there; read once exited is closed
	reads  gapReader    // read once exited is closed
}

// gapReader reads r and keeps the longest time between two reads that returned data (and
// when it ended), and the longest this side went without calling read at all (and when that
// ended): whether this side took nothing for long, when crashtui says so, and whether this
// process was run meanwhile.
type gapReader struct {
	r                  io.Reader
	last, returned     time.Time
	gap, idle          time.Duration
	gapEnded, idleDone time.Time
}

func (g *gapReader) Read(b []byte) (int, error) {
	called := time.Now()
	if !g.returned.IsZero() && called.Sub(g.returned) > g.idle {
		g.idle, g.idleDone = called.Sub(g.returned), called
	}
	n, err := g.r.Read(b)
	now := time.Now()
	g.returned = now
	if n > 0 {
		if !g.last.IsZero() && now.Sub(g.last) > g.gap {
			g.gap, g.gapEnded = now.Sub(g.last), now
		}
		g.last = now
	}
	return n, err
}

func startJSON(t *testing.T, args ...string) *jsonProc {
	t.Helper()
	p := &jsonProc{cmd: exec.Command(crashtuiBin, args...), events: make(chan event, 1<<16), exited: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.reads.r = out
	go func() {
		sc := bufio.NewScanner(&p.reads)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil { // its length and end: a matrix's line is megabytes
				l := sc.Bytes()
				e = event{"event": "unparsable", "bytes": len(l), "end": string(l[max(0, len(l)-80):])}
			}
			p.events <- e
		}
		close(p.events)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		case <-patience.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// readerNotRun says whether a cut --json stream is crashtui letting go a reader this test
// process did not run: crashtui said it stopped waiting, and the reader called no read for
// as long as crashtui waits. crashtui lets a reader go that takes nothing for two seconds of
// crashtui's own running once told to stop; this VM, loaded, stops processes for 10-90 s
// ("workqueue lockup" in its kernel log). Such a cut is crashtui doing as it must: not
// judged.
func readerNotRun(stderr string, idle time.Duration) bool {
	return strings.Contains(stderr, "stopped waiting") && idle >= 2*time.Second
}

// exit waits for the exit and returns the status and every event not yet taken.
func (p *jsonProc) exit(t *testing.T, timeout time.Duration) (int, []event) {
	t.Helper()
	var rest []event
	deadline := patience.After(timeout)
	for {
		select {
		case e, ok := <-p.events:
			if ok {
				rest = append(rest, e)
				continue
			}
			<-p.exited
			code := 0
			if ee, ok := p.err.(*exec.ExitError); ok {
				code = ee.ExitCode()
				if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
					t.Errorf("crashtui died of %v", ws.Signal())
				}
			}
			return code, rest
		case <-deadline:
			t.Fatalf("crashtui did not exit within %v", timeout)
		}
	}
}

// checkJobIntact asserts that every process of the job is alive, running (not stopped, not
// traced) and that none has gone from the group.
func checkJobIntact(t *testing.T, j *job, pids []int) {
	t.Helper()
	for _, pid := range pids {
		switch st := procState(pid); st {
		case "", "Z", "X":
			t.Errorf("job process %d died (state %q)", pid, st)
		case "t", "T":
			t.Errorf("job process %d left stopped (state %s)", pid, st)
		}
		if tp := tracerPID(pid); tp != 0 {
			t.Errorf("job process %d still traced by %d", pid, tp)
		}
	}
	if now := pgroupPIDs(j.pgid); len(now) != len(pids) {
		t.Errorf("%d processes in the job's group, %d before crashtui", len(now), len(pids))
	}
}

// SIGTERM while `crashtui matrix` is measuring (a job process is in ptrace stop t, crashtui
// injecting syscalls into it): crashtui finishes the measurement, detaches and exits 0 with
// the summary last; every one of the 100 processes is still alive, running and untraced.
// Without signal handling crashtui died mid-injection and the process it held died of SIGTRAP.
func TestMatrixSignalDetaches(t *testing.T) {
	needRoot(t)
	const n = 100
	j := startJob(t, n)
	pids := pgroupPIDs(j.pgid)
	if len(pids) != n {
		t.Fatalf("%d processes in the job's group, want %d", len(pids), n)
	}
	p := startJSON(t, "matrix", "--json", "pgid:"+strconv.Itoa(j.pgid))

	// Every process announced: the attach is done and the measurement begins.
	procs := 0
	deadline := patience.After(30 * time.Second)
	for procs < n {
		select {
		case e, ok := <-p.events:
			if !ok {
				t.Fatalf("crashtui ended after %d process events", procs)
			}
			if e.kind() == "process" {
				procs++
			}
		case <-deadline:
			t.Fatalf("%d process events in 30 s", procs)
		}
	}
	// The trigger is a condition: a job process in ptrace stop (/proc cannot be waited on,
	// so it is polled).
	stopped := 0
	for end := patience.New(30 * time.Second); stopped == 0; {
		for _, pid := range pids {
			if procState(pid) == "t" {
				stopped = pid
				break
			}
		}
		if stopped == 0 {
			if end.Passed() {
				t.Fatal("no job process was ever seen in ptrace stop")
			}
			time.Sleep(time.Millisecond) // the machine's CPUs are crashtui's and the reader's too
			select {
			case <-p.exited:
				t.Fatal("crashtui ended before a job process was seen in ptrace stop")
			default:
			}
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	code, rest := p.exit(t, 60*time.Second)
	if code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	if len(rest) == 0 || rest[len(rest)-1].kind() != "summary" {
		var kinds []string
		for _, e := range rest {
			kinds = append(kinds, e.kind())
		}
		last := event{}
		if len(rest) > 0 {
			last = rest[len(rest)-1]
		}
		why := fmt.Sprintf("the last event after SIGTERM is not the summary: %d events (%s), the last %v; crashtui's stderr: %q; "+
			"this side's longest wait between reads that returned data: %v, to %s; its longest without calling read: %v, to %s",
			len(rest), strings.Join(kinds, " "), last, p.stderr.String(), p.reads.gap, p.reads.gapEnded.Format("15:04:05.000"),
			p.reads.idle, p.reads.idleDone.Format("15:04:05.000"))
		if readerNotRun(p.stderr.String(), p.reads.idle) {
			t.Logf("not judged: this machine did not run the test's reader: %s", why)
		} else {
			t.Error(why)
		}
	}
	t.Logf("SIGTERM with %d in ptrace stop; %d events after it", stopped, len(rest))
	checkJobIntact(t, j, pids)
}

// `crashtui attach --json JOB | head -1`: the reader takes one line and closes the pipe while
// crashtui holds the job, and the job then forks 10 more workers (events to write). crashtui
// must not die of SIGPIPE: it notices the closed reader (POLLERR on its stdout, or EPIPE from
// a write), detaches and exits 0; every process, the new ones included, runs on untraced.
func TestAttachJSONClosedReader(t *testing.T) {
	needRoot(t)
	j := startJob(t, 6)
	cmd := exec.Command(crashtuiBin, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	proc := startWaited(t, cmd, 0)
	w.Close()
	exited := proc.exited
	line, err := bufio.NewReader(r).ReadString('\n') // head -1
	if err != nil || !strings.Contains(line, `"event":"process"`) {
		t.Fatalf("first line %q: %v", line, err)
	}
	r.Close()
	syscall.Kill(j.pgid, syscall.SIGUSR2) // the leader forks 10 more workers
	j.waitLines(t, "ready", 10)

	select {
	case <-exited:
		if ee, ok := proc.err.(*exec.ExitError); ok {
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
				t.Errorf("crashtui died of %v", ws.Signal())
			} else {
				t.Errorf("crashtui exited %d, want 0: %s", ee.ExitCode(), stderr.String())
			}
		} else if proc.err != nil {
			t.Fatal(proc.err)
		}
	case <-patience.After(30 * time.Second):
		t.Fatal("crashtui still running 30 s after its reader went away")
	}
	pids := pgroupPIDs(j.pgid)
	if len(pids) != 6+10 {
		t.Errorf("%d processes in the job, want 16", len(pids))
	}
	checkJobIntact(t, j, pids)
}

// pipeBytes is how much is waiting in a pipe (FIONREAD).
func pipeBytes(t *testing.T, r *os.File) int {
	t.Helper()
	n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blockedWriting says whether a thread of pid is in write(fd, …): blocked there, as
// /proc/TID/syscall shows a thread in a call ("running" for one that is not in any).
func blockedWriting(pid, fd int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, tk := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, tk.Name()))
		f := strings.Fields(string(b))
		if err != nil || len(f) < 2 {
			continue
		}
		nr, err1 := strconv.Atoi(f[0])
		arg, err2 := strconv.ParseUint(f[1], 0, 64)
		if err1 == nil && err2 == nil && nr == unix.SYS_WRITE && arg == uint64(fd) {
			return true
		}
	}
	return false
}

// startToPipe starts crashtui ARGS with its stdout a pipe of size bytes (got: the size the
// kernel gave it) that nobody reads yet: the test reads r as slowly as it likes (r is closed
// at the end).
func startToPipe(t *testing.T, size int, args ...string) (r *os.File, got int, proc *waitedProc, stderr *strings.Builder) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if got, err = unix.FcntlInt(r.Fd(), unix.F_SETPIPE_SZ, size); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(crashtuiBin, args...)
	cmd.Stdout = w
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	proc = startWaited(t, cmd, 0)
	w.Close()
	return r, got, proc, stderr
}

// A --json reader that does not read (a pager, "| sleep 15") must not stall the job. crashtui's
// stdout is a pipe the test does not read; the job's leader forks 10 workers per SIGUSR2 (each
// fork a ptrace event the tracer must answer before the leader runs on) until the pipe is full.
// Then, twice a second apart, the job must still fork its 10 workers: before, the tracer
// blocked writing JSON and held the leader in its fork stop. Then the reader reads: crashtui
// detaches on SIGINT and every event arrives, in order, with the summary last.
func TestJSONSlowReaderDoesNotStallTheJob(t *testing.T) {
	needRoot(t)
	j := startJob(t, 4)
	// A pipe of one page fills with a few dozen events. Filling the default 64 KiB took
	// about 400 workers and 700 threads, each waking every 5 ms; under the race detector,
	// beside another package's tests, the machine crawled (crashtui's loop handled about 10
	// events a second, with the code of 7fbaabd too) and the test timed out.
	r, size, proc, stderr := startToPipe(t, os.Getpagesize(), "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	cmd := proc.cmd
	exited := proc.exited
	// The attach is done once the 4 process events are in the pipe (polled: a pipe's fill
	// cannot be waited on without reading it).
	for end := patience.New(20 * time.Second); pipeBytes(t, r) < 4*100; {
		if end.Passed() {
			t.Fatalf("no events from crashtui in 20 s; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	grow := func(what string) {
		t.Helper()
		syscall.Kill(j.pgid, syscall.SIGUSR2) // the leader only (pid = pgid)
		t.Logf("%s: SIGUSR2, %d bytes unread in crashtui's stdout", what, pipeBytes(t, r))
		j.waitLines(t, "forked", 1)
		j.waitLines(t, "ready", 10)
	}
	forks := 0
	// Full once crashtui blocks writing to it: a write that does not fit the page's free
	// bytes waits whole (a batch of events, 3055 bytes in, never reached 3/4 of the page).
	full := func() bool { return pipeBytes(t, r) >= size*3/4 || blockedWriting(proc.cmd.Process.Pid, 1) }
	for rounds := 0; !full(); rounds++ {
		if rounds == 200 {
			t.Fatalf("crashtui's stdout still not full after %d forks", forks)
		}
		grow("filling")
		forks += 10
	}
	grow("stdout full, unread")
	time.Sleep(time.Second) // the second look is a second later, the pipe still unread
	grow("a second later")
	forks += 20

	var evs []event
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				e = event{"event": "unparsable", "line": sc.Text()}
			}
			evs = append(evs, e)
		}
	}()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-patience.After(60 * time.Second):
		t.Fatal("crashtui did not exit 60 s after SIGINT")
	}
	<-read
	if proc.err != nil {
		t.Errorf("crashtui: %v; stderr: %s", proc.err, stderr.String())
	}
	if len(evs) == 0 || count(evs, "unparsable") != 0 || count(evs, "summary") != 1 || evs[len(evs)-1].kind() != "summary" {
		t.Fatalf("%d events, %d unparsable, %d summaries, the last not the summary", len(evs), count(evs, "unparsable"), count(evs, "summary"))
	}
	if n := len(processPIDs(evs)); n != 4+forks {
		t.Errorf("%d processes in the events, the job had %d", n, 4+forks)
	}
	last := time.Time{}
	for _, e := range evs {
		at, err := time.Parse(time.RFC3339Nano, e.str("time"))
		if err != nil || at.Before(last) {
			t.Fatalf("event out of order or without time: %v", e)
		}
		last = at
	}
	checkJobIntact(t, j, pgroupPIDs(j.pgid))
}

// TestSlowReaderGetsTheLongLineWhole: `crashtui matrix --json`, told to stop while it
// measures, then writes one long line (the matrix: 380 cells, about 150 kB) to a reader that
// takes 4 KiB every 100 ms, seconds in all. That reader is slow, not stalled: crashtui waits
// for it, and it gets the matrix whole and the summary last. Before, crashtui counted only
// whole events as the reader's progress, gave up after two seconds inside the long line and
// cut it (TestMatrixSignalDetaches failed so beside two CPU hogs).
func TestSlowReaderGetsTheLongLineWhole(t *testing.T) {
	needRoot(t)
	const n = 20
	j := startJob(t, n)
	pids := pgroupPIDs(j.pgid)
	r, _, proc, stderr := startToPipe(t, 4096, "matrix", "--json", "pgid:"+strconv.Itoa(j.pgid))
	cmd := proc.cmd

	var out bytes.Buffer
	read := make(chan error, 1)
	measuring := make(chan struct{})
	var idle time.Duration // the longest between two read calls, beyond the reader's 100 ms pause; read after read
	go func() {
		buf := make([]byte, 4096)
		told := false
		var last time.Time
		for {
			if !last.IsZero() {
				idle = max(idle, time.Since(last)-100*time.Millisecond)
			}
			last = time.Now()
			k, err := r.Read(buf)
			out.Write(buf[:k])
			if !told && bytes.Contains(out.Bytes(), []byte(`"event":"matrix_progress"`)) {
				told = true
				close(measuring)
			}
			if err != nil {
				read <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	select {
	case <-measuring:
	case <-proc.exited:
		t.Fatalf("crashtui ended before measuring; stderr: %s", stderr.String())
	case <-patience.After(60 * time.Second):
		t.Fatal("no matrix_progress in 60 s")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-proc.exited:
	case <-patience.After(120 * time.Second):
		t.Fatal("crashtui did not exit 120 s after SIGTERM")
	}
	<-read
	if proc.err != nil {
		t.Errorf("crashtui: %v; stderr: %s", proc.err, stderr.String())
	}
	var kinds []string
	longest := 0
	for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var e event
		if err := json.Unmarshal(l, &e); err != nil {
			if readerNotRun(stderr.String(), idle) {
				t.Logf("not judged: this machine did not run the test's reader for %v; crashtui's stderr: %s", idle, stderr.String())
				checkJobIntact(t, j, pids)
				return
			}
			t.Fatalf("a line of %d bytes does not parse (%v): %.200s\ncrashtui's stderr: %s (the reader's longest between two reads, beyond its pause: %v)",
				len(l), err, l, stderr.String(), idle)
		}
		kinds = append(kinds, e.kind())
		longest = max(longest, len(l))
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != "summary" || !slices.Contains(kinds, "matrix") {
		t.Fatalf("events %v: want the matrix, and the summary last", kinds)
	}
	if longest < 30*4096 { // 30 reads: 3 s at the reader's pace
		t.Fatalf("the longest line is %d bytes: too short to take the reader over two seconds", longest)
	}
	t.Logf("%d events, the longest line %d bytes", len(kinds), longest)
	checkJobIntact(t, j, pids)
}

// TestSignalWithStuckReader: `crashtui attach --json` whose reader never reads (its pipe
// full) still detaches and exits when told to: SIGINT gives the reader two seconds, a second
// SIGINT ends it at once; both times the job is left intact, and crashtui says on stderr that
// the rest of its output is not written.
func TestSignalWithStuckReader(t *testing.T) {
	needRoot(t)
	for _, signals := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d SIGINT", signals), func(t *testing.T) {
			j, pids, cmd, proc, stderr, _ := startStuckReader(t)
			start := time.Now()
			for i := 0; i < signals; i++ {
				cmd.Process.Signal(os.Interrupt)
				time.Sleep(50 * time.Millisecond)
			}
			select {
			case <-proc.exited:
			case <-patience.After(20 * time.Second):
				t.Fatal("crashtui still running 20 s after SIGINT, its reader stuck")
			}
			// The second SIGINT cuts short crashtui's two seconds for the reader: on a quiet
			// machine it ends within milliseconds. On a loaded one its exit itself can take
			// seconds, so the time says nothing there: measured, not judged.
			if took := time.Since(start); signals == 2 && took > 1500*time.Millisecond {
				if f := patience.Factor(); f > 1 {
					t.Logf("a second SIGINT took %v to end crashtui, on a machine %.1f times as loaded as it has CPUs: not judged", took, f)
				} else {
					t.Errorf("a second SIGINT took %v to end crashtui on a quiet machine (it cuts short a 2 s wait)", took)
				}
			}
			if ee, ok := proc.err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
				t.Errorf("crashtui died of %v", ee.Sys().(syscall.WaitStatus).Signal())
			}
			if !strings.Contains(stderr.String(), "bytes left in its pipe) after crashtui was told to stop") {
				t.Errorf("crashtui did not say how much its stuck reader left in the pipe; its stderr: %q", stderr.String())
			}
			if !strings.Contains(stderr.String(), "the rest of its output (the summary last) is not written") {
				t.Errorf("crashtui let its stuck reader go without saying that output was lost; its stderr: %q", stderr.String())
			}
			checkJobIntact(t, j, pids)
		})
	}
}

// TestReaderAfterAPause: told to stop while its reader has not read, crashtui waits for the
// reader two seconds of its own running, not of the clock: a time crashtui is not run (a VM
// its host stops, as this loaded one stopped processes for 10-90 s, its kernel saying
// "workqueue lockup"; a laptop suspended) does not use up the reader's time. Before, one 2 s
// timer ran out in such a pause, and crashtui's first look after it, before the reader had
// had its turn, let the reader go. The test stops crashtui (SIGSTOP) for 3 s half a second
// into that wait, and reads 200 ms after it is continued: it gets everything, the summary
// last (before: a cut stream, 2 runs of 2).
func TestReaderAfterAPause(t *testing.T) {
	needRoot(t)
	j, pids, cmd, proc, stderr, r := startStuckReader(t)
	cmd.Process.Signal(os.Interrupt)
	// It detaches, then waits for its reader.
	for deadline := patience.New(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		traced := 0
		for _, pid := range pids {
			if tracerPID(pid) > 0 {
				traced++
			}
		}
		if traced == 0 {
			break
		}
		if deadline.Passed() {
			t.Fatalf("%d job processes still traced 20 s after SIGINT", traced)
		}
	}
	time.Sleep(500 * time.Millisecond)
	select {
	case <-proc.exited:
		t.Fatalf("crashtui exited before its reader read: %v; its stderr: %q", proc.err, stderr.String())
	default:
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT) }) // never left stopped
	time.Sleep(3 * time.Second)
	cmd.Process.Signal(syscall.SIGCONT)
	cont := time.Now()
	time.Sleep(200 * time.Millisecond)
	began := time.Since(cont)
	out, _ := io.ReadAll(r) // to crashtui's exit
	select {
	case <-proc.exited:
	case <-patience.After(20 * time.Second):
		t.Fatal("crashtui still running 20 s after its reader read all")
	}
	// crashtui has some 1.4 s of looks left once continued: a reader this machine did not
	// run for a second of them is not the one this test is about.
	if strings.Contains(stderr.String(), "stopped waiting") && began >= time.Second {
		t.Logf("not judged: the test's reader began %v after crashtui was continued, not 200 ms; crashtui's stderr: %q", began, stderr.String())
		checkJobIntact(t, j, pids)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"event":"summary"`) {
		t.Errorf("the reader got %d lines, the last %.200q, not the summary; crashtui's stderr: %q", len(lines), last, stderr.String())
	}
	if strings.Contains(stderr.String(), "stopped waiting") {
		t.Errorf("crashtui let its reader go: %q", stderr.String())
	}
	checkJobIntact(t, j, pids)
}

// startStuckReader starts `crashtui attach --json` on a job of 40 processes, its stdout a
// 4 KiB pipe that is never read, and returns once every process is traced and the pipe has
// held the same number of unread bytes for 300 ms: full (40 processes' events are more than
// it holds), crashtui blocked on its output. It returns the job, its pids, crashtui, its
// stderr and the pipe's read end (closed at cleanup).
func startStuckReader(t *testing.T) (*job, []int, *exec.Cmd, *waitedProc, *strings.Builder, *os.File) {
	t.Helper()
	j := startJob(t, 40)
	pids := pgroupPIDs(j.pgid)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096)
	cmd := exec.Command(crashtuiBin, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	cmd.Stdout = w
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	proc := startWaited(t, cmd, 0)
	w.Close()
	for deadline := patience.New(10 * time.Second); !deadline.Passed(); time.Sleep(10 * time.Millisecond) {
		all := true
		for _, pid := range pids {
			all = all && tracerPID(pid) > 0
		}
		if all {
			break
		}
	}
	last, since := -1, time.Now()
	for deadline := patience.New(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, _ := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if n != last {
			last, since = n, time.Now()
		}
		if n > 0 && time.Since(since) > 300*time.Millisecond {
			return j, pids, cmd, proc, stderr, r
		}
		if deadline.Passed() {
			t.Fatalf("%d bytes in the pipe after 10 s: not full", n)
		}
	}
}

// TestSignalAtStartup: SIGINT in crashtui's first moments makes it exit on its own, leaving
// nothing traced (before, its handlers came after flag parsing, and a SIGINT in its first ~50
// ms killed it). No program can catch a signal before the Go runtime and every package's init
// have run, and on a loaded machine that is any number of milliseconds after its exec. So each
// trial waits until crashtui's own init is over (GODEBUG=inittrace=1: the runtime prints
// "init main @..." when the main package's init, which installs the handlers, returns) and
// signals it i ms later, i from 0 to 38: through the job's resolution and attach. (It waited
// for twice the CPU time `crashtui version` takes before, and a loaded run signalled one
// crashtui before its init was over.)
func TestSignalAtStartup(t *testing.T) {
	needRoot(t)
	j := startJob(t, 3)
	pids := pgroupPIDs(j.pgid)
	for i := 0; i < 40; i += 2 {
		cmd := exec.Command(crashtuiBin, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		inited := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			for done := false; sc.Scan(); {
				if !done && strings.HasPrefix(sc.Text(), "init main @") {
					done = true
					close(inited)
				}
			}
		}()
		select {
		case <-inited:
		case <-patience.After(10 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("trial %d: crashtui's init did not end in 10 s", i)
		}
		time.Sleep(time.Duration(i) * time.Millisecond)
		cmd.Process.Signal(os.Interrupt)
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("trial %d: crashtui died of %v %d ms after its init", i, ee.Sys().(syscall.WaitStatus).Signal(), i)
		}
	}
	checkJobIntact(t, j, pids)
}

// TestEmitNeverWaitsForTheScreen: the tracer's Emit (session.emit) returns while the State's
// lock is held, as the TUI holds it for a whole frame: a slow screen never keeps the tracer,
// and so a tracee at its stop, waiting. The events are applied once the lock is let go.
func TestEmitNeverWaitsForTheScreen(t *testing.T) {
	s, err := newSession(&common{json: true}, io.Discard, "test", "attach")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock() // a frame being drawn
	done := make(chan struct{})
	go func() {
		for i := 0; i < 1000; i++ {
			s.emit(sessions.Event{Time: time.Now(), Body: sessions.Error{Op: "test", Message: "x"}})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-patience.After(30 * time.Second):
		t.Fatal("emit waited for the State's lock")
	}
	s.mu.Unlock()
	s.settle()
	s.mu.Lock()
	n := len(s.state.Errors)
	s.mu.Unlock()
	if n != 1000 {
		t.Errorf("%d of 1000 events applied", n)
	}
	s.finish("")
}

// TestTheScreenIsToldNotHanded: a TUI session tells the screen that its State changed, one
// pending wake however many events came while the screen was busy (it reads the State
// itself), never waiting for it; finish closes the channel, and a change noted after that
// (the guest's session kept for reading) is dropped, not a panic.
func TestTheScreenIsToldNotHanded(t *testing.T) {
	s, err := newSession(&common{}, io.Discard, "test", "attach")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		s.emit(sessions.Event{Time: time.Now(), Body: sessions.Error{Op: "test", Message: "x"}})
		if i%100 == 0 {
			s.settle() // a batch of its own: a wake each, all but the first found pending
		}
	}
	s.settle()
	if got := len(s.changes.ch); got != 1 {
		t.Errorf("%d wakes pending, want 1", got)
	}
	<-s.changes.ch
	s.finish("") // its summary is a change too: at most one wake, then the close
	closed := false
	for i := 0; i < 2 && !closed; i++ {
		select {
		case _, open := <-s.changes.ch:
			closed = !open
		case <-patience.After(30 * time.Second):
			t.Fatal("finish did not close the channel")
		}
	}
	if !closed {
		t.Error("two wakes after finish: the channel is not closed")
	}
	s.changes.note() // must not send on the closed channel
	s.mu.Lock()
	n := len(s.state.Errors)
	s.mu.Unlock()
	if n != 1000 {
		t.Errorf("%d of 1000 events applied", n)
	}
}

// slowBody is an event that takes crashtui until release is closed to write, as a
// 100-process matrix with its sentences takes seconds on a loaded machine.
type slowBody struct{ release chan struct{} }

func (slowBody) Kind() sessions.Kind { return "slow" }

func (b slowBody) MarshalJSON() ([]byte, error) {
	<-b.release
	return []byte(`{"slow":true}`), nil
}

// pipeOnly is a pipe's write end as a plain io.Writer: the session does not watch it for its
// reader (watchReader reads the *os.File's descriptor, which the test's Close would race).
type pipeOnly struct{ io.Writer }

// linesToSummary reads r's lines (up to 1 MiB each) until the summary's, and sends them all
// once it has read that one, or r has ended.
func linesToSummary(r io.Reader) <-chan []string {
	read := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), `"event":"summary"`) {
				break
			}
		}
		read <- lines
	}()
	return read
}

// TestFinishWaitsForItsOwnWriting: told to stop, finish lets a reader that takes nothing for
// two seconds go, but not while crashtui itself is still writing an event: a reader that
// reads all along gets everything, the summary last. (Beside two CPU hogs, the matrix of
// TestMatrixSignalDetaches took crashtui more than two seconds to write: crashtui exited in
// the middle of its line, without the summary.)
func TestFinishWaitsForItsOwnWriting(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	s, err := newSession(&common{json: true}, pipeOnly{w}, "test", "attach")
	if err != nil {
		t.Fatal(err)
	}
	s.stop = &stopSignals{make(chan struct{}), make(chan struct{})}
	close(s.stop.first) // told to stop
	read := linesToSummary(r)
	release := make(chan struct{})
	time.AfterFunc(3*time.Second, func() { close(release) }) // past finish's two seconds
	s.emit(sessions.Event{Time: time.Now(), Body: slowBody{release}})
	s.finish("")
	select {
	case <-s.written:
	default:
		t.Fatal("finish returned while crashtui was still writing an event")
	}
	select {
	case lines := <-read:
		if len(lines) != 2 || !strings.Contains(lines[0], `"slow":true`) || !strings.Contains(lines[1], `"event":"summary"`) {
			t.Errorf("the reader got %q, want the slow event, then the summary", lines)
		}
	case <-patience.After(30 * time.Second):
		t.Fatal("the reader never got the summary")
	}
}

// pausingWriter is a pipe's write end whose second write waits until release is closed: a
// crashtui writer left unscheduled between two chunks of a long line, as a loaded machine
// leaves it.
type pausingWriter struct {
	w       io.Writer
	writes  *int
	release chan struct{}
}

func (p pausingWriter) Write(b []byte) (int, error) {
	if *p.writes++; *p.writes == 2 {
		<-p.release
	}
	return p.w.Write(b)
}

// bigBody is an event whose line is n bytes long, written in many chunks.
type bigBody struct{ n int }

func (bigBody) Kind() sessions.Kind { return "big" }

func (b bigBody) MarshalJSON() ([]byte, error) {
	return []byte(`{"big":"` + strings.Repeat("x", b.n) + `"}`), nil
}

// TestFinishWaitsInsideItsOwnWrite: told to stop, finish does not let go of a reader that
// has taken everything written so far while crashtui's writer, inside a long line, has not
// written its next chunk for three seconds. The reader's pipe is empty: the wait is
// crashtui's own. (Beside two CPU hogs, TestMatrixSignalDetaches got its 2.3 MB matrix line
// cut at 128 KiB, crashtui saying the reader took nothing for 2 s; the reader had not been
// given anything to take.) A reader that leaves bytes in its pipe is let go:
// TestSignalWithStuckReader.
func TestFinishWaitsInsideItsOwnWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	var stderr strings.Builder
	release := make(chan struct{})
	writes := 0
	s, err := newSession(&common{json: true, stderr: &stderr}, pausingWriter{w, &writes, release}, "test", "attach")
	if err != nil {
		t.Fatal(err)
	}
	s.unread = unreadOf(w) // what crashtui reads of its stdout's pipe
	if n := s.unread(); n != 0 {
		t.Fatalf("a new pipe holds %d unread bytes by unreadOf, want 0", n)
	}
	// A socket's count is of crashtui's own side: 0 there says nothing of its reader.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(fds[0]), "sock"), os.NewFile(uintptr(fds[1]), "peer")
	t.Cleanup(func() { sock.Close(); peer.Close() })
	if n := unreadOf(sock)(); n != -1 {
		t.Errorf("unreadOf(a socket) = %d, want -1 (unknown)", n)
	}
	s.stop = &stopSignals{make(chan struct{}), make(chan struct{})}
	close(s.stop.first) // told to stop
	read := linesToSummary(r)
	time.AfterFunc(3*time.Second, func() { close(release) }) // past finish's two seconds
	const n = 64 << 10
	s.emit(sessions.Event{Time: time.Now(), Body: bigBody{n}})
	s.finish("")
	select {
	case <-s.written:
	default:
		t.Fatalf("finish returned while crashtui was still writing the line; crashtui's stderr: %q", stderr.String())
	}
	select {
	case lines := <-read:
		if len(lines) != 2 || len(lines[0]) < n || !strings.Contains(lines[1], `"event":"summary"`) {
			first := 0
			if len(lines) > 0 {
				first = len(lines[0])
			}
			t.Errorf("the reader got %d lines (the first %d bytes), want the %d-byte line, then the summary; crashtui's stderr: %q",
				len(lines), first, n, stderr.String())
		}
	case <-patience.After(30 * time.Second):
		t.Fatalf("the reader never got the summary; crashtui's stderr: %q", stderr.String())
	}
	if writes < 3 {
		t.Errorf("%d writes to the pipe: the line was not written in chunks", writes)
	}
}

// TestFinishAfterASecondSignal: told to stop a second time, finish waits no more for the
// writer, even one busy with an event of crashtui's own (it ends when nothing moves for a
// quarter of a second): a second signal always ends crashtui.
func TestFinishAfterASecondSignal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	go io.Copy(io.Discard, r)
	s, err := newSession(&common{json: true}, pipeOnly{w}, "test", "attach")
	if err != nil {
		t.Fatal(err)
	}
	s.stop = &stopSignals{make(chan struct{}), make(chan struct{})}
	close(s.stop.first)
	close(s.stop.second)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.emit(sessions.Event{Time: time.Now(), Body: slowBody{release}}) // never written before finish returns
	returned := make(chan struct{})
	go func() {
		s.finish("")
		close(returned)
	}()
	select {
	case <-returned:
	case <-patience.After(10 * time.Second):
		t.Fatal("finish still waits for the writer after a second signal")
	}
	select {
	case <-s.written:
		t.Fatal("the event was written: the writer was never waited on")
	default:
	}
}
