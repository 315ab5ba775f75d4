package sessions

import (
	"runtime"
	"testing"
)

// TestStateManyProcesses: process events cost the State about half a kilobyte each (an
// untrusted stream can name any number): 250,000 of them stay under 256 MB, so a million stay
// under 1 GB (measured: 519 MB). A quarter of a million keeps the race-detector run short.
func TestStateManyProcesses(t *testing.T) {
	const n = 250_000
	st := NewState()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for pid := 1; pid <= n; pid++ {
		st.Apply(Event{Body: Process{PID: pid, Comm: "rank", Exe: "/usr/bin/solver", Argv: []string{"solver", "-n", "64"}}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if heap := int64(after.HeapAlloc) - int64(before.HeapAlloc); heap > 256<<20 {
		t.Errorf("State of %d processes holds %d MB", n, heap>>20)
	}
	runtime.KeepAlive(st)
}
