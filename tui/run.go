package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
	"github.com/muesli/termenv"
)

// Controller is how the TUI sends requests down to the tracer; nil in replay.
type Controller interface {
	Measure() error                          // re-measure the access matrix
	Checkpoint(policy sessions.Policy) error // a simulated checkpoint restored by policy (c)
	Detach() error                           // detach everything and stop (q)
	Sample() error                           // take one stack sample of every thread (S)
	AutoSample(on bool)                      // sample every few seconds, or stop (a)
	Release(pid int) error                   // let go of one process for another debugger (g)
	Reacquire(pid int) error                 // take it back when that debugger exits
	// Signal sends sig ("SIGTERM", one of views.Signals) to one traced process by pid (K).
	Signal(pid int, sig string) error
	// ProcDetail reads what /proc says about one traced process now (Processes' enter):
	// files only, no stop.
	ProcDetail(pid int) (sessions.ProcDetail, error)
}

// rendererFPS is how often Bubble Tea's renderer wakes to write a frame (its default is 60):
// each wake is a timer's, and a thread's, on the job's CPUs even when the screen is still.
// Idle (a job of one sleeping process, after the first stack sample), crashtui's CPU over
// 10 s was 164 and 134 ms at 60, 132 and 99 at 30; a key is drawn within 33 ms.
const rendererFPS = 30

// Options configure Run.
type Options struct {
	Events    <-chan sessions.Event // live events the TUI reduces itself (closed when the tracer is done); nil in replay and with Changed
	Replay    []sessions.Event      // a recorded session, played at original pace with pause (space), step (→), speed (+/-), seek
	Header    sessions.Header       // for the header line (job, arch, kernel)
	Mode      string                // "attach", "run", "demo", "replay"
	Control   Controller
	Recording string // path when --record is on (shown in the header)
	// SampleEvery is how often the controller samples stacks on its own (0: only on S).
	SampleEvery time.Duration
	Cast        io.Writer // when non-nil, also write an asciicast v2 recording of the screen
	Input       io.Reader
	Output      io.Writer // nil = stdin/stdout (tests use a pty)
	// State, when not nil, is the session's own State, which its owner reduces the events
	// into under Lock: the TUI then reads it (under Lock) instead of reducing the events a
	// second time. One reducer for live, JSON and replay.
	State *sessions.State
	Lock  sync.Locker
	// Changed, with State and Lock, says the State changed (closed when the tracer is done):
	// the owner sends on it without blocking (a full channel has the wake already) instead
	// of handing each event over, which the TUI would only count.
	Changed <-chan struct{}
	// Tour starts the guided tour (tour.go).
	Tour bool
	// RanksLog is the file the ranks write their stdout and stderr to (crashtui run): the
	// Output tab (7) reads it as it grows.
	RanksLog string
	// Source reads what the files say about a stack frame (its source lines and code: the
	// Stacks tab's detail), in a command, never in Update; nil shows neither.
	// elfinfo.ReadFrameSource is the one crashtui gives it, live and in replay alike.
	Source func(sessions.StackFrame) sessions.FrameSource
	// GuestLog is, for demo --guest, the guest's build and boot log: the Output tab reads it
	// instead, and the Processes tab shows its newest line until the guest's processes come.
	GuestLog string
}

// quitGrace is how long Run's quit on ctx's end may take before Bubble Tea is killed: an
// event loop that is not taking messages never sees the quit.
const quitGrace = 2 * time.Second

// Run runs the program until the user quits (q detaches first when a tracer is attached) or
// ctx ends (then ctx's error), and returns the final State. Run installs no signal handler:
// the caller ends ctx on SIGINT, SIGTERM and SIGHUP.
func Run(ctx context.Context, o Options) (*sessions.State, error) {
	in, out := o.Input, o.Output
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	r := lipgloss.NewRenderer(out)
	if os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	if r.ColorProfile() != termenv.Ascii {
		// Light or dark, asked before Bubble Tea reads the terminal (background.go); when
		// the terminal does not say, lipgloss decides (COLORFGBG, else dark).
		inF, ok1 := in.(*os.File)
		outF, ok2 := out.(*os.File)
		if ok1 && ok2 {
			if dark, ok := termBackground(inF, outF, queryTimeout); ok {
				r.SetHasDarkBackground(dark)
			}
		}
	}
	m := NewModel(o, views.NewStyles(r))
	m.term = out // before the asciicast's tee: a copy is for this terminal, not the recording

	var cast *sessions.CastWriter
	if o.Cast != nil {
		w, h := 80, 24
		if f, ok := out.(term.File); ok {
			if cw, ch, err := term.GetSize(f.Fd()); err == nil {
				w, h = cw, ch
			}
		}
		var err error
		if cast, err = sessions.NewCastWriter(o.Cast, w, h, nil); err != nil {
			return m.state, fmt.Errorf("asciicast: %w", err)
		}
		m.cast = cast
		out = tee(out, cast)
	}
	// Signals are the caller's: ctx ends on them (crashtui's signalContext). Bubble Tea's own
	// SIGINT/SIGTERM handler raced with that: when ctx ended first, its handler blocked
	// forever sending InterruptMsg to the stopped event loop, and Run never returned.
	//
	// ctx's end is a quit, not Bubble Tea's kill (WithContext): a kill closes the input
	// reader's cancel pipe without waiting for the read loop, which may still be asking it
	// for its descriptor (a data race in cancelreader that -race reports). A quit waits for
	// the read loop, and draws the last frame. Kill follows if the quit is not taken in time.
	//
	// The renderer looks for a new frame rendererFPS times a second, whether or not one came.
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out),
		tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithoutSignalHandler(), tea.WithFPS(rendererFPS))
	ended := make(chan struct{})
	defer close(ended)
	m.ended = ended
	stop := context.AfterFunc(ctx, func() {
		time.AfterFunc(quitGrace, p.Kill)
		p.Quit()
	})
	defer stop()
	_, err := p.Run()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if cast != nil {
		if cerr := cast.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("asciicast: %w", cerr)
		}
	}
	switch {
	case errors.Is(err, tea.ErrInterrupted):
		// An InterruptMsg (Bubble Tea's form of a SIGINT) is a quit like q, not a failure.
		err = nil
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		err = ctx.Err()
	}
	return m.state, err
}

// tee writes the program's output to the terminal and the asciicast. When out is a terminal
// the result is still a term.File, so Bubble Tea keeps raw mode and SIGWINCH sizing.
func tee(out io.Writer, cast *sessions.CastWriter) io.Writer {
	if f, ok := out.(term.File); ok {
		return teeFile{f, cast}
	}
	return io.MultiWriter(out, castSink{cast})
}

type teeFile struct {
	term.File
	cast *sessions.CastWriter
}

func (t teeFile) Write(p []byte) (int, error) {
	n, err := t.File.Write(p)
	if n > 0 {
		t.cast.Write(p[:n]) // a failing recording must not break the screen; Close reports it
	}
	return n, err
}

// castSink never fails the screen's writes either.
type castSink struct{ c *sessions.CastWriter }

func (s castSink) Write(p []byte) (int, error) { s.c.Write(p); return len(p), nil }
