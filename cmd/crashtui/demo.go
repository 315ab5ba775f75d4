package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/crashtui/crashtui/demo"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer"
)

const demoSynopsis = "demo [--json] [--record FILE] [--duration D] [--tour] [--guest ppc64le|arm64 [--cpu MODEL]]"

// demoRanks is the size of the built-in demo job (demo/c/rank.c says what each rank does).
const demoRanks = 8

// parseDurationFlag is time.ParseDuration with an error that says what to type: flag's own is
// only "parse error", and a bare number (--duration 3) is the usual mistake.
func parseDurationFlag(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err == nil && d < 0:
		return 0, errors.New("want a duration >= 0, like 30s")
	case err == nil:
		return d, nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return 0, fmt.Errorf("use a unit: %ss (or ms, m, h)", s)
	}
	return 0, errors.New("want a duration with a unit, like 30s, 1m30s or 500ms")
}

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	c := common{grace: defaultGrace, stderr: stderr}
	fs := newFlagSet("demo", demoSynopsis, stderr)
	c.register(fs)
	duration := new(time.Duration)
	fs.Func("duration", "end the demo after `D` (a unit is needed: 30s, 2m; default: at q in the TUI, 12s with --json)", func(s string) (err error) {
		*duration, err = parseDurationFlag(s)
		return err
	})
	fs.BoolVar(&c.tour, "tour", false, "a guided tour of the four capabilities: each key shows the next (esc leaves it, the session goes on)")
	guestArch := fs.String("guest", "", "boot a QEMU guest of this `ARCH` (ppc64le, arm64) running demo/restart's sigpending under crashtui's agent, and show it here; c checkpoints it (with --json: request lines on stdin, as agent --control reads them)")
	cpu := fs.String("cpu", "", "the guest's QEMU `MODEL`: power8, power9, power10 (default) for ppc64le; max for arm64")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return usageErr("demo takes no arguments")
	}
	if *guestArch != "" {
		c.duration = *duration
		return demoGuest(&c, *guestArch, *cpu, stdout, stderr)
	}
	if *cpu != "" {
		return usageErr("demo: --cpu is the model of a --guest")
	}
	if c.json && *duration == 0 {
		*duration = 12 * time.Second
	}
	rank, err := demo.Program("rank")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "crashtui demo: not root, so rank 1 cannot switch to uid 65534 (no uid row in the matrix) and crashes keep the kernel's core settings; everything else is shown")
	}
	spec := tracer.LaunchSpec{N: demoRanks, Argv: []string{rank}}
	if co := crashOptions(&c); co.CoresDir != "" || co.DedupKernelCores {
		spec.RaiseCoreLimit = true // as ulimit -c unlimited before the job
	}
	if c.json {
		spec.Stdout, spec.Stderr = os.Stderr, os.Stderr
	} else {
		log, err := outfile.CreateTemp("", "crashtui-demo-*.log")
		if err != nil {
			return err
		}
		defer log.Close()
		spec.Stdout, spec.Stderr = log, log
	}
	if c.matrix == "" || c.matrix == "auto" {
		c.matrix = "measure"
	}
	c.duration = *duration
	return traceJob(&c, stdout, stderr, "demo", "demo", func(t *tracing) error {
		_, err := t.Launch(spec)
		return err
	})
}
