package sessions

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize makes untrusted text (comm, cmdline, abort messages, paths, replayed files) safe
// for a terminal: escape sequences are removed whole, other control characters and invalid
// UTF-8 become visible escapes, so a process named "\x1b]52;…" cannot drive the terminal.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[s[i]>>4])
			b.WriteByte("0123456789abcdef"[s[i]&15])
		case r == 0x1b || r == 0x9b: // ESC or CSI: drop the whole sequence
			i += size + escapeLen(s[i+size:])
			b.WriteString("␛")
			continue
		case r == '\t':
			b.WriteByte(' ')
		case r == '\n':
			b.WriteString("⏎")
		case unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || (unicode.Is(unicode.Cf, r) && r != 0x200d):
			b.WriteString(fmt.Sprintf("\\u{%x}", r))
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of the escape sequence body that follows an ESC: CSI (ESC [ … final
// byte), OSC/DCS/APC/PM/SOS (… up to BEL or ESC \), or a single character.
func escapeLen(s string) int {
	if s == "" {
		return 0
	}
	switch s[0] {
	case '[':
		for i := 1; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']', 'P', '_', '^', 'X':
		for i := 1; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	_, size := utf8.DecodeRuneInString(s)
	return size
}

// CSVCell makes untrusted text safe as one cell of a CSV file that a spreadsheet may open
// (the CSV writer quotes it per RFC 4180): every C0 and C1 control, DEL and bidirectional
// override becomes a visible \uXXXX escape, invalid UTF-8 a \xNN, and a cell that would start
// with = + - or @ (a formula to a spreadsheet) gets a leading apostrophe.
func CSVCell(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	out := b.String()
	if out != "" && strings.ContainsRune("=+-@", rune(out[0])) {
		out = "'" + out
	}
	return out
}

// isBidiControl reports the embedding, override and isolate controls (U+202A..U+202E,
// U+2066..U+2069), which reorder what a terminal or spreadsheet shows.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
