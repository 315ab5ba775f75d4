package tui

import "testing"

// The terminal's answers, as xterm, kitty, tmux and the Linux console (which knows no OSC 11)
// write them.
func TestParseOSC11(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		dark, ok  bool
		cprInside bool
	}{
		{"xterm white, ST", "\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[12;1R", false, true, true},
		{"xterm black, BEL", "\x1b]11;rgb:0000/0000/0000\x07\x1b[1;1R", true, true, true},
		{"solarized light, 2 digits", "\x1b]11;rgb:fd/f6/e3\x07\x1b[3;7R", false, true, true},
		{"hash form", "\x1b]11;#1e1e2e\x1b\\\x1b[1;1R", true, true, true},
		{"no OSC 11: the console", "\x1b[24;80R", false, false, true},
		{"keys typed before the answers", "jj\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[1;1R", false, true, true},
		{"cut short", "\x1b]11;rgb:ff", false, false, false},
		{"garbage", "\x1b]11;rgb:zz/yy/xx\x07", false, false, false},
		{"too many digits", "\x1b]11;rgb:fffff/0/0\x07", false, false, false},
	} {
		dark, ok := parseOSC11([]byte(tc.in))
		if dark != tc.dark || ok != tc.ok {
			t.Errorf("%s: dark %v ok %v, want %v %v", tc.name, dark, ok, tc.dark, tc.ok)
		}
		if got := cprIn([]byte(tc.in)); got != tc.cprInside {
			t.Errorf("%s: cprIn %v", tc.name, got)
		}
	}
}

func FuzzParseOSC11(f *testing.F) {
	f.Add([]byte("\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[12;1R"))
	f.Add([]byte("\x1b]11;#ffffff\x07"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseOSC11(b)
		cprIn(b)
	})
}
