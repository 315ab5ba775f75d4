package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tui"
)

// A job spans nodes: one agent per node (started by the job's own launcher, srun or flux
// exec) attaches to the node's part of the job and streams JSON Lines, every event stamped
// with its host; the launcher merges the streams line by line, and one view shows them as
// one session (design.md "Beyond one machine"):
//
//	srun --overlap --jobid ID --ntasks-per-node 1 crashtui agent slurm:ID | crashtui view

const agentSynopsis = "agent [flags] JOB"

// cmdAgent is attach --json for one node of a multi-node session: every event carries the
// host name (--host, default this machine's), and the access matrix is measured as in the
// TUI (--matrix auto), since the view has no tracer to ask.
func cmdAgent(args []string, stdout, stderr io.Writer) error {
	var control bool
	c, spec, err := parseJobCommand("agent", agentSynopsis, args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&control, "control", false, "also read requests on stdin, one a line: checkpoint correct|naive|sc-only|none, measure, sample, autosample on|off, signal PID SIG, detach (crashtui demo --guest sends them down the console)")
	})
	if err != nil {
		return err
	}
	if control {
		c.control = os.Stdin
	}
	if c.cast != "" {
		return usageErr("agent: --cast records a screen, and an agent has none (give it to view)")
	}
	c.json = true
	if c.matrix == "" || c.matrix == "auto" {
		c.matrix = "measure"
	}
	if c.host == "" {
		if c.host, err = os.Hostname(); err != nil || c.host == "" {
			return fmt.Errorf("agent: no host name (%v): give --host", err)
		}
	}
	return attachJob(c, stdout, stderr, "agent", spec)
}

const viewSynopsis = "view [--json [--reduce]] [--host NAME] [--record FILE] [--cast FILE] [SOURCE...]"

// cmdView shows event streams as one live session: agents' output merged by a launcher on
// stdin (SOURCE "-", the default), or files of JSON Lines (agent or --json output,
// recordings), read concurrently as they grow... until their end. Events without a host
// are stamped with their source's name when there are several sources, since pids are
// unique per host only. Each stream's own summary is dropped: the view derives one for all.
// No ptrace, no root.
//
// With --reduce the view is a level of a tree (design.md "Beyond one machine"): its --json
// output is reduced events (sessions.Reducer) that another view reads like an agent's, never
// its inputs' per-task events, and its summary's member lists are sets. A source whose
// stream ends without its summary (an agent or a view under this one died) is named in a
// lost event: its hosts, with what they said before kept.
func cmdView(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("view", viewSynopsis, stderr)
	var c common
	var reduce bool
	fs.BoolVar(&c.json, "json", false, "no TUI: the merged events as JSON Lines on stdout, then their summary")
	fs.BoolVar(&reduce, "reduce", false, "with --json: write reduced events (counts, rank sets, merged classes) that another view reads, not every event: a level of a tree of views")
	fs.StringVar(&c.host, "host", "", "the `NAME` this view's reduced events and summary carry (default view@HOST:PID)")
	fs.StringVar(&c.record, "record", "", "record the merged session to `FILE` (replay it with crashtui replay FILE)")
	fs.StringVar(&c.cast, "cast", "", "also record the screen as an asciicast v2 `FILE`")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if reduce && !c.json {
		return usageErr("view: --reduce is the output of a view that another view reads: give --json too")
	}
	if len(pos) == 0 {
		pos = []string{"-"}
	}
	srcs, err := openSources(pos)
	defer func() {
		for _, s := range srcs {
			s.close()
		}
	}()
	if err != nil {
		return err
	}
	var tty *os.File
	if stdinSource(srcs) && !c.json {
		// The events come on stdin, so the keyboard is the controlling terminal.
		if tty, err = os.Open("/dev/tty"); err != nil {
			return &exitError{2, fmt.Errorf("view: events come on stdin and there is no terminal for the keys (%v): use --json", err)}
		}
		defer tty.Close()
	}
	if reduce && c.host == "" {
		h, _ := os.Hostname()
		c.host = fmt.Sprintf("view@%s:%d", h, os.Getpid())
	}

	ctx, stop := signalContext()
	defer stop()
	labels := make([]string, len(srcs))
	for i, s := range srcs {
		labels[i] = s.label
	}
	s, err := newSession(&c, stdout, "view "+strings.Join(labels, " "), "view")
	if err != nil {
		return err
	}
	if reduce {
		s.reduced, s.passUp = true, passUp()
	}
	ctx, cancel := s.withStdout(ctx)
	defer cancel()

	done := readSources(srcs, s, reduce)
	var reducer *sessions.Reducer
	if reduce {
		reducer = sessions.NewReducer(s.state, c.host)
		go reduceLoop(ctx, s, reducer, done)
	}
	if c.json {
		select {
		case <-done:
		case <-ctx.Done():
		}
	} else {
		go func() {
			<-done
			s.queue.close() // every source ended: the view says so, and stays for reading
		}()
		err = viewTUI(ctx, &c, s, tty)
	}
	switch {
	case reduce:
		s.mu.Lock()
		evs := reducer.Changes(time.Now(), true)
		s.mu.Unlock()
		for _, e := range evs {
			s.emitUp(e)
		}
	case c.json:
		// The agents' stack samples merged across hosts: one tree, rank sets over every host.
		s.mu.Lock()
		st := s.state.Stacks(sessions.StackOptions{Cut: sessions.DefaultCutRE})
		has := s.state.SampleEvents > 0 || len(st.Classes) > 0
		s.mu.Unlock()
		if has {
			s.emit(sessions.Event{Time: time.Now(), Host: c.host, Body: st})
		}
	}
	s.finish(c.host)
	return err
}

// reduceInterval is how often a reducing view says what changed; its stack classes (a merge
// of every sample) go every fourth time.
const reduceInterval = 500 * time.Millisecond

// reduceLoop writes the reducer's changes until the sources are done or ctx ends (the
// caller writes the last ones).
func reduceLoop(ctx context.Context, s *session, r *sessions.Reducer, done <-chan struct{}) {
	tick := time.NewTicker(reduceInterval)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case now := <-tick.C:
			s.mu.Lock()
			evs := r.Changes(now, n%4 == 0)
			s.mu.Unlock()
			for _, e := range evs {
				s.emitUp(e)
			}
		}
	}
}

// maxPassedErrors is how many of its inputs' error events a reducing view passes up as they
// are; the hosts' counts have them all.
const maxPassedErrors = 64

// passUp is what a reducing view writes of the events it applies, besides its reducer's:
// its own summary, the first error events.
func passUp() func(sessions.Event) bool {
	errs := 0
	return func(e sessions.Event) bool {
		switch e.Kind() {
		case sessions.KindSummary:
			return true
		case sessions.KindError:
			errs++
			return errs <= maxPassedErrors
		}
		return false
	}
}

// viewTUI shows the merged session; keys come from tty when stdin carries the events.
func viewTUI(ctx context.Context, c *common, s *session, tty *os.File) error {
	o := tui.Options{Events: s.queue.out, State: s.state, Lock: &s.mu, Header: s.header, Mode: "view", Recording: c.record}
	if tty != nil {
		o.Input = tty
	}
	return runTUI(ctx, c, o)
}

// attachJob attaches to the job named spec and traces it until it ends or crashtui is told to
// stop (attach and agent).
func attachJob(c *common, stdout, stderr io.Writer, mode, spec string) error {
	job, err := c.parseJob(spec)
	if err != nil {
		return err
	}
	return traceJob(c, stdout, stderr, mode, job.Spec, func(t *tracing) error {
		_, err := t.Attach(job)
		if errors.Is(err, tracer.ErrNoJob) {
			return &exitError{2, err}
		}
		return err
	})
}
