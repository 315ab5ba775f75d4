package sessions

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

type scanned struct {
	line int
	text string
	long bool
}

func scanAll(r io.Reader, max int) ([]scanned, error) {
	sc := NewLineScanner(r, max)
	var out []scanned
	for sc.Scan() {
		out = append(out, scanned{sc.Line(), string(sc.Bytes()), sc.TooLong()})
	}
	return out, sc.Err()
}

func TestLineScanner(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     []scanned
	}{
		{"lines", "a\nbb\r\n\nccc", 3, []scanned{{1, "a", false}, {2, "bb", false}, {3, "", false}, {4, "ccc", false}}},
		{"long in the middle", "ok\n" + strings.Repeat("x", 100) + "\nafter\n", 8,
			[]scanned{{1, "ok", false}, {2, "", true}, {3, "after", false}}},
		{"exactly the limit", "12345678\n123456789\n", 8, []scanned{{1, "12345678", false}, {2, "", true}}},
		{"long last line without newline", "a\n" + strings.Repeat("y", 50), 10, []scanned{{1, "a", false}, {2, "", true}}},
		{"empty", "", 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanAll(strings.NewReader(tc.in), tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// endless is a reader of n bytes of 'x' and then rest, made as it is read.
type endless struct {
	n    int64
	rest *strings.Reader
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return e.rest.Read(p)
	}
	k := int64(len(p))
	if k > e.n {
		k = e.n
	}
	for i := range p[:k] {
		p[i] = 'x'
	}
	e.n -= k
	return int(k), nil
}

// TestLineScannerMemoryBounded: a 1 GiB line is skipped while the scanner allocates a few
// times its 1 MiB limit, not the line.
func TestLineScannerMemoryBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := scanAll(&endless{n: 1 << 30, rest: strings.NewReader("\nnext\n")}, 1<<20)
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != 2 || !got[0].long || got[1] != (scanned{2, "next", false}) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MiB to skip the line", alloc>>20)
	}
}

func TestLineScannerReadError(t *testing.T) {
	boom := errors.New("boom")
	sc := NewLineScanner(io.MultiReader(strings.NewReader("a\n"), iotestErr{boom}), 16)
	if !sc.Scan() || string(sc.Bytes()) != "a" || sc.Scan() || !errors.Is(sc.Err(), boom) {
		t.Errorf("err %v", sc.Err())
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

// FuzzLineScanner: where no line is over the limit, LineScanner reads what bufio.Scanner
// reads; a line over it is reported, never returned.
func FuzzLineScanner(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), 3)
	f.Add([]byte("xxxxxxxxxxxx\ny\n"), 4)
	f.Add([]byte("abc\r\r\nd"), 3)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		got, err := scanAll(bytes.NewReader(data), max)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		i := 0
		for sc.Scan() {
			if i >= len(got) {
				t.Fatalf("bufio read more lines: %q", sc.Text())
			}
			if len(sc.Bytes()) > max {
				if !got[i].long {
					t.Fatalf("line %d of %d bytes not reported too long", i+1, len(sc.Bytes()))
				}
			} else if got[i].long || got[i].text != sc.Text() {
				t.Fatalf("line %d: %+v, bufio %q", i+1, got[i], sc.Text())
			}
			i++
		}
		if i != len(got) {
			t.Fatalf("%d lines, bufio %d", len(got), i)
		}
	})
}

// TestRecordingLineTooLong: a recording with a line over MaxLine replays the events before
// and after it, and names the line as damaged; a live stream does the same through bad.
func TestRecordingLineTooLong(t *testing.T) {
	var rec bytes.Buffer
	r, err := NewRecorder(&rec, Header{Crashtui: "test"})
	if err != nil {
		t.Fatal(err)
	}
	r.Record(Event{Body: Exit{PID: 1}})
	head := rec.String() // header and one event: 2 lines
	in := func() io.Reader {
		return io.MultiReader(strings.NewReader(head),
			&endless{n: MaxLine + 1, rest: strings.NewReader("\n" + `{"event":"exit","pid":2}` + "\n")})
	}
	_, evs, err := ReadRecording(in())
	var d Damaged
	if !errors.As(err, &d) || len(d) != 1 || d[0].Line != 3 || !errors.Is(d[0], ErrLineTooLong) || len(evs) != 2 {
		t.Fatalf("ReadRecording: %d events, %v; want 2 and line 3 too long", len(evs), err)
	}
	if !strings.Contains(err.Error(), "line 3: longer than 64 MiB") {
		t.Errorf("message %q", err)
	}
	var pids []int
	var bad []*LineError
	err = StreamEvents(in(), func(e Event) { pids = append(pids, e.Body.(Exit).PID) }, func(le *LineError) { bad = append(bad, le) })
	if err != nil || len(pids) != 2 || len(bad) != 1 || bad[0].Line != 3 || !errors.Is(bad[0], ErrLineTooLong) {
		t.Errorf("StreamEvents: pids %v, bad %v, err %v", pids, bad, err)
	}
}
