package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
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
//	detail PID                              a detail event: the process, its crash, its stack
//	processes                               a host_processes event: this agent's processes
//	alive                                   nothing: the view above is there (orphanWatch)
//	detach                                  let go of the job and end (q)
//
// Any of them may follow "to HOSTS " (a host list: node017, n[001-032]): in a tree of views
// (view_control.go) a request for some hosts is passed down only towards them, and an agent
// whose host is not in HOSTS ignores it (srun hands every line to every agent).
//
// naive and sc-only are the broken restorers, asked for by name: an agent has no one to ask
// "are you sure" (the view that sends them does, when it asks).
func serveRequests(r io.Reader, c requester, s emitter, host string, detach func()) {
	fail := func(req string, err error) {
		s.emit(sessions.Event{Time: time.Now(), Host: host, Body: sessions.Error{Op: "request",
			Message: fmt.Sprintf("%s: %v", req, err)}})
	}
	heard := orphanWatch(r, s, host, detach)
	// A line over maxRequest is no request: it is skipped (never held in memory) with an
	// error event naming it, and the requests after it are read as before.
	sc := sessions.NewLineScanner(r, maxRequest)
	for sc.Scan() {
		heard()
		if sc.TooLong() {
			fail(fmt.Sprintf("line %d", sc.Line()), sessions.TooLongError{Max: maxRequest})
			continue
		}
		line := strings.TrimSpace(string(sc.Bytes()))
		hosts, req, routed, err := routeOf(line)
		if err != nil {
			fail(sessions.Sanitize(line), err)
			continue
		}
		if routed && !hosts.Contains(host) {
			continue // another agent's
		}
		f := strings.Fields(req)
		if len(f) == 0 || (f[0] == "alive" && len(f) == 1) {
			continue // the view above is there (orphanWatch)
		}
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
		case f[0] == "detail" && len(f) == 2:
			if sess, ok := s.(*session); ok {
				err = detailRequest(sess, host, f[1])
			} else {
				err = errors.New("detail is answered by an agent, not on the control socket")
			}
		case f[0] == "processes" && len(f) == 1:
			if sess, ok := s.(*session); ok {
				sess.settle()
				sess.mu.Lock()
				hp := sess.state.HostProcessesOf(host)
				sess.mu.Unlock()
				sess.emit(sessions.Event{Time: time.Now(), Host: host, Body: hp})
			} else {
				err = errors.New("processes is answered by an agent, not on the control socket")
			}
		case f[0] == "detach" && len(f) == 1:
			detach()
			return
		default:
			err = fmt.Errorf("unknown request (want checkpoint POLICY, measure, sample, autosample on|off, signal PID SIG, detail PID, processes or detach, possibly after to HOSTS)")
		}
		if err != nil {
			fail(sessions.Sanitize(line), err)
		}
	}
}

// routeOf splits "to HOSTS REQUEST" into its hosts and request; a line without "to" is for
// every host.
func routeOf(line string) (hosts sessions.HostSet, req string, routed bool, err error) {
	rest, ok := strings.CutPrefix(line, "to ")
	if !ok {
		return hosts, line, false, nil
	}
	list, req, _ := strings.Cut(strings.TrimSpace(rest), " ")
	if hosts, err = sessions.ParseHostSet(list); err != nil {
		return hosts, "", true, err
	}
	return hosts, strings.TrimSpace(req), true, nil
}

// detailRequest is "detail PID": what this agent knows of the process, as a detail event.
func detailRequest(s *session, host, pidText string) error {
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return fmt.Errorf("bad pid %q", pidText)
	}
	s.settle() // what the tracer said before the request is in the State
	s.mu.Lock()
	d := s.state.DetailOf(host, pid)
	s.mu.Unlock()
	s.emit(sessions.Event{Time: time.Now(), Host: host, Body: d})
	return nil
}

// orphanReader is request lines from a view above, which says "alive" at least every after/4:
// with no line for after, the view is gone.
type orphanReader struct {
	io.Reader
	after time.Duration
}

// orphanWatch is --orphan-after: when r is an orphanReader, a line not heard for its after
// means the view that sent them died (a SIGKILL leaves slurmstepd holding the agent's stdin
// open, and the step running: no EOF ever comes), and the agent detaches (detach), its
// tasks running on untraced. It returns what to call for each line heard.
func orphanWatch(r io.Reader, s emitter, host string, detach func()) (heard func()) {
	or, ok := r.(*orphanReader)
	if !ok || or.after <= 0 {
		return func() {}
	}
	var mu sync.Mutex
	last := time.Now()
	go func() {
		tick := time.NewTicker(or.after / 4)
		defer tick.Stop()
		for range tick.C {
			mu.Lock()
			quiet := time.Since(last)
			mu.Unlock()
			if quiet > or.after {
				s.emit(sessions.Event{Time: time.Now(), Host: host, Body: sessions.Error{Op: "request",
					Message: fmt.Sprintf("no request line for %v (the view above says alive every %v): it is gone, detaching", quiet.Round(time.Second), or.after/4)}})
				detach()
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		last = time.Now()
		mu.Unlock()
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
