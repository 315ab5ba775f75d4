package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
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
	var share string
	var orphan time.Duration
	c, spec, err := parseJobCommand("agent", agentSynopsis, args, stderr, func(fs *flag.FlagSet) {
		fs.DurationVar(&orphan, "orphan-after", 0, "with --control: detach when no request line has come for `D` (a tree's views say alive every D/4; 0: never)")
		fs.BoolVar(&control, "control", false, "also read requests on stdin, one a line: checkpoint correct|naive|sc-only|none, measure, sample, autosample on|off, signal PID SIG, detail PID, detach, each possibly after \"to HOSTS\" (crashtui demo --guest sends them down the console)")
		fs.StringVar(&share, "share", "", "`K/N`: one of N agents on this node, taking the tasks whose SLURM_LOCALID is K modulo N (a tree's --agents-per-node)")
	})
	if err != nil {
		return err
	}
	if control {
		c.control = &orphanReader{os.Stdin, orphan}
	}
	if c.cast != "" {
		return usageErr("agent: --cast records a screen, and an agent has none (give it to view)")
	}
	c.json = true
	if c.matrix == "" || c.matrix == "auto" {
		c.matrix = "measure"
	}
	if share != "" {
		if c.filter, err = shareFilter(share); err != nil {
			return usageErr("agent: --share %s: %v", share, err)
		}
	}
	host, err := agentHost(c.host)
	if err != nil {
		return err
	}
	c.host = host
	return attachJob(c, stdout, stderr, "agent", spec)
}

// agentHost is an agent's --host: this machine's name by default; %n in it is the Slurm node
// name (SLURMD_NODENAME, as srun starts the agent; this machine's name without it), the name
// a tree's root knows the node by.
func agentHost(h string) (string, error) {
	if h == "" || strings.Contains(h, "%n") {
		name := os.Getenv("SLURMD_NODENAME")
		if name == "" || h == "" {
			var err error
			if name, err = os.Hostname(); err != nil || name == "" {
				return "", fmt.Errorf("agent: no host name (%v): give --host", err)
			}
		}
		if h == "" {
			return name, nil
		}
		h = strings.ReplaceAll(h, "%n", name)
	}
	return h, nil
}

// shareFilter is agent --share K/N: the tasks whose SLURM_LOCALID is K modulo N (those
// without one are share 0's).
func shareFilter(spec string) (func(pid int) bool, error) {
	ks, ns, ok := strings.Cut(spec, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return nil, fmt.Errorf("want K/N with 0 <= K < N")
	}
	return func(pid int) bool {
		local := 0
		procfs.ReadFile(procfs.Path(pid, "environ"), func(env []byte) {
			for _, kv := range bytes.Split(env, []byte{0}) {
				if v, ok := bytes.CutPrefix(kv, []byte("SLURM_LOCALID=")); ok {
					local, _ = strconv.Atoi(string(v))
				}
			}
		})
		return local%n == k
	}, nil
}

const viewSynopsis = "view [--json [--reduce] [--control]] [--host NAME] [--fanout K] [--record FILE] [--cast FILE] [SOURCE...]"

// cmdView shows event streams as one live session: agents' output merged by a launcher on
// stdin (SOURCE "-", the default), files of JSON Lines (agent or --json output,
// recordings), read concurrently as they grow... until their end, or "slurm:ID@HOSTS", a
// subtree of a job that the view launches with srun (view_slurm.go). Events without a host
// are stamped with their source's name when there are several sources, since pids are
// unique per host only. Each stream's own summary is dropped: the view derives one for all.
// No ptrace, no root.
//
// With --reduce the view is a level of a tree (design.md "Beyond one machine"): its --json
// output is reduced events (sessions.Reducer) that another view reads like an agent's, never
// its inputs' per-task events, and its summary's member lists are sets. A source whose
// stream ends without its summary (an agent or a view under this one died) is named in a
// lost event: its hosts, with what they said before kept. With --control it reads requests
// on stdin and passes them down to the sources it launched (view_control.go).
func cmdView(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("view", viewSynopsis, stderr)
	c := common{stderr: stderr}
	var o viewOptions
	tree := newSlurmTree()
	fs.BoolVar(&c.json, "json", false, "no TUI: the merged events as JSON Lines on stdout, then their summary")
	fs.BoolVar(&o.reduce, "reduce", false, "with --json: write reduced events (counts, rank sets, merged classes) that another view reads, not every event: a level of a tree of views")
	fs.BoolVar(&o.control, "control", false, "with --json: read requests on stdin (as agent --control) and pass them down to the sources this view launched (\"to HOSTS REQUEST\" for some hosts only)")
	fs.StringVar(&c.host, "host", "", "the `NAME` this view's reduced events and summary carry (default view@HOST:PID)")
	tree.register(fs)
	fs.DurationVar(&o.orphanAfter, "orphan-after", 0, "with --control: detach what this view launched and end when no request line has come for `D` (the view above says alive every D/4; 0: never)")
	fs.StringVar(&tree.sampleEvery, "sample-every", "", "a slurm:ID@HOSTS source: the agents sample every `D` (0: only when asked; default theirs, 5s)")
	fs.StringVar(&c.record, "record", "", "record the merged session to `FILE` (replay it with crashtui replay FILE)")
	fs.StringVar(&c.cast, "cast", "", "also record the screen as an asciicast v2 `FILE`")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if o.reduce && !c.json {
		return usageErr("view: --reduce is the output of a view that another view reads: give --json too")
	}
	if o.control && !c.json {
		return usageErr("view: --control reads requests on stdin, which the TUI's keys use: give --json too")
	}
	if len(pos) == 0 {
		pos = []string{"-"}
	}
	tree.control = true // requests go down a launched tree (the root's keys, or --control)
	if o.orphanAfter > 0 {
		tree.orphanAfter = o.orphanAfter // the same patience all the way down
	}
	o.aliveEvery = tree.orphanAfter / 4
	o.mode, o.label = "view", "view "+strings.Join(pos, " ")
	return viewSession(&c, o, stdout, func(s *session) ([]*source, error) { return openSources(pos, tree, s) })
}

// viewOptions are how a view session runs.
type viewOptions struct {
	reduce  bool
	control bool // requests on stdin
	mode    string
	label   string // its job, for the header
	// orphanAfter: with control, a parent silent this long is gone (serveViewRequests);
	// aliveEvery: how often to tell the launched sources this view is there.
	orphanAfter, aliveEvery time.Duration
}

// viewSession runs a view over the sources open returns (called once the session is there,
// so what launching them says becomes its events): to their end, or until told to stop.
// Sources it launched are told to detach, then ended.
func viewSession(c *common, o viewOptions, stdout io.Writer, open func(*session) ([]*source, error)) error {
	if o.reduce && c.host == "" {
		h, _ := os.Hostname()
		c.host = fmt.Sprintf("view@%s:%d", h, os.Getpid())
	}
	if !c.json {
		if err := c.openCast(); err != nil {
			return err
		}
	}
	ctx, stop := signalContext()
	defer stop()
	c.reduce = o.reduce
	s, err := newSession(c, stdout, o.label, o.mode)
	if err != nil {
		return err
	}
	ctx, cancel := s.withStdout(ctx)
	defer cancel()
	srcs, err := open(s)
	defer func() {
		for _, src := range srcs {
			src.close()
		}
	}()
	if err != nil {
		s.finish(c.host)
		return err
	}
	var tty *os.File
	if stdinSource(srcs) && !c.json {
		// The events come on stdin, so the keyboard is the controlling terminal.
		if tty, err = os.Open("/dev/tty"); err != nil {
			s.finish(c.host)
			return &exitError{2, fmt.Errorf("view: events come on stdin and there is no terminal for the keys (%v): use --json", err)}
		}
		defer tty.Close()
	}

	done := readSources(srcs, s, o.reduce)
	down := &downstream{srcs: srcs, s: s, done: done}
	if o.control {
		go serveViewRequests(os.Stdin, down, o.orphanAfter, cancel)
	}
	if down.launched() && o.aliveEvery > 0 {
		go down.keepAlive(o.aliveEvery)
	}
	var reducer *sessions.Reducer
	if o.reduce {
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
			s.changes.close() // every source ended: the view says so, and stays for reading
		}()
		err = viewTUI(ctx, c, s, tty, down)
	}
	down.detach() // a launched tree lets go of the job (no-op for files)
	switch {
	case o.reduce:
		s.settle() // every source's last events are in the State
		s.mu.Lock()
		s.emitUp(reducer.Changes(time.Now(), true))
		s.mu.Unlock()
	case c.json:
		// The agents' stack samples merged across hosts: one tree, rank sets over every host.
		s.settle()
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
			s.emitUp(r.Changes(now, n%4 == 0))
			s.mu.Unlock()
		}
	}
}

// maxPassedErrors is how many of its inputs' error events a reducing view passes up as they
// are; the hosts' counts have them all.
const maxPassedErrors = 64

// passUp is what a reducing view writes of the events it applies, besides its reducer's:
// its own summary, answers to detail and processes requests, the first error events.
func passUp() func(sessions.Event) bool {
	errs := 0
	return func(e sessions.Event) bool {
		switch e.Kind() {
		case sessions.KindSummary, sessions.KindDetail, sessions.KindHostProcesses:
			return true
		case sessions.KindError:
			errs++
			return errs <= maxPassedErrors
		}
		return false
	}
}

// viewTUI shows the merged session; keys come from tty when stdin carries the events, and
// requests go down to the sources the view launched.
func viewTUI(ctx context.Context, c *common, s *session, tty *os.File, down *downstream) error {
	o := tui.Options{Changed: s.changes.ch, State: s.state, Lock: &s.mu, Header: s.header, Mode: "view", Recording: c.record}
	if down.launched() {
		o.Control = treeController{down}
	}
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
	job.Filter = c.filter
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
