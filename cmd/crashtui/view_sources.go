package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
)

// A view's sources: stdin, files, or streams a launcher runs (view_slurm.go). Each is read
// on its own goroutine; its events are applied to the one State in the order they come.

// source is one stream a view reads.
type source struct {
	label string
	r     io.ReadCloser
	stdin bool
	// expect are the hosts the stream is meant to speak for (a launched subtree): lost, with
	// those it named, when it ends without its summary.
	expect sessions.HostSet
	// requests, when not nil, carries request lines down to the stream's agents (srun's
	// stdin, which srun hands to every task).
	requests io.WriteCloser
	// wait, when not nil, reaps the process the stream comes from once it has ended.
	wait func() error
	// kill, when not nil, ends that process (the view is quitting) and reaps it.
	kill func()

	waited  sync.Once
	waitErr error
	reqMu   sync.Mutex
}

// waitOnce reaps the stream's process, once.
func (s *source) waitOnce() error {
	if s.wait == nil {
		return nil
	}
	s.waited.Do(func() { s.waitErr = s.wait() })
	return s.waitErr
}

func (s *source) close() {
	if s.requests != nil {
		s.reqMu.Lock()
		s.requests.Close()
		s.reqMu.Unlock()
	}
	s.r.Close()
	if s.kill != nil {
		s.kill()
	}
	s.waitOnce()
}

// request writes one request line down the stream, when it carries requests.
func (s *source) request(line string) error {
	if s.requests == nil {
		return fmt.Errorf("%s takes no requests (a file, or a stream not started by this view)", s.label)
	}
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	_, err := io.WriteString(s.requests, line+"\n")
	return err
}

// openSources opens the SOURCE arguments: "-" is stdin, "slurm:ID@HOSTS" a subtree the view
// launches with srun (tree), anything else a file.
func openSources(pos []string, tree *slurmTree, s *session) ([]*source, error) {
	var srcs []*source
	stdin := false
	for _, p := range pos {
		if p == "-" {
			if stdin {
				return srcs, usageErr("view: stdin (-) given twice")
			}
			stdin = true
			growPipe(os.Stdin)
			srcs = append(srcs, &source{label: "stdin", r: io.NopCloser(os.Stdin), stdin: true})
			continue
		}
		if job, hosts, ok, err := slurmSourceSpec(p); ok {
			if err != nil {
				return srcs, usageErr("view: %s: %v", sessions.Sanitize(p), err)
			}
			t := *tree
			t.job = job
			t.id, _ = jobID(job)
			if t.self, err = os.Executable(); err != nil {
				return srcs, fmt.Errorf("view: crashtui's own executable, for srun: %w", err)
			}
			launched, err := t.sources(hosts, func(line string) {
				s.emit(sessions.Event{Time: time.Now(), Host: s.header.Host, Body: sessions.Error{Op: "srun", Message: line}})
			})
			srcs = append(srcs, launched...)
			if err != nil {
				return srcs, fmt.Errorf("view: %w", err)
			}
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return srcs, &exitError{2, fmt.Errorf("view: %w", err)}
		}
		growPipe(f) // a named pipe
		srcs = append(srcs, &source{label: strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), r: f})
	}
	return srcs, nil
}

// pipeSize is the buffer a view asks of the pipes it reads (the kernel's default is 64 KiB,
// and 1 MiB is what /proc/sys/fs/pipe-max-size lets any user have by default): a tree's
// first level reads hundreds of megabytes through them, and each time a pipe is full its
// writer waits and its reader wakes.
const pipeSize = 1 << 20

// growPipe asks for a bigger buffer when f is a pipe; it stays as it was when the kernel
// refuses (a lower pipe-max-size, or a user over pipe-user-pages-soft).
func growPipe(f *os.File) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, pipeSize)
}

func stdinSource(srcs []*source) bool {
	for _, s := range srcs {
		if s.stdin {
			return true
		}
	}
	return false
}

// readSources reads every source into s and returns a channel closed when all have ended.
// Events without a host are stamped with their source's name when there are several
// sources, or always in a reducing view (its counts are per named host). A reducing view
// that records nothing reads its streams lean (sessions.StreamOptions): what it keeps of a
// crash is what it passes on.
func readSources(srcs []*source, s *session, reduce bool) <-chan struct{} {
	lean := reduce && s.rec == nil
	var wg sync.WaitGroup
	for _, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readSource(src, s, reduce || len(srcs) > 1, lean)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

func readSource(src *source, s *session, stampAll, lean bool) {
	stamp := func(e sessions.Event) sessions.Event {
		if e.Host == "" && stampAll {
			e.Host = src.label
		}
		return e
	}
	// The events of lines read together are queued together (one wait and one wake for
	// them all), each batch as soon as it is read.
	var read []sessions.Event
	flush := func() {
		s.emitRead(read)
		read = read[:0]
	}
	bad := func(le *sessions.LineError) {
		flush() // after the lines before it
		s.emit(stamp(sessions.Event{Time: time.Now(), Body: sessions.Error{Op: "view",
			Message: fmt.Sprintf("%s: %v (line skipped)", src.label, le)}}))
	}
	var ended endings
	err := sessions.StreamEventsWith(src.r, sessions.StreamOptions{Lean: lean, Batch: flush}, func(e sessions.Event) {
		e = stamp(e)
		ended.see(e)
		// Each stream's own summary and merged stacks are dropped: the view derives both
		// for all the streams.
		if k := e.Kind(); k != sessions.KindSummary && k != sessions.KindStacks {
			read = append(read, e)
		}
	}, bad)
	flush()
	why := "its stream ended without its summary"
	if err != nil {
		var le *sessions.LineError
		if errors.As(err, &le) {
			bad(le)
		}
		why = fmt.Sprintf("reading its stream failed: %v", err)
	}
	if werr := src.waitOnce(); werr != nil {
		why += fmt.Sprintf(" (%v)", werr)
	}
	if lost := ended.lost(src.expect); !lost.Empty() {
		s.emit(sessions.Event{Time: time.Now(), Host: s.header.Host, Body: sessions.Lost{Hosts: lost,
			Source: src.label, Why: why}})
	}
}

// endings is what one stream said about which of its hosts ended well: an agent's summary
// (its host), a reducer's (every host under it); the hosts a reducer under it already said
// it lost are not lost twice.
type endings struct {
	seen     map[string]bool
	done     map[string]bool
	reducers map[string]map[string]bool // reducer -> hosts it spoke for
	topDone  bool                       // a reducer's summary came
}

func (en *endings) see(e sessions.Event) {
	if en.seen == nil {
		en.seen, en.done, en.reducers = map[string]bool{}, map[string]bool{}, map[string]map[string]bool{}
	}
	under := func(hosts ...string) {
		m := en.reducers[e.Host]
		if m == nil {
			m = map[string]bool{}
			en.reducers[e.Host] = m
		}
		for _, h := range hosts {
			m[h] = true
		}
	}
	switch b := e.Body.(type) {
	case sessions.Hosts:
		for _, hc := range b.Hosts {
			under(hc.Host)
		}
	case sessions.CrashGroup:
		under(b.Covers.Hosts()...)
	case sessions.StackClasses:
		under(b.Covers.Hosts()...)
	case sessions.Lost:
		for _, h := range b.Hosts.Hosts() {
			en.done[h] = true // told already, by the view under this one
		}
	case sessions.Summary:
		if m, ok := en.reducers[e.Host]; ok {
			for h := range m {
				en.done[h] = true
			}
			en.topDone = true
		}
		en.done[e.Host] = true
	default:
		if e.Host != "" {
			en.seen[e.Host] = true
		}
	}
}

// lost are the hosts the stream spoke for, or was meant to (expect), without a summary.
func (en *endings) lost(expect sessions.HostSet) sessions.HostSet {
	var out []string
	add := func(h string) {
		if h != "" && !en.done[h] {
			out = append(out, h)
		}
	}
	for h := range en.seen {
		if _, reducer := en.reducers[h]; !reducer {
			add(h) // a reducer's own events (its errors) name it, not a host
		}
	}
	for _, m := range en.reducers {
		for h := range m {
			add(h)
		}
	}
	if !en.topDone {
		for _, h := range expect.Hosts() {
			add(h)
		}
	}
	return sessions.HostSetOf(out...)
}
