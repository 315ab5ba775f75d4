package sessions

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// CastWriter records terminal output as an asciicast v2 file (asciinema's format): a JSON
// header line {"version":2,"width":W,"height":H,"timestamp":T}, then one [seconds,"o",data]
// line per write and [seconds,"r","WxH"] per resize. It is an io.Writer to put beside the
// terminal; it is safe for concurrent use.
type CastWriter struct {
	mu      sync.Mutex
	w       io.Writer
	start   time.Time
	now     func() time.Time
	pending []byte // an incomplete UTF-8 sequence at the end of the last write
	err     error
}

// CastHeader is the first line of an asciicast v2 file.
type CastHeader struct {
	Version   int   `json:"version"`
	Width     int   `json:"width"`
	Height    int   `json:"height"`
	Timestamp int64 `json:"timestamp"`
}

// NewCastWriter writes the header. now is the clock (time.Now when nil); times in the file are
// seconds since the first call to now.
func NewCastWriter(w io.Writer, width, height int, now func() time.Time) (*CastWriter, error) {
	if now == nil {
		now = time.Now
	}
	c := &CastWriter{w: w, now: now, start: now()}
	b, err := json.Marshal(CastHeader{Version: 2, Width: width, Height: height, Timestamp: c.start.Unix()})
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write asciicast header: %w", err)
	}
	return c, nil
}

// Write records p as one output event. JSON strings must be valid UTF-8, so a multi-byte
// character split across two writes is held back until its end arrives.
func (c *CastWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data := append(c.pending, p...)
	cut := len(data)
	// Hold back a trailing incomplete rune (at most 3 bytes).
	for i := len(data) - 1; i >= 0 && i >= len(data)-3; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	c.pending = append([]byte(nil), data[cut:]...)
	c.emit("o", string(data[:cut]))
	return len(p), c.err
}

// Resize records a terminal size change.
func (c *CastWriter) Resize(width, height int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.emit("r", fmt.Sprintf("%dx%d", width, height))
	return c.err
}

// Close writes any held-back bytes. It does not close the underlying writer.
func (c *CastWriter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) > 0 {
		c.emit("o", string(c.pending)) // json.Marshal turns the broken rune into U+FFFD
		c.pending = nil
	}
	return c.err
}

// Err is the first write error, if any.
func (c *CastWriter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *CastWriter) emit(kind, data string) {
	if c.err != nil || (data == "" && kind == "o") {
		return
	}
	s, err := json.Marshal(data)
	if err != nil {
		c.err = err
		return
	}
	secs := c.now().Sub(c.start).Seconds()
	line := make([]byte, 0, len(s)+32)
	line = append(line, '[')
	line = strconv.AppendFloat(line, secs, 'f', 6, 64)
	line = append(line, `,"`...)
	line = append(line, kind...)
	line = append(line, `",`...)
	line = append(line, s...)
	line = append(line, "]\n"...)
	if _, err := c.w.Write(line); err != nil {
		c.err = fmt.Errorf("write asciicast: %w", err)
	}
}

// CastEvent is one event line of an asciicast v2 file.
type CastEvent struct {
	Time float64
	Type string // "o" output, "i" input, "r" resize, "m" marker
	Data string
}

// ReadCast parses an asciicast v2 file (used by tests and tools that check a recording).
func ReadCast(r io.Reader) (CastHeader, []CastEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var h CastHeader
	var evs []CastEvent
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			if err := json.Unmarshal(b, &h); err != nil {
				return h, nil, &LineError{line, err}
			}
			if h.Version != 2 {
				return h, nil, &LineError{line, fmt.Errorf("asciicast version %d, want 2", h.Version)}
			}
			continue
		}
		if len(b) == 0 {
			continue
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return h, evs, &LineError{line, err}
		}
		if len(raw) != 3 {
			return h, evs, &LineError{line, fmt.Errorf("event has %d fields, want 3", len(raw))}
		}
		var ev CastEvent
		if err := json.Unmarshal(raw[0], &ev.Time); err != nil {
			return h, evs, &LineError{line, fmt.Errorf("time: %w", err)}
		}
		if err := json.Unmarshal(raw[1], &ev.Type); err != nil {
			return h, evs, &LineError{line, fmt.Errorf("type: %w", err)}
		}
		if err := json.Unmarshal(raw[2], &ev.Data); err != nil {
			return h, evs, &LineError{line, fmt.Errorf("data: %w", err)}
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return h, evs, &LineError{line + 1, err}
	}
	if line == 0 {
		return h, nil, &LineError{1, errors.New("empty file")}
	}
	return h, evs, nil
}
