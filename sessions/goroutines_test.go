package sessions

import (
	"slices"
	"testing"
	"time"
)

func frames(module string, fns ...string) []Frame {
	out := make([]Frame, 0, len(fns))
	for i, fn := range fns { // innermost first
		out = append(out, Frame{PC: Hex(0x1000 + 0x10*len(fns) - 0x10*i), Module: module, Offset: Hex(0x1000 + 0x10*len(fns) - 0x10*i), Function: fn})
	}
	return out
}

// TestStateAttachesGoroutines: a Goroutines event completes the sample of its number (the
// reducer counts it as a change), one whose sample is not kept is dropped, and neither is in
// the timeline.
func TestStateAttachesGoroutines(t *testing.T) {
	s := NewState()
	t0 := time.Unix(1000, 0)
	apply := func(b Body) { s.Apply(Event{Time: t0, Body: b}) }
	apply(Sample{Seq: 1, PID: 7, Rank: 0, Threads: []ThreadSample{{TID: 7, Frames: frames("/bin/x", "runtime.futex", "runtime.mcall")}}})
	apply(Sample{Seq: 2, PID: 7, Rank: 0})
	apply(Goroutines{Seq: 1, PID: 7, Rank: 0, Goroutines: []GoroutineSample{{ID: 1, Status: GoWaiting, WaitReason: "chan receive"}}})
	apply(Goroutines{Seq: 9, PID: 7, Rank: 0, Goroutines: []GoroutineSample{{ID: 1}}})
	l := s.Samples[ProcKey{"", 7}]
	if len(l) != 2 || l[0].Go == nil || l[0].Go.Goroutines[0].WaitReason != "chan receive" || l[1].Go != nil {
		t.Errorf("samples %+v", l)
	}
	if s.SampleEvents != 3 {
		t.Errorf("SampleEvents %d, want 3 (2 samples, 1 goroutines that completed one)", s.SampleEvents)
	}
	for _, e := range s.Log {
		if e.Event.Kind() == KindGoroutines {
			t.Errorf("goroutines in the timeline: %+v", e)
		}
	}
}

// TestMergeGoroutines: goroutines of two Go ranks merge into classes by call path and by wait
// (the same frames in a select are another class than in a chan receive), numbered after
// the threads' classes; parked on one path over the samples they are stuck, running on one
// they spin; the runtime's own are put aside and out of the waits; a rank whose latest sample
// is not completed yet keeps the goroutines of its previous one; a rank whose reading
// failed says why.
func TestMergeGoroutines(t *testing.T) {
	const exe = "/bin/gojob"
	t0 := time.Unix(1000, 0)
	recv := frames(exe, "runtime.gopark", "runtime.chanrecv1", "main.recv", "runtime.goexit")
	spin := []Frame{{PC: 0x2000, Module: exe, Offset: 0x2000, Function: "main.spin"}, {PC: 0x1000, Module: exe, Offset: 0x1000, Function: "runtime.goexit"}}
	gc := frames(exe, "runtime.gopark", "runtime.bgsweep", "runtime.goexit")
	goStmt := &Frame{Module: exe, Offset: 0x3000, Function: "main.main", File: "main.go", Line: 12}
	gors := func(seq int) []GoroutineSample {
		sp := spin
		if seq == 2 {
			sp = slices.Clone(spin)
			sp[0].PC++ // another pc, the same function: the same path by function
		}
		return []GoroutineSample{
			{ID: 1, Status: GoWaiting, WaitReason: "chan receive", Frames: frames(exe, "runtime.gopark", "runtime.chanrecv1", "main.main", "runtime.main", "runtime.goexit")},
			{ID: 5, Status: GoWaiting, WaitReason: "chan receive", Frames: recv, CreatedBy: goStmt},
			{ID: 6, Status: GoWaiting, WaitReason: "chan receive", Frames: recv, CreatedBy: goStmt},
			{ID: 7, Status: GoWaiting, WaitReason: "select", Frames: recv, CreatedBy: goStmt},
			{ID: 8, Status: GoRunning, TID: 11, Frames: sp, CreatedBy: goStmt},
			{ID: 2, Status: GoWaiting, WaitReason: "GC sweep wait", System: true, Frames: gc},
		}
	}
	var samples []StampedSample
	for seq := 1; seq <= 2; seq++ {
		for rank, pid := range []int{100, 200} {
			s := StampedSample{Time: t0.Add(time.Duration(seq) * time.Second), Sample: Sample{Seq: seq, PID: pid, Rank: Rank(rank), Exe: exe,
				Threads: []ThreadSample{{TID: pid, State: "S", Frames: frames(exe, "runtime.futex", "runtime.schedule", "runtime.mcall")}}}}
			if !(seq == 2 && pid == 200) { // rank 1's second sample is not completed yet
				s.Go = &Goroutines{Seq: seq, PID: pid, Rank: Rank(rank), Goroutines: gors(seq)}
			}
			samples = append(samples, s)
		}
	}
	// A third process, whose goroutines could not be read.
	samples = append(samples, StampedSample{Time: t0.Add(2 * time.Second), Sample: Sample{Seq: 2, PID: 300, Rank: 2, Exe: exe,
		Threads: []ThreadSample{{TID: 300, State: "S", Frames: frames(exe, "runtime.futex", "runtime.mcall")}}},
		Go: &Goroutines{Seq: 2, PID: 300, Rank: 2, Note: "goroutines: /bin/gojob has no DWARF"}})
	st := MergeStacks(samples, StackOptions{})
	g := st.Goroutines
	if g == nil {
		t.Fatal("no goroutines merged")
	}
	if g.Processes != 2 || g.Count != 12 || g.System != 2 || len(g.Unread) != 1 || g.Unread[0].PID != 300 || g.Unread[0].Note == "" {
		t.Errorf("%d processes, %d goroutines, %d system, unread %+v", g.Processes, g.Count, g.System, g.Unread)
	}
	type want struct {
		status, wait, progress, role string
		count                        int
		created                      bool
	}
	got := map[string]want{}
	for _, c := range g.Classes {
		if c.Class <= len(st.Classes) || !c.Goroutine() {
			t.Errorf("goroutine class %d numbered among the threads' %d, or no status: %+v", c.Class, len(st.Classes), c)
		}
		if c.Ranks != "0-1" || c.Unranked != "" {
			t.Errorf("class %d: ranks %q unranked %q", c.Class, c.Ranks, c.Unranked)
		}
		got[c.Frames[len(c.Frames)-1].Function+" "+c.WaitReason] = want{c.Status, c.WaitReason, c.Progress, c.Role, c.Count, c.CreatedBy != nil}
	}
	for key, w := range map[string]want{
		"runtime.gopark chan receive":  {GoWaiting, "chan receive", Stuck, "", 2, false}, // main's, apart from main.recv's: its own path
		"runtime.gopark select":        {GoWaiting, "select", Stuck, "", 2, true},
		"main.spin ":                   {GoRunning, "", Spinning, "", 2, true},
		"runtime.gopark GC sweep wait": {GoWaiting, "GC sweep wait", Stuck, RoleHelper, 2, false},
	} {
		if got[key] != w {
			t.Errorf("class of %s: %+v, want %+v", key, got[key], w)
		}
	}
	recvClasses := 0
	for _, c := range g.Classes {
		if c.WaitReason == "chan receive" && slices.ContainsFunc(c.Frames, func(f StackFrame) bool { return f.Function == "main.recv" }) {
			recvClasses++
			if c.Count != 4 || c.Progress != Stuck || c.CreatedBy == nil || c.CreatedBy.Line != 12 {
				t.Errorf("main.recv's chan receive: %+v", c)
			}
		}
	}
	if recvClasses != 1 {
		t.Errorf("%d classes of main.recv in chan receive, want 1", recvClasses)
	}
	var waits []string
	for _, w := range g.Waits {
		waits = append(waits, w.Status+"/"+w.WaitReason+"/"+string(rune('0'+w.Count)))
	}
	if !slices.Equal(waits, []string{"waiting/chan receive/6", "running//2", "waiting/select/2"}) {
		t.Errorf("waits %v", waits)
	}
	if a := g.Aside; a == nil || a.Helpers != 2 || a.Count != 2 || a.Progress != Stuck {
		t.Errorf("aside %+v", g.Aside)
	}
	// The goroutines' tree: one branch from runtime.goexit, the runtime's own apart.
	if len(g.Tree.Children) != 2 || g.Tree.Children[0].Role != "" || g.Tree.Children[1].Role != RoleHelper || g.Tree.Children[0].Count != 10 {
		t.Errorf("tree roots %+v", g.Tree.Children)
	}
	// The threads: all the Go runtime's, helpers, rank states from them.
	for _, c := range st.Classes {
		if c.Role != RoleHelper {
			t.Errorf("thread class %+v: want the runtime's threads put aside", c)
		}
	}
}

// TestMergeRoles: the ranks' main threads first, then their other threads of the program's
// own, then the helpers (no frame in the executable: MPI/PMIx progress threads), then the
// launcher (no rank while the others have one); ranks and the pids without a rank in sets
// apart; a rank's progress from its own threads, not its helpers'; a lone rank found on the
// ranks' own branches only.
func TestMergeRoles(t *testing.T) {
	const exe, pmix, libc = "/bin/solver", "/usr/lib/libpmix.so.2", "/usr/lib/libc.so.6"
	t0 := time.Unix(1000, 0)
	helper := func(moved int) []Frame {
		f := []Frame{
			{Module: libc, Offset: 0x100, Function: "epoll_wait"},
			{Module: pmix, Offset: 0x200, Function: "progress"},
			{Module: libc, Offset: 0x300, Function: "start_thread"},
			{Module: libc, Offset: 0x310, Function: "clone3"},
		}
		if moved != 0 {
			f[1].Function, f[1].Offset = "progress_once", 0x280
		}
		return f
	}
	mainAt := func(fn string) []Frame {
		return []Frame{{Module: exe, Offset: 0x50, Function: fn}, {Module: exe, Offset: 0x40, Function: "main"}, {Module: exe, Offset: 0x10, Function: "_start"}}
	}
	worker := []Frame{{Module: exe, Offset: 0x60, Function: "work"}, {Module: libc, Offset: 0x300, Function: "start_thread"}, {Module: libc, Offset: 0x310, Function: "clone3"}}
	var samples []StampedSample
	for seq := 1; seq <= 2; seq++ {
		at := t0.Add(time.Duration(seq) * time.Second)
		for r := 0; r < 4; r++ {
			pid := 100 + 10*r
			fn := "barrier"
			if r == 0 {
				fn = "recv"
			}
			samples = append(samples, StampedSample{Time: at, Sample: Sample{Seq: seq, PID: pid, Rank: Rank(r), Exe: exe, Threads: []ThreadSample{
				{TID: pid, State: "S", Frames: mainAt(fn)},
				{TID: pid + 1, State: "S", Frames: helper(seq * r % 2)}, // ranks 1 and 3's helpers moved since the first sample
				{TID: pid + 2, State: "S", Frames: helper(0)},
				{TID: pid + 3, State: "S", Frames: worker},
			}}})
		}
		samples = append(samples, StampedSample{Time: at, Sample: Sample{Seq: seq, PID: 90, Rank: NoRank, Exe: "/usr/bin/mpirun", Threads: []ThreadSample{
			{TID: 90, State: "S", Frames: []Frame{{Module: "/usr/bin/mpirun", Offset: 0x10, Function: "main"}}},
			{TID: 91, State: "S", Frames: helper(0)},
		}}})
	}
	st := MergeStacks(samples, StackOptions{})
	var order []string
	for _, c := range st.Classes {
		order = append(order, c.Role+":"+c.Frames[len(c.Frames)-1].Function+":"+c.Ranks+":"+c.Unranked)
	}
	want := []string{":barrier:1-3:", ":recv:0:", ":work:0-3:", "helper:epoll_wait:0-3:", "launcher:main::90", "launcher:epoll_wait::90"}
	if !slices.Equal(order, want) {
		t.Errorf("classes\n %v\nwant\n %v", order, want)
	}
	if c := st.Classes[0]; c.Main != 3 || c.Progress != Stuck {
		t.Errorf("first class %+v", c)
	}
	for _, r := range st.Ranks {
		want := Stuck
		if r.Launcher != (r.PID == 90) || r.Progress != want {
			t.Errorf("process %d rank %d: launcher %v progress %s, want %s (its helpers moved)", r.PID, r.Rank, r.Launcher, r.Progress, want)
		}
	}
	if c := st.Classes[3]; c.Count != 8 || c.Progress != Mixed {
		t.Errorf("the helpers' class %+v, want 8 threads, mixed", c)
	}
	if a := st.Aside; a == nil || a.Helpers != 8 || a.Launcher != 2 || a.Ranks != "0-3" || a.Unranked != "90" || a.Count != 10 || a.Progress != Mixed {
		t.Errorf("aside %+v", st.Aside)
	}
	var roots []string
	for _, n := range st.Tree.Children {
		roots = append(roots, n.Role+":"+n.Label)
	}
	if !slices.Equal(roots, []string{":_start", ":clone3", "helper:clone3", "launcher:main", "launcher:clone3"}) {
		t.Errorf("tree roots %v", roots)
	}
	if st.Culprit == nil || st.Culprit.Rank != 0 || len(st.Lone) != 1 {
		t.Errorf("lone %+v culprit %+v: want rank 0 alone in recv, nothing from the helpers' branches", st.Lone, st.Culprit)
	}
	// With the parents named, only an ancestor of ranks is their launcher: a process without
	// a rank beside them (a monitor the job started too) is the job's own.
	var withSide []StampedSample
	for _, s := range samples {
		if s.Rank >= 0 {
			s.PPID = 95 // mpirun (90) -> a daemon (95, not sampled: a chain may leave the job) -> the ranks
		}
		if s.PID == 90 {
			side := s
			side.PID, side.PPID, side.Threads = 80, 1, []ThreadSample{{TID: 80, State: "S", Frames: mainAt("watch")}}
			withSide = append(withSide, side)
		}
		withSide = append(withSide, s)
	}
	withSide = append(withSide, StampedSample{Time: samples[len(samples)-1].Time, Sample: Sample{Seq: 2, PID: 95, PPID: 90, Rank: NoRank,
		Exe: "/usr/bin/prted", Threads: []ThreadSample{{TID: 95, State: "S", Frames: []Frame{{Module: "/usr/bin/prted", Offset: 0x10, Function: "main"}}}}}})
	byPID := map[int]string{}
	for _, c := range MergeStacks(withSide, StackOptions{}).Classes {
		for _, pid := range c.PIDs {
			if pid == 80 || pid == 90 || pid == 95 {
				byPID[pid] += c.Role + ";"
			}
		}
	}
	if byPID[80] != ";" || byPID[90] != "launcher;launcher;" || byPID[95] != "launcher;" {
		t.Errorf("roles by parent: %v, want the side process 80 the job's own, mpirun 90 and its daemon 95 launchers", byPID)
	}
	// Without an executable named (a recording from before samples had it), the main
	// thread's outermost module stands in.
	for i := range samples {
		samples[i].Exe = ""
	}
	if again := MergeStacks(samples, StackOptions{}); len(again.Classes) != len(st.Classes) || again.Classes[3].Role != RoleHelper {
		t.Errorf("without Exe: %+v", again.Classes)
	}
}
