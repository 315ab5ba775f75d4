package sessions

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestJSONEscapesTerminalControls: every C0 and C1 control, DEL and bidi override inside a
// string is written as an escape (no raw byte a terminal obeys), and the event decodes back
// to the same text.
func TestJSONEscapesTerminalControls(t *testing.T) {
	var hostile strings.Builder
	for r := rune(0); r < 0xa0; r++ {
		if r < 0x20 || r >= 0x7f {
			hostile.WriteRune(r)
		}
	}
	for _, r := range []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069} {
		hostile.WriteRune(r)
	}
	in := Event{Time: time.Unix(1, 0).UTC(), Body: Process{PID: 7, Comm: hostile.String(), Argv: []string{"\x1b]52;c;x\x07", "\u009b31m"}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range string(b) {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("raw %U in %s", r, b)
		}
	}
	var out Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if p := out.Body.(Process); p.Comm != hostile.String() || p.Argv[0] != "\x1b]52;c;x\x07" || p.Argv[1] != "\u009b31m" {
		t.Errorf("round trip: %q %q", p.Comm, p.Argv)
	}
}

// TestAppendJSONWritesWhatAnEncoderWrites: a --json stream's writer appends each event with
// AppendJSON and a newline; that is byte for byte what a json.Encoder that does not escape
// HTML writes for it (crashtui's writer before), and what the envelope and the body, each
// encoded on its own and joined, make (MarshalJSON before): for every event of every
// recording in demo/ and for events with a host, '<' and '&', terminal controls and no
// fields.
func TestAppendJSONWritesWhatAnEncoderWrites(t *testing.T) {
	var evs []Event
	for _, es := range demoRecordings(t) {
		evs = append(evs, es...)
	}
	at := time.Unix(1, 5).UTC()
	evs = append(evs,
		Event{Time: at, Host: "node<1>&\u009b", Body: Exec{PID: 3, Exe: "/a<b>&c", Argv: []string{"x\u202ey", "\x1b[2J"}}},
		Event{Time: at, Body: Error{Message: "a < b && c > d"}},
		Event{Time: at, Body: Summary{}})
	kinds := map[Kind]bool{}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	line := []byte("kept:")
	for _, e := range evs {
		kinds[e.Kind()] = true
		want.Reset()
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
		var err error
		if line, err = e.AppendJSON(line[:len("kept:")]); err != nil {
			t.Fatal(err)
		}
		if got := string(line) + "\n"; got != "kept:"+want.String() {
			t.Fatalf("%s event:\nAppendJSON %s\nan encoder %s", e.Kind(), got, want.String())
		}
		if joined := joinedWire(t, e); string(line) != "kept:"+joined {
			t.Fatalf("%s event:\nAppendJSON %s\njoined     %s", e.Kind(), line, joined)
		}
	}
	if len(kinds) < 10 {
		t.Errorf("only %d kinds of event compared: %v", len(kinds), kinds)
	}
	if b, err := (Event{Time: at}).AppendJSON([]byte("kept")); err == nil || string(b) != "kept" {
		t.Errorf("an event with no body: %q, %v; want the bytes given back and an error", b, err)
	}
}

// joinedWire is an event's wire form made the plain way: the envelope and the body each
// encoded by an encoder of its own, terminal controls escaped, the body's fields put after
// the envelope's.
func joinedWire(t *testing.T, e Event) string {
	t.Helper()
	enc := func(v any) string {
		var b bytes.Buffer
		en := json.NewEncoder(&b)
		en.SetEscapeHTML(false)
		if err := en.Encode(v); err != nil {
			t.Fatal(err)
		}
		return string(escapeTerminal(bytes.TrimSuffix(b.Bytes(), []byte("\n"))))
	}
	head, body := enc(envelope{Event: e.Body.Kind(), Time: e.Time, Host: e.Host}), enc(e.Body)
	if body == "{}" {
		return head
	}
	return strings.TrimSuffix(head, "}") + "," + strings.TrimPrefix(body, "{")
}
