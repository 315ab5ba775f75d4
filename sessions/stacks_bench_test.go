package sessions

import (
	"strconv"
	"testing"
	"time"
)

// benchSamples is n single-threaded processes sampled k times; every process of each
// group of per shares its stack (n/per classes), and every third process moves.
func benchSamples(n, k, per int) []StampedSample {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var out []StampedSample
	for seq := 1; seq <= k; seq++ {
		for p := 0; p < n; p++ {
			g := p / per
			frames := []Frame{
				{PC: Hex(0x1000 + g), Module: "/bin/solver", Offset: Hex(0x1000 + g), Function: "leaf" + strconv.Itoa(g)},
				{PC: 0x2000, Module: "/bin/solver", Offset: 0x2000, Function: "main"},
			}
			if p%3 == 0 {
				frames[0].PC += Hex(seq)
			}
			out = append(out, StampedSample{Time: t0.Add(time.Duration(seq) * time.Second), Sample: Sample{Seq: seq, PID: 1000 + p, Rank: Rank(p),
				Threads: []ThreadSample{{TID: 1000 + p, State: "S", Held: true, CPU: uint64(seq), Frames: frames}}}})
		}
	}
	return out
}

// BenchmarkMergeStacks1000 merges 10 samples of 1000 processes (what the Stacks tab does
// when a sample arrives), with 1000 classes (every stack its own) and with 10 (goal < 50 ms
// each: the tab redraws after it), beside the merge over decoded samples it replaced.
func BenchmarkMergeStacks1000(b *testing.B) {
	for _, per := range []int{1, 100} {
		s := benchSamples(1000, 10, per)
		for _, m := range []struct {
			name  string
			merge func([]StampedSample, StackOptions) Stacks
		}{{"", MergeStacks}, {"-legacy", legacyMergeStacks}} {
			b.Run(strconv.Itoa(1000/per)+"classes"+m.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if st := m.merge(s, StackOptions{Window: 10}); len(st.Classes) != 1000/per {
						b.Fatalf("%d classes", len(st.Classes))
					}
				}
			})
		}
	}
}
