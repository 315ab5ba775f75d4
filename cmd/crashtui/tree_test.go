package main

// A tree of reducing views (issue 27): copies of a real agent's recorded stream, each stamped
// with its own host and its ranks moved up as a job's global ranks are, merged through
// `crashtui view --json --reduce` processes into a root `crashtui view --json`, against one
// flat view of all the copies. TestTreeOfViews checks what the root shows; the benchmark
// (tree_bench_test.go) measures each level at a million tasks.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// recordAgent runs treerank with n ranks under a real `crashtui agent --control` and returns
// its stream: n processes, two stack samples of every rank (three classes, stuck), n crashes
// at four sites, the exits, and its summary. The agent's host is "base".
func recordAgent(tb testing.TB, n int) []byte {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("the agent traces the ranks: run as root")
	}
	prog := buildC(tb, "treerank")
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	job := exec.Command(prog, strconv.Itoa(n))
	job.ExtraFiles = []*os.File{r}
	job.Stderr = os.Stderr
	jobOut, err := job.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := job.Start(); err != nil {
		tb.Fatal(err)
	}
	r.Close()
	pgid := 0
	tb.Cleanup(func() {
		w.Close() // the ranks crash, if they are still waiting
		if pgid > 0 {
			syscall.Kill(-pgid, syscall.SIGKILL) // the ranks' group, which this test made
		}
		job.Process.Kill()
		job.Wait()
	})
	line, err := bufio.NewReader(jobOut).ReadString('\n')
	if _, err2 := fmt.Sscanf(line, "pgid %d", &pgid); err != nil || err2 != nil || pgid <= 0 {
		tb.Fatalf("treerank said %q (%v, %v)", line, err, err2)
	}

	a := startAgentRec(tb, pgid, "base")
	patient := time.Duration(60+n/8) * time.Second
	a.wait("every rank attached", patient, func(k map[string]int) bool { return k["process"] >= n })
	for round := 1; round <= 2; round++ {
		a.request("sample")
		a.wait("a sample of every rank", patient, func(k map[string]int) bool { return k["sample"] >= round*n })
	}
	w.Close() // the pipe ends: every rank crashes
	a.wait("every crash and exit", patient, func(k map[string]int) bool { return k["summary"] >= 1 })
	stream, kinds := a.end()
	if kinds["crash"] != n || kinds["exit"] != n {
		tb.Fatalf("the agent's stream: %v, want %d crashes and exits", kinds, n)
	}
	return stream
}

// agentRec is a real `crashtui agent --control` of a job, its stream kept as it comes and its
// events counted by kind.
type agentRec struct {
	tb    testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	buf   bytes.Buffer
	kinds map[string]int
	more  chan struct{}
	ended chan struct{}
}

// startAgentRec starts an agent of process group pgid stamped host, sampling only when asked
// and measuring no matrix; the test's cleanup detaches it.
func startAgentRec(tb testing.TB, pgid int, host string) *agentRec {
	tb.Helper()
	a := &agentRec{tb: tb, kinds: map[string]int{}, more: make(chan struct{}, 1), ended: make(chan struct{})}
	a.cmd = exec.Command(crashtuiBin, "agent", "--control", "--host", host, "--sample-every", "0", "--matrix", "off", "pgid:"+strconv.Itoa(pgid))
	a.cmd.Stderr = os.Stderr
	var err error
	if a.in, err = a.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		a.cmd.Process.Signal(syscall.SIGTERM) // detaches
		a.cmd.Wait()
	})
	go func() {
		defer close(a.ended)
		sc := sessions.NewLineScanner(out, sessions.MaxLine)
		for sc.Scan() {
			a.mu.Lock()
			a.buf.Write(sc.Bytes())
			a.buf.WriteByte('\n')
			if m := kindRE.FindSubmatch(sc.Bytes()); m != nil {
				a.kinds[string(m[1])]++
			}
			a.mu.Unlock()
			select {
			case a.more <- struct{}{}:
			default:
			}
		}
	}()
	return a
}

// request writes one request line to the agent.
func (a *agentRec) request(line string) {
	a.tb.Helper()
	if _, err := fmt.Fprintln(a.in, line); err != nil {
		a.tb.Fatalf("request %q: %v", line, err)
	}
}

// wait waits until ok holds of the kinds of events the agent wrote so far.
func (a *agentRec) wait(what string, patient time.Duration, ok func(map[string]int) bool) {
	a.tb.Helper()
	deadline := patience.After(patient)
	for {
		a.mu.Lock()
		done := ok(a.kinds)
		seen := fmt.Sprint(a.kinds)
		a.mu.Unlock()
		if done {
			return
		}
		select {
		case <-a.more:
		case <-a.ended:
			a.mu.Lock()
			done, seen = ok(a.kinds), fmt.Sprint(a.kinds)
			a.mu.Unlock()
			if !done {
				a.tb.Fatalf("the agent ended before %s: %s", what, seen)
			}
			return
		case <-deadline:
			a.tb.Fatalf("waiting for %s: the agent said %s", what, seen)
		}
	}
}

// end waits for the agent to end (its job ended, or it was told to detach) and returns its
// stream and the kinds of its events.
func (a *agentRec) end() ([]byte, map[string]int) {
	a.tb.Helper()
	<-a.ended
	if err := a.cmd.Wait(); err != nil {
		a.tb.Fatalf("agent: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return bytes.Clone(a.buf.Bytes()), maps.Clone(a.kinds)
}

// streamTemplate is a recorded agent stream cut where its host and its ranks are, so that
// copies for other hosts, with their ranks moved up, cost a copy of the bytes.
type streamTemplate struct {
	lines []lineTemplate
	ranks int // the recording's ranks are 0..ranks-1
}

type lineTemplate struct {
	parts [][]byte // text around the slots: parts[0] slot[0] parts[1] ...
	slots []int    // -1: the host; a rank otherwise
}

var (
	slotRE = regexp.MustCompile(`"host":"base"|"rank":(\d+)`)
	kindRE = regexp.MustCompile(`^\{"event":"([a-z_]+)"`)
)

func newStreamTemplate(stream []byte, ranks int) *streamTemplate {
	t := &streamTemplate{ranks: ranks}
	for _, l := range bytes.Split(bytes.TrimSpace(stream), []byte("\n")) {
		var lt lineTemplate
		last := 0
		for _, m := range slotRE.FindAllSubmatchIndex(l, -1) {
			lt.parts = append(lt.parts, l[last:m[0]])
			if m[2] < 0 {
				lt.slots = append(lt.slots, -1)
			} else {
				r, _ := strconv.Atoi(string(l[m[2]:m[3]]))
				lt.slots = append(lt.slots, r)
			}
			last = m[1]
		}
		lt.parts = append(lt.parts, l[last:])
		t.lines = append(t.lines, lt)
	}
	return t
}

// line appends copy c's line i: host, and ranks moved up by c times the recording's.
func (t *streamTemplate) line(b []byte, i int, host string, c int) []byte {
	lt := &t.lines[i]
	for k, s := range lt.slots {
		b = append(b, lt.parts[k]...)
		if s < 0 {
			b = append(b, `"host":"`...)
			b = append(b, host...)
			b = append(b, '"')
		} else {
			b = append(b, `"rank":`...)
			b = strconv.AppendInt(b, int64(s+c*t.ranks), 10)
		}
	}
	b = append(b, lt.parts[len(lt.parts)-1]...)
	return append(b, '\n')
}

// merged writes copies first..first+n-1 line by line in turn, as srun merges its tasks'
// output: copy c is host hostName(c) with ranks from c times the recording's.
func (t *streamTemplate) merged(w io.Writer, first, n int) error {
	var b []byte
	for i := range t.lines {
		for c := first; c < first+n; c++ {
			b = t.line(b, i, hostName(c), c)
			if len(b) >= 1<<20 {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
	}
	_, err := w.Write(b)
	return err
}

func hostName(c int) string { return fmt.Sprintf("node%04d", c) }

// viewRun is one `crashtui view` run to its end.
type viewRun struct {
	out  []byte // its output, but the per-task events (kept out of memory at a million)
	wall time.Duration
	cpu  time.Duration // its user and system time
	rss  int64         // its largest resident set, bytes
}

// runView runs `crashtui view ARGS...` with stdin written by feed (nil: none) and keeps its
// output's lines but those of per-task kinds.
func runView(tb testing.TB, feed func(io.Writer) error, args ...string) viewRun {
	tb.Helper()
	cmd := exec.Command(crashtuiBin, append([]string{"view"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	keep := &keptLines{}
	cmd.Stdout = keep
	var in io.WriteCloser
	if feed != nil {
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			tb.Fatal(err)
		}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	fed := make(chan error, 1)
	if feed != nil {
		go func() {
			err := feed(in)
			in.Close()
			fed <- err
		}()
	} else {
		fed <- nil
	}
	hwm := make(chan int64, 1)
	done := make(chan struct{})
	pid := cmd.Process.Pid
	go func() { hwm <- sampleHWM(pid, done) }()
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	if ferr := <-fed; err != nil || ferr != nil {
		tb.Fatalf("view %v: %v (feeding it: %v): %s", args, err, ferr, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return viewRun{out: keep.Bytes(), wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss: <-hwm}
}

// sampleHWM is the largest VmHWM (the peak resident set of the process's own memory) read
// from /proc/PID/status every 2 ms until done. Not rusage's ru_maxrss: os/exec starts a
// child with CLONE_VM|CLONE_VFORK, and at its exec the kernel folds the memory it shared (the
// parent's, this test binary's, hundreds of MB after the streams it built) into the child's
// maxrss (exec_mmap's setmax_mm_hiwater_rss), so ru_maxrss says the test's size, not the view's.
// VmHWM only grows, so the last read before the view exits is its peak up to ~2 ms before.
func sampleHWM(pid int, done <-chan struct{}) int64 {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	var peak int64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if i := bytes.Index(b, []byte("\nVmHWM:")); i >= 0 {
				f := strings.Fields(string(b[i+7:]))
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						peak = max(peak, kb<<10)
					}
				}
			}
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

// keptLines keeps a view's output lines but those of the per-task kinds.
type keptLines struct {
	bytes.Buffer
	partial []byte
}

func (k *keptLines) Write(b []byte) (int, error) {
	k.partial = append(k.partial, b...)
	for {
		i := bytes.IndexByte(k.partial, '\n')
		if i < 0 {
			break
		}
		l := k.partial[:i+1]
		if m := kindRE.FindSubmatch(l); m == nil || !perTask[string(m[1])] {
			k.Buffer.Write(l)
		}
		k.partial = k.partial[i+1:]
	}
	k.partial = append([]byte(nil), k.partial...)
	return len(b), nil
}

var perTask = map[string]bool{"process": true, "task": true, "exec": true, "exit": true, "crash": true,
	"crash_lines": true, "sample": true, "handled": true, "thread": true}

// shows is what a view's output says of the job: its summary's counts and groups (by key:
// count, rank set, hosts) and its merged stacks' classes (by path: threads, rank set,
// progress), from the State its output reduces to.
func shows(tb testing.TB, out []byte) string {
	tb.Helper()
	st := sessions.NewState()
	var sum *sessions.Summary
	var stk *sessions.Stacks
	err := sessions.StreamEvents(bytes.NewReader(out), func(e sessions.Event) {
		switch b := e.Body.(type) {
		case sessions.Summary:
			sum = &b
		case sessions.Stacks:
			stk = &b
		default:
			st.Apply(e)
		}
	}, func(le *sessions.LineError) { tb.Fatalf("view output: %v", le) })
	if err != nil || sum == nil {
		tb.Fatalf("view output: %v, summary %v", err, sum)
	}
	if stk == nil {
		s := st.Stacks(sessions.StackOptions{Cut: sessions.DefaultCutRE})
		stk = &s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d processes, %d crashes, %d exits, %d groups, lost %q\n", sum.Processes, sum.Crashes, sum.Exits, len(sum.Groups), sum.Lost)
	var lines []string
	for _, g := range sum.Groups {
		lines = append(lines, fmt.Sprintf("group %s (%s): %d, ranks %s, hosts %s", g.Key, g.Function, g.Count, g.Ranks, g.Hosts))
	}
	for _, c := range stk.Classes {
		var path []string
		for _, f := range c.Frames {
			path = append(path, f.Function)
		}
		lines = append(lines, fmt.Sprintf("class %s: %d threads, ranks %s, %s", strings.Join(path, " > "), c.Count, c.Ranks, c.Progress))
	}
	sort.Strings(lines)
	fmt.Fprintf(&b, "%d samples, %d processes placed\n%s", stk.Samples, stk.Processes, strings.Join(lines, "\n"))
	return b.String()
}

// agentStreamOnce is one real agent stream of treeRanks ranks per test binary.
var agentStreamOnce struct {
	sync.Once
	tpl *streamTemplate
	err string
}

const treeRanks = 24

func treeTemplate(t *testing.T) *streamTemplate {
	agentStreamOnce.Do(func() {
		agentStreamOnce.tpl = newStreamTemplate(recordAgent(t, treeRanks), treeRanks)
	})
	if agentStreamOnce.tpl == nil {
		t.Fatal("recording the agent's stream failed (see the first test that tried)")
	}
	return agentStreamOnce.tpl
}

// TestTreeOfViews: 16 copies of a real agent's stream of 24 ranks (384 tasks, ranks crashing
// at four sites, waiting in three places) through four `view --json --reduce` of four copies
// each, into a root `view --json`: the root shows what one flat `view --json` of all sixteen
// shows (counts, groups, classes, rank ranges, hosts, its stacks' report), and the reduced
// streams carry no per-task event.
func TestTreeOfViews(t *testing.T) {
	tpl := treeTemplate(t)
	const copies, fan = 16, 4
	flat := runView(t, func(w io.Writer) error { return tpl.merged(w, 0, copies) }, "--json")
	want := shows(t, flat.out)
	for _, s := range []string{"384 processes, 384 crashes, 384 exits, 4 groups", "ranks 0-380/4, hosts node[0000-0015]", "ranks 2-383/3", "2 samples, 384 processes placed"} {
		if !strings.Contains(want, s) {
			t.Fatalf("the flat view does not show %q:\n%s", s, want)
		}
	}
	dir := t.TempDir()
	var files []string
	for v := 0; v < copies/fan; v++ {
		mid := runView(t, func(w io.Writer) error { return tpl.merged(w, v*fan, fan) }, "--json", "--reduce", "--host", fmt.Sprintf("view%d", v))
		for _, l := range bytes.Split(bytes.TrimSpace(mid.out), []byte("\n")) {
			if m := kindRE.FindSubmatch(l); m == nil || !(sessions.Reduced(sessions.Kind(m[1])) || string(m[1]) == "summary") {
				t.Errorf("view%d wrote a line that is not a reduced event or its summary: %.200s", v, l)
			}
		}
		f := filepath.Join(dir, fmt.Sprintf("view%d.jsonl", v))
		if err := os.WriteFile(f, mid.out, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	t.Logf("the flat view shows\n%s", want)
	root := runView(t, nil, append([]string{"--json"}, files...)...)
	if got := shows(t, root.out); got != want {
		t.Errorf("the root shows\n%s\none flat view shows\n%s", got, want)
	}
	// Its stacks' report: the same heading (384 ranks, counted from the views' tallies), tree,
	// classes and verdict.
	rootText, flatText := views.StacksText(stacksOf(t, root.out), 0), views.StacksText(stacksOf(t, flat.out), 0)
	if rootText != flatText || !strings.HasPrefix(rootText, "384 ranks, ") {
		t.Errorf("the root's stacks:\n%s\none flat view's:\n%s", rootText, flatText)
	}
}

// TestTreeLostView: a root `view --json` reads two reducing views through named pipes; one
// gets all of its four copies and ends, the other is SIGKILLed once it has passed on its
// four hosts' crashes. The root names the dead view's hosts lost, keeps what they said, and
// keeps the other view's: every crash counted once, the summary's lost hosts the dead view's.
func TestTreeLostView(t *testing.T) {
	tpl := treeTemplate(t)
	dir := t.TempDir()
	fifos := []string{filepath.Join(dir, "view0"), filepath.Join(dir, "view1")}
	for _, f := range fifos {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root := exec.Command(crashtuiBin, append([]string{"view", "--json"}, fifos...)...)
	root.Stderr = os.Stderr
	// A pipe of the test's own, not StdoutPipe: Wait (startWaited's) would close that at the
	// root's exit, before its last lines are read.
	rootOut, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rootOut.Close()
	root.Stdout = w
	rootProc := startWaited(t, root, syscall.SIGINT)
	w.Close()
	var mu sync.Mutex
	var evs []sessions.Event
	more := make(chan struct{}, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sessions.StreamEvents(rootOut, func(e sessions.Event) {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
			select {
			case more <- struct{}{}:
			default:
			}
		}, func(le *sessions.LineError) { t.Errorf("root output: %v", le) })
	}()

	var mids []*waitedProc
	var feeds []io.WriteCloser
	for v, f := range fifos {
		out, err := os.OpenFile(f, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		mid := exec.Command(crashtuiBin, "view", "--json", "--reduce", "--host", fmt.Sprintf("view%d", v))
		mid.Stdout, mid.Stderr = out, os.Stderr
		in, err := mid.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		mids = append(mids, startWaited(t, mid, syscall.SIGKILL))
		out.Close()
		feeds = append(feeds, in)
		if err := tpl.merged(in, v*4, 4); err != nil {
			t.Fatal(err)
		}
	}
	feeds[0].Close() // view0 ends with its summary; view1 waits for more
	crashesFrom := func(name string) int {
		n := map[string]int{}
		for _, e := range evs {
			if b, ok := e.Body.(sessions.Hosts); ok && e.Host == name {
				for _, hc := range b.Hosts {
					n[hc.Host] = hc.Crashes
				}
			}
		}
		sum := 0
		for _, c := range n {
			sum += c
		}
		return sum
	}
	for dl := patience.After(60 * time.Second); ; {
		mu.Lock()
		got := crashesFrom("view1")
		mu.Unlock()
		if got == 4*treeRanks {
			break
		}
		select {
		case <-more:
		case <-dl:
			t.Fatalf("view1 passed on %d crashes, want %d", got, 4*treeRanks)
		}
	}
	mids[1].cmd.Process.Kill()
	<-mids[1].exited
	feeds[1].Close()
	select {
	case <-rootProc.exited:
	case <-patience.After(60 * time.Second):
		t.Fatal("the root did not end after its sources did")
	}
	<-read
	var sum *sessions.Summary
	var lost []sessions.Lost
	for _, e := range evs {
		switch b := e.Body.(type) {
		case sessions.Summary:
			sum = &b
		case sessions.Lost:
			lost = append(lost, b)
		}
	}
	if len(lost) != 1 || lost[0].Hosts.String() != "node[0004-0007]" || !strings.Contains(lost[0].Source, "view1") {
		t.Errorf("lost events %+v, want one naming view1's hosts node[0004-0007]", lost)
	}
	if sum == nil {
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, string(e.Kind())+"@"+e.Host)
		}
		t.Fatalf("no summary from the root (exit %v); it said %v", rootProc.err, kinds)
	}
	if sum.Lost.String() != "node[0004-0007]" || sum.Processes != 8*treeRanks || sum.Crashes != 8*treeRanks || len(sum.Groups) != 4 {
		t.Fatalf("summary %+v; want %d processes and crashes in 4 groups, node[0004-0007] lost", sum, 8*treeRanks)
	}
	for _, g := range sum.Groups {
		if g.Count != 2*treeRanks || g.Hosts.String() != "node[0000-0007]" {
			t.Errorf("group %s: %d members on %s, want %d on node[0000-0007]", g.Function, g.Count, g.Hosts, 2*treeRanks)
		}
	}
}
