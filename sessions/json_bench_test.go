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

// BenchmarkEventJSON is the cost of writing one event to a --json stream: through
// json.Encoder (which calls MarshalJSON and then compacts its output again) against
// AppendJSON into a reused buffer, the writer's way.
func BenchmarkEventJSON(b *testing.B) {
	evs := benchEvents()
	b.Run("encoder", func(b *testing.B) {
		w := bufio.NewWriter(io.Discard)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for i := 0; b.Loop(); i++ {
			if err := enc.Encode(evs[i%len(evs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		w := bufio.NewWriter(io.Discard)
		var buf []byte
		for i := 0; b.Loop(); i++ {
			var err error
			if buf, err = evs[i%len(evs)].AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
			w.Write(append(buf, '\n'))
		}
	})
}
