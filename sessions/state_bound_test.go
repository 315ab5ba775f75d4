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
