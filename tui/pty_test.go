package tui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views/viewtest"
	"github.com/creack/pty"
)

// screen is a terminal emulator fed by the pty's master side, as a user's terminal would be.
// x/vt's emulator is not safe for a concurrent Write and String: one mutex guards both.
type screen struct {
	mu  sync.Mutex
	emu *vt.Emulator
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.Write(p)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

// waitFor polls the emulated screen (a screen cannot be waited on otherwise) until it shows
// want, or fails after a generous deadline.
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(s.text(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q:\n%s", want, s.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Run on a real pseudo-terminal: the program draws on an 80×24 screen, answers keys, writes an
// asciicast, and returns the final State when q is pressed. This is how cmd/crashtui's
// end-to-end test drives the binary too (creack/pty + x/vt).
func TestRunOnPty(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("CI", "") // termenv treats any non-empty CI as "not a terminal": no colour at all
	t.Setenv("NO_COLOR", "")
	out := runOnPty(t)
	if !strings.Contains(out, "\x1b[91") && !strings.Contains(out, "\x1b[1;91") && !strings.Contains(out, "38;5;9") {
		t.Errorf("no red in the output on a colour terminal: %q", out)
	}
}

// NO_COLOR: the same session draws without a single colour (meaning is in glyphs, not colour).
func TestRunOnPtyNoColor(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("NO_COLOR", "1")
	out := runOnPty(t)
	for _, sgr := range []string{"\x1b[91", "\x1b[1;91", "38;5;", "\x1b[92", "\x1b[93", "\x1b[94", "\x1b[96"} {
		if strings.Contains(out, sgr) {
			t.Fatalf("NO_COLOR output contains colour %q", sgr)
		}
	}
}

// runOnPty replays the fixture on a pty, drives it with keys and returns the asciicast's output.
func runOnPty(t *testing.T) string {
	t.Helper()
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	t.Cleanup(func() { ptm.Close(); tty.Close() })
	if err := pty.Setsize(ptm, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	scr := &screen{emu: vt.NewEmulator(80, 24)}
	go io.Copy(scr, ptm)     // the program's output drives the emulator
	go io.Copy(ptm, scr.emu) // the emulator's replies (queries) go back to the program

	evs := viewtest.Events()
	var cast bytes.Buffer
	type result struct {
		st  *sessions.State
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		st, err := Run(ctx, Options{Replay: evs, Header: viewtest.Header(), Mode: "replay", Input: tty, Output: tty, Cast: &cast})
		done <- result{st, err}
	}()

	scr.waitFor(t, "crashtui replay")
	ptm.Write([]byte("}")) // seek to the end
	scr.waitFor(t, "■ end")
	ptm.Write([]byte("3"))
	scr.waitFor(t, "relax_cell")
	ptm.Write([]byte("2"))
	scr.waitFor(t, "itself: always allowed")
	ptm.Write([]byte("?"))
	scr.waitFor(t, "checkpoint")
	ptm.Write([]byte("q"))

	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("q did not end the program:\n%s", scr.text())
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.st.Seq != len(evs) || len(res.st.Groups) != 3 {
		t.Fatalf("final state: %d events, %d groups", res.st.Seq, len(res.st.Groups))
	}
	h, cevs, err := sessions.ReadCast(&cast)
	if err != nil {
		t.Fatal(err)
	}
	if h.Width != 80 || h.Height != 24 || len(cevs) == 0 {
		t.Fatalf("asciicast header %+v, %d events", h, len(cevs))
	}
	var all strings.Builder
	for _, e := range cevs {
		if e.Type == "o" {
			all.WriteString(e.Data)
		}
	}
	if !strings.Contains(all.String(), "relax_cell") {
		t.Error("the asciicast does not contain what the screen showed")
	}
	return all.String()
}

// A live session on a pty: events stream in at 10 per second, q asks before detaching, y
// detaches through the Controller and ends Run with every event applied.
func TestRunLiveOnPty(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	t.Cleanup(func() { ptm.Close(); tty.Close() })
	pty.Setsize(ptm, &pty.Winsize{Rows: 24, Cols: 80})
	scr := &screen{emu: vt.NewEmulator(80, 24)}
	go io.Copy(scr, ptm)
	go io.Copy(ptm, scr.emu)

	evs := viewtest.Events()
	ch := make(chan sessions.Event)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for _, e := range evs {
			<-tk.C
			ch <- e
		}
	}()
	t.Cleanup(func() { <-sent; close(ch) })
	rec := &recorder{}
	done := make(chan *sessions.State, 1)
	go func() {
		st, err := Run(context.Background(), Options{Events: ch, Control: rec, Header: viewtest.Header(), Mode: "attach", Input: tty, Output: tty})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	scr.waitFor(t, "● live")
	scr.waitFor(t, "errors 1") // the last fixture event
	ptm.Write([]byte("q"))
	scr.waitFor(t, "Detach from")
	ptm.Write([]byte("y"))
	select {
	case st := <-done:
		if st.Seq != len(evs) {
			t.Fatalf("applied %d of %d events", st.Seq, len(evs))
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("y did not end the program:\n%s", scr.text())
	}
	if got := rec.Calls(); len(got) != 1 || got[0] != "detach" {
		t.Fatalf("controller calls %v, want [detach]", got)
	}
}
