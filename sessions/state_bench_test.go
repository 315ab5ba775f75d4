package sessions

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
	"time"
)

// BenchmarkStateMillionEvents is issue 21 item 7's figure for make bench: a stream of a million
// process events of four hosts (half of them then exiting) read as a view or a replay reads
// one (StreamEvents: decode each line, apply it to one State), in seconds per million events
// and the State's heap in MB afterwards, beside the stream's own size.
func BenchmarkStateMillionEvents(b *testing.B) {
	const n = 1_000_000
	var buf bytes.Buffer
	hosts := []string{"n1", "n2", "n3", "n4"}
	enc := json.NewEncoder(&buf)
	t0 := time.Unix(1_800_000_000, 0)
	for pid := 1; pid <= n; pid++ {
		enc.Encode(Event{Time: t0, Host: hosts[pid%4], Body: Process{PID: pid, Rank: Rank(pid - 1), Comm: "rank", Exe: "/usr/bin/solver", Argv: []string{"solver", "-n", "64"}}})
	}
	for pid := 1; pid <= n; pid += 2 {
		enc.Encode(Event{Time: t0, Host: hosts[pid%4], Body: Exit{PID: pid}})
	}
	stream := buf.Bytes()
	b.ResetTimer()
	var secs, mb float64
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		st := NewState()
		if err := StreamEvents(bytes.NewReader(stream), func(e Event) { st.Apply(e) }, func(le *LineError) { b.Fatal(le) }); err != nil {
			b.Fatal(err)
		}
		secs += time.Since(start).Seconds()
		runtime.GC()
		runtime.ReadMemStats(&after)
		mb += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
		if sum := st.Summary(); sum.Processes != n || sum.Exits != n/2 {
			b.Fatalf("summary %+v", sum)
		}
		runtime.KeepAlive(st)
	}
	b.ReportMetric(secs/float64(b.N), "s/million-procs")
	b.ReportMetric(mb/float64(b.N), "state-MB")
	b.ReportMetric(float64(len(stream))/(1<<20), "stream-MB")
}
