package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui"
)

const replaySynopsis = "replay [--json] [--tour] [--cast FILE] FILE"

// cmdReplay plays a recorded session in the TUI (no ptrace, no root). A damaged file replays
// up to the damage after saying where it is. With --json the events are written out again,
// followed by the summary the State derives from them (a headless replay), with the sentences
// --json adds (withSentences).
//
// Its flags are only those a replay uses: the live session's (--cores, --matrix,
// --sample-every, ...) would be accepted and do nothing.
func cmdReplay(args []string, stdout, stderr io.Writer) error {
	c := common{stderr: stderr}
	fs := newFlagSet("replay", replaySynopsis, stderr)
	fs.BoolVar(&c.json, "json", false, "no TUI: the recorded events as JSON Lines on stdout, then the summary they add up to")
	fs.StringVar(&c.cast, "cast", "", "also record the screen as an asciicast v2 `FILE`")
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
		if isAsciicast(f) {
			// The other recording crashtui writes (--cast, demo/session.cast): a screen, not events.
			return &exitError{2, fmt.Errorf("replay %s: this is an asciicast (a recording of the screen, as --cast writes), not a crashtui session: play it with `asciinema play %s`; crashtui replay plays what --record writes (JSON Lines, as demo/session.jsonl)", pos[0], pos[0])}
		}
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

// isAsciicast says whether f's first line is an asciicast v2 header ({"version": 2, "width":
// W, "height": H}, no crashtui "format"), read from the start of f again.
func isAsciicast(f *os.File) bool {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false
	}
	line, err := bufio.NewReaderSize(f, 4096).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	var h struct {
		Format        *string
		Version       int
		Width, Height int
	}
	return json.Unmarshal(bytes.TrimSpace(line), &h) == nil && h.Format == nil && h.Version == 2 && h.Width > 0 && h.Height > 0
}
