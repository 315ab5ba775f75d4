package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

const viewSynopsis = "view [--json] [--record FILE] [--cast FILE] [SOURCE...]"

// cmdView shows event streams as one live session: agents' output merged by a launcher on
// stdin (SOURCE "-", the default), or files of JSON Lines (agent or --json output,
// recordings), read concurrently as they grow... until their end. Events without a host
// are stamped with their source's name when there are several sources, since pids are
// unique per host only. Each stream's own summary is dropped: the view derives one for all.
// No ptrace, no root.
func cmdView(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("view", viewSynopsis, stderr)
	var c common
	fs.BoolVar(&c.json, "json", false, "no TUI: the merged events as JSON Lines on stdout, then their summary")
	fs.StringVar(&c.record, "record", "", "record the merged session to `FILE` (replay it with crashtui replay FILE)")
	fs.StringVar(&c.cast, "cast", "", "also record the screen as an asciicast v2 `FILE`")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		pos = []string{"-"}
	}
	type source struct {
		label string
		r     io.ReadCloser
	}
	var srcs []source
	defer func() {
		for _, s := range srcs {
			s.r.Close()
		}
	}()
	stdin := false
	for _, p := range pos {
		if p == "-" {
			if stdin {
				return usageErr("view: stdin (-) given twice")
			}
			stdin = true
			srcs = append(srcs, source{"stdin", io.NopCloser(os.Stdin)})
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return &exitError{2, fmt.Errorf("view: %w", err)}
		}
		srcs = append(srcs, source{strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), f})
	}
	var tty *os.File
	if stdin && !c.json {
		// The events come on stdin, so the keyboard is the controlling terminal.
		if tty, err = os.Open("/dev/tty"); err != nil {
			return &exitError{2, fmt.Errorf("view: events come on stdin and there is no terminal for the keys (%v): use --json", err)}
		}
		defer tty.Close()
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
	ctx, cancel := s.withStdout(ctx)
	defer cancel()

	var wg sync.WaitGroup
	for _, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stamp := func(e sessions.Event) sessions.Event {
				if e.Host == "" && len(srcs) > 1 {
					e.Host = src.label
				}
				return e
			}
			bad := func(le *sessions.LineError) {
				s.emit(stamp(sessions.Event{Time: time.Now(), Body: sessions.Error{Op: "view",
					Message: fmt.Sprintf("%s: %v (line skipped)", src.label, le)}}))
			}
			err := sessions.StreamEvents(src.r, func(e sessions.Event) {
				// Each stream's own summary and merged stacks are dropped: the view derives
				// both for all the streams.
				if k := e.Kind(); k != sessions.KindSummary && k != sessions.KindStacks {
					s.emit(stamp(e))
				}
			}, bad)
			if err != nil {
				var le *sessions.LineError
				if errors.As(err, &le) {
					bad(le)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

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
	if c.json {
		// The agents' stack samples merged across hosts: one tree, rank sets over every host.
		s.settle()
		s.mu.Lock()
		var merged *sessions.Stacks
		if s.state.SampleEvents > 0 {
			st := s.state.Stacks(sessions.StackOptions{Cut: sessions.DefaultCutRE})
			merged = &st
		}
		s.mu.Unlock()
		if merged != nil {
			s.emit(sessions.Event{Time: time.Now(), Body: *merged})
		}
	}
	s.finish("")
	return err
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
	if _, job.Skip, err = crashtuisIn(job); err != nil {
		return err // crashtui never traces a crashtui (ctlask.go)
	}
	return traceJob(c, stdout, stderr, mode, job.Spec, func(t *tracing) error {
		_, err := t.Attach(job)
		if errors.Is(err, tracer.ErrNoJob) {
			return &exitError{2, err}
		}
		return err
	})
}
