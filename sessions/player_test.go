package sessions

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func playerEvents(t0 time.Time, offsets ...time.Duration) []Event {
	var evs []Event
	for i, d := range offsets {
		evs = append(evs, Event{Time: t0.Add(d), Body: Process{PID: 100 + i, Rank: Rank(i)}})
	}
	return evs
}

func pids(evs []Event) []int {
	var out []int
	for _, e := range evs {
		out = append(out, e.Body.(Process).PID)
	}
	return out
}

func TestPlayerPace(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	evs := playerEvents(t0, 0, time.Second, 3*time.Second, 3*time.Second, 10*time.Second)
	p := NewPlayer(evs)
	w := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // any wall clock: only differences count
	if got := pids(p.Advance(w)); !reflect.DeepEqual(got, []int{100}) {
		t.Fatalf("start released %v", got)
	}
	if got := p.Advance(w.Add(999 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("released %v before its time", pids(got))
	}
	if got := pids(p.Advance(w.Add(time.Second))); !reflect.DeepEqual(got, []int{101}) {
		t.Fatalf("at 1s released %v", got)
	}
	p.SetSpeed(w.Add(time.Second), 2) // 2 s of wall time now covers 4 s of recording
	if got := pids(p.Advance(w.Add(2 * time.Second))); !reflect.DeepEqual(got, []int{102, 103}) {
		t.Fatalf("at speed 2 released %v", got)
	}
	if d, ok := p.NextDue(); !ok || d != 3500*time.Millisecond {
		t.Fatalf("NextDue = %v %v, want 3.5s", d, ok)
	}
	p.SetPaused(w.Add(2*time.Second), true)
	if got := p.Advance(w.Add(time.Hour)); len(got) != 0 || p.Position() != 3*time.Second {
		t.Fatalf("paused player released %v, position %v", pids(got), p.Position())
	}
	if got := pids(p.Step()); !reflect.DeepEqual(got, []int{104}) || !p.Done() {
		t.Fatalf("step released %v, done %v", got, p.Done())
	}
	if p.Step() != nil {
		t.Fatal("step past the end released something")
	}
}

func TestPlayerSeek(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	evs := playerEvents(t0, 0, time.Second, 2*time.Second, 5*time.Second)
	p := NewPlayer(evs)
	got, reset := p.Seek(2 * time.Second)
	if reset || !reflect.DeepEqual(pids(got), []int{100, 101, 102}) {
		t.Fatalf("forward seek: %v reset=%v", pids(got), reset)
	}
	got, reset = p.Seek(500 * time.Millisecond)
	if !reset || !reflect.DeepEqual(pids(got), []int{100}) || p.Index() != 1 {
		t.Fatalf("backward seek: %v reset=%v index=%d", pids(got), reset, p.Index())
	}
	got, _ = p.Seek(time.Hour)
	if !reflect.DeepEqual(pids(got), []int{101, 102, 103}) || p.Position() != 5*time.Second {
		t.Fatalf("seek past end: %v at %v", pids(got), p.Position())
	}
}

func TestPlayerSkewedClocks(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	evs := playerEvents(t0, 2*time.Second, 0, 3*time.Second)
	evs = append(evs, Event{Body: Process{PID: 200}}) // no time at all
	p := NewPlayer(evs)
	w := time.Unix(0, 0)
	if got := pids(p.Advance(w)); !reflect.DeepEqual(got, []int{100, 101}) {
		t.Fatalf("an event earlier than its predecessor must play with it; got %v", got)
	}
	if got := pids(p.Advance(w.Add(time.Second))); !reflect.DeepEqual(got, []int{102, 200}) {
		t.Fatalf("got %v", got)
	}
}

func TestPlayerSpeeds(t *testing.T) {
	p := NewPlayer(nil)
	w := time.Unix(0, 0)
	for range 20 {
		p.Faster(w)
	}
	if p.Speed() != Speeds[len(Speeds)-1] {
		t.Fatalf("speed %v", p.Speed())
	}
	for range 20 {
		p.Slower(w)
	}
	if p.Speed() != Speeds[0] {
		t.Fatalf("speed %v", p.Speed())
	}
	if !p.Done() || p.Advance(w) != nil {
		t.Fatal("empty player is not done")
	}
}

func TestCastWriter(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(1700000000, 0)
	c, err := NewCastWriter(&buf, 80, 24, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(1500 * time.Millisecond)
	c.Write([]byte("\x1b[2Jhello "))
	euro := []byte("€")
	c.Write(append([]byte("price 5"), euro[:1]...)) // split inside a rune
	clock = clock.Add(time.Second)
	c.Write(euro[1:])
	c.Resize(100, 30)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), `{"version":2,"width":80,"height":24,"timestamp":1700000000}`+"\n") {
		t.Fatalf("header: %q", buf.String())
	}
	h, evs, err := ReadCast(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Width != 80 || h.Height != 24 {
		t.Fatalf("header %+v", h)
	}
	want := []CastEvent{
		{1.5, "o", "\x1b[2Jhello "},
		{1.5, "o", "price 5"},
		{2.5, "o", "€"},
		{2.5, "r", "100x30"},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Fatalf("events:\n got %+v\nwant %+v", evs, want)
	}
	for _, e := range evs {
		if !utf8.ValidString(e.Data) {
			t.Errorf("invalid UTF-8 in %q", e.Data)
		}
	}
}

func FuzzReadCast(f *testing.F) {
	f.Add("{\"version\":2,\"width\":80,\"height\":24}\n[0.5,\"o\",\"hi\"]\n")
	f.Add("{\"version\":2}\n[1,2]\n")
	f.Add("not json")
	f.Fuzz(func(t *testing.T, s string) {
		ReadCast(strings.NewReader(s))
	})
}
