package sessions

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// goAgentStream is what an agent on host says of a Go job: a launcher (no rank, a main thread
// and a helper) whose children are two Go ranks from rank base, each sampled twice with the
// Go runtime's threads (helpers) and its goroutines: main's in a chan receive, three of
// worker's in a chan receive, one in a select, one on a sync.Mutex, and the runtime's own.
// On host n01 a third rank's goroutines cannot be read.
func goAgentStream(host string, base int) []Event {
	const exe = "/bin/gojob"
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var evs []Event
	at := func(d time.Duration, b Body) { evs = append(evs, Event{Time: t0.Add(d), Host: host, Body: b}) }
	pids := []int{101, 102}
	if host == "n01" {
		pids = append(pids, 103)
	}
	at(0, Process{PID: 90, PPID: 1, Rank: NoRank, Exe: "/usr/bin/launcher", Comm: "launcher", Threads: 2})
	for i, pid := range pids {
		at(0, Process{PID: pid, PPID: 90, Rank: Rank(base + i), Exe: exe, Comm: "gojob", Threads: 1})
	}
	goStmt := &Frame{Module: exe, Offset: 0x3000, Function: "main.main", File: "main.go", Line: 12}
	recv := frames(exe, "runtime.gopark", "runtime.chanrecv1", "main.worker", "runtime.goexit")
	for seq := 1; seq <= 2; seq++ {
		d := time.Duration(seq) * time.Second
		at(d, Sample{Seq: seq, PID: 90, Rank: NoRank, Exe: "/usr/bin/launcher", PPID: 1, Threads: []ThreadSample{
			{TID: 90, State: "S", Frames: frames("/usr/bin/launcher", "wait4", "main")},
			{TID: 91, State: "S", Frames: frames("/usr/lib/libc.so.6", "epoll_wait", "start_thread")},
		}})
		for i, pid := range pids {
			at(d, Sample{Seq: seq, PID: pid, Rank: Rank(base + i), Exe: exe, PPID: 90, Threads: []ThreadSample{
				{TID: pid, State: "S", Frames: frames(exe, "runtime.futex", "runtime.schedule", "runtime.mcall")},
				{TID: pid + 1000, State: "S", Frames: frames(exe, "runtime.futex", "runtime.mstart")},
			}})
			g := Goroutines{Seq: seq, PID: pid, Rank: Rank(base + i)}
			if pid == 103 {
				g.Note = "goroutines: /bin/gojob has no DWARF"
			} else {
				g.Goroutines = []GoroutineSample{
					{ID: 1, Status: GoWaiting, WaitReason: "chan receive", Frames: frames(exe, "runtime.gopark", "runtime.chanrecv1", "main.main", "runtime.main", "runtime.goexit")},
					{ID: 5, Status: GoWaiting, WaitReason: "chan receive", Frames: recv, CreatedBy: goStmt},
					{ID: 6, Status: GoWaiting, WaitReason: "chan receive", Frames: recv, CreatedBy: goStmt},
					{ID: 7, Status: GoWaiting, WaitReason: "chan receive", Frames: recv, CreatedBy: goStmt},
					{ID: 8, Status: GoWaiting, WaitReason: "select", Frames: recv, CreatedBy: goStmt},
					{ID: 9, Status: GoWaiting, WaitReason: "sync.Mutex.Lock", Frames: frames(exe, "runtime.gopark", "sync.(*Mutex).Lock", "main.locker", "runtime.goexit")},
					{ID: 2, Status: GoWaiting, WaitReason: "GC sweep wait", System: true, Frames: frames(exe, "runtime.gopark", "runtime.bgsweep", "runtime.goexit")},
				}
			}
			at(d, g)
		}
	}
	return evs
}

// shownStacks is what the tests compare of a State's stacks beyond shown: what is put aside
// (threads and goroutines), the goroutines' counts, classes (by path, status and wait) and
// waits, the Go processes whose goroutines could not be read.
func shownStacks(st *State) string {
	stk := st.Stacks(StackOptions{Cut: DefaultCutRE})
	var b strings.Builder
	pathOf := map[int]string{}
	classes := func(cs []StackClass) []string {
		var out []string
		for _, c := range cs {
			var path []string
			for _, f := range c.Frames {
				path = append(path, f.Function)
			}
			p := strings.Join(path, ">") + " " + c.Role + " " + c.Status + " " + c.WaitReason
			pathOf[c.Class] = p
			created := ""
			if c.CreatedBy != nil {
				created = fmt.Sprintf(" go %s:%d", c.CreatedBy.Function, c.CreatedBy.Line)
			}
			out = append(out, fmt.Sprintf("class %s: %d, ranks %s, unranked %q, %s%s", p, c.Count, c.Ranks, c.Unranked, c.Progress, created))
		}
		sort.Strings(out)
		return out
	}
	aside := func(a *Aside) string {
		if a == nil {
			return "none"
		}
		var cs []string
		for _, c := range a.Classes {
			cs = append(cs, pathOf[c])
		}
		sort.Strings(cs)
		return fmt.Sprintf("%d (%d helpers, %d launcher) ranks %s unranked %q %s, classes %q", a.Count, a.Helpers, a.Launcher, a.Ranks, a.Unranked, a.Progress, cs)
	}
	fmt.Fprintf(&b, "%s\n", strings.Join(classes(stk.Classes), "\n"))
	fmt.Fprintf(&b, "aside: %s\n", aside(stk.Aside))
	t := stk.Tally // a root's; a flat merge's processes are listed
	if t == nil {
		t = tallyOf(stk.Ranks, stk.Classes)
	}
	fmt.Fprintf(&b, "tally: %d ranked, %d launchers, %d others\n", t.Ranked, t.Launchers, t.Others)
	for _, pt := range t.By {
		for _, pl := range pt.Places {
			fmt.Fprintf(&b, "  %s (%d): %d at %s in %s, first %s:%d\n", pt.Progress, pt.Procs, pl.Procs, pl.Frame.Function, pl.Syscall, pl.First.Host, pl.First.PID)
		}
	}
	g := stk.Goroutines
	if g == nil {
		b.WriteString("no goroutines\n")
		return b.String()
	}
	fmt.Fprintf(&b, "goroutines of %d processes: %d, %d the runtime's\n%s\n", g.Processes, g.Count, g.System, strings.Join(classes(g.Classes), "\n"))
	fmt.Fprintf(&b, "goroutines aside: %s\n", aside(g.Aside))
	for _, w := range g.Waits {
		var cs []string
		for _, c := range w.Classes {
			cs = append(cs, pathOf[c])
		}
		fmt.Fprintf(&b, "wait %s %q: %d, ranks %s, %s, classes %q\n", w.Status, w.WaitReason, w.Count, w.Ranks, w.Progress, cs)
	}
	for _, u := range g.Unread {
		fmt.Fprintf(&b, "unread %s:%d rank %d: %s\n", u.Host, u.PID, u.Rank, u.Note)
	}
	fmt.Fprintf(&b, "%d more unread\n", g.UnreadMore)
	var top []string
	for _, n := range g.Tree.Children {
		top = append(top, fmt.Sprintf("%s/%s/%d/%s", n.Label, n.Role, n.Count, n.Ranks))
	}
	fmt.Fprintf(&b, "goroutine tree %v\n", top)
	return b.String()
}

// TestTreeGoroutinesShowWhatFlatShows: four agents of a Go job (a launcher and its Go ranks)
// merged flat into one State, and through two reducers (their reduced events through JSON)
// into a root: the root puts aside the same helper threads and launcher, and shows the
// same goroutine classes (by path, status and wait), the same goroutines by wait and the
// same process whose goroutines could not be read.
func TestTreeGoroutinesShowWhatFlatShows(t *testing.T) {
	var streams [][]Event
	flat := NewState()
	for a := 0; a < 4; a++ {
		s := goAgentStream(fmt.Sprintf("n%02d", a), 10*a)
		streams = append(streams, s)
		for _, e := range s {
			flat.Apply(e)
		}
	}
	want := shown(flat) + "\n" + shownStacks(flat)
	for _, s := range []string{
		"tally: 9 ranked, 4 launchers, 0 others\n  stuck (9): 9 at runtime.futex in , first n00:101",
		"aside: 26 (18 helpers, 8 launcher) ranks 0-1,10-12,20-21,30-31 unranked \"n00:90,n01:90,n02:90,n03:90\"",
		"class runtime.goexit>main.worker>runtime.chanrecv1>runtime.gopark  waiting chan receive: 24, ranks 0-1,10-11,20-21,30-31",
		"go main.main:12", "goroutines aside: 8 (8 helpers", "wait waiting \"chan receive\": 32",
		"unread n01:103 rank 12: goroutines: /bin/gojob has no DWARF",
	} {
		if !strings.Contains(want, s) {
			t.Fatalf("the flat State does not show %q:\n%s", s, want)
		}
	}
	var mids [][]Event
	for v := 0; v < 2; v++ {
		mids = append(mids, reduceLevel(t, fmt.Sprintf("view%d", v), [][]Event{slices.Clone(streams[2*v]), slices.Clone(streams[2*v+1])}, 7))
	}
	root := NewState()
	for _, in := range mids {
		for _, e := range in {
			root.Apply(e)
		}
	}
	if got := shown(root) + "\n" + shownStacks(root); got != want {
		t.Errorf("the root shows\n%s\nthe flat State\n%s", got, want)
	}
}

// TestReducedGoroutinesUnreadBounded: the Go processes whose goroutines could not be read
// are listed up to MaxListedPIDs at every level, in rank order, and counted beyond.
func TestReducedGoroutinesUnreadBounded(t *testing.T) {
	var subs []*StackClasses
	for v := 0; v < 2; v++ {
		g := &ReducedGoroutines{Processes: 1, Count: 1, Waits: []ReducedWait{}, Classes: []ReducedClass{}}
		for i := 0; i < 200; i++ {
			g.Unread = append(g.Unread, GoroutinesUnread{Host: fmt.Sprintf("n%d", v), PID: 1000 + i, Rank: Rank(200*(1-v) + i), Note: "no DWARF"})
		}
		g.Unread = g.Unread[:min(len(g.Unread), MaxListedPIDs)]
		g.Unreadable = 200
		subs = append(subs, &StackClasses{Frames: "function", Classes: []ReducedClass{}, Goroutines: g})
	}
	st := mergeReducedStacks(Stacks{Frames: "function"}, &StackClasses{Frames: "function"}, subs, StackOptions{})
	g := st.Goroutines
	if g == nil || len(g.Unread) != MaxListedPIDs || g.UnreadMore != 400-MaxListedPIDs || g.Processes != 2 {
		t.Fatalf("goroutines %+v", g)
	}
	if g.Unread[0].Host != "n0" || g.Unread[len(g.Unread)-1].Host != "n1" || g.Unread[len(g.Unread)-1].Rank != 55 {
		t.Errorf("unread from %+v to %+v, want n0's first, in rank order", g.Unread[0], g.Unread[len(g.Unread)-1])
	}
}

// TestTallyTracks: the tally a reducer passes on, counted from its tracks, is the one its
// processes' states (Stacks.Ranks) make: a Go job with helpers and launchers, a job of
// three classes.
func TestTallyTracks(t *testing.T) {
	for _, evs := range [][]Event{append(goAgentStream("n00", 0), goAgentStream("n01", 10)...), agentStream("n02", 0, 64)} {
		st := NewState()
		for _, e := range evs {
			st.Apply(e)
		}
		out, red := st.store.mergeFull(StackOptions{Cut: DefaultCutRE}, true)
		want := tallyOf(out.Ranks, out.Classes)
		if !reflect.DeepEqual(red.Tally, want) || want.Ranked == 0 {
			t.Errorf("tally of the tracks %+v\nof the states %+v", red.Tally, want)
		}
	}
}
