package sessions

import (
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
