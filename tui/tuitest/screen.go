// Package tuitest drives a terminal program as a person would, for end-to-end tests: a
// pseudo-terminal whose master side feeds an x/vt terminal emulator, keys typed one at a time,
// and waits on what the screen shows. It is test support only; no production code imports it.
package tuitest

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/creack/pty"
)

// Screen is a terminal emulator fed by a pty's master side. x/vt's emulator is not safe for a
// concurrent Write and String: one mutex guards both.
type Screen struct {
	mu  sync.Mutex
	emu *vt.Emulator
	raw []byte // everything the program wrote, for the sequences a screen does not show
	// wrote is when the program's output last reached the emulator.
	wrote time.Time
	ptm   *os.File
	TTY   *os.File // the program's side: its stdin, stdout and stderr
}

// Open makes a pty of cols×rows with an emulator attached; the pty is closed at cleanup (after
// the program's own cleanups, registered later, so it never blocks on a full tty). It skips
// the test when the machine has no pseudo-terminals.
func Open(t testing.TB, cols, rows int) *Screen { return OpenOn(t, cols, rows, nil) }

// OpenOn is Open with a terminal whose background is bg (nil: black): the emulator answers a
// program's OSC 11 query with it, as a terminal with a light or a dark theme would.
func OpenOn(t testing.TB, cols, rows int, bg color.Color) *Screen {
	t.Helper()
	ptm, tty := openPty(t, cols, rows)
	s := &Screen{emu: vt.NewEmulator(cols, rows), ptm: ptm, TTY: tty}
	if bg != nil {
		s.emu.SetDefaultBackgroundColor(bg)
	}
	go io.Copy(s, ptm)     // the program's output drives the emulator
	go io.Copy(ptm, s.emu) // the emulator's replies (terminal queries) go back to the program
	return s
}

// openPty makes a pty of cols×rows; its master side is closed at cleanup. It skips the test
// when the machine has no pseudo-terminals.
func openPty(t testing.TB, cols, rows int) (ptm, tty *os.File) {
	t.Helper()
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	// The terminal's side is not closed: a program run in-process may leave its input
	// reader (bubbletea's cancelreader, which Run waits for only 500 ms) still asking the
	// *os.File for its descriptor, and Close would race with that. Closing the master ends
	// every read of the terminal side (EIO); the descriptor goes with the test binary.
	t.Cleanup(func() { ptm.Close() })
	if err := pty.Setsize(ptm, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	return ptm, tty
}

// Write feeds program output to the emulator.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = append(s.raw, p...)
	s.wrote = time.Now()
	return s.emu.Write(p)
}

// frameEnd is how Bubble Tea ends every frame on the alternate screen: the cursor put at
// the start of the last line ("\x1b[ROWS;H"). A frame is one write to the terminal, but the
// pty hands it to the reader in pieces, and a screen read between two pieces shows the top of
// the new frame over the bottom of the old one.
var frameEnd = regexp.MustCompile(`\x1b\[[0-9]+;H$`)

// settleAfter is how long a screen whose output does not end a frame must stay unchanged to
// count as drawn (a program that is not Bubble Tea's, or a write that is not a frame).
var settleAfter = 100 * time.Millisecond

// snapshot is the screen as text and whether it is whole: the output ends a frame, or has
// not changed for settleAfter.
func (s *Screen) snapshot() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tail := s.raw[max(0, len(s.raw)-16):]
	return s.emu.String(), frameEnd.Match(tail) || time.Since(s.wrote) >= settleAfter
}

// Raw is everything the program has written so far: the escape sequences that change no
// cell (the clipboard's OSC 52, the mouse modes) are read here.
func (s *Screen) Raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.raw)
}

// WaitForRaw polls the program's output until it contains want, or fails the test.
func (s *Screen) WaitForRaw(t testing.TB, timeout time.Duration, want string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(s.Raw(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the program never wrote %q; the screen:\n%s", want, s.Text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Text is the screen as text, one line per row.
func (s *Screen) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

// Type writes keys to the program at once (Bubble Tea reads several runes written together
// as one key, as a paste).
func (s *Screen) Type(keys string) { s.ptm.Write([]byte(keys)) }

// Key types one key and waits until the screen reacts to it, so that the next key arrives on
// its own (two keys written before the program reads either would merge into one multi-rune
// key). A screen that shows no change within KeyTimeout fails the test, with the screen.
func (s *Screen) Key(t testing.TB, k string) {
	t.Helper()
	before := s.Text()
	s.Type(k)
	deadline := patience.New(KeyTimeout) // in quiet-machine time: it stretches under load
	for s.Text() == before {
		if deadline.Passed() {
			t.Fatalf("the screen did not change within %v after key %q:\n%s", KeyTimeout, k, before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KeyTimeout is how long Key waits for the screen to react (generous: a loaded 2-core
// machine running a traced job).
var KeyTimeout = 10 * time.Second

// WaitFor polls the screen (a screen cannot be waited on otherwise) until it shows every want,
// or fails the test after timeout.
func (s *Screen) WaitFor(t testing.TB, timeout time.Duration, want ...string) string {
	t.Helper()
	return s.WaitUntil(t, timeout, func(txt string) string {
		for _, w := range want {
			if !strings.Contains(txt, w) {
				return fmt.Sprintf("%q", w)
			}
		}
		return ""
	})
}

// WaitUntil polls the screen until missing says nothing is missing from it (""), or fails the
// test after timeout with what missing said last. Only a whole frame is asked (see
// snapshot): what a test goes on to check in the text returned is all of one frame.
func (s *Screen) WaitUntil(t testing.TB, timeout time.Duration, missing func(txt string) string) string {
	t.Helper()
	deadline := patience.New(timeout) // in quiet-machine time: it stretches under load
	for {
		txt, whole := s.snapshot()
		m := missing(txt)
		if m == "" && whole {
			return txt
		}
		if m == "" {
			m = "a whole frame (the output stops inside one)"
		}
		if deadline.Passed() {
			t.Fatalf("the screen never showed %s:\n%s", m, txt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Remote is a pty whose output is read and dropped, as sshd reads it for a terminal on
// another machine: what a program costs the machine it runs on, without an emulator beside it
// taking the same CPUs (x/vt's, fed at 30 frames a second, took a third of what the TUI
// itself did). It answers the queries a terminal answers at a program's start (the
// background colour, the cursor's position): unanswered, they held Bubble Tea's first frame
// back 1.5 s. It keeps the last of the output, for a failure to show.
type Remote struct {
	ptm  *os.File
	TTY  *os.File // the program's side: its stdin, stdout and stderr
	mu   sync.Mutex
	tail []byte
}

// remoteTail is how much of the output a Remote keeps.
const remoteTail = 4 << 10

// OpenRemote makes a pty of cols×rows whose output is drained; it is closed at cleanup. It
// skips the test when the machine has no pseudo-terminals.
func OpenRemote(t testing.TB, cols, rows int) *Remote {
	t.Helper()
	ptm, tty := openPty(t, cols, rows)
	r := &Remote{ptm: ptm, TTY: tty}
	go io.Copy(r, ptm)
	return r
}

// remoteAnswers are the queries a Remote answers, each with what a black terminal's
// cursor at the top left says.
var remoteAnswers = []struct{ query, answer string }{
	{"\x1b]11;?", "\x1b]11;rgb:0000/0000/0000\x1b\\"}, // OSC 11: the background
	{"\x1b[6n", "\x1b[1;1R"},                          // DSR: the cursor position
}

// Write keeps the tail of the program's output and answers the queries in it (one split
// between two writes too: the tail holds the first part).
func (r *Remote) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := len(r.tail)
	from := max(0, old-8) // a query's start the last write ended in
	r.tail = append(r.tail, p...)
	for _, q := range remoteAnswers {
		for at := from; ; {
			i := bytes.Index(r.tail[at:], []byte(q.query))
			if i < 0 {
				break
			}
			at += i + len(q.query)
			if at > old { // not one the last write ended, answered then
				r.ptm.Write([]byte(q.answer))
			}
		}
	}
	if len(r.tail) > 2*remoteTail {
		r.tail = append(r.tail[:0], r.tail[len(r.tail)-remoteTail:]...)
	}
	return len(p), nil
}

// Tail is the last of what the program wrote (up to remoteTail bytes), escapes and all.
func (r *Remote) Tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.tail[max(0, len(r.tail)-remoteTail):])
}

// Type writes keys to the program.
func (r *Remote) Type(keys string) { r.ptm.Write([]byte(keys)) }
