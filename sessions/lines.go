package sessions

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong reports a line longer than a LineScanner's limit: it was skipped, and the
// lines after it are read on. TooLongError is how it is reported.
var ErrLineTooLong = errors.New("line too long")

// TooLongError is a line longer than Max bytes; errors.Is(err, ErrLineTooLong) holds.
type TooLongError struct{ Max int }

func (e TooLongError) Error() string {
	if e.Max >= 1<<20 && e.Max%(1<<20) == 0 {
		return fmt.Sprintf("longer than %d MiB", e.Max>>20)
	}
	if e.Max >= 1<<10 && e.Max%(1<<10) == 0 {
		return fmt.Sprintf("longer than %d KiB", e.Max>>10)
	}
	return fmt.Sprintf("longer than %d bytes", e.Max)
}

// Is makes errors.Is(err, ErrLineTooLong) true.
func (e TooLongError) Is(target error) bool { return target == ErrLineTooLong }

// LineScanner reads lines as bufio.Scanner does (the newline and a carriage return before it
// removed, a last line without a newline included), except for a line longer than its limit:
// that one is read in pieces and dropped, never held whole, and Scan reports it (TooLong)
// and goes on. bufio.Scanner would instead end the input there, and every request or event
// after one long line would be lost. Memory stays within the limit plus the reader's buffer.
type LineScanner struct {
	r    *bufio.Reader
	max  int
	line int
	buf  []byte
	long bool
	err  error
}

// NewLineScanner reads r, lines of at most max bytes.
func NewLineScanner(r io.Reader, max int) *LineScanner {
	return &LineScanner{r: bufio.NewReaderSize(r, min(max+2, 64<<10)), max: max}
}

// Scan reads the next line; false at the end of the input or on a read error (Err).
func (s *LineScanner) Scan() bool {
	if s.err != nil {
		return false
	}
	s.buf, s.long = s.buf[:0], false
	read := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		read = read || len(chunk) > 0
		if !s.long {
			s.buf = append(s.buf, chunk...)
			if len(trimEOL(s.buf)) > s.max {
				s.long = true
				s.buf = nil // its memory goes now, not at the next long-enough line
			}
		}
		switch err {
		case nil:
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if !read {
				s.err = io.EOF
				return false
			}
		default:
			s.err = err
			return false
		}
		break
	}
	s.line++
	s.buf = trimEOL(s.buf)
	return true
}

// trimEOL drops a line's newline and one carriage return before it, as bufio.ScanLines does.
func trimEOL(b []byte) []byte {
	return bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
}

// Bytes is the line Scan read (nil for a line that was too long); valid until the next Scan.
func (s *LineScanner) Bytes() []byte { return s.buf }

// Buffered says how many bytes are read but not yet scanned: 0 means the next Scan waits for
// its reader (a live stream's next line has not come yet).
func (s *LineScanner) Buffered() int { return s.r.Buffered() }

// Line is the number of the line Scan read, from 1.
func (s *LineScanner) Line() int { return s.line }

// TooLong says whether the line Scan read was longer than the limit (and skipped).
func (s *LineScanner) TooLong() bool { return s.long }

// Err is the read error that ended Scan, or nil at the end of the input.
func (s *LineScanner) Err() error {
	if s.err == io.EOF {
		return nil
	}
	return s.err
}
