package sessions

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// randomSamples are samples of a few hosts' processes: ranked and not, one to three threads,
// stacks from a few paths (some through an MPI_ frame, some unsymbolized, some in a library
// only: helpers), moving, spinning or not, stopped, read without stopping, processes that miss
// samples or end, a tid reused by another process, a launcher (pid 104, no rank, the others'
// parent) and Go processes' goroutines (some unread).
func randomSamples(rng *rand.Rand) []StampedSample {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	hosts := []string{""}
	if rng.Intn(2) == 0 {
		hosts = []string{"b", "a", "c"}[:1+rng.Intn(3)]
	}
	funcs := []string{"main", "solve", "MPI_Barrier", "poll", "", "exchange", "wait"}
	var out []StampedSample
	for _, h := range hosts {
		nproc := 1 + rng.Intn(12)
		for seq := 1; seq <= 1+rng.Intn(4); seq++ {
			for p := 0; p < nproc; p++ {
				if rng.Intn(8) == 0 || (p == 0 && seq > 2) {
					continue // missed this sample (gone, or not yet there); pid 100 ended
				}
				pid := 100 + p
				rank := Rank(p)
				if p%5 == 4 {
					rank = NoRank
				}
				var threads []ThreadSample
				for th := 0; th < 1+p%3; th++ {
					tid := pid*10 + th
					if p == 1 && th == 1 && seq > 2 {
						tid = 100*10 + 0 // pid 100 ended: its main thread's id is reused
					}
					depth := 1 + (p+th)%4
					var frames []Frame
					for d := depth; d >= 0; d-- {
						fn := funcs[(p+th*3+d)%len(funcs)]
						off := Hex(0x1000 + 0x10*d)
						if d == 0 && (p+th)%3 == 0 {
							off += Hex(seq) // moving
						}
						mod := "/bin/app"
						if th > 0 && (p+d)%2 == 0 {
							mod = "/lib/libmpi.so" // a thread whose frames are all here is a helper
						}
						if p%6 == 5 && d == 0 {
							fn = "runtime.futex"
						}
						frames = append(frames, Frame{PC: off + 0x400000, Module: mod, Offset: off, Function: fn,
							File: "app.c", Line: 10 + d + int(off%3)})
					}
					if rng.Intn(10) == 0 {
						frames = nil // nothing read this time
					}
					sys := []string{"", "futex", "nanosleep", "read"}[(p+th)%4]
					state := []string{"S", "S", "R", "S", "T", "D"}[(p*3+th+seq/3)%6]
					run := uint64(0)
					if p%4 != 2 {
						run = uint64(seq) * uint64(rng.Intn(3)) * uint64(time.Second/5) // 0, 20% or 40% of a CPU
					}
					threads = append(threads, ThreadSample{TID: tid, State: state, Held: p%7 != 3, Unstopped: p%7 == 3 && th == 0,
						Syscall: sys, CPU: uint64(seq * (p % 3)), RunNS: run, Frames: frames})
				}
				ppid := 0
				if p != 4 && rng.Intn(3) > 0 {
					ppid = 104 // the launcher
				}
				exe := "/bin/app"
				if rng.Intn(5) == 0 {
					exe = "" // a recording from before samples named it
				}
				ss := StampedSample{Host: h, Time: t0.Add(time.Duration(seq) * time.Second),
					Sample: Sample{Seq: seq, PID: pid, Rank: rank, Threads: threads, Exe: exe, PPID: ppid}}
				if p%3 == 1 && rng.Intn(4) > 0 {
					ss.Go = randomGoroutines(rng, seq, pid, rank)
				}
				out = append(out, ss)
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// randomGoroutines are a Go process's goroutines in sample seq: a few, parked or running
// at a few places, some the runtime's, some with a go statement; now and then unread.
func randomGoroutines(rng *rand.Rand, seq, pid int, rank Rank) *Goroutines {
	g := &Goroutines{Seq: seq, PID: pid, Rank: rank}
	if rng.Intn(6) == 0 {
		g.Note = "no DWARF"
		return g
	}
	funcs := []string{"main.main", "main.worker", "runtime.gopark", "sync.(*Mutex).Lock", "main.serve"}
	for id := int64(1); id <= int64(1+rng.Intn(5)); id++ {
		gs := GoroutineSample{ID: id, Status: []string{GoWaiting, GoRunning, GoRunnable, GoWaiting}[rng.Intn(4)],
			WaitReason: []string{"chan receive", "select", ""}[rng.Intn(3)], System: id == 4}
		for d := 0; d < 1+int(id)%3; d++ {
			gs.Frames = append(gs.Frames, Frame{PC: Hex(0x2000 + 0x10*d), Module: "/bin/app", Offset: Hex(0x2000 + 0x10*d),
				Function: funcs[(int(id)+d+rng.Intn(2))%len(funcs)]})
		}
		if id > 1 {
			gs.CreatedBy = &Frame{Module: "/bin/app", Offset: 0x3000, Function: "main.main"}
		}
		if rng.Intn(8) == 0 {
			gs.Note = "stack ends early"
		}
		g.Goroutines = append(g.Goroutines, gs)
	}
	return g
}

// normRanks rewrites a rank set's text (legacy: 0,2,4; now 0-4/2) canonically.
func normRanks(s string) string {
	ranks, pids, _ := strings.Cut(s, "pid ")
	set, err := ParseRankSet(strings.TrimSpace(ranks))
	if err != nil {
		return "bad " + s
	}
	return set.String() + "|" + pids
}

// normStacks writes the rank sets canonically and puts what ties (classes of one size,
// children of one count) in one order, renumbering the classes: the order among equals
// follows the order samples arrived in, which the two merges read differently.
func normStacks(st Stacks) Stacks {
	st.Processes = 0
	// A class's (and a node's) frames are its first thread's: those with the same key
	// differ in what the key leaves out (the offset within a function, the line).
	keyed := func(f StackFrame) StackFrame {
		k, _ := frameKey(Frame{Module: f.Module, Offset: f.Offset, Function: f.Function, File: f.File, Line: f.Line}, st.Frames)
		return StackFrame{Function: k}
	}
	key := func(c StackClass) string { return fmt.Sprint(c.Role, c.Status, c.WaitReason, c.Count, c.Frames) }
	renum := map[int]int{}
	normClasses := func(cs []StackClass, first int) {
		for i := range cs {
			for j := range cs[i].Frames {
				cs[i].Frames[j] = keyed(cs[i].Frames[j])
			}
		}
		sort.SliceStable(cs, func(i, j int) bool { return key(cs[i]) < key(cs[j]) })
		for i := range cs {
			renum[cs[i].Class] = first + i
			cs[i].Class = first + i
			cs[i].Ranks = normRanks(cs[i].Ranks)
			if c := cs[i].Since; c != nil {
				u := c.UTC()
				cs[i].Since = &u
			}
		}
	}
	normClasses(st.Classes, 1)
	if g := st.Goroutines; g != nil {
		gc := *g
		gc.Classes = slices.Clone(g.Classes)
		normClasses(gc.Classes, len(st.Classes)+1)
		st.Goroutines = &gc
	}
	ids := func(v []int) []int {
		out := make([]int, len(v))
		for i, c := range v {
			out[i] = renum[c]
		}
		sort.Ints(out)
		return out
	}
	for i := range st.Ranks {
		st.Ranks[i].Classes = ids(st.Ranks[i].Classes)
	}
	for i := range st.Lone {
		st.Lone[i].Class = renum[st.Lone[i].Class]
	}
	if st.Culprit != nil {
		c := *st.Culprit
		c.Class = renum[c.Class]
		st.Culprit = &c
	}
	var walk func(n *StackNode)
	walk = func(n *StackNode) {
		if n == nil {
			return
		}
		n.Ranks = normRanks(n.Ranks)
		n.Classes = ids(n.Classes)
		n.Frame = keyed(n.Frame)
		sort.SliceStable(n.Children, func(i, j int) bool {
			a, b := n.Children[i], n.Children[j]
			if a.Count != b.Count {
				return a.Count > b.Count
			}
			return a.Label < b.Label
		})
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(st.Tree)
	if a := st.Aside; a != nil {
		c := *a
		c.Classes = ids(a.Classes)
		st.Aside = &c
	}
	if g := st.Goroutines; g != nil {
		walk(g.Tree)
		for i := range g.Waits {
			g.Waits[i].Classes = ids(g.Waits[i].Classes)
		}
		if a := g.Aside; a != nil {
			c := *a
			c.Classes = ids(a.Classes)
			g.Aside = &c
		}
	}
	return st
}

// TestMergeStacksAsBefore: the merge over the sample store gives what the merge over decoded
// samples gave, on random samples and every option.
func TestMergeStacksAsBefore(t *testing.T) {
	rng := rand.New(rand.NewSource(27))
	opts := []StackOptions{{}, {Frames: "line"}, {Frames: "offset"}, {Cut: DefaultCutRE}, {HideUnsymbolized: true},
		{Window: 2}, {Frames: "line", Cut: regexp.MustCompile("^poll$"), Window: 1}}
	seen := map[string]bool{} // what the cases covered
	for i := 0; i < 400; i++ {
		samples := randomSamples(rng)
		for _, o := range opts {
			legacy := legacyMergeStacks(samples, o)
			for _, c := range legacy.Classes {
				seen["progress "+c.Progress], seen["role "+c.Role] = true, true
			}
			if g := legacy.Goroutines; g != nil {
				seen["goroutines"], seen["unread"] = len(g.Classes) > 0 || seen["goroutines"], len(g.Unread) > 0 || seen["unread"]
			}
			seen["culprit "+func() string {
				if legacy.Culprit == nil {
					return "none"
				}
				return legacy.Culprit.Progress
			}()] = true
			want := normStacks(legacy)
			got := MergeStacks(samples, o)
			if got.Processes != len(got.Ranks) {
				t.Fatalf("Processes %d, %d ranks", got.Processes, len(got.Ranks))
			}
			got = normStacks(got)
			if !reflect.DeepEqual(got, want) {
				g, w := strings.Split(dump(got), "\n"), strings.Split(dump(want), "\n")
				for k := range min(len(g), len(w)) {
					if g[k] != w[k] {
						t.Fatalf("case %d, options %+v: line %d:\n got %s\nwant %s\n%s", i, o, k, g[k], w[k], strings.Join(w[max(0, k-30):k], "\n"))
					}
				}
				t.Fatalf("case %d, options %+v: %d lines, want %d", i, o, len(g), len(w))
			}
		}
	}
	for _, k := range []string{"progress " + Stuck, "progress " + Spinning, "progress " + Moving, "progress " + Stopped,
		"progress " + Mixed, "progress " + Unknown, "role " + RoleHelper, "role " + RoleLauncher, "role ",
		"goroutines", "unread", "culprit none", "culprit " + Stuck, "culprit " + Spinning} {
		if !seen[k] {
			t.Errorf("no case had %s", k)
		}
	}
}

func dump(st Stacks) string {
	j, _ := json.MarshalIndent(st, "", " ")
	return string(j)
}
