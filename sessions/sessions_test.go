package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEventRoundTrip(t *testing.T) {
	core := "/tmp/core.1.42"
	code := 3
	now := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	for _, b := range []Body{
		Process{PID: 42, PPID: 1, Rank: 0, Exe: "/bin/x", Argv: []string{"x"}, UID: 0},
		Process{PID: 43, Rank: NoRank},
		Exit{PID: 42, Code: &code},
		Crash{PID: 42, TID: 43, Rank: 2, Signal: "SIGSEGV", Code: "SEGV_MAPERR", Addr: 0, PC: 0x401136,
			Module: "/bin/x", Offset: 0x1136, Core: &core, Stack: []Frame{{PC: 1, Module: "m", Offset: 2}}},
		Matrix{PIDs: []int{1, 2}, Cells: []Cell{{From: 1, To: 2}}},
		Summary{Processes: 1, Groups: []GroupSummary{}},
		Goroutines{Seq: 2, PID: 42, Rank: 1, Goroutines: []GoroutineSample{{ID: 7, Status: GoWaiting, WaitReason: "chan receive",
			Frames: []Frame{{PC: 1, Module: "/bin/x", Offset: 2, Function: "main.wait"}}, CreatedBy: &Frame{Module: "/bin/x", Function: "main.main", Line: 9}}}},
	} {
		e := Event{Time: now, Host: "n1", Body: b}
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m["event"] != string(b.Kind()) {
			t.Fatalf("%s: flat form %s (%v)", b.Kind(), raw, err)
		}
		var back Event
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("round trip of %s:\n got %#v\nwant %#v", raw, back, e)
		}
	}
}

// TestEveryKindDecodes: each kind decodes into the value type whose Kind it is, with an
// absent rank NoRank, not 0.
func TestEveryKindDecodes(t *testing.T) {
	if len(decoders) != 24 {
		t.Errorf("%d kinds decode; a new kind needs its decoder", len(decoders))
	}
	for k, decode := range decoders {
		b, err := decode(json.NewDecoder(strings.NewReader(`{}`)))
		if err != nil || b.Kind() != k || reflect.TypeOf(b).Kind() == reflect.Pointer {
			t.Errorf("%s decodes to %T (%v)", k, b, err)
		}
		if r := reflect.ValueOf(b).FieldByName("Rank"); r.IsValid() && r.Interface() != NoRank {
			t.Errorf("%s: an absent rank decodes as %v", k, r.Interface())
		}
	}
}

func TestWireNames(t *testing.T) {
	raw, _ := json.Marshal(Event{Body: Crash{PID: 1, Rank: NoRank, PC: 0x10}})
	for _, want := range []string{`"event":"crash"`, `"pid":1`, `"rank":null`, `"pc":"0x10"`, `"core":null`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %s", raw, want)
		}
	}
}

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain name", "plain name"},
		{"evil\x1b]52;c;AAAA\x07tail", "evil␛tail"},
		{"red\x1b[31mtext", "red␛text"},
		{"nul\x00bell\x07", `nul\u{0}bell\u{7}`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"rtl\u202eoverride", `rtl\u{202e}override`},
		{"line\nbreak", "line⏎break"},
		{"ünïcode ok", "ünïcode ok"},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add("\x1b[2J\x1b]0;title\x07")
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control %U survived in %q", r, out)
			}
		}
	})
}

func TestRecordingRoundTripAndDamage(t *testing.T) {
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf, Header{Job: "pgid:1", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		rec.Record(Event{Body: Process{PID: 10 + i, Rank: Rank(i)}})
	}
	h, evs, err := ReadRecording(bytes.NewReader(buf.Bytes()))
	if err != nil || len(evs) != 3 || h.Job != "pgid:1" {
		t.Fatalf("read back: %v, %d events, %+v", err, len(evs), h)
	}
	// Truncate in the middle of the last line: two events replay, the error names line 4.
	cut := buf.Bytes()[:buf.Len()-5]
	_, evs, err = ReadRecording(bytes.NewReader(cut))
	var d Damaged
	if !errors.As(err, &d) || len(d) != 1 || d[0].Line != 4 || len(evs) != 2 {
		t.Fatalf("truncated: err %v, %d events", err, len(evs))
	}
	// A damaged line in the middle is skipped: the events after it replay too.
	lines := strings.Split(buf.String(), "\n")
	lines[2] = lines[2][:10]
	_, evs, err = ReadRecording(strings.NewReader(strings.Join(lines, "\n")))
	if !errors.As(err, &d) || len(d) != 1 || d[0].Line != 3 || len(evs) != 2 || evs[1].Body.(Process).PID != 12 {
		t.Fatalf("damaged line 3: err %v, %d events", err, len(evs))
	}
	future := strings.Replace(buf.String(), fmt.Sprintf(`"version":%d`, FormatVersion), `"version":99`, 1)
	if future == buf.String() {
		t.Fatalf("no version %d in the header: %s", FormatVersion, buf.String())
	}
	if _, _, err = ReadRecording(strings.NewReader(future)); !errors.Is(err, ErrFutureVersion) {
		t.Fatalf("future version: %v", err)
	}
}

func FuzzReadRecording(f *testing.F) {
	f.Add([]byte(`{"format":"crashtui-session","version":1}` + "\n" + `{"event":"crash","pid":1}`))
	// Version 1 thread events, whose sentences the reader parses into facts (upgrade.go).
	f.Add([]byte(`{"format":"crashtui-session","version":1}` + "\n" +
		`{"event":"thread","pid":1,"tid":2,"in_syscall":true,"syscall":"read","code":"ERESTARTSYS","outcome":"read returned ERESTARTSYS (512) to the program, x; the program then called read again",` +
		`"explain":"SIGUSR1 is caught by a handler with SA_RESTART (flags 0x14000000, read with rt_sigaction inside the process, thread 1). With x."}`))
	f.Add([]byte(`{"format":"crashtui-session","version":1}` + "\n" +
		`{"event":"thread","pid":1,"tid":2,"outcome":"left read and the thread exited","explain":"SIG40 is caught (SigCgt); y. (Running rt_sigaction inside the process to read it failed: every thread of 1 is held at a signal; z.)"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadRecording(bytes.NewReader(b))
	})
}

func TestStateGroupsAcrossHosts(t *testing.T) {
	s := NewState()
	// Each host's tracer opens its group 1 with this crash, its representative.
	c := Crash{PID: 5, Exe: "/x", Module: "/x", Offset: 0x10, Signal: "SIGSEGV", Rank: 0, Key: "/x|/x+0x10", Group: 1, Representative: true}
	s.Apply(Event{Host: "a", Body: Process{PID: 5, Rank: 0}})
	s.Apply(Event{Host: "b", Body: Process{PID: 5, Rank: 1}})
	s.Apply(Event{Host: "a", Body: c})
	c.Rank = 1
	s.Apply(Event{Host: "b", Body: c})
	if len(s.Procs) != 2 || len(s.Groups) != 1 || s.Groups[0].Count() != 2 {
		t.Fatalf("procs %d groups %d", len(s.Procs), len(s.Groups))
	}
	sum := s.Summary()
	if sum.Crashes != 2 || sum.Groups[0].Count != 2 || sum.Groups[0].Representative != 5 {
		t.Fatalf("summary %+v", sum)
	}
}

// Abort messages quote C source ("a < b && c > 0"): the JSON Lines must show them as written,
// not as \u003c \u0026 \u003e, both from MarshalJSON and through an encoder that does not
// escape HTML (the one crashtui --json and the recorder use).
func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	msg := "rank: rank.c:42: solve: Assertion `a < b && c > 0' failed."
	e := Event{Time: time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC), Host: "n<1>",
		Body: Crash{PID: 1, Rank: NoRank, Signal: "SIGABRT", AbortMessage: msg}}
	raw, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{string(raw), buf.String()} {
		if strings.Contains(out, `\u00`) || !strings.Contains(out, msg) || !strings.Contains(out, `"host":"n<1>"`) {
			t.Errorf("escaped or lost: %s", out)
		}
		if strings.HasSuffix(string(raw), "\n") {
			t.Errorf("MarshalJSON output ends with a newline: %q", raw)
		}
	}
	var back Event
	if err := json.Unmarshal(raw, &back); err != nil || back.Body.(Crash).AbortMessage != msg || back.Host != "n<1>" {
		t.Errorf("round trip: %v %#v", err, back)
	}
}

// TestStateGroupsAsTheTracerDecided: a crash group's number and representative are the
// tracer's (tracer/crash decides them before the signal goes on, for the core policy), taken
// from the crash events and never decided again: a representative that is not the group's
// first crash stays it, a group none of whose members could have a core has none, and only
// in a merge of hosts is a number another host's group has replaced by the next free one.
func TestStateGroupsAsTheTracerDecided(t *testing.T) {
	crash := func(pid int, site Hex, group int, rep bool) Crash {
		c := Crash{PID: pid, TID: pid, Rank: NoRank, Exe: "/x", Signal: "SIGSEGV", Module: "/x", Offset: site,
			Group: group, Representative: rep}
		c.Key = SiteKey(c)
		if !rep {
			c.NoCore = NoCoreRlimit
		}
		return c
	}
	s := NewState()
	for _, e := range []Event{
		{Host: "a", Body: crash(10, 0x10, 1, false)}, // RLIMIT_CORE 0: not the representative
		{Host: "a", Body: crash(11, 0x10, 1, true)},
		{Host: "a", Body: crash(12, 0x20, 2, false)}, // no member of group 2 can have a core
		{Host: "b", Body: crash(20, 0x30, 1, true)},  // host b's group 1: another site
		{Host: "b", Body: crash(21, 0x10, 2, true)},  // host b's group 2: host a's group 1
	} {
		s.Apply(e)
	}
	type want struct {
		id  int
		rep ProcKey
		n   int
	}
	wants := []want{{1, ProcKey{"b", 21}, 3}, {2, ProcKey{}, 1}, {3, ProcKey{"b", 20}, 1}}
	if len(s.Groups) != len(wants) {
		t.Fatalf("%d groups, want %d", len(s.Groups), len(wants))
	}
	for i, w := range wants {
		g := s.Groups[i]
		if g.ID != w.id || g.Representative != w.rep || g.Count() != w.n {
			t.Errorf("group %d (%s): id %d representative %v count %d; want %d %v %d", i, g.Key, g.ID, g.Representative, g.Count(), w.id, w.rep, w.n)
		}
	}
	// One host: the tracer's numbers as they are, even where they are not 1, 2, 3 (a stream
	// joined late).
	s = NewState()
	s.Apply(Event{Body: crash(30, 0x40, 4, true)})
	s.Apply(Event{Body: crash(31, 0x50, 7, true)})
	if s.Groups[0].ID != 4 || s.Groups[1].ID != 7 || s.Summary().Groups[1].Group != 7 {
		t.Errorf("group ids %d %d, want the tracer's 4 and 7", s.Groups[0].ID, s.Groups[1].ID)
	}
}

// demoRecordings are the events of every recording committed in demo/ (demo/*.jsonl and
// demo/sessions/*.jsonl), by path.
func demoRecordings(t *testing.T) map[string][]Event {
	t.Helper()
	files, _ := filepath.Glob("../demo/*.jsonl")
	more, _ := filepath.Glob("../demo/sessions/*.jsonl")
	files = append(files, more...)
	if len(files) < 2 {
		t.Fatalf("the recordings in demo/ are gone: %v", files)
	}
	recs := map[string][]Event{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		_, evs, err := ReadRecording(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		recs[f] = evs
	}
	return recs
}

// TestRecordedGroupsReplayAlike: the committed recordings replay into the groups their
// tracer decided: every member in the group its crash event names, and the one representative
// it named.
func TestRecordedGroupsReplayAlike(t *testing.T) {
	recs := demoRecordings(t)
	crashes := 0
	for f, evs := range recs {
		s := NewState()
		for _, e := range evs {
			s.Apply(e)
		}
		for _, g := range s.Groups {
			reps := 0
			for _, m := range g.Members {
				crashes++
				if m.Crash.Group != g.ID {
					t.Errorf("%s: pid %d recorded in group %d, replayed in %d", f, m.Crash.PID, m.Crash.Group, g.ID)
				}
				if m.Crash.Representative {
					reps++
					if g.Representative.PID != m.Crash.PID {
						t.Errorf("%s: group %d: recorded representative %d, replayed %d", f, g.ID, m.Crash.PID, g.Representative.PID)
					}
				}
			}
			if reps != 1 {
				t.Errorf("%s: group %d has %d representatives", f, g.ID, reps)
			}
		}
	}
	if crashes < 20 {
		t.Errorf("only %d crashes in %d recordings: the recordings moved?", crashes, len(recs))
	}
}
