package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

func argsAfter(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// TestTreePlan: a job of 1024 nodes under --fanout 32 is 32 views, each on the first of its
// 32 consecutive nodes, each starting one agent per node; one node with 4 agents under
// --fanout 2 is two views of two agents, each agent its share of the node's tasks.
func TestTreePlan(t *testing.T) {
	var nodes []string
	for i := 1; i <= 1024; i++ {
		nodes = append(nodes, fmt.Sprintf("n%04d", i))
	}
	tr := &slurmTree{job: "slurm:77", id: "77", fanout: 32, shares: 1, control: true, self: "/opt/crashtui"}
	root := tr.plan(agentHosts(nodes, 1))
	if len(root) != 32 {
		t.Fatalf("1024 nodes: %d sources at the root, want 32 views", len(root))
	}
	covered := sessions.HostSet{}
	for i, p := range root {
		first := fmt.Sprintf("n%04d", 32*i+1)
		want := fmt.Sprintf("n[%04d-%04d]", 32*i+1, 32*i+32)
		if p.expect.String() != want || argsAfter(p.argv, "-w") != first || !slices.Contains(p.argv, "--reduce") ||
			p.argv[len(p.argv)-1] != "slurm:77@"+want || argsAfter(p.argv, "--jobid") != "77" || !slices.Contains(p.argv, "--overlap") {
			t.Fatalf("view %d: %q expecting %s; want one on %s for %s", i, p.argv, p.expect, first, want)
		}
		covered = covered.Union(p.expect)
	}
	if covered.Len() != 1024 {
		t.Errorf("the views cover %d nodes", covered.Len())
	}
	leaf := tr.plan(root[3].expect)
	if len(leaf) != 32 {
		t.Fatalf("a view of 32 nodes: %d sources, want 32 agents", len(leaf))
	}
	for i, p := range leaf {
		node := fmt.Sprintf("n%04d", 97+i)
		if argsAfter(p.argv, "-w") != node || !slices.Contains(p.argv, "agent") || !slices.Contains(p.argv, "--control") ||
			argsAfter(p.argv, "--host") != "%n" || p.argv[len(p.argv)-1] != "slurm:77" || p.expect.String() != node {
			t.Fatalf("agent %d: %q expecting %s", i, p.argv, p.expect)
		}
	}

	one := &slurmTree{job: "slurm:5", id: "5", fanout: 2, shares: 4, self: "crashtui"}
	views := one.plan(agentHosts([]string{"c1"}, 4))
	if len(views) != 2 || views[0].expect.String() != "c1/[0-1]" || views[1].expect.String() != "c1/[2-3]" ||
		argsAfter(views[1].argv, "-w") != "c1" || argsAfter(views[1].argv, "--agents-per-node") != "4" {
		t.Fatalf("one node, 4 agents, fanout 2: %+v", views)
	}
	agents := one.plan(views[1].expect)
	if len(agents) != 2 || argsAfter(agents[0].argv, "--share") != "2/4" || argsAfter(agents[1].argv, "--share") != "3/4" ||
		argsAfter(agents[1].argv, "--host") != "%n/3" || agents[1].expect.String() != "c1/3" {
		t.Fatalf("the agents of c1/[2-3]: %+v", agents)
	}
}

func TestAgentHostAndShare(t *testing.T) {
	t.Setenv("SLURMD_NODENAME", "c7")
	self, _ := os.Hostname()
	for in, want := range map[string]string{"%n": "c7", "%n/2": "c7/2", "fixed": "fixed", "": self} {
		if got, err := agentHost(in); err != nil || got != want {
			t.Errorf("agentHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"4/4", "-1/2", "1", "a/b", "0/0"} {
		if _, err := shareFilter(bad); err == nil {
			t.Errorf("--share %s accepted", bad)
		}
	}
}

// TestRequestsDown: a view passes a request for every host down every launched stream, one
// "to HOSTS" only down the streams that speak for those hosts; an agent acts on a line
// meant for it and ignores the others'.
func TestRequestsDown(t *testing.T) {
	var srcs []*source
	var readers []*bufio.Reader
	for _, hosts := range []string{"n[1-2]", "n[3-4]"} {
		r, w := io.Pipe()
		hs, _ := sessions.ParseHostSet(hosts)
		srcs = append(srcs, &source{label: hosts, r: io.NopCloser(strings.NewReader("")), expect: hs, requests: w})
		readers = append(readers, bufio.NewReader(r))
	}
	d := &downstream{srcs: srcs}
	line := func(i int) string {
		l, _ := readers[i].ReadString('\n')
		return strings.TrimSpace(l)
	}
	go d.send("sample")
	if a, b := line(0), line(1); a != "sample" || b != "sample" {
		t.Errorf("sample reached %q and %q", a, b)
	}
	go d.send("to n3 detail 42")
	if got := line(1); got != "to n3 detail 42" {
		t.Errorf("the stream of n[3-4] got %q", got)
	}
	if err := d.send("to n9 sample"); err == nil {
		t.Error("a request for a host no stream speaks for went somewhere")
	}

	var got []string
	c := &fakeRequester{did: &got}
	s, err := newSession(&common{json: true}, io.Discard, "test", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.finish("n1") })
	serveRequests(strings.NewReader("to n3 sample\nto n[1-2] measure\nsample\nto n[ bad\n"), c, s, "n1", func() {})
	s.settle()
	if !slices.Equal(got, []string{"measure", "sample"}) {
		t.Errorf("agent n1 did %v, want measure and sample (not n3's sample)", got)
	}
	if s.state.NErrors != 1 {
		t.Errorf("%d error events, want one for the bad host list", s.state.NErrors)
	}
}

// TestAgentAnswersProcesses: "processes" (Processes' enter on a host's row, at a root) is
// answered by the agent whose host it names with its processes, bounded; a reducing view
// passes the answer up; the treeController asks only that host.
func TestAgentAnswersProcesses(t *testing.T) {
	s, err := newSession(&common{json: true}, io.Discard, "test", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.finish("n1") })
	for i := 0; i < sessions.MaxHostProcesses+10; i++ {
		s.emit(sessions.Event{Time: time.Now(), Host: "n1", Body: sessions.Process{PID: 100 + i, Rank: sessions.Rank(i), Comm: "solver"}})
	}
	var did []string
	serveRequests(strings.NewReader("to n2 processes\nto n1 processes\n"), &fakeRequester{did: &did}, s, "n1", func() {})
	s.settle()
	s.mu.Lock()
	hp := s.state.HostProcs("n1")
	s.mu.Unlock()
	if hp == nil || hp.Total != sessions.MaxHostProcesses+10 || len(hp.Processes) != sessions.MaxHostProcesses || hp.Processes[1].PID != 101 {
		t.Fatalf("the answer: %+v", hp)
	}
	if up := passUp(); !up(sessions.Event{Body: *hp}) {
		t.Error("a reducing view does not pass a host's processes up")
	}
	r, w := io.Pipe()
	hs, _ := sessions.ParseHostSet("n[1-2]")
	d := &downstream{srcs: []*source{{label: "n[1-2]", r: io.NopCloser(strings.NewReader("")), expect: hs, requests: w}}}
	go treeController{d}.AskProcesses("n2")
	if l, _ := bufio.NewReader(r).ReadString('\n'); l != "to n2 processes\n" {
		t.Errorf("AskProcesses sent %q", l)
	}
}

type fakeRequester struct{ did *[]string }

func (f *fakeRequester) Checkpoint(p sessions.Policy) error {
	*f.did = append(*f.did, "checkpoint "+string(p))
	return nil
}
func (f *fakeRequester) Measure() error     { *f.did = append(*f.did, "measure"); return nil }
func (f *fakeRequester) Sample() error      { *f.did = append(*f.did, "sample"); return nil }
func (f *fakeRequester) AutoSample(on bool) { *f.did = append(*f.did, fmt.Sprint("autosample ", on)) }

// TestEndings: which hosts a stream that ended had not finished: an agent's summary finishes
// its host, a reducer's every host it spoke for (and itself: its own error events are not a
// host's); hosts it was meant to cover and never named are lost too, unless a reducer above
// them finished.
func TestEndings(t *testing.T) {
	ev := func(host string, b sessions.Body) sessions.Event { return sessions.Event{Host: host, Body: b} }
	var agents endings
	agents.see(ev("a", sessions.Process{PID: 1}))
	agents.see(ev("a", sessions.Summary{}))
	agents.see(ev("b", sessions.Process{PID: 1}))
	if got := agents.lost(sessions.HostSetOf("a", "b", "c")).String(); got != "b,c" {
		t.Errorf("agents' stream: lost %q, want b,c", got)
	}
	var view endings
	view.see(ev("view@x", sessions.Error{Op: "srun"}))
	view.see(ev("view@x", sessions.Hosts{Hosts: []sessions.HostCount{{Host: "a"}, {Host: "b"}}}))
	if got := view.lost(sessions.HostSetOf("a", "b", "c")).String(); got != "a,b,c" {
		t.Errorf("a view that died: lost %q, want a,b,c", got)
	}
	view.see(ev("view@x", sessions.Summary{}))
	if got := view.lost(sessions.HostSetOf("a", "b", "c")); !got.Empty() {
		t.Errorf("a view that ended: lost %q", got)
	}
}
