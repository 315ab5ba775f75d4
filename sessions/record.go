package sessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// FormatVersion is the version of the recording format this build writes; it reads every
// version up to it.
//
//   - 1: thread events carry the tracer's sentences (explain, outcome) and no facts about the
//     held stop or the outcome.
//   - 2: thread events carry those facts (stop, signal, disposition, handler, sigaction,
//     insn_bytes, outcome_kind, returned, next_nr, next_syscall, exited) and the views word
//     them; the tracer writes no sentences. Reading a version 1 recording derives the facts
//     from its sentences (upgrade.go) and keeps the sentences, which views then show as
//     recorded.
//   - 3: matrix cells carry facts too: the row of kernel.md A.3 that decided each (rule, with
//     the parameters its sentence names) and their disagreements (disagreements); the tracer
//     writes neither explain nor disagree. A cell of an older recording keeps the sentences
//     it has, which views show as recorded (no fact is derived from them: views decide
//     nothing on a cell's words).
const FormatVersion = 3

// Header is the first line of a recording.
type Header struct {
	Format   string    `json:"format"` // always "crashtui-session"
	Version  int       `json:"version"`
	Crashtui string    `json:"crashtui"`
	Arch     string    `json:"arch"`
	Kernel   string    `json:"kernel"`
	Start    time.Time `json:"start"`
	Job      string    `json:"job"`
	Host     string    `json:"host,omitempty"`
}

const formatName = "crashtui-session"

// Recorder writes a session as versioned JSON Lines: a Header, then one event per line.
// It is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

// NewRecorder writes the header and returns a recorder.
func NewRecorder(w io.Writer, h Header) (*Recorder, error) {
	h.Format, h.Version = formatName, FormatVersion
	r := &Recorder{w: bufio.NewWriter(w)}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	r.w.Write(append(b, '\n'))
	return r, r.w.Flush()
}

// Record writes one event and flushes, so a crash of crashtui loses at most one line.
func (r *Recorder) Record(e Event) error {
	b, err := json.Marshal(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	r.w.Write(append(b, '\n'))
	r.err = r.w.Flush()
	return r.err
}

// LineError is a problem at one line of a recording.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrFutureVersion is returned when a recording was written by a newer format.
var ErrFutureVersion = errors.New("recording format is newer than this crashtui")

// MaxLine bounds one line of a recording (a matrix of a large job is the longest event); a
// longer line is skipped, with a LineError wrapping ErrLineTooLong, and reading goes on.
const MaxLine = 64 << 20

// Damaged lists the lines of a recording that were not events and were skipped.
type Damaged []*LineError

func (d Damaged) Error() string {
	if len(d) == 1 {
		return d[0].Error() + " (skipped)"
	}
	return fmt.Sprintf("%d damaged lines skipped, the first %v", len(d), d[0])
}

// MaxDamaged bounds how many damaged lines are listed; more still only count as skipped.
const MaxDamaged = 100

// ReadRecording reads a recording. A line that is not an event, or is longer than MaxLine,
// is skipped, as crashtui view does, and err is then a Damaged naming those lines (up to
// MaxDamaged); a missing or foreign
// header, a recording of a future version or a read error stop reading and are a *LineError
// (or the read error), with every event read before.
func ReadRecording(r io.Reader) (Header, []Event, error) {
	var h Header
	var evs []Event
	var damaged Damaged
	seen := false
	dec := newLineDecoder()
	err := eachLine(r, func(line int, b []byte) error {
		if !seen {
			seen = true
			var err error
			if h, err = parseHeader(b); err != nil {
				return &LineError{line, err}
			}
			return nil
		}
		e, err := dec.decode(b)
		if err != nil {
			if len(damaged) < MaxDamaged {
				damaged = append(damaged, &LineError{line, err})
			}
			return nil
		}
		evs = append(evs, upgrade(h.Version, e))
		return nil
	}, func(line int) error {
		if !seen {
			return &LineError{line, errTooLong} // no header: not a recording to go on with
		}
		if len(damaged) < MaxDamaged {
			damaged = append(damaged, &LineError{line, errTooLong})
		}
		return nil
	})
	if err == nil && !seen {
		err = &LineError{1, errors.New("empty file")}
	}
	if err == nil && len(damaged) > 0 {
		err = damaged
	}
	return h, evs, err
}

// parseHeader decodes a recording's first line.
func parseHeader(b []byte) (Header, error) {
	var h Header
	if err := json.Unmarshal(b, &h); err != nil || h.Format != formatName {
		if err == nil {
			err = fmt.Errorf("not a crashtui session (format %q)", h.Format)
		}
		return h, err
	}
	if h.Version > FormatVersion {
		return h, fmt.Errorf("%w: version %d, this build reads %d", ErrFutureVersion, h.Version, FormatVersion)
	}
	return h, nil
}

// StreamEvents reads JSON Lines events from r as they come and calls fn for each: a live
// stream (crashtui agent or --json output, possibly several hosts' merged line by line by a
// launcher) or a recording, whose header lines are checked and skipped. A line that is not
// an event, or is longer than MaxLine, is passed to bad and skipped, so one damaged line
// does not end a live session; a
// recording of a future version, or a read error, ends the stream with that error. Events
// after a version 1 header, or with no header before them, are upgraded as ReadRecording does.
// Lines are decoded on several goroutines (stream.go); fn and bad are called in order, on
// the caller's.
func StreamEvents(r io.Reader, fn func(Event), bad func(*LineError)) error {
	return streamEvents(r, streamWorkers(), StreamOptions{}, fn, bad)
}

// StreamOptions are how StreamEventsWith reads.
type StreamOptions struct {
	// Lean is for a reducing view that records nothing: a crash's registers and
	// instructions, which only a screen of that one crash shows and a reducer passes on
	// neither, are checked as ever and then left out (Regs and Disasm nil). A tree's first
	// level reads every task's crash: a map of registers each was a tenth of its time.
	Lean bool
	// Batch, when not nil, is called after fn was called for the events of lines read
	// together (up to a few hundred, and those that came at once on a live stream): a caller
	// that queues events can hand them on together, without holding any back.
	Batch func()
}

// StreamEventsWith is StreamEvents, read as o says.
func StreamEventsWith(r io.Reader, o StreamOptions, fn func(Event), bad func(*LineError)) error {
	return streamEvents(r, streamWorkers(), o, fn, bad)
}

// isHeader says whether a line is a recording's header (several, when recordings were
// concatenated), not an event: crashtui writes events with their kind first, so only other
// lines need the search.
func isHeader(b []byte) bool {
	return !bytes.HasPrefix(b, []byte(`{"event":`)) && bytes.Contains(b, []byte(`"format":"`+formatName+`"`))
}

// eachLine calls fn with every non-empty line of r and its number, and long with the number
// of a line over MaxLine, which is skipped without being held in memory; an error from
// either, or from reading, ends it.
func eachLine(r io.Reader, fn func(line int, b []byte) error, long func(line int) error) error {
	sc := NewLineScanner(r, MaxLine)
	for sc.Scan() {
		var err error
		switch b := sc.Bytes(); {
		case sc.TooLong():
			err = long(sc.Line())
		case len(b) > 0:
			err = fn(sc.Line(), b)
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &LineError{sc.Line() + 1, err}
	}
	return nil
}

// errTooLong is a line over MaxLine.
var errTooLong = TooLongError{MaxLine}
