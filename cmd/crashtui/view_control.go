package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// Requests down a tree (issue 27): a view passes each request line it is given (its TUI's
// keys, or its stdin with --control) to the sources it launched, as they are, so every level
// routes them the same way: a line for every host goes down every stream, one for some hosts
// ("to HOSTS REQUEST", agent_control.go) only down the streams that speak for them; the
// agents (every agent of an srun reads every line) act on what is theirs, and what they
// answer (a detail event, a new matrix, samples) comes back up with the rest.

// downstream is the view's launched sources, for requests.
type downstream struct {
	srcs []*source
	s    *session
	done <-chan struct{} // closed when every source has ended
}

// launched says whether any source takes requests.
func (d *downstream) launched() bool {
	for _, src := range d.srcs {
		if src.requests != nil {
			return true
		}
	}
	return false
}

// send passes one request line down: to the sources that speak for its hosts (all, for a
// line without "to", or when no source is known to).
func (d *downstream) send(line string) error {
	hosts, _, routed, err := routeOf(line)
	if err != nil {
		return err
	}
	var to []*source
	for _, src := range d.srcs {
		if src.requests == nil {
			continue
		}
		// A stream that speaks for no planned hosts (stdin, say) gets them all.
		if !routed || src.expect.Empty() || src.expect.Intersects(hosts) {
			to = append(to, src)
		}
	}
	if len(to) == 0 {
		return fmt.Errorf("no stream of this view takes requests for %s", sessions.Sanitize(line))
	}
	var errs []error
	for _, src := range to {
		if err := src.request(line); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src.label, err))
		}
	}
	return errors.Join(errs...)
}

// detachGrace is how long the launched tree gets, after detach, to let go and end.
const detachGrace = 30 * time.Second

// detach tells every launched source to detach and waits (detachGrace at most) for the
// streams to end; the caller then closes them. Agents detach and end with their summaries.
func (d *downstream) detach() {
	if !d.launched() {
		return
	}
	for _, src := range d.srcs {
		if src.requests != nil {
			src.request("detach")
			src.reqMu.Lock()
			src.requests.Close()
			src.reqMu.Unlock()
		}
	}
	select {
	case <-d.done:
	case <-time.After(detachGrace):
	}
}

// keepAlive says "alive" down every stream every interval, until they end: the agents and
// views under this one take a silence of four times that for this view's death.
func (d *downstream) keepAlive(every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-tick.C:
			for _, src := range d.srcs {
				if src.requests != nil {
					src.request("alive")
				}
			}
		}
	}
}

// serveViewRequests is view --control: request lines on r go down the tree; "detach" (for
// every host) detaches the tree and ends the view, as does no line for orphanAfter (the view
// above died: its "alive" stopped).
func serveViewRequests(r io.Reader, d *downstream, orphanAfter time.Duration, end func()) {
	fail := func(req string, err error) {
		d.s.emit(sessions.Event{Time: time.Now(), Host: d.s.header.Host, Body: sessions.Error{Op: "request",
			Message: fmt.Sprintf("%s: %v", sessions.Sanitize(req), err)}})
	}
	heard := orphanWatch(&orphanReader{r, orphanAfter}, d.s, d.s.header.Host, func() {
		d.detach()
		end()
	})
	sc := sessions.NewLineScanner(r, maxRequest)
	for sc.Scan() {
		heard()
		if sc.TooLong() {
			fail(fmt.Sprintf("line %d", sc.Line()), sessions.TooLongError{Max: maxRequest})
			continue
		}
		line := strings.TrimSpace(string(sc.Bytes()))
		if line == "" || line == "alive" {
			continue // "alive" is for this view (its own go down, keepAlive)
		}
		if line == "detach" {
			d.detach()
			end()
			return
		}
		if err := d.send(line); err != nil {
			fail(line, err)
		}
	}
}

// treeController is the TUI's controller at the root of a tree: its keys become requests
// down the tree.
type treeController struct{ d *downstream }

func (c treeController) Measure() error { return c.d.send("measure") }
func (c treeController) Sample() error  { return c.d.send("sample") }
func (c treeController) AutoSample(on bool) {
	if on {
		c.d.send("autosample on")
	} else {
		c.d.send("autosample off")
	}
}
func (c treeController) Checkpoint(p sessions.Policy) error {
	return c.d.send("checkpoint " + string(p))
}

func (c treeController) Detach() error {
	c.d.detach()
	return nil
}

var errNotDown = errors.New("not through a tree of views: run crashtui attach pid:PID on the process's node to hand it to a debugger")

// AskProcesses asks the agent of host for its processes (a host_processes event comes back
// up): Processes' enter on a host's row.
func (c treeController) AskProcesses(host string) error {
	return c.d.send("to " + sessions.HostSetOf(host).String() + " processes")
}

// ProcDetail: /proc is on the process's node; what its agent knows comes up as a detail
// event when asked (detail PID, Processes' enter on a host's row).
func (c treeController) ProcDetail(pid int) (sessions.ProcDetail, error) {
	return sessions.ProcDetail{}, errNotDown
}

func (c treeController) Release(pid int) error   { return errNotDown }
func (c treeController) Reacquire(pid int) error { return errNotDown }

// Signal sends sig to pid on the one host that has a process pid (the TUI names processes by
// pid; pids are per host).
func (c treeController) Signal(pid int, sig string) error {
	c.d.s.mu.Lock()
	var hosts []string
	for k := range c.d.s.state.Procs {
		if k.PID == pid {
			hosts = append(hosts, k.Host)
		}
	}
	c.d.s.mu.Unlock()
	switch len(hosts) {
	case 0:
		return fmt.Errorf("signal %d: no process %d is known here in detail", pid, pid)
	case 1:
		return c.d.send(fmt.Sprintf("to %s signal %d %s", sessions.HostSetOf(hosts[0]), pid, sig))
	}
	return fmt.Errorf("signal %d: pid %d is on %d hosts (%s)", pid, pid, len(hosts), sessions.HostSetOf(hosts...))
}
