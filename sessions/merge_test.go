package sessions

import (
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// randomSamples are samples of a few hosts' processes: ranked and not, one to three threads,
// stacks from a few paths (some through an MPI_ frame, some unsymbolized), moving or not,
// processes that miss samples or end, a tid reused by another process.
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
						frames = append(frames, Frame{PC: off + 0x400000, Module: "/bin/app", Offset: off, Function: fn,
							File: "app.c", Line: 10 + d + int(off%3)})
					}
					sys := []string{"", "futex", "nanosleep", "read"}[(p+th)%4]
					threads = append(threads, ThreadSample{TID: tid, State: "S", Held: p%7 != 3, Syscall: sys, CPU: uint64(seq * (p % 3)), Frames: frames})
				}
				out = append(out, StampedSample{Host: h, Time: t0.Add(time.Duration(seq) * time.Second),
					Sample: Sample{Seq: seq, PID: pid, Rank: rank, Threads: threads}})
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
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
	for i := range st.Classes {
		for j := range st.Classes[i].Frames {
			st.Classes[i].Frames[j] = keyed(st.Classes[i].Frames[j])
		}
	}
	key := func(c StackClass) string { return fmt.Sprint(c.Count, c.Frames) }
	sort.SliceStable(st.Classes, func(i, j int) bool { return key(st.Classes[i]) < key(st.Classes[j]) })
	renum := map[int]int{}
	for i := range st.Classes {
		renum[st.Classes[i].Class] = i + 1
		st.Classes[i].Class = i + 1
		st.Classes[i].Ranks = normRanks(st.Classes[i].Ranks)
		if c := st.Classes[i].Since; c != nil {
			u := c.UTC()
			st.Classes[i].Since = &u
		}
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
	return st
}

// TestMergeStacksAsBefore: the merge over the sample store gives what the merge over decoded
// samples gave, on random samples and every option.
func TestMergeStacksAsBefore(t *testing.T) {
	rng := rand.New(rand.NewSource(27))
	opts := []StackOptions{{}, {Frames: "line"}, {Frames: "offset"}, {Cut: DefaultCutRE}, {HideUnsymbolized: true},
		{Window: 2}, {Frames: "line", Cut: regexp.MustCompile("^poll$"), Window: 1}}
	for i := 0; i < 400; i++ {
		samples := randomSamples(rng)
		for _, o := range opts {
			want := normStacks(legacyMergeStacks(samples, o))
			got := MergeStacks(samples, o)
			if got.Processes != len(got.Ranks) {
				t.Fatalf("Processes %d, %d ranks", got.Processes, len(got.Ranks))
			}
			got = normStacks(got)
			if !reflect.DeepEqual(got, want) {
				g, w := strings.Split(dump(got), "\n"), strings.Split(dump(want), "\n")
				for k := range min(len(g), len(w)) {
					if g[k] != w[k] {
						t.Fatalf("case %d, options %+v: line %d:\n got %s\nwant %s", i, o, k, g[k], w[k])
					}
				}
				t.Fatalf("case %d, options %+v: %d lines, want %d", i, o, len(g), len(w))
			}
		}
	}
}

func dump(st Stacks) string {
	var b strings.Builder
	fmt.Fprintf(&b, "samples %d classes:", st.Samples)
	for _, c := range st.Classes {
		fmt.Fprintf(&b, "\n  %+v", c)
	}
	fmt.Fprintf(&b, "\n ranks %+v\n lone %+v culprit %+v", st.Ranks, st.Lone, st.Culprit)
	var walk func(n *StackNode, d int)
	walk = func(n *StackNode, d int) {
		fmt.Fprintf(&b, "\n %s%s %d [%s] %v %s", strings.Repeat(" ", d), n.Label, n.Count, n.Ranks, n.PIDs, n.Progress)
		for _, c := range n.Children {
			walk(c, d+1)
		}
	}
	walk(st.Tree, 0)
	return b.String()
}
