package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tui"
)

const attachSynopsis = "attach [flags] JOB"

func cmdAttach(args []string, stdout, stderr io.Writer) error {
	tree := newSlurmTree()
	c, spec, err := parseJobCommand("attach", attachSynopsis, args, stderr, tree.register)
	if err != nil {
		return err
	}
	if through, err := attachTree(c, tree, spec, stdout); through {
		return err // a job on other nodes: a tree of agents and views (view_slurm.go)
	}
	return attachJob(c, stdout, stderr, "attach", spec)
}

// parseJobCommand parses the common flags, the command's own (extra registers them, if
// not nil) and the one JOB of a command that takes a JOB.
func parseJobCommand(name, synopsis string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*common, string, error) {
	c := &common{stderr: stderr}
	fs := newFlagSet(name, synopsis, stderr)
	if name == "matrix" || name == "checkpoint" || name == "stacks" {
		c.registerOneShot(fs)
	} else {
		c.register(fs)
	}
	if extra != nil {
		extra(fs)
	}
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return nil, "", err
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, "", usageErr("%s needs exactly one JOB", name)
	}
	return c, pos[0], nil
}

const runSynopsis = "run [flags] [-n N] -- CMD [ARGS...]"

func cmdRun(args []string, stdout, stderr io.Writer) error {
	c := common{stderr: stderr}
	fs := newFlagSet("run", runSynopsis, stderr)
	c.register(fs)
	n := fs.Int("n", 1, "number of ranks to start")
	fs.DurationVar(&c.grace, "grace", defaultGrace, "when crashtui quits, give the ranks `D` to exit after its SIGINT before it sends SIGKILL (a second SIGINT to crashtui skips it)")
	pos, tail, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	argv := append(pos, tail...)
	if len(argv) == 0 {
		fs.Usage()
		return usageErr("run needs a command after --")
	}
	if *n < 1 || *n > 4096 {
		return usageErr("-n %d: want 1..4096 ranks", *n)
	}
	// Before anything is created or started: a command that cannot run, a TUI without a
	// terminal (no empty ranks' log left behind).
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return usageErr("run: %w: %w", tracer.ErrNoCommand, err)
	}
	if lost := tracer.PrivilegesLost(path); lost.Any() {
		fmt.Fprintln(stderr, "crashtui: warning: "+lostSentence(lost))
	}
	if !c.json {
		if err := needTerminal("run"); err != nil {
			return err
		}
		if err := c.openCast(); err != nil {
			return err
		}
	}
	spec := tracer.LaunchSpec{N: *n, Argv: argv}
	if co := crashOptions(&c); co.CoresDir != "" || co.DedupKernelCores {
		spec.RaiseCoreLimit = true // as ulimit -c unlimited before the job
	}
	if c.json {
		spec.Stdout, spec.Stderr = os.Stderr, os.Stderr // stdout carries only JSON
	} else {
		// One file per rank (rank-N.log), in a directory of crashtui's own (0700, a fresh
		// name): the Output tab tells the ranks apart by it.
		dir, err := os.MkdirTemp("", "crashtui-ranks-")
		if err != nil {
			return err
		}
		if err := outfile.Dir(dir); err != nil {
			return err
		}
		spec.RankOutput = func(rank int) (*os.File, io.Closer, error) {
			f, err := outfile.Create(filepath.Join(dir, fmt.Sprintf("rank-%d.log", rank)))
			if err != nil {
				return nil, nil, err
			}
			return f.File, f, nil
		}
		c.ranksLog = dir
		fmt.Fprintf(stderr, "crashtui: ranks' output goes to %s (rank-N.log)\n", dir)
	}
	return traceJob(&c, stdout, stderr, "run", "run:"+strconv.Quote(argv[0]), func(t *tracing) error {
		_, err := t.Launch(spec)
		if errors.Is(err, tracer.ErrNoCommand) {
			return &exitError{2, err} // bad usage; failing to trace what started is status 1
		}
		return err
	})
}

// lostSentence is the one line run prints before starting a program that ptrace strips of
// its privileges.
func lostSentence(l tracer.LostPrivileges) string {
	var what []string
	if l.Setuid {
		what = append(what, fmt.Sprintf("setuid (uid %d)", l.UID))
	}
	if l.Setgid {
		what = append(what, fmt.Sprintf("setgid (gid %d)", l.GID))
	}
	if l.Caps {
		what = append(what, "file capabilities")
	}
	return fmt.Sprintf("%s has %s, which the kernel ignores for a traced exec: it will run with your own ids and capabilities (run crashtui as root to keep them)",
		sessions.Sanitize(l.Path), strings.Join(what, " and "))
}

// traceJob runs a tracer on a job until it ends, the user quits, or a signal arrives, then
// detaches everything and writes the summary. run and demo end the ranks they started
// before detaching: SIGINT first, as a terminal would have sent it, then SIGKILL.
func traceJob(c *common, stdout, stderr io.Writer, mode, jobName string, start func(*tracing) error) (err error) {
	if c.tour && c.json {
		return usageErr("--tour is a walk through the TUI: not with --json")
	}
	if !c.json {
		if err := needTerminal(mode); err != nil {
			return err
		}
		if err := c.openCast(); err != nil {
			return err
		}
	}
	ctx, stop := signalContext()
	defer stop()
	s, err := newSession(c, stdout, jobName, mode)
	if err != nil {
		return err
	}
	ctx, cancel := s.withStdout(ctx)
	defer cancel()
	tap := &eventTap{} // what the control socket's requests see of the events (ctlsock.go)
	t := newTracing(tracer.Options{Emit: tap.wrap(s.emit), Host: c.host}, crashOptions(c))
	defer func() {
		// Detach on every way out, panics included: never leave the job stopped.
		if r := recover(); r != nil {
			t.Close()
			panic(r)
		}
	}()
	if err := start(t); err != nil {
		t.Close()
		s.finish(c.host)
		return err
	}
	if c.duration > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}
	go liveMatrix(ctx, t, c.matrixMode())
	sp := newSampler(t, c.sampleInterval(mode))
	go sp.run(ctx)
	// Other crashtui commands on this job ask this one over its control socket.
	ctl, cerr := serveControl(t, s, tap, controller{t, mode, sp, c.grace}, c.host)
	if cerr != nil {
		s.emit(sessions.Event{Time: time.Now(), Host: c.host, Body: sessions.Error{Op: "control", Message: cerr.Error()}})
	}
	defer ctl.stop()
	if c.json {
		if c.control != nil {
			var detach func()
			ctx, detach = context.WithCancel(ctx)
			defer detach()
			go serveRequests(c.control, controller{t, mode, sp, c.grace}, s, c.host, detach)
		}
		err = waitJob(ctx, t)
	} else {
		err = runTUI(ctx, c, tui.Options{Changed: s.changes.ch, State: s.state, Lock: &s.mu, Header: s.header, Mode: mode,
			Control: controller{t, mode, sp, c.grace}, Recording: c.record, SampleEvery: sp.interval(), Tour: c.tour, RanksLog: c.ranksLog})
	}
	ctl.stop() // no new asker while crashtui lets go of the job
	if ownsJob(mode) {
		endRanks(t, c.grace, stderr)
	}
	if cerr := t.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("detach: %w", cerr)
	}
	s.finish(c.host)
	return err
}

// sampleInterval resolves --sample-every's default: 5 s in the TUI and in agents (their
// view shows the Stacks tab), off in --json.
func (c *common) sampleInterval(mode string) time.Duration {
	if c.sampleEvery >= 0 {
		return c.sampleEvery
	}
	if c.json && mode != "agent" {
		return 0
	}
	return 5 * time.Second
}

// matrixMode resolves --matrix=auto: measured in the TUI, off in --json.
func (c *common) matrixMode() string {
	if c.matrix == "" || c.matrix == "auto" {
		if c.json {
			return "off"
		}
		return "measure"
	}
	return c.matrix
}

// liveMatrix keeps the access matrix current: once a second after the job's processes
// changed (every 5 s while they stay the same images: access.Refresh) the prediction is
// recomputed from /proc and, when it changed, a new matrix is emitted (measured inside the
// processes when mode is measure). Processes are stopped only after a change.
func liveMatrix(ctx context.Context, t *tracing, mode string) {
	if mode == "off" {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.JobDone():
			return
		case <-tick.C:
			t.access.Refresh(mode == "measure")
		}
	}
}

// ownsJob says whether crashtui started the job itself (and so ends it when it quits).
func ownsJob(mode string) bool { return mode == "run" || mode == "demo" }

// defaultGrace is how long ranks crashtui started get after its SIGINT before the SIGKILL
// (run --grace; Slurm's KillWait is the same idea).
const defaultGrace = 3 * time.Second

// endRanks ends the job crashtui started itself, so nothing it launched outlives it: SIGINT,
// as a terminal would have sent it, then SIGKILL after grace. A second quit signal skips the
// grace: the SIGKILL goes at once.
// What it does is said on w (nil: the TUI, which shows it itself).
func endRanks(t *tracing, grace time.Duration, w io.Writer) {
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, grace}, {syscall.SIGKILL, 5 * time.Second}} {
		select {
		case <-t.JobDone():
			return
		default:
		}
		t.SignalJob(step.sig)
		if w != nil && step.sig == syscall.SIGINT {
			fmt.Fprintf(w, "crashtui: ending the job it started: SIGINT sent, SIGKILL in %v unless it exits (a second Ctrl-C sends it now)\n", grace)
		}
		select {
		case <-t.JobDone():
			return
		case <-quit.second:
		case <-time.After(step.wait):
		}
	}
}

func waitJob(ctx context.Context, t *tracing) error {
	select {
	case <-t.JobDone():
	case <-ctx.Done():
	}
	return nil
}

// needTerminal refuses a TUI without a terminal on stdin and stdout, before anything is
// attached: the screen would be escape codes in a file, the keys unreadable.
func needTerminal(mode string) error {
	for _, f := range []*os.File{os.Stdin, os.Stdout} {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
			return usageErr("%s shows a TUI, which needs a terminal on stdin and stdout (%s is not one): use --json for scripts and pipes", mode, f.Name())
		}
	}
	return nil
}
