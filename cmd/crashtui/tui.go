package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/stacks"
	"github.com/crashtui/crashtui/tui"
)

// controller carries the TUI's requests down to the tracer.
type controller struct {
	t     *tracing
	mode  string
	sp    *sampler
	grace time.Duration // endRanks' (run --grace)
}

// Sample takes one stack sample of every thread now.
func (c controller) Sample() error {
	_, _, err := c.t.stacks.Sample(stacks.Options{})
	return err
}

// Release lets go of one process for another debugger; Reacquire takes it back.
func (c controller) Release(pid int) error   { return c.t.Release(pid) }
func (c controller) Reacquire(pid int) error { return c.t.Reacquire(pid) }

// Signal sends sig (a name from the TUI's K dialog, "SIGTERM") to one traced process.
func (c controller) Signal(pid int, sig string) error {
	n := unix.SignalNum(sig)
	if n == 0 {
		return fmt.Errorf("signal %d: unknown signal %q", pid, sig)
	}
	return c.t.SignalProcess(pid, n)
}

// ProcDetail reads what /proc says about one process of the job now (files only: no stop).
func (c controller) ProcDetail(pid int) (sessions.ProcDetail, error) {
	d, err := tracer.ReadProcDetail(pid)
	// A thread crashtui interrupted in nanosleep or poll goes on as restart_syscall: shown as
	// the call it is in, not as crashtui's artifact.
	var names map[int]string
	for i := range d.Threads {
		if d.Threads[i].Syscall == "restart_syscall" {
			if names == nil {
				names = c.t.CallNames(pid)
			}
			if n := names[d.Threads[i].TID]; n != "" {
				d.Threads[i].Syscall = n
			}
		}
	}
	return d, err
}

// AutoSample turns the periodic sampling on or off.
func (c controller) AutoSample(on bool) { c.sp.set(on) }

func (c controller) Measure() error {
	_, _, err := c.t.access.Matrix(true)
	return err
}

// Checkpoint runs a simulated checkpoint (checkpoint.Run refuses a policy it does not know).
func (c controller) Checkpoint(policy sessions.Policy) error {
	_, err := c.t.checkpoints.Run(policy, nil)
	return err
}

// Detach lets go of the job; a job crashtui started itself (run, demo) is ended first.
func (c controller) Detach() error {
	if ownsJob(c.mode) {
		endRanks(c.t, c.grace, nil)
	}
	return c.t.Close()
}

// openCast creates the --cast file, once: commands that trace call it before they attach, so
// a path crashtui may not write is bad usage found before the job is touched. Like a
// recording, it can be played while it grows.
func (c *common) openCast() error {
	if c.cast == "" || c.json || c.castF != nil {
		return nil
	}
	f, err := outfile.CreateStream(c.cast)
	if err != nil {
		return &exitError{2, fmt.Errorf("cast: %w", err)}
	}
	c.castF = f
	return nil
}

// runTUI shows a session in the TUI until the user quits or ctx ends, also recording the
// screen when c asks for --cast.
func runTUI(ctx context.Context, c *common, o tui.Options) error {
	if err := c.openCast(); err != nil {
		return err
	}
	if c.castF != nil {
		defer c.castF.Close()
		o.Cast = c.castF
	}
	if o.Source == nil {
		o.Source = elfinfo.ReadFrameSource // the Stacks tab's detail: files only, live or replayed
	}
	_, err := tui.Run(ctx, o)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
