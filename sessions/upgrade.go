package sessions

import (
	"regexp"
	"strconv"
	"strings"
)

// Recordings of format version 1 carry a thread's outcome and the reason for its held stop
// only as the sentences the tracer of the time wrote (Thread.Outcome, the start of
// Thread.Explain). upgrade derives the facts of version 2 from them, so that views decide on
// facts whatever the recording's age, while still showing the recorded sentences. A sentence
// this reader does not know is kept and derives nothing.
//
// Recordings of versions 1 and 2 carry a matrix cell's explanation and disagreement only as
// sentences too (Cell.Explain, Cell.Disagree). Those are kept and shown as recorded, and
// nothing is derived from them: views decide nothing on a cell's rule (its colour comes from
// its answers and Reason, which every version has).

// upgrade returns e with what version's thread events lack derived from their sentences.
// Version 0 is a stream without a header (a live --json or agent stream), whose events may
// come from a build of either version: only events without the facts are upgraded.
func upgrade(version int, e Event) Event {
	if version >= 2 {
		return e
	}
	if th, ok := e.Body.(Thread); ok {
		upgradeThread(&th)
		e.Body = th
	}
	return e
}

func upgradeThread(t *Thread) {
	if t.OutcomeKind == "" && t.Outcome != "" {
		deriveOutcome(t)
	}
	if t.Stop == "" && t.Explain != "" {
		deriveStop(t)
	}
}

// v1ReturnedCode matches the code and number in "read returned ERESTARTSYS (512) to the
// program, …" (also in the earliest wording, "…, the seed 002 bug").
var v1ReturnedCode = regexp.MustCompile(`^[A-Z_]+ \((\d+)\) to the program`)

// deriveOutcome reads the sentences of version 1's tracer/checkpoint_outcome.go:
//
//	still stopped by job control: …
//	back in NAME: the syscall was restarted and the program never noticed
//	left NAME and the thread exited / left NAME (it completed, or a handler ran)
//	NAME returned CODE (N) to the program, …[; the thread then exited | ; the program then called NAME again]
//	NAME returned EINTR, as after a real restore …[; same endings]
func deriveOutcome(t *Thread) {
	o := t.Outcome
	again := func() {
		nr := t.Nr
		t.NextNr, t.NextSyscall = &nr, t.Syscall // version 1 did not say whether through restart_syscall
	}
	switch {
	case strings.HasPrefix(o, "still stopped by job control"):
		t.OutcomeKind = OutcomeJobStopped
		return
	case strings.HasPrefix(o, "back in "):
		t.OutcomeKind = OutcomeRestarted
		again()
		return
	case strings.HasPrefix(o, "left "):
		t.OutcomeKind = OutcomeLeft
		t.Exited = strings.HasSuffix(o, " and the thread exited")
		return
	}
	head, tail, _ := strings.Cut(o, "; ")
	_, ret, ok := strings.Cut(head, " returned ")
	if !ok {
		return
	}
	var r int64
	if strings.HasPrefix(ret, "EINTR") {
		t.OutcomeKind, r = OutcomeEINTR, -4
	} else if m := v1ReturnedCode.FindStringSubmatch(ret); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return
		}
		t.OutcomeKind, r = OutcomeERESTARTLeaked, -n
	} else {
		return
	}
	t.Returned = &r
	switch {
	case tail == "the thread then exited":
		t.Exited = true
	case strings.HasPrefix(tail, "the program then called "):
		again()
	}
}

var (
	// v1Signal is the held signal that starts a version 1 explanation of a signal-delivery-stop.
	v1Signal = regexp.MustCompile(`^(SIG[A-Z0-9+]+)(?: is |'s )`)
	// v1Flags: "… caught by a handler with(out) SA_RESTART (flags 0x…, read with rt_sigaction
	// inside the process, thread N)."
	v1Flags = regexp.MustCompile(`^ is caught by a handler (with|without) SA_RESTART \(flags (0x[0-9a-f]+), read with rt_sigaction inside the process, thread (\d+)\)\.`)
	// v1Removed: " (rt_sigaction inside the process, thread N, now returns SIG_DFL: …"
	v1Removed = regexp.MustCompile(`\(rt_sigaction inside the process, thread (\d+), now returns SIG_(DFL|IGN):`)
	// v1Failed: " (Running rt_sigaction inside the process to read it failed: MESSAGE.)"
	v1Failed = regexp.MustCompile(`\(Running rt_sigaction inside the process to read it failed: (.*)\.\)`)
)

// deriveStop reads the reason that version 1 put first in a thread's explanation (version 1's
// tracer/checkpoint.go pendingOf and signalPending, and tracer/sigaction.go, which ran
// rt_sigaction inside the process): every stop but an interrupt stop had one, so an
// explanation without one is an interrupt stop's.
func deriveStop(t *Thread) {
	e := t.Explain
	t.Handler = HandlerNone
	switch {
	case strings.HasPrefix(e, "The thread is in a group-stop"):
		t.Stop = StopGroup
		return
	case strings.HasPrefix(e, "The thread is exiting (PTRACE_EVENT_EXIT)"):
		t.Stop = StopExit
		return
	}
	m := v1Signal.FindStringSubmatch(e)
	if m == nil {
		t.Stop = StopInterrupt
		return
	}
	t.Stop, t.Signal = StopSignal, m[1]
	rest := e[len(m[1]):]
	switch {
	case strings.HasPrefix(rest, " is ignored (SigIgn)"):
		t.Disposition = DispIgnored
	case strings.HasPrefix(rest, "'s default action is stop"):
		t.Disposition = DispDefaultStop
	case strings.HasPrefix(rest, "'s default action is to ignore it"):
		t.Disposition = DispDefaultIgnore
	case strings.HasPrefix(rest, "'s default action kills the process"):
		t.Disposition = DispDefaultKill
	case strings.HasPrefix(rest, " is caught"):
		t.Disposition, t.Handler = DispCaught, HandlerUnknown
		if f := v1Flags.FindStringSubmatch(rest); f != nil {
			t.Handler = HandlerRestart
			if f[1] == "without" {
				t.Handler = HandlerNoRestart
			}
			flags, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
			tid, _ := strconv.Atoi(f[3])
			fl := Hex(flags)
			t.Sigaction = &Sigaction{TID: tid, Flags: &fl}
		} else if r := v1Removed.FindStringSubmatch(rest); r != nil {
			tid, _ := strconv.Atoi(r[1])
			h := Hex(0)
			if r[2] == "IGN" {
				h = 1
			}
			t.Sigaction = &Sigaction{TID: tid, Handler: &h}
		} else if f := v1Failed.FindStringSubmatch(rest); f != nil {
			t.Sigaction = &Sigaction{Error: f[1]}
			if strings.HasPrefix(f[1], "every thread of ") {
				t.Sigaction = &Sigaction{AllHeld: true}
			}
		}
	default:
		t.Stop, t.Signal = "", "" // not a sentence this reader knows
		t.Handler = ""
	}
}
