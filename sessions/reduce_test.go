package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// agentStream is what an agent on host says of n ranks from rank base: each joins, is
// sampled twice waiting in one of three functions (rank % 3: three stack classes, stuck),
// crashes at one of four sites (rank % 4) and exits; every fifth rank has a second thread.
func agentStream(host string, base, n int) []Event {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var evs []Event
	at := func(d time.Duration, b Body) { evs = append(evs, Event{Time: t0.Add(d), Host: host, Body: b}) }
	pid := func(i int) int { return 1000 + i }
	for i := 0; i < n; i++ {
		at(0, Process{PID: pid(i), Rank: Rank(base + i), Exe: "/bin/app", Comm: "app", Threads: 1})
		if i%5 == 0 {
			at(0, Task{PID: pid(i), TID: pid(i) + 50000})
		}
	}
	waits := []string{"wait_halo", "wait_reduce", "wait_io"}
	for seq := 1; seq <= 2; seq++ {
		for i := 0; i < n; i++ {
			w := waits[(base+i)%3]
			th := []ThreadSample{{TID: pid(i), State: "S", Held: true, Syscall: "nanosleep", CPU: 3, Frames: []Frame{
				{PC: 0x7f0010, Module: "/lib/libc.so.6", Offset: 0xe0010, Function: "clock_nanosleep"},
				{PC: 0x401200 + Hex((base+i)%3*0x100), Module: "/bin/app", Offset: 0x1200 + Hex((base+i)%3*0x100), Function: w},
				{PC: 0x401100, Module: "/bin/app", Offset: 0x1100, Function: "main"}}}}
			at(time.Duration(seq)*time.Second, Sample{Seq: seq, PID: pid(i), Rank: NoRank, Threads: th})
		}
	}
	sites := []string{"update_halo", "exchange_ghosts", "solve", "write_io"}
	for i := 0; i < n; i++ {
		site := (base + i) % 4
		at(3*time.Second, Crash{PID: pid(i), TID: pid(i), Rank: Rank(base + i), Exe: "/bin/app", Signal: "SIGSEGV", Code: "SEGV_MAPERR",
			Module: "/bin/app", Offset: Hex(0x2000 + 0x10*site), Function: sites[site], Representative: i < 4,
			Stack: []Frame{{Module: "/bin/app", Offset: Hex(0x2000 + 0x10*site), Function: sites[site]}}})
		code := 139
		at(3*time.Second, Exit{PID: pid(i), Signal: "SIGSEGV", Code: &code})
	}
	at(4*time.Second, Summary{})
	return evs
}

// wire sends events through their JSON form, as a pipe between views does.
func wire(t testing.TB, evs []Event) []Event {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range evs {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	var out []Event
	err := StreamEvents(&b, func(e Event) { out = append(out, e) }, func(le *LineError) { t.Fatalf("line %v", le) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reduceLevel is one reducing view: it applies each input's events, interleaved, and says
// what changed every every events and at the end.
func reduceLevel(t testing.TB, name string, inputs [][]Event, every int) []Event {
	st := NewState()
	r := NewReducer(st, name)
	var out []Event
	n := 0
	for more := true; more; {
		more = false
		for i := range inputs {
			if len(inputs[i]) == 0 {
				continue
			}
			more = true
			e := inputs[i][0]
			inputs[i] = inputs[i][1:]
			if e.Kind() == KindSummary {
				continue // a view drops its inputs' summaries
			}
			st.Apply(e)
			if n++; every > 0 && n%every == 0 {
				out = append(out, r.Changes(e.Time, n%(every*4) == 0)...)
			}
		}
	}
	out = append(out, r.Changes(time.Now(), true)...)
	return wire(t, out)
}

// shown is what the tests compare of a State: its counts, its groups by key, its classes
// by path.
func shown(st *State) string {
	var b strings.Builder
	sum := st.Summary()
	procs, threads := st.Live()
	fmt.Fprintf(&b, "processes %d crashes %d exits %d live %d/%d lost %q\n", sum.Processes, sum.Crashes, sum.Exits, procs, threads, sum.Lost)
	groups := slices.Clone(sum.Groups)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Key < groups[j].Key })
	for _, g := range groups {
		fmt.Fprintf(&b, "group %s %s count %d ranks %s hosts %s unranked %d\n", g.Key, g.Function, g.Count, g.Ranks, g.Hosts, g.Unranked)
	}
	stk := st.Stacks(StackOptions{Cut: DefaultCutRE})
	fmt.Fprintf(&b, "stacks: %d samples, %d processes\n", stk.Samples, stk.Processes)
	var classes []string
	for _, c := range stk.Classes {
		var path []string
		for _, f := range c.Frames {
			path = append(path, f.Function)
		}
		classes = append(classes, fmt.Sprintf("class %s: %d threads, ranks %s, %s, spark %v", strings.Join(path, ">"), c.Count, c.Ranks, c.Progress, c.Spark))
	}
	sort.Strings(classes)
	b.WriteString(strings.Join(classes, "\n"))
	return b.String()
}

// TestTreeShowsWhatFlatShows: 16 agents of 64 ranks, merged flat into one State, and through
// 4 reducers of 4 agents each (their reduced events through JSON) into a root, and through a
// third level (2 reducers of 2 reducers): the root shows the same counts, the same groups
// (counts, rank ranges, hosts) and the same classes as the flat State.
func TestTreeShowsWhatFlatShows(t *testing.T) {
	const agents, ranks = 16, 64
	var streams [][]Event
	flat := NewState()
	for a := 0; a < agents; a++ {
		s := agentStream(fmt.Sprintf("node%02d", a), a*ranks, ranks)
		streams = append(streams, s)
		for _, e := range s {
			if e.Kind() != KindSummary {
				flat.Apply(e)
			}
		}
	}
	want := shown(flat)
	if !strings.Contains(want, "processes 1024 crashes 1024") || !strings.Contains(want, "ranks 0-1020/4 hosts node[00-15]") {
		t.Fatalf("the flat State is not what the streams say:\n%s", want)
	}
	level1 := func(groups int) [][]Event {
		var out [][]Event
		per := agents / groups
		for g := 0; g < groups; g++ {
			var in [][]Event
			for _, s := range streams[g*per : (g+1)*per] {
				in = append(in, slices.Clone(s))
			}
			out = append(out, reduceLevel(t, fmt.Sprintf("view%d", g), in, 97))
		}
		return out
	}
	root := func(inputs [][]Event) *State {
		st := NewState()
		for _, in := range inputs {
			for _, e := range in {
				st.Apply(e)
			}
		}
		return st
	}
	if got := shown(root(level1(4))); got != want {
		t.Errorf("two levels:\n%s\nflat:\n%s", got, want)
	}
	mid := level1(4)
	three := [][]Event{reduceLevel(t, "upper0", mid[:2], 13), reduceLevel(t, "upper1", mid[2:], 13)}
	if got := shown(root(three)); got != want {
		t.Errorf("three levels:\n%s\nflat:\n%s", got, want)
	}
}

// TestReducedStreamSize: a reduced stream grows with hosts, sites and paths, not with tasks:
// 4096 ranks per agent say about what 64 say (their rank sets have as many runs).
func TestReducedStreamSize(t *testing.T) {
	size := func(ranks int) int {
		var in [][]Event
		for a := 0; a < 4; a++ {
			in = append(in, agentStream(fmt.Sprintf("node%02d", a), a*ranks, ranks))
		}
		var b bytes.Buffer
		for _, e := range reduceLevel(t, "view", in, 0) {
			json.NewEncoder(&b).Encode(e)
		}
		return b.Len()
	}
	small, big := size(64), size(4096)
	if big > small*11/10 {
		t.Errorf("the reduced stream of 4 agents: %d bytes for 64 ranks each, %d for 4096", small, big)
	}
}

// TestLostHosts: a Lost event names the hosts; what they said stays counted, and the
// summary and the next reducer up say which are lost.
func TestLostHosts(t *testing.T) {
	st := NewState()
	for _, e := range reduceLevel(t, "view0", [][]Event{agentStream("a1", 0, 8), agentStream("a2", 8, 8)}, 0) {
		st.Apply(e)
	}
	st.Apply(Event{Host: "root", Body: Lost{Hosts: HostSetOf("a1", "a2"), Source: "view0", Why: "its stream ended without its summary"}})
	sum := st.Summary()
	if sum.Lost.String() != "a[1-2]" || sum.Processes != 16 || sum.Crashes != 16 {
		t.Errorf("summary after the loss: %+v", sum)
	}
	up := NewState()
	for _, e := range wire(t, NewReducer(st, "root").Changes(time.Now(), true)) {
		up.Apply(e)
	}
	if got := up.Summary(); got.Lost.String() != "a[1-2]" || got.Processes != 16 {
		t.Errorf("a reducer above: %+v", got)
	}
	for _, hc := range up.HostCounts() {
		if !hc.Lost {
			t.Errorf("host %s not marked lost", hc.Host)
		}
	}
}

// TestNoDetailReducesAlike: a State that keeps no detail (a reducing view's: NoDetail) has no
// timeline and no process's samples in detail, and its reducer says, change by change, what
// the reducer of a State that keeps them says.
func TestNoDetailReducesAlike(t *testing.T) {
	in := append(agentStream("n1", 0, 40), agentStream("n2", 40, 40)...)
	t0 := time.Date(2026, 12, 1, 0, 0, 10, 0, time.UTC)
	reduce := func(st *State) []byte {
		r := NewReducer(st, "view")
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for i, e := range in {
			st.Apply(e)
			if i%50 == 0 || i == len(in)-1 {
				for _, c := range r.Changes(t0, i%200 == 0 || i == len(in)-1) {
					if err := enc.Encode(c); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		return b.Bytes()
	}
	full, lean := NewState(), NewState()
	lean.NoDetail()
	want, got := reduce(full), reduce(lean)
	if len(full.Log) == 0 || len(full.Samples) == 0 {
		t.Fatalf("the full State kept %d log entries and %d processes' samples", len(full.Log), len(full.Samples))
	}
	if len(lean.Log) != 0 || len(lean.Samples) != 0 {
		t.Errorf("NoDetail kept %d log entries and %d processes' samples", len(lean.Log), len(lean.Samples))
	}
	if !bytes.Equal(got, want) {
		t.Errorf("without detail the reducer says\n%s\nwith it\n%s", got, want)
	}
	if shown(lean) != shown(full) {
		t.Errorf("without detail the State shows\n%s\nwith it\n%s", shown(lean), shown(full))
	}
}
