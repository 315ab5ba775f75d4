package main

// The tree of views launched by Slurm (issue 27 items 2, 3 and 6), on the Slurm stage's
// one-node cluster: four agents share the node's eight tasks (--agents-per-node 4: each takes
// the tasks whose SLURM_LOCALID is its share, and is stamped NODE/K as if it were its own
// host), under --fanout 2, so the root reads two reducing views that srun placed, each
// reading two agents that srun started. Plain `go test` skips these (slurmStage).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
)

// treeRoot is a running root of a tree: crashtui ARGS with its JSON Lines read as they come
// and its stdin open for requests.
type treeRoot struct {
	w      *waitedProc
	in     *os.File
	mu     sync.Mutex
	raw    bytes.Buffer
	events []sessions.Event
	more   chan struct{}
	read   chan struct{}
}

func startTreeRoot(t *testing.T, args ...string) *treeRoot {
	t.Helper()
	cmd := exec.Command(crashtuiBin, args...)
	cmd.Stderr = os.Stderr
	out, w, err := os.Pipe() // not StdoutPipe: Wait would close it before the last lines are read
	if err != nil {
		t.Fatal(err)
	}
	inR, in, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stdin = w, inR
	r := &treeRoot{in: in, more: make(chan struct{}, 1), read: make(chan struct{})}
	r.w = startWaited(t, cmd, syscall.SIGINT)
	w.Close()
	inR.Close()
	t.Cleanup(func() { in.Close(); out.Close() })
	go func() {
		defer close(r.read)
		sc := sessions.NewLineScanner(out, sessions.MaxLine)
		for sc.Scan() {
			var e sessions.Event
			err := e.UnmarshalJSON(sc.Bytes())
			r.mu.Lock()
			r.raw.Write(sc.Bytes())
			r.raw.WriteByte('\n')
			if err == nil {
				r.events = append(r.events, e)
			}
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

// waitFor waits until ok holds of the events so far.
func (r *treeRoot) waitFor(t *testing.T, what string, ok func([]sessions.Event) bool) {
	t.Helper()
	deadline := patience.After(120 * time.Second)
	for {
		r.mu.Lock()
		done := ok(r.events)
		n := len(r.events)
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.more:
		case <-r.w.exited:
			r.mu.Lock()
			done = ok(r.events)
			r.mu.Unlock()
			if !done {
				t.Fatalf("the root ended (%v) before %s, after %d events", r.w.err, what, n)
			}
			return
		case <-deadline:
			t.Fatalf("waiting for %s: %d events from the root", what, n)
		}
	}
}

// end waits for the root's exit and its last line.
func (r *treeRoot) end(t *testing.T) []byte {
	t.Helper()
	select {
	case <-r.w.exited:
	case <-patience.After(120 * time.Second):
		t.Fatal("the root did not end")
	}
	<-r.read
	if r.w.err != nil {
		t.Fatalf("the root: %v", r.w.err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.raw.Bytes())
}

func waitTraced(t *testing.T, pids []int, traced bool) {
	t.Helper()
	for _, pid := range pids {
		for dl := patience.New(90 * time.Second); (tracerPID(pid) > 0) != traced; {
			if dl.Passed() {
				t.Fatalf("task %d: tracer %d after %v, want traced %v", pid, tracerPID(pid), dl.Waited(), traced)
			}
			time.Sleep(100 * time.Millisecond) // attaching and detaching have no event to wait on from here
		}
	}
}

// summaryShows is what a view's output says of the job's crashes: counts and groups by site
// (count, ranks, hosts), and its lost hosts.
func summaryShows(t *testing.T, out []byte) string {
	t.Helper()
	var sum *sessions.Summary
	for _, e := range decodeEvents(t, out) {
		if b, ok := e.Body.(sessions.Summary); ok {
			sum = &b
		}
	}
	if sum == nil {
		t.Fatalf("no summary in %d bytes", len(out))
	}
	lines := []string{fmt.Sprintf("%d processes, %d crashes, lost %q", sum.Processes, sum.Crashes, sum.Lost)}
	for _, g := range sum.Groups {
		lines = append(lines, fmt.Sprintf("%s: %d, ranks %s, hosts %s", g.Function, g.Count, g.Ranks, g.Hosts))
	}
	sort.Strings(lines[1:])
	return strings.Join(lines, "\n")
}

func sortedPIDs(tasks map[int]int, keep func(rank int) bool) []int {
	var out []int
	for pid, rank := range tasks {
		if keep(rank) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// TestUnderSlurmTree: a two-level tree (a root view --control, two reducing views srun
// placed, four agents sharing the node's eight tasks) against one view of the same four
// agents (--fanout 4: no middle level), each on its own step of eight tasks that crash at two
// sites: the same processes, crashes and groups (counts, rank sets, hosts). Requests go down
// the tree: "sample" reaches every agent (the root's merged classes place all eight tasks),
// "to NODE/2 detail PID" the one agent that traces PID, whose answer comes back up.
func TestUnderSlurmTree(t *testing.T) {
	slurmStage(t)
	id := slurmAlloc(t, 8)
	nodes, err := slurmNodes(id)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("the job's nodes: %v %v", nodes, err)
	}
	node := nodes[0]
	run := func(fanout string) []byte {
		gofile := filepath.Join(t.TempDir(), "go")
		tasks := startRanks(t, id, 8, gofile)
		all := sortedPIDs(tasks, func(int) bool { return true })
		// The agents sample only when asked: all eight placed is "sample" reaching all four.
		root := startTreeRoot(t, "view", "--json", "--control", "--fanout", fanout, "--agents-per-node", "4",
			"--sample-every", "0", "slurm:"+id+"@"+node+"/[0-3]")
		waitTraced(t, all, true)
		fmt.Fprintln(root.in, "sample")
		root.waitFor(t, "every task sampled", func(evs []sessions.Event) bool {
			st := sessions.NewState()
			for _, e := range evs {
				st.Apply(e)
			}
			return st.Stacks(sessions.StackOptions{}).Processes == 8
		})
		share2 := sortedPIDs(tasks, func(r int) bool { return r%4 == 2 })[0]
		fmt.Fprintf(root.in, "to %s/2 detail %d\n", node, share2)
		root.waitFor(t, "the detail of a task of share 2", func(evs []sessions.Event) bool {
			for _, e := range evs {
				if d, ok := e.Body.(sessions.Detail); ok && e.Host == node+"/2" && d.PID == share2 && d.Process != nil && d.Process.Rank == sessions.Rank(tasks[share2]) {
					return true
				}
			}
			return false
		})
		if err := os.WriteFile(gofile, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return root.end(t)
	}
	tree := run("2")
	views := map[string]bool{}
	for _, e := range decodeEvents(t, tree) {
		if sessions.Reduced(e.Kind()) {
			views[e.Host] = true
		}
		switch e.Kind() {
		case sessions.KindProcess, sessions.KindCrash, sessions.KindSample, sessions.KindExit:
			t.Errorf("the root of the tree got a per-task event from %s: %s", e.Host, e.Kind())
		}
	}
	if len(views) != 2 {
		t.Errorf("the root heard from %v, want two views", views)
	}
	flat := run("4")
	got, want := summaryShows(t, tree), summaryShows(t, flat)
	if got != want {
		t.Errorf("the tree shows\n%s\none view of the four agents shows\n%s", got, want)
	}
	for _, s := range []string{"8 processes, 8 crashes", "even_rank_fault: 4, ranks 0-6/2, hosts " + node + "/[0,2]", "odd_rank_fault: 4, ranks 1-7/2, hosts " + node + "/[1,3]"} {
		if !strings.Contains(got, s) {
			t.Errorf("the tree does not show %q:\n%s", s, got)
		}
	}
}

// TestUnderSlurmTreeLostView: `crashtui attach --json slurm:ID` as the root of the same tree;
// one of its two views is SIGKILLed. The root names its two agents' hosts lost, its agents
// let go of their tasks (which run on), the other view's agents keep theirs; quitting the
// root detaches those too, and every task is still running, untraced.
func TestUnderSlurmTreeLostView(t *testing.T) {
	slurmStage(t)
	id := slurmAlloc(t, 8)
	nodes, err := slurmNodes(id)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("the job's nodes: %v %v", nodes, err)
	}
	node := nodes[0]
	tasks := startRanks(t, id, 8, filepath.Join(t.TempDir(), "never"))
	root := startTreeRoot(t, "attach", "--json", "--fanout", "2", "--agents-per-node", "4", "slurm:"+id)
	all := sortedPIDs(tasks, func(int) bool { return true })
	waitTraced(t, all, true)
	procsFrom := func(evs []sessions.Event) map[string]int {
		n := map[string]int{}
		for _, e := range evs {
			if b, ok := e.Body.(sessions.Hosts); ok {
				for _, hc := range b.Hosts {
					n[hc.Host] = hc.Processes
				}
			}
		}
		return n
	}
	root.waitFor(t, "both views' counts", func(evs []sessions.Event) bool {
		n := procsFrom(evs)
		return len(n) == 4 && n[node+"/0"]+n[node+"/1"]+n[node+"/2"]+n[node+"/3"] == 8
	})

	lostHosts := node + "/[2-3]"
	view := findProcess(t, "view", "--reduce", "view@"+lostHosts)
	syscall.Kill(view, syscall.SIGKILL) // started for this test, through srun
	root.waitFor(t, "the lost view's hosts", func(evs []sessions.Event) bool {
		for _, e := range evs {
			if l, ok := e.Body.(sessions.Lost); ok && l.Hosts.String() == lostHosts {
				return true
			}
		}
		return false
	})
	waitTraced(t, sortedPIDs(tasks, func(r int) bool { return r%4 >= 2 }), false)
	for _, pid := range sortedPIDs(tasks, func(r int) bool { return r%4 < 2 }) {
		if tracerPID(pid) <= 0 {
			t.Errorf("task %d (rank %d) untraced: the other view's agents let go of it", pid, tasks[pid])
		}
	}
	root.w.cmd.Process.Signal(syscall.SIGINT)
	out := root.end(t)
	waitTraced(t, all, false)
	for _, pid := range all {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("task %d is gone after the root quit: %v", pid, err)
		}
	}
	got := summaryShows(t, out)
	if want := fmt.Sprintf("8 processes, 0 crashes, lost %q", lostHosts); !strings.HasPrefix(got, want) {
		t.Errorf("the root's summary:\n%s\nwant it to begin %s", got, want)
	}
}

// findProcess is the pid of the one process whose argv has every one of words, waiting for
// it to start.
func findProcess(t *testing.T, words ...string) int {
	t.Helper()
	for dl := patience.New(60 * time.Second); ; {
		var found []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			argv := strings.Split(readFile("/proc/"+e.Name()+"/cmdline"), "\x00")
			if len(argv) > 0 && argv[0] == crashtuiBin && !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(argv, w) }) {
				found = append(found, pid)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
		if dl.Passed() {
			t.Fatalf("processes with %q: %v", words, found)
		}
		time.Sleep(100 * time.Millisecond) // srun's start has no event to wait on from here
	}
}
