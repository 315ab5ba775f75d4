package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// requester is what serveRequests asks: the TUI's controller (tui.go).
type requester interface {
	Checkpoint(policy sessions.Policy) error
	Measure() error
	Sample() error
	AutoSample(on bool)
}

// emitter is where serveRequests says what failed: the agent's session, or the answer to an
// asker on the control socket (ctlsock.go).
type emitter interface{ emit(sessions.Event) }

// serveRequests is agent --control: it reads request lines from r and makes, on the
// agent's tracer, the same calls the TUI's controller makes for its keys; their results
// are the events the tracer emits anyway (thread events of a checkpoint, a matrix, samples).
// A request that fails or that it does not know becomes an error event with op "request".
// "detach" calls detach (the agent then detaches and ends with its summary, as on SIGTERM);
// EOF ends only the reading: the agent streams on until the job ends or a signal comes.
//
//	checkpoint correct|naive|sc-only|none   a simulated checkpoint (c in Threads)
//	measure                                 measure the access matrix now (m)
//	sample                                  one stack sample of every thread (S)
//	autosample on|off                       periodic sampling (a)
//	signal PID SIG                          send SIG (a name: SIGTERM) to one traced process (K)
//	detach                                  let go of the job and end (q)
//
// naive and sc-only are the broken restorers, asked for by name: an agent has no one to ask
// "are you sure" (the view that sends them does, when it asks).
func serveRequests(r io.Reader, c requester, s emitter, host string, detach func()) {
	fail := func(req string, err error) {
		s.emit(sessions.Event{Time: time.Now(), Host: host, Body: sessions.Error{Op: "request",
			Message: fmt.Sprintf("%s: %v", req, err)}})
	}
	// A line over maxRequest is no request: it is skipped (never held in memory) with an
	// error event naming it, and the requests after it are read as before.
	sc := sessions.NewLineScanner(r, maxRequest)
	for sc.Scan() {
		if sc.TooLong() {
			fail(fmt.Sprintf("line %d", sc.Line()), sessions.TooLongError{Max: maxRequest})
			continue
		}
		line := strings.TrimSpace(string(sc.Bytes()))
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var err error
		switch {
		case f[0] == "checkpoint" && len(f) == 2:
			var p sessions.Policy
			if p, err = sessions.ParsePolicy(f[1]); err == nil {
				err = c.Checkpoint(p)
			}
		case f[0] == "measure" && len(f) == 1:
			err = c.Measure()
		case f[0] == "sample" && len(f) == 1:
			err = c.Sample()
		case f[0] == "autosample" && len(f) == 2 && (f[1] == "on" || f[1] == "off"):
			c.AutoSample(f[1] == "on")
		case f[0] == "signal" && len(f) == 3:
			err = signalRequest(c, f[1], f[2])
		case f[0] == "detach" && len(f) == 1:
			detach()
			return
		default:
			err = fmt.Errorf("unknown request (want checkpoint POLICY, measure, sample, autosample on|off, signal PID SIG or detach)")
		}
		if err != nil {
			fail(sessions.Sanitize(line), err)
		}
	}
}

// maxRequest bounds one request line of agent --control.
const maxRequest = 64 << 10

// signalRequest is "signal PID SIG", for a controller that can send one.
func signalRequest(c requester, pidText, sig string) error {
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return fmt.Errorf("bad pid %q", pidText)
	}
	sg, ok := c.(interface {
		Signal(pid int, sig string) error
	})
	if !ok {
		return fmt.Errorf("signal: not available in this build")
	}
	return sg.Signal(pid, sig)
}
