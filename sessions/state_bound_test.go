package sessions

import (
	"runtime"
	"testing"
)

// TestStateManyProcesses: an untrusted stream can name any number of processes, and State's
// memory must not follow it (issue 21 item 7): beyond MaxProcs in detail, a process costs its
// host's counts about 20 bytes. A million process events of four hosts stay under 128 MB
// (measured: 48 MB, where a detailed Proc each took 1 GB), and the counts are exact.
func TestStateManyProcesses(t *testing.T) {
	const n = 1_000_000
	st := NewState()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	hosts := []string{"n1", "n2", "n3", "n4"}
	for pid := 1; pid <= n; pid++ {
		st.Apply(Event{Host: hosts[pid%4], Body: Process{PID: pid, Rank: Rank(pid - 1), Comm: "rank", Exe: "/usr/bin/solver", Argv: []string{"solver", "-n", "64"}}})
	}
	for pid := 1; pid <= n; pid += 2 {
		st.Apply(Event{Host: hosts[pid%4], Body: Exit{PID: pid}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if heap := int64(after.HeapAlloc) - int64(before.HeapAlloc); heap > 128<<20 {
		t.Errorf("State of %d processes holds %d MB", n, heap>>20)
	}
	procs, threads := st.Live()
	if sum := st.Summary(); sum.Processes != n || sum.Exits != n/2 || procs != n/2 || threads != n/2 || len(st.Procs) != MaxProcs {
		t.Errorf("summary %+v, live %d/%d, %d in detail", sum, procs, threads, len(st.Procs))
	}
	for _, hc := range st.HostCounts() {
		if hc.Processes != n/4 || hc.Ranks.Len() != n/4 {
			t.Errorf("host %s: %+v (%d ranks)", hc.Host, hc, hc.Ranks.Len())
		}
	}
	runtime.KeepAlive(st)
}

// A reducing view's State (NoDetail) passes on counts, not processes: it keeps none in
// detail, even under MaxProcs (each one's Proc and thread map were a tenth of a first-level
// view's time), and its counts are those of a State that does.
func TestNoDetailKeepsNoProcess(t *testing.T) {
	lean, full := NewState(), NewState()
	lean.NoDetail()
	code := 3
	for _, st := range []*State{lean, full} {
		for pid := 1; pid <= 1000; pid++ {
			h := []string{"n1", "n2"}[pid%2]
			st.Apply(Event{Host: h, Body: Process{PID: pid, Rank: Rank(pid - 1), Comm: "rank"}})
			st.Apply(Event{Host: h, Body: Task{PID: pid, TID: pid + 100000}})
			if pid%3 == 0 {
				st.Apply(Event{Host: h, Body: Exit{PID: pid, Code: &code}})
			}
			if pid%7 == 0 {
				st.Apply(Event{Host: h, Body: Crash{PID: pid, TID: pid, Rank: NoRank, Signal: "SIGSEGV", Key: "k"}})
			}
		}
	}
	if len(lean.Procs) != 0 || len(lean.Order) != 0 {
		t.Errorf("NoDetail kept %d processes in detail", len(lean.Procs))
	}
	if len(full.Procs) != 1000 {
		t.Fatalf("the detailed State kept %d processes, want 1000", len(full.Procs))
	}
	lp, lt := lean.Live()
	fp, ft := full.Live()
	if lp != fp || lt != ft || lean.NProcs != full.NProcs || lean.Exits != full.Exits || lean.Crashes != full.Crashes {
		t.Errorf("NoDetail: live %d/%d, %d procs, %d exits, %d crashes; detailed: %d/%d, %d, %d, %d",
			lp, lt, lean.NProcs, lean.Exits, lean.Crashes, fp, ft, full.NProcs, full.Exits, full.Crashes)
	}
	lh, fh := lean.HostCounts(), full.HostCounts()
	if len(lh) != 2 || len(lh) != len(fh) {
		t.Fatalf("host counts: %d and %d hosts", len(lh), len(fh))
	}
	for i := range lh {
		if lh[i].Host != fh[i].Host || lh[i].Processes != fh[i].Processes || lh[i].Alive != fh[i].Alive ||
			lh[i].Threads != fh[i].Threads || lh[i].Ranks.String() != fh[i].Ranks.String() {
			t.Errorf("host %s: NoDetail %+v, detailed %+v", lh[i].Host, lh[i], fh[i])
		}
	}
	if g, h := lean.GroupByKey("k"), full.GroupByKey("k"); g == nil || h == nil || g.Count() != h.Count() || g.Ranks().String() != h.Ranks().String() {
		t.Errorf("the crash group differs: %v and %v", g, h)
	}
}
