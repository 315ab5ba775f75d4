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
	"github.com/crashtui/crashtui/tracer/stacks"
	"github.com/crashtui/crashtui/views"
)

// jobOps is what a one-shot command does to its job: with its own tracer (localOps), or by
// asking the crashtui that traces the job already (asker, ctlask.go).
type jobOps interface {
	Sample(seq int) error
	Matrix(measure bool) (sessions.Matrix, error)
	Checkpoint(policy sessions.Policy, image io.Writer) ([]sessions.Thread, error)
}

// localOps are the command's own tracer's features.
type localOps struct{ t *tracing }

func (l localOps) Sample(seq int) error {
	_, _, err := l.t.stacks.Sample(stacks.Options{Seq: seq})
	return err
}

func (l localOps) Matrix(measure bool) (sessions.Matrix, error) {
	m, _, err := l.t.access.Matrix(measure)
	return m, err
}

func (l localOps) Checkpoint(policy sessions.Policy, image io.Writer) ([]sessions.Thread, error) {
	return l.t.checkpoints.Run(policy, image)
}

// attachOnce is the shape of the one-shot commands (matrix, checkpoint): attach to job, run
// step unless a signal or a closed --json reader came first, detach, then let report print
// the result (text mode, and only when step ran) and write the summary. final, when not nil,
// derives one more event from the State after the detach (emitted before the summary). ctx carries the
// signals the caller holds for its whole life; one arriving during step lets it finish, since
// step always leaves the job as it found it, and crashtui then detaches.
//
// When a running crashtui traces the job already (findHolder), step asks it over its control
// socket instead of attaching, and the events it answers are the session's.
func attachOnce(ctx context.Context, c *common, stdout io.Writer, mode string, job tracer.Job,
	step func(jobOps) error, report func(*sessions.State), final func(*sessions.State) sessions.Body) error {
	h, skip, err := findHolder(job)
	if err != nil {
		return err
	}
	job.Skip = skip
	s, err := newSession(c, stdout, job.Spec, mode)
	if err != nil {
		return err
	}
	ctx, cancel := s.withStdout(ctx)
	defer cancel()
	var ops jobOps
	done := func() error { return nil }
	if h != nil {
		ops = newAsker(h, job, s, c.host)
	} else {
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
		ops, done = localOps{t}, t.Close
	}
	ran := ctx.Err() == nil
	if ran {
		err = step(ops)
	}
	if cerr := done(); cerr != nil && err == nil {
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
