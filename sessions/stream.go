package sessions

import (
	"io"
	"runtime"
)

// Reading a stream on several goroutines: one reads lines into batches, workers decode them
// (each with its own lineDecoder), and the caller's goroutine takes the batches in order. A
// batch is sent when it is full or when no more input is buffered, so a live stream's events
// are not held back waiting for more: an agent's event reaches its view as soon as it is
// read. A view at a tree's first level decodes 32 agents' streams; the decode is most of its
// time, and a node has cores for it.

// streamWorkers is how many goroutines decode: one per CPU, at most 4 (the view applies the
// events on one, and beyond that it waits for it).
func streamWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

const (
	batchLines = 256
	batchBytes = 1 << 20
)

// lineBatch is consecutive lines of a stream and, once decoded, what each was.
type lineBatch struct {
	lines   [][]byte
	numbers []int
	long    []bool
	// buf holds the lines' bytes (but a line that did not fit, copied alone): one buffer a
	// batch, reused once the batch is decoded, not an allocation a line (the lines are a
	// tree's whole input).
	buf     []byte
	events  []Event
	errs    []error
	headers []*Header // a recording's header line
	badHead []bool    // a header that does not parse (its error in errs)
	done    chan struct{}
}

func streamEvents(r io.Reader, workers int, o StreamOptions, fn func(Event), bad func(*LineError)) error {
	if workers < 2 {
		return streamSequential(r, o, fn, bad)
	}
	work := make(chan *lineBatch, workers)
	order := make(chan *lineBatch, 2*workers)
	stop := make(chan struct{})
	var readErr error
	var readLine int
	// free are decoded batches' buffers: as many as there can be batches on their way.
	// They start small (a live stream's batches are a line or two) and double, up to
	// batchBytes, each time a batch has more lines than its buffer holds.
	free := make(chan []byte, 3*workers+2)
	// used are batches whose events were handed on: their arrays hold the next batch's
	// lines and events (a tree's first level reads thousands of batches).
	used := make(chan *lineBatch, 3*workers+2)
	bufSize := 64 << 10
	newBatch := func() *lineBatch {
		var b *lineBatch
		select {
		case b = <-used:
			b.reset()
		default:
			b = &lineBatch{}
		}
		b.done = make(chan struct{})
		select {
		case b.buf = <-free:
		default:
		}
		if cap(b.buf) < bufSize {
			b.buf = make([]byte, 0, bufSize)
		}
		return b
	}
	go func() {
		defer close(work)
		defer close(order)
		sc := NewLineScanner(r, MaxLine)
		b := newBatch()
		size := 0
		send := func() bool {
			select {
			case order <- b:
			case <-stop:
				return false
			}
			select {
			case work <- b:
			case <-stop:
				return false
			}
			b, size = newBatch(), 0
			return true
		}
		for sc.Scan() {
			line := sc.Bytes()
			if !sc.TooLong() && len(line) == 0 {
				continue
			}
			if n := len(b.buf); n+len(line) <= cap(b.buf) {
				b.buf = append(b.buf, line...)
				b.lines = append(b.lines, b.buf[n:len(b.buf):len(b.buf)])
			} else {
				b.lines = append(b.lines, append([]byte(nil), line...))
				bufSize = min(2*bufSize, batchBytes)
			}
			b.numbers = append(b.numbers, sc.Line())
			b.long = append(b.long, sc.TooLong())
			size += len(line)
			if (len(b.lines) >= batchLines || size >= batchBytes || sc.Buffered() == 0) && !send() {
				return
			}
		}
		readErr, readLine = sc.Err(), sc.Line()
		if len(b.lines) > 0 {
			send()
		}
	}()
	for range workers {
		go func() {
			d := newLineDecoder()
			d.lean = o.Lean
			for b := range work {
				b.decode(d)
				select {
				case free <- b.buf[:0]: // nothing decoded refers to it
				default:
				}
				b.buf = nil
				close(b.done)
			}
		}()
	}
	version := 0
	for b := range order {
		<-b.done
		for i := range b.numbers {
			switch {
			case b.long[i]:
				bad(&LineError{b.numbers[i], errTooLong})
			case b.badHead[i]:
				// The stream ends here. The reader stops at its next batch, or when the
				// caller closes r (it may be waiting for a live stream's next line).
				close(stop)
				return &LineError{b.numbers[i], b.errs[i]}
			case b.headers[i] != nil:
				version = b.headers[i].Version
			case b.errs[i] != nil:
				bad(&LineError{b.numbers[i], b.errs[i]})
			default:
				fn(upgrade(version, b.events[i]))
			}
		}
		if o.Batch != nil {
			o.Batch()
		}
		select {
		case used <- b: // fn and Batch copied what they keep
		default:
		}
	}
	if readErr != nil {
		return &LineError{readLine + 1, readErr}
	}
	return nil
}

// reset empties a batch whose events were handed on, keeping its arrays.
func (b *lineBatch) reset() {
	clear(b.lines)
	b.lines, b.numbers, b.long = b.lines[:0], b.numbers[:0], b.long[:0]
}

// decode decodes every line of the batch, and lets go of its bytes.
func (b *lineBatch) decode(d *lineDecoder) {
	n := len(b.lines)
	b.events, b.errs = zeroed(b.events, n), zeroed(b.errs, n)
	b.headers, b.badHead = zeroed(b.headers, n), zeroed(b.badHead, n)
	for i, l := range b.lines {
		switch {
		case b.long[i]:
		case isHeader(l):
			if h, err := parseHeader(l); err != nil {
				b.errs[i], b.badHead[i] = err, true
			} else {
				b.headers[i] = &h
			}
		default:
			b.events[i], b.errs[i] = d.decode(l)
		}
	}
	clear(b.lines)
	b.lines = b.lines[:0]
}

// zeroed is s with n zero elements, in its own array when it has room.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// streamSequential is StreamEvents on the caller's goroutine alone.
func streamSequential(r io.Reader, o StreamOptions, fn func(Event), bad func(*LineError)) error {
	version := 0
	dec := newLineDecoder()
	dec.lean = o.Lean
	return eachLine(r, func(line int, b []byte) error {
		if isHeader(b) {
			h, err := parseHeader(b)
			if err != nil {
				return &LineError{line, err}
			}
			version = h.Version
			return nil
		}
		e, err := dec.decode(b)
		if err != nil {
			bad(&LineError{line, err})
			return nil
		}
		fn(upgrade(version, e))
		if o.Batch != nil {
			o.Batch()
		}
		return nil
	}, func(line int) error {
		bad(&LineError{line, errTooLong})
		return nil
	})
}
