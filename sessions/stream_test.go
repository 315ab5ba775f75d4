package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStreamEvents(t *testing.T) {
	in := strings.Join([]string{
		`{"format":"crashtui-session","version":1,"job":"a"}`,
		`{"event":"process","time":"2026-11-30T00:00:00Z","pid":7,"rank":0}`,
		`{"event":"crash","pid":`,
		``,
		`{"event":"exit","time":"2026-11-30T00:00:01Z","pid":7,"code":0}`,
	}, "\n")
	var kinds []Kind
	var bad []int
	err := StreamEvents(strings.NewReader(in), func(e Event) { kinds = append(kinds, e.Kind()) },
		func(le *LineError) { bad = append(bad, le.Line) })
	if err != nil || len(kinds) != 2 || kinds[0] != KindProcess || kinds[1] != KindExit || len(bad) != 1 || bad[0] != 3 {
		t.Fatalf("kinds %v bad lines %v err %v; want process, exit and line 3 skipped", kinds, bad, err)
	}

	future := `{"format":"crashtui-session","version":99}` + "\n" + `{"event":"exit","pid":1}`
	n := 0
	err = StreamEvents(strings.NewReader(future), func(Event) { n++ }, func(*LineError) {})
	if !errors.Is(err, ErrFutureVersion) || n != 0 {
		t.Fatalf("future version: err %v after %d events", err, n)
	}
}

// TestStreamParallelAsSequential: decoded on several goroutines, a stream gives the same
// events, skipped lines and errors, in the same order, as on one: recordings, a damaged line,
// an over-long one, a header mid-stream, a bad header that ends it.
func TestStreamParallelAsSequential(t *testing.T) {
	var recs []string
	for _, f := range []string{"../demo/session.jsonl", "../demo/sessions/crash-storm.jsonl"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, string(b))
	}
	long := `{"event":"error","message":"` + strings.Repeat("x", MaxLine) + `"}`
	for name, in := range map[string]string{
		"recordings":       recs[0] + recs[1],
		"damaged and long": recs[1][:len(recs[1])/2] + "\n{\"event\":\"crash\",\"pid\":\n" + long + "\n" + recs[0],
		"bad header":       recs[1] + `{"format":"crashtui-session","version":99}` + "\n" + recs[0],
	} {
		run := func(workers int) string {
			var b strings.Builder
			err := streamEvents(strings.NewReader(in), workers, StreamOptions{}, func(e Event) {
				j, _ := json.Marshal(e)
				b.Write(j)
				b.WriteByte('\n')
			}, func(le *LineError) { fmt.Fprintf(&b, "bad %v\n", le) })
			fmt.Fprintf(&b, "end %v", err)
			return b.String()
		}
		if seq, par := run(1), run(3); seq != par {
			t.Errorf("%s: decoded on three goroutines, not as on one (%d and %d bytes)", name, len(par), len(seq))
		} else if strings.Count(seq, "\n") < 50 {
			t.Errorf("%s: only %q", name, seq)
		}
	}
}

// TestStreamLive: a live stream's event is handed on as soon as its line is read, not when
// a batch fills.
func TestStreamLive(t *testing.T) {
	r, w := io.Pipe()
	got := make(chan Event)
	go streamEvents(r, 3, StreamOptions{}, func(e Event) { got <- e }, func(*LineError) {})
	for pid := 1; pid <= 3; pid++ {
		fmt.Fprintf(w, `{"event":"exit","pid":%d}`+"\n", pid)
		select {
		case e := <-got:
			if e.Body.(Exit).PID != pid {
				t.Fatalf("got %+v, want pid %d", e, pid)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the event of pid %d was not handed on before the next line", pid)
		}
	}
	w.Close()
}
