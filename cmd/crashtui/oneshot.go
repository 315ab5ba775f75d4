package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/crash"
	"github.com/crashtui/crashtui/views"
)

// attachOnce is the shape of the one-shot commands (matrix, checkpoint): attach to job, run
// step unless a signal or a closed --json reader came first, detach, then let report print
// the result (text mode, and only when step ran) and write the summary. final, when not nil,
// derives one more event from the State after the detach (emitted before the summary). ctx carries the
// signals the caller holds for its whole life; one arriving during step lets it finish, since
// step always leaves the job as it found it, and crashtui then detaches.
func attachOnce(ctx context.Context, c *common, stdout io.Writer, mode string, job tracer.Job,
	step func(*tracing) error, report func(*sessions.State), final func(*sessions.State) sessions.Body) error {
	s, err := newSession(c, stdout, job.Spec, mode)
	if err != nil {
		return err
	}
	ctx, cancel := s.withStdout(ctx)
	defer cancel()
	t := newTracing(tracer.Options{Emit: s.emit, Host: c.host}, &crash.Options{})
	defer t.Close() // never leave the job stopped, whatever happens below
	if _, err := t.Attach(job); err != nil {
		t.Close()
		s.finish(c.host)
		if errors.Is(err, tracer.ErrNoJob) {
			return &exitError{2, err}
		}
		return err
	}
	ran := ctx.Err() == nil
	if ran {
		err = step(t)
	}
	if cerr := t.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("detach: %w", cerr)
	}
	s.settle() // every event of the step is in the State
	if final != nil && ran {
		// A result derived from the events (stacks' merged tree): recorded and in --json too.
		s.mu.Lock()
		b := final(s.state)
		s.mu.Unlock()
		s.emit(sessions.Event{Time: time.Now(), Host: c.host, Body: b})
	}
	if !c.json && ran {
		s.mu.Lock() // the tracer has stopped; the lock only documents who else touches state
		report(s.state)
		printUnattached(stdout, s.state)
		s.mu.Unlock()
	}
	s.finish(c.host)
	return err
}

// printUnattached names the processes of the job the command left out because they could
// not be attached (traced already, Yama, another user), each with why and what to do: the
// report above is about the rest.
func printUnattached(w io.Writer, st *sessions.State) {
	lines := views.Unattached(st.Errors)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nnot in this report (%d not attached):\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", wrap(l, 94, "    "))
	}
}
