package sessions

import (
	"testing"
	"time"
)

// TestProgressFromCounters: the progress MergeStacks gives a thread from its samples and the
// kernel's counters (issue 24 item 2): a sample that read no stack is no change of stack; the
// same path with no CPU is stuck, with CPU spinning; a changed path is moving; T is stopped;
// fewer than two read stacks is unknown.
func TestProgressFromCounters(t *testing.T) {
	stack := []Frame{{Function: "wait", Module: "/bin/x", Offset: 0x20}, {Function: "main", Module: "/bin/x", Offset: 0x10}}
	other := []Frame{{Function: "work", Module: "/bin/x", Offset: 0x40}, {Function: "main", Module: "/bin/x", Offset: 0x10}}
	t0 := time.Unix(1000, 0)
	type smp struct {
		frames []Frame
		runMS  uint64 // cumulative ms on a CPU
		state  string
	}
	cases := []struct {
		name string
		s    []smp
		want string
	}{
		{"blocked", []smp{{stack, 5, "S"}, {stack, 5, "S"}, {stack, 5, "S"}}, Stuck},
		{"a failed sample between", []smp{{stack, 5, "S"}, {nil, 5, "S"}, {stack, 5, "S"}}, Stuck},
		{"busy on one path", []smp{{stack, 0, "R"}, {stack, 90, "R"}, {stack, 190, "R"}}, Spinning},
		{"polls a little", []smp{{stack, 0, "S"}, {stack, 2, "S"}, {stack, 4, "S"}}, Stuck},
		{"moved", []smp{{stack, 0, "R"}, {other, 90, "R"}, {stack, 190, "R"}}, Moving},
		{"stopped", []smp{{stack, 5, "T"}, {stack, 5, "T"}}, Stopped},
		{"one stack read", []smp{{nil, 0, "R"}, {stack, 100, "R"}, {nil, 200, "R"}}, Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var samples []StampedSample
			for i, s := range c.s {
				samples = append(samples, StampedSample{Time: t0.Add(time.Duration(i) * 100 * time.Millisecond), Sample: Sample{
					Seq: i + 1, PID: 7, Rank: 0, Threads: []ThreadSample{{TID: 7, State: s.state, Frames: s.frames,
						RunNS: 1e6 + s.runMS*1e6, CPU: s.runMS / 10}}}})
			}
			st := MergeStacks(samples, StackOptions{})
			if len(st.Ranks) != 1 || st.Ranks[0].Progress != c.want {
				t.Errorf("progress %+v, want %s", st.Ranks, c.want)
			}
		})
	}
}

// TestCulpritBlockedOverSpinning: STAT's hang with a computing rank, read twice. Rank 0 is
// alone in a read, rank 5 alone in a loop that stayed on one path using CPU (spinning), the
// rest in a barrier: the blocked one is the culprit. With nobody blocked alone, the one
// spinning alone is.
func TestCulpritBlockedOverSpinning(t *testing.T) {
	main := Frame{Function: "main", Module: "/bin/x", Offset: 0x10}
	read := []Frame{{Function: "read", Module: "/bin/x", Offset: 0x20}, {Function: "recv", Module: "/bin/x", Offset: 0x30}, main}
	barrier := []Frame{{Function: "futex", Module: "/bin/x", Offset: 0x40}, {Function: "barrier", Module: "/bin/x", Offset: 0x50}, main}
	loop := []Frame{{Function: "relax", Module: "/bin/x", Offset: 0x60}, {Function: "compute", Module: "/bin/x", Offset: 0x70}, main}
	t0 := time.Unix(1000, 0)
	merge := func(withReader bool) Stacks {
		var samples []StampedSample
		for seq := 1; seq <= 2; seq++ {
			for rank := 0; rank < 6; rank++ {
				frames, state, run, sys := barrier, "S", uint64(5), "futex"
				switch {
				case rank == 0 && withReader:
					frames, sys = read, "read"
				case rank == 5:
					frames, state, run, sys = loop, "R", uint64(100*seq), ""
				}
				samples = append(samples, StampedSample{Time: t0.Add(time.Duration(seq) * 100 * time.Millisecond), Sample: Sample{
					Seq: seq, PID: 100 + rank, Rank: Rank(rank), Threads: []ThreadSample{{TID: 100 + rank, State: state, Frames: frames,
						Syscall: sys, RunNS: 1e6 + run*1e6, CPU: run / 10}}}})
			}
		}
		return MergeStacks(samples, StackOptions{})
	}
	st := merge(true)
	if len(st.Lone) != 2 {
		t.Fatalf("lone ranks %+v, want 0 and 5", st.Lone)
	}
	if st.Culprit == nil || st.Culprit.Rank != 0 || st.Culprit.Progress != Stuck {
		t.Errorf("culprit %+v, want rank 0, stuck (lone: %+v)", st.Culprit, st.Lone)
	}
	st = merge(false)
	if st.Culprit == nil || st.Culprit.Rank != 5 || st.Culprit.Progress != Spinning {
		t.Errorf("with nobody blocked alone: culprit %+v, want rank 5, spinning (lone: %+v)", st.Culprit, st.Lone)
	}
}
