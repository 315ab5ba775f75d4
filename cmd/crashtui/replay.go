package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui"
)

const replaySynopsis = "replay [--json] FILE"

// cmdReplay plays a recorded session in the TUI (no ptrace, no root). A damaged file replays
// up to the damage after saying where it is. With --json the events are written out again,
// followed by the summary the State derives from them (a headless replay), with the sentences
// --json adds (withSentences).
func cmdReplay(args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlagSet("replay", replaySynopsis, stderr)
	c.register(fs)
	fs.BoolVar(&c.tour, "tour", false, "a guided tour of the four capabilities: each key shows the next (esc leaves it, the session goes on)")
	pos, _, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageErr("replay needs exactly one FILE")
	}
	if c.tour && c.json {
		return usageErr("--tour is a walk through the TUI: not with --json")
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return &exitError{2, fmt.Errorf("replay: %w", err)}
	}
	defer f.Close()
	h, evs, rerr := sessions.ReadRecording(f)
	var damaged sessions.Damaged
	switch {
	case errors.As(rerr, &damaged):
		for _, le := range damaged {
			fmt.Fprintf(stderr, "crashtui: replay %s: %s (skipped)\n", sessions.Sanitize(pos[0]), sessions.Sanitize(le.Error()))
		}
	case rerr != nil && len(evs) == 0:
		return &exitError{2, fmt.Errorf("replay %s: %w", pos[0], rerr)}
	case rerr != nil:
		fmt.Fprintf(stderr, "crashtui: replay %s: %s; replaying the %d events before it\n",
			sessions.Sanitize(pos[0]), sessions.Sanitize(rerr.Error()), len(evs))
	}
	if c.json {
		st := sessions.NewState()
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, e := range evs {
			st.Apply(e)
			if e.Kind() == sessions.KindSummary || e.Kind() == sessions.KindSession {
				continue
			}
			if err := enc.Encode(withSentences(e)); err != nil {
				return err
			}
		}
		return enc.Encode(sessions.Event{Time: st.Last, Body: st.Summary()})
	}
	if err := needTerminal("replay"); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	return runTUI(ctx, &c, tui.Options{Replay: evs, Header: h, Mode: "replay", Tour: c.tour})
}
