package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
)

// TestAgentsMergedInView is a two-node session on one machine: two `crashtui agent`s, each
// attached to its own "node" (a process group of ranks 0 and 1 of the storm program), their
// JSON Lines merged line by line into one `crashtui view --json` as srun would merge them.
// When the go file appears the four ranks crash at two sites (one per rank number): the view
// must group them across hosts into two groups of two, one member per host, and count every
// process once (pids are per host). node-b's agent is given no --host: it uses this machine's
// name.
func TestAgentsMergedInView(t *testing.T) {
	s := crashSuite(t)
	self, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	gofile := filepath.Join(t.TempDir(), "go")

	view := exec.Command(crashtuiBin, "view", "--json")
	viewIn, err := view.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var viewOut bytes.Buffer
	view.Stdout, view.Stderr = &viewOut, os.Stderr
	viewProc := startWaited(t, view, syscall.SIGINT)

	var mu sync.Mutex // srun's line merge: whole lines, in any order between hosts
	var agents sync.WaitGroup
	hosts := []string{"node-a", self}
	for _, host := range hosts {
		pgid := 0
		var ranks []int
		for rank := 0; rank < 2; rank++ {
			cmd := exec.Command(s.PIE, "storm", gofile)
			cmd.Env = append(os.Environ(), "CRASHTUI_RANK="+strconv.Itoa(rank))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
			startWaited(t, cmd, syscall.SIGKILL)
			if pgid == 0 {
				pgid = cmd.Process.Pid
			}
			ranks = append(ranks, cmd.Process.Pid)
		}
		args := []string{"agent", "pgid:" + strconv.Itoa(pgid)}
		if host != self {
			args = append(args, "--host", host)
		}
		agent := exec.Command(crashtuiBin, args...)
		agent.Stderr = os.Stderr
		out, err := agent.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		startWaited(t, agent, syscall.SIGINT)
		agents.Add(1)
		go func() {
			defer agents.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, sessions.MaxLine)
			for sc.Scan() {
				mu.Lock()
				viewIn.Write(append(sc.Bytes(), '\n'))
				mu.Unlock()
			}
		}()
		for _, pid := range ranks {
			for dl := patience.New(10 * time.Second); tracerPID(pid) == 0; {
				if dl.Passed() {
					t.Fatalf("%s: rank pid %d not attached after %v", host, pid, dl.Waited())
				}
				time.Sleep(time.Millisecond) // polling /proc: attaching has no event to wait on here
			}
		}
	}
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		agents.Wait() // each agent ends with its node's job
		viewIn.Close()
	}()
	select {
	case <-viewProc.exited:
	case <-patience.After(60 * time.Second):
		t.Fatal("view did not end after both agents did")
	}
	if viewProc.err != nil {
		t.Fatalf("view: %v", viewProc.err)
	}

	var sum *sessions.Summary
	procHosts := map[string]int{}
	summaries := 0
	for _, e := range decodeEvents(t, viewOut.Bytes()) {
		switch b := e.Body.(type) {
		case sessions.Process:
			procHosts[e.Host]++
		case sessions.Summary:
			summaries++
			sum = &b
		case sessions.Error:
			t.Errorf("error event from %q: %+v", e.Host, b)
		}
	}
	if summaries != 1 || sum == nil {
		t.Fatalf("%d summaries in the view's output, want its own one only", summaries)
	}
	if procHosts["node-a"] != 2 || procHosts[self] != 2 || len(procHosts) != 2 {
		t.Errorf("process events by host %v, want 2 from node-a and 2 from %s", procHosts, self)
	}
	if sum.Processes != 4 || sum.Crashes != 4 || len(sum.Groups) != 2 {
		t.Fatalf("summary: %d processes, %d crashes, %d groups; want 4, 4, 2: %+v", sum.Processes, sum.Crashes, len(sum.Groups), sum)
	}
	for _, g := range sum.Groups {
		want := sessions.HostSetOf("node-a", self)
		if g.Count != 2 || g.Hosts.String() != want.String() || g.Ranks.Len() != 1 || len(g.Members) != 2 {
			t.Errorf("group %d (%s): count %d hosts %s ranks %s members %+v; want one rank number on both hosts", g.Group, g.Key, g.Count, g.Hosts, g.Ranks, g.Members)
		}
	}
}

// TestViewFiles merges two files without hosts: the committed demo recording (header line
// included) and an agent-style copy of its events with no header and one damaged line. Each
// source's events are stamped with its name, so the same pids count twice, every crash
// group doubles, the damaged line is reported and skipped, and the recordings' own
// summaries are replaced by one for both.
func TestViewFiles(t *testing.T) {
	rec := filepath.Join("..", "..", "demo", "session.jsonl")
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	copyLines := append([][]byte{}, lines[1:6]...)
	copyLines = append(copyLines, []byte(`{"event":"crash","pid":`)) // cut off mid-line
	copyLines = append(copyLines, lines[6:]...)
	other := filepath.Join(t.TempDir(), "copy.jsonl")
	if err := os.WriteFile(other, append(bytes.Join(copyLines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	_, evs, err := sessions.ReadRecording(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	one := sessions.NewState()
	for _, e := range evs {
		one.Apply(e)
	}
	want := one.Summary()

	out, err := exec.Command(crashtuiBin, "view", "--json", rec, other).Output()
	if err != nil {
		t.Fatalf("view: %v", err)
	}
	var sum *sessions.Summary
	var errs []sessions.Error
	hosts := map[string]bool{}
	for _, e := range decodeEvents(t, out) {
		hosts[e.Host] = true
		switch b := e.Body.(type) {
		case sessions.Summary:
			sum = &b
		case sessions.Error:
			errs = append(errs, b)
		}
	}
	if sum == nil || sum.Processes != 2*want.Processes || sum.Crashes != 2*want.Crashes || len(sum.Groups) != len(want.Groups) {
		t.Fatalf("summary %+v; want twice %d processes and %d crashes in %d groups", sum, want.Processes, want.Crashes, len(want.Groups))
	}
	for i, g := range sum.Groups {
		if g.Count != 2*want.Groups[i].Count {
			t.Errorf("group %s: count %d, want %d", g.Key, g.Count, 2*want.Groups[i].Count)
		}
	}
	if !hosts["session"] || !hosts["copy"] {
		t.Errorf("hosts %v, want the sources' names session and copy", hosts)
	}
	if len(errs) != 1 || errs[0].Op != "view" || !bytes.Contains([]byte(errs[0].Message), []byte("copy: line 6")) {
		t.Errorf("errors %+v, want one naming copy's line 6", errs)
	}
}

// decodeEvents decodes crashtui's JSON Lines output.
func decodeEvents(t *testing.T, b []byte) []sessions.Event {
	t.Helper()
	var evs []sessions.Event
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var e sessions.Event
		if err := dec.Decode(&e); err == io.EOF {
			return evs
		} else if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}
