package sessions

import (
	"bytes"
	"encoding/json"
	"strings"
)

// scanEnvelope reads an event line's "event", "time" and "host" by walking its top-level
// keys, without decoding the rest: the body's own decode validates the whole line after.
// A view at the root of a tree reads millions of lines, and encoding/json would scan each
// one twice more to find these three. ok is false when the line is not an object this walk
// understands (the caller then decodes the envelope the slow way); trailing text after the
// object is an error then too.
func scanEnvelope(b []byte) (env envelope, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return env, len(bytes.TrimSpace(b[i+1:])) == 0
	}
	for {
		ks, ke, next, okKey := scanString(b, i)
		if !okKey {
			return env, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return env, false
		}
		i = skipSpace(b, i+1)
		vs := i
		if i, ok = skipValue(b, i); !ok {
			return env, false
		}
		val := b[vs:i]
		switch key := string(b[ks:ke]); key {
		case "event":
			var k string
			if !unquote(val, &k) {
				return env, false
			}
			env.Event = Kind(k)
		case "time":
			// As encoding/json reads it (null leaves it as it was).
			if env.Time.UnmarshalJSON(val) != nil {
				return env, false
			}
		case "host":
			if string(val) == "null" {
				env.Host = ""
				break
			}
			if !unquote(val, &env.Host) {
				return env, false
			}
		default:
			// encoding/json would take "Event" or "HOST" for these (it matches keys
			// regardless of case): leave such a line to it.
			if strings.EqualFold(key, "event") || strings.EqualFold(key, "time") || strings.EqualFold(key, "host") ||
				strings.ContainsAny(key, "\\\u017f\u212a") {
				return env, false
			}
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return env, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return env, len(bytes.TrimSpace(b[i+1:])) == 0
		default:
			return env, false
		}
	}
}

// unquote reads a JSON string value; one without escapes is taken as it is.
func unquote(v []byte, out *string) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		*out = string(v[1 : len(v)-1])
		return true
	}
	return json.Unmarshal(v, out) == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string at i: its contents are b[start:end] (escapes left as they are),
// next is just after its closing quote.
func scanString(b []byte, i int) (start, end, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return i + 1, j, j + 1, true
		}
	}
	return 0, 0, 0, false
}

// skipValue skips the value at i (not validating it: the body's decode does) and returns
// where it ends.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, _, next, ok := scanString(b, i)
		return next, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				_, _, next, ok := scanString(b, j)
				if !ok {
					return j, false
				}
				j = next - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(b), false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j, j > i
}
