package tui

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui/tuitest"
	"github.com/crashtui/crashtui/views/viewtest"
)

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
	scr := tuitest.Open(t, 80, 24)
	tty := scr.TTY

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

	scr.WaitFor(t, 15*time.Second, "crashtui replay")
	scr.Type("}") // seek to the end
	scr.WaitFor(t, 15*time.Second, "■ end")
	scr.Type("3")
	scr.WaitFor(t, 15*time.Second, "relax_cell")
	scr.Type("2")
	scr.WaitFor(t, 15*time.Second, "itself: always allowed")
	scr.Type("?") // the Matrix tab's own keys first
	scr.WaitFor(t, 15*time.Second, "Matrix keys", "classes")
	scr.Type("q")

	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("q did not end the program:\n%s", scr.Text())
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
	scr := tuitest.Open(t, 80, 24)
	tty := scr.TTY

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
	scr.WaitFor(t, 15*time.Second, "● live")
	scr.WaitFor(t, 15*time.Second, "errors 1") // the last fixture event
	scr.Type("q")
	scr.WaitFor(t, 15*time.Second, "Detach from")
	scr.Type("y")
	select {
	case st := <-done:
		if st.Seq != len(evs) {
			t.Fatalf("applied %d of %d events", st.Seq, len(evs))
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("y did not end the program:\n%s", scr.Text())
	}
	if got := rec.Calls(); len(got) != 1 || got[0] != "detach" {
		t.Fatalf("controller calls %v, want [detach]", got)
	}
}

// A session whose owner reduces the events (State, Lock) tells the TUI only that the State
// changed (Changed): what was applied before a wake is on the screen after it, and the
// channel's close says the job finished.
func TestChangedWakesTheScreen(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	scr := tuitest.Open(t, 100, 30)
	st := sessions.NewState()
	var mu sync.Mutex
	changed := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{State: st, Lock: &mu, Changed: changed, Header: viewtest.Header(), Mode: "attach",
			Input: scr.TTY, Output: scr.TTY})
		done <- err
	}()
	scr.WaitFor(t, 15*time.Second, "● live", "procs 0/0")
	evs := viewtest.Events()
	procs := 0
	mu.Lock()
	for _, e := range evs {
		st.Apply(e)
		if e.Kind() == sessions.KindProcess {
			procs++
		}
	}
	mu.Unlock()
	if procs == 0 {
		t.Fatal("the fixture has no process event")
	}
	changed <- struct{}{}
	scr.WaitFor(t, 15*time.Second, fmt.Sprintf("%d processes · sort", len(st.Procs)), "mpirun -np 4")
	close(changed)
	scr.WaitFor(t, 15*time.Second, "job finished")
	scr.Type("q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("q did not end the program:\n%s", scr.Text())
	}
}
