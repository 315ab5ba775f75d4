package sessions

import (
	"bufio"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// benchEvents are a fork+exec's three events, as a --json stream writes them.
func benchEvents() []Event {
	at := time.Date(2026, 12, 7, 1, 5, 48, 895986737, time.UTC)
	return []Event{
		{Time: at, Body: Process{PID: 3776, PPID: 3774, Rank: 0, Exe: "/tmp/ft/events", Comm: "events", Argv: []string{"./events", "fork", "300", "el"}, Threads: 1}},
		{Time: at, Body: Exec{PID: 3776, Exe: "/usr/bin/true", Comm: "true", Argv: []string{"true"}, Rank: 0}},
		{Time: at, Body: Exit{PID: 3776, Code: new(int)}},
	}
}

// BenchmarkEventJSON is the cost of writing one event to a --json stream: AppendJSON into a
// reused buffer (the session's writer) against json.Encoder (the writer before it, which
// calls MarshalJSON and then compacts its output again), in the same run. Each op writes
// eventsPerOp events each way (make bench runs 3 ops: the first events' warming up is not the
// figure).
func BenchmarkEventJSON(b *testing.B) {
	const eventsPerOp = 3000
	evs := benchEvents()
	w := bufio.NewWriter(io.Discard)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var buf []byte
	var viaEncoder, viaAppend time.Duration
	for b.Loop() {
		start := time.Now()
		for i := range eventsPerOp {
			if err := enc.Encode(evs[i%len(evs)]); err != nil {
				b.Fatal(err)
			}
		}
		viaEncoder += time.Since(start)
		start = time.Now()
		for i := range eventsPerOp {
			var err error
			if buf, err = evs[i%len(evs)].AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
			w.Write(append(buf, '\n'))
		}
		viaAppend += time.Since(start)
	}
	n := float64(b.N * eventsPerOp)
	b.ReportMetric(float64(viaEncoder.Nanoseconds())/n, "encoder-ns/event")
	b.ReportMetric(float64(viaAppend.Nanoseconds())/n, "append-ns/event")
	b.ReportMetric(float64(viaAppend)/float64(viaEncoder), "append/encoder")
}
