package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/crashtui/crashtui/demo"
	"github.com/crashtui/crashtui/tracer"
)

const demoSynopsis = "demo [--json] [--record FILE] [--duration D]"

// demoRanks is the size of the built-in demo job (demo/c/rank.c says what each rank does).
const demoRanks = 8

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlagSet("demo", demoSynopsis, stderr)
	c.register(fs)
	duration := fs.Duration("duration", 0, "end the demo after this long (default: at q in the TUI, 12s with --json)")
	fs.BoolVar(&c.tour, "tour", false, "a guided tour of the four capabilities: each key shows the next (esc leaves it, the session goes on)")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return usageErr("demo takes no arguments")
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
	if c.json {
		spec.Stdout, spec.Stderr = os.Stderr, os.Stderr
	} else {
		log, err := os.CreateTemp("", "crashtui-demo-*.log")
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
	return traceJob(&c, stdout, stderr, "demo", "demo", func(t *tracer.Tracer) error {
		_, err := t.Launch(spec)
		return err
	})
}
