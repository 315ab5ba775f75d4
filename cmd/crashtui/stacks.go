package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer/stacks"
	"github.com/crashtui/crashtui/views"
)

const stacksSynopsis = "stacks [--samples K] [--interval D] [--frames function|line|offset] [--cut RE] [--hide-unsymbolized] [--json] [--dot FILE] JOB"

// stackFlags are the merge options every command that shows stacks takes.
type stackFlags struct {
	frames string
	cut    string
	hide   bool
}

func (f *stackFlags) register(fs *flag.FlagSet) {
	f.frames, f.cut = "function", sessions.DefaultCut
	fs.Func("frames", "merge frames by `function` (default), line (function and file:line) or offset (module+offset, works without symbols)", func(s string) error {
		if !oneOf(s, "function", "line", "offset") {
			return fmt.Errorf("want function, line or offset")
		}
		f.frames = s
		return nil
	})
	fs.Func("cut", "drop the frames below the first one whose function matches `RE` (default "+sessions.DefaultCut+": MPI's own progress engine; \"\" keeps every frame)", func(s string) error {
		if _, err := regexp.Compile(s); err != nil {
			return err
		}
		f.cut = s
		return nil
	})
	fs.BoolVar(&f.hide, "hide-unsymbolized", false, "hide frames without a function name")
}

func (f *stackFlags) options() sessions.StackOptions {
	o := sessions.StackOptions{Frames: f.frames, HideUnsymbolized: f.hide}
	if f.cut != "" {
		o.Cut = regexp.MustCompile(f.cut)
	}
	return o
}

// cmdStacks attaches, takes K stack samples of every thread (one process held at a time),
// detaches and prints the merged prefix tree, the equivalence classes and which ranks are
// stuck or moving.
func cmdStacks(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signalContext()
	defer stop()
	var samples *int
	var interval *time.Duration
	var dot *string
	var sf stackFlags
	c, spec, err := parseJobCommand("stacks", stacksSynopsis, args, stderr, func(fs *flag.FlagSet) {
		samples = fs.Int("samples", 3, "take `K` samples (stuck or moving needs at least 2)")
		interval = fs.Duration("interval", 500*time.Millisecond, "`D` between samples")
		dot = fs.String("dot", "", "also write the tree as a Graphviz `FILE` in STAT's shape")
		sf.register(fs)
	})
	if err != nil {
		return err
	}
	if *samples < 1 || *samples > sessions.MaxSamples {
		return usageErr("--samples %d: want 1..%d", *samples, sessions.MaxSamples)
	}
	if *interval < 0 {
		return usageErr("--interval %v: want a duration >= 0", *interval)
	}
	job, err := c.parseJob(spec)
	if err != nil {
		return err
	}
	// The .dot file is created before anything is attached: a path crashtui may not write
	// is bad usage, found before the job is touched.
	var dotFile *outfile.File
	if *dot != "" {
		if dotFile, err = outfile.Create(*dot); err != nil {
			return &exitError{2, fmt.Errorf("dot: %w", err)}
		}
	}
	opts := sf.options()
	var merged sessions.Stacks
	err = attachOnce(ctx, c, stdout, "stacks", job,
		func(t jobOps) error {
			for k := 1; k <= *samples; k++ {
				if k > 1 {
					select {
					case <-ctx.Done():
						return nil // a signal: detach with what we have
					case <-time.After(*interval):
					}
				}
				if err := t.Sample(k); err != nil {
					return err
				}
			}
			return nil
		},
		func(*sessions.State) { fmt.Fprint(stdout, views.StacksText(merged, 0)) },
		func(st *sessions.State) sessions.Body {
			merged = st.Stacks(opts)
			return merged
		})
	if dotFile != nil {
		if err != nil {
			dotFile.Abort()
			return err
		}
		views.WriteDot(dotFile, merged)
		if cerr := dotFile.Close(); cerr != nil {
			return fmt.Errorf("dot: %w", cerr)
		}
	}
	return err
}

// sampler samples stacks every few seconds while on (the Stacks tab's auto-sampling).
type sampler struct {
	t     *tracing
	every time.Duration
	on    atomic.Bool
	wake  chan struct{}
}

func newSampler(t *tracing, every time.Duration) *sampler {
	sp := &sampler{t: t, every: every, wake: make(chan struct{}, 1)}
	sp.on.Store(every > 0)
	if sp.every <= 0 {
		sp.every = 5 * time.Second // what a turns on
	}
	return sp
}

// interval is how often it samples, 0 when it is off.
func (sp *sampler) interval() time.Duration {
	if !sp.on.Load() {
		return 0
	}
	return sp.every
}

func (sp *sampler) set(on bool) {
	sp.on.Store(on)
	select {
	case sp.wake <- struct{}{}:
	default:
	}
}

func (sp *sampler) run(ctx context.Context) {
	tick := time.NewTicker(sp.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sp.t.JobDone():
			return
		case <-sp.wake:
			continue
		case <-tick.C:
		}
		if sp.on.Load() {
			sp.t.stacks.Sample(stacks.Options{})
		}
	}
}
