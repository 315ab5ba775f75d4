package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/views"
)

// common are the flags every tracing command takes.
type common struct {
	json     bool
	record   string
	cores    string
	cast     string
	crashLog string
	// crashLogF is --crash-log, created with its header when the flag is parsed.
	crashLogF *outfile.File
	castF     *outfile.File // --cast, created by openCast
	groupBy   string
	host      string
	matrix    string        // auto, off, predict, measure
	wholeNS   bool          // the JOB may contain init (--whole-namespace)
	duration  time.Duration // demo: end after this long (0: never)
	grace     time.Duration // run, demo: the ranks' time to exit after SIGINT (endRanks)
	// sampleEvery is how often stacks are sampled on their own (0: off; -1: the default, 5 s
	// in the TUI and in agents, off with --json).
	sampleEvery time.Duration
	tour        bool // demo, replay: the guided tour (--tour)
	// control, when not nil, carries request lines to the tracer (agent --control: stdin).
	control io.Reader
	// ranksLog is the file run's ranks write their output to (the TUI's Output tab reads it).
	ranksLog string
	// filter, when not nil, keeps a share of the job's processes (agent --share).
	filter func(pid int) bool
	// reduce: view --reduce. Its --json carries a reducer's events (session.reduced), and
	// its State keeps only what a reducer passes on (State.NoDetail).
	reduce bool
	// stderr is the command's stderr: a session says there what it could not do (finish).
	stderr io.Writer
}

func (c *common) register(fs *flag.FlagSet) {
	c.registerOneShot(fs)
	fs.Func("cores", "write one core per crash site into `DIR` (created 0700; refused when another user owns or can write it); suppress the kernel's cores", func(s string) error {
		c.cores = s
		return outfile.Dir(s)
	})
	fs.StringVar(&c.cast, "cast", "", "also record the screen as an asciicast v2 `FILE`")
	fs.Func("crash-log", "write a CSV crash log (rank,pid,group,representative,signal,site) to `FILE`", func(s string) error {
		if c.crashLogF != nil {
			c.crashLogF.Close() // the flag given twice: the last one counts
		}
		f, err := createCrashLog(s)
		c.crashLog, c.crashLogF = s, f
		return err
	})
	c.groupBy = "site"
	fs.Func("group-by", "group crashes by `site` or by stack (site + top --stack-depth frames)", func(s string) error {
		c.groupBy = s
		return validGroupBy(s)
	})
	registerCrashFlags(c, fs)

	c.sampleEvery = -1
	fs.Func("sample-every", "sample every thread's stack every `D` for the Stacks tab (default 5s in the TUI and in agents, off with --json; 0: only on S)", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration >= 0, like 5s")
		}
		if d > 0 && d < 100*time.Millisecond {
			return fmt.Errorf("%v is too often: every sample stops every process once (at least 100ms)", d)
		}
		c.sampleEvery = d
		return nil
	})
	fs.Func("matrix", "live access matrix: `auto|off|predict|measure` (predict: from /proc; measure: syscalls inside each process; auto, the default: measure in the TUI, off with --json)", func(s string) error {
		if !oneOf(s, "auto", "off", "predict", "measure") {
			return fmt.Errorf("want auto, off, predict or measure")
		}
		c.matrix = s
		return nil
	})
}

// registerOneShot registers the flags of the commands that attach, do one thing and detach
// (matrix, checkpoint): no screen, no crash handling, no live matrix.
func (c *common) registerOneShot(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "no TUI: JSON Lines on stdout, the last line a summary")
	fs.StringVar(&c.record, "record", "", "record the session to `FILE` (JSON Lines)")
	fs.StringVar(&c.host, "host", "", "stamp every event with host `NAME` (for merging agents' streams)")
	fs.BoolVar(&c.wholeNS, "whole-namespace", false, "let the JOB contain init (pid 1 of this pid namespace): every process of the machine or container")
}

// parseJob parses a JOB argument with the session's flags applied; a bad one is exit 2.
func (c *common) parseJob(spec string) (tracer.Job, error) {
	job, err := tracer.ParseJob(spec)
	if err != nil {
		return job, &exitError{2, err}
	}
	job.WholeNamespace = c.wholeNS
	return job, nil
}

// helpOut is where a command's -h goes: run's stdout.
var helpOut io.Writer = os.Stdout

// newFlagSet makes a flag set whose errors and help go to stderr with the command's usage.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output() // stderr after a usage error, stdout for -h (parseArgs)
		fmt.Fprintf(w, "Usage: crashtui %s\n", synopsis)
		if strings.Contains(synopsis, "JOB") {
			fmt.Fprint(w, "\nJOB is pgid:N, sid:N, pid:N (N and its descendants), cgroup:PATH, slurm:ID,\nor a bare number (a process group if one has that id, else pid:N).\n")
		}
		fmt.Fprint(w, "\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags anywhere before "--" (crashtui attach 42 --json works as well as
// crashtui attach --json 42) and returns the positional arguments and what follows "--".
func parseArgs(fs *flag.FlagSet, args []string) (pos, tail []string, err error) {
	for i, a := range args {
		if a == "--" {
			tail = args[i+1:]
			args = args[:i]
			break
		}
	}
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(helpOut) // asked for: help is the output, exit 0
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, errHelp
			}
			return nil, nil, &exitError{2, err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, tail, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// session joins the tracer's event stream to its consumers: the State reducer, --json
// output, the recorder and the TUI. The tracer's goroutine only queues an event (emit): it
// never takes the lock the TUI holds while it draws, so a slow frame never keeps a tracee
// at its stop. applyLoop applies queued events to the State in batches, under mu, and hands
// them on: --json and the recording are written by writeLoop from an unbounded queue, so a
// consumer that does not read (a pager, "| sleep 15") never stalls the tracer and so the
// job it holds.
type session struct {
	mu      sync.Mutex // the State's, held by the TUI while it reads it
	state   *sessions.State
	json    bool
	out     *bufio.Writer // --json
	line    []byte        // writeJSON's, kept between events
	rec     *sessions.Recorder
	recF    *outfile.File
	in      batchQueue[sessions.Event] // emitted, to applyLoop
	changes *changes                   // to the TUI
	writes  batchQueue[writeItem]      // applied, to writeLoop (--json, recording)
	applied chan struct{}
	written chan struct{}
	// reduced: --json carries a reducer's events (view --reduce, emitUp), not the events
	// applied (which are still recorded), but for those passUp lets through (it must be
	// set with reduced).
	reduced bool
	passUp  func(sessions.Event) bool
	// progress counts the events writeLoop has written and the --json writes the reader took
	// (progressWriter): finish waits while it moves.
	progress atomic.Int64
	// waiting says writeLoop is inside a --json write, waiting for the reader to take it
	// (progressWriter): only then is a stall the reader's. Writing a big event takes
	// crashtui's own time first (a 100-process matrix with its sentences: seconds on a loaded
	// machine), and a reader that waits for it meanwhile is not stalled.
	waiting atomic.Bool
	// unread is how many bytes wait in stdout's pipe for the reader (FIONREAD), -1 where it
	// cannot say: the reader taking them is progress too, even while crashtui's own writer
	// has not run to write more (a loaded machine).
	unread func() int
	header sessions.Header
	// stop is how the command is told to stop (quit, but for tests): finish lets a stalled
	// reader go only once told.
	stop *stopSignals
	// warn is where finish says that it let a stalled reader go (the command's stderr; nil:
	// nowhere).
	warn io.Writer

	stdoutGone chan struct{} // closed at the first failed --json write (the consumer went away)
	goneOnce   sync.Once
	stdoutErr  error
}

func newSession(c *common, stdout io.Writer, job, mode string) (*session, error) {
	s := &session{state: sessions.NewState(), header: header(job, c.host), json: c.json,
		stdoutGone: make(chan struct{}), written: make(chan struct{}), applied: make(chan struct{}), stop: &quit,
		warn: c.stderr}
	if c.reduce {
		// Before applyLoop starts: it reads both.
		s.reduced, s.passUp = true, passUp()
		s.state.NoDetail()
	}
	s.in.init()
	s.writes.init()
	if !c.json {
		s.changes = &changes{ch: make(chan struct{}, 1)}
	}
	if c.json {
		s.out = bufio.NewWriter(progressWriter{stdout, &s.progress, &s.waiting})
		s.unread = unreadOf(stdout)
	}
	if c.record != "" {
		// A recording can be read (replayed, tailed) while it grows.
		f, err := outfile.CreateStream(c.record)
		if err != nil {
			return nil, &exitError{2, fmt.Errorf("record: %w", err)}
		}
		rec, err := sessions.NewRecorder(f, s.header)
		if err != nil {
			f.Close()
			return nil, err
		}
		s.rec, s.recF = rec, f
	}
	go s.applyLoop()
	go s.writeLoop()
	if c.json {
		go s.watchReader(stdout)
	}
	s.emit(sessions.Event{Time: time.Now(), Host: c.host, Body: sessions.Session{
		Job: job, Mode: mode, Arch: runtime.GOARCH, Kernel: tracer.KernelRelease(), Version: version, PID: os.Getpid()}})
	return s, nil
}

// writeLoop writes every queued event, in order, to --json and the recording. After a failed
// --json write (EPIPE: crashtui --json | head -1) it stops writing there, says so on
// stdoutGone, and keeps recording.
func (s *session) writeLoop() {
	defer close(s.written)
	for {
		batch, ok := s.writes.take()
		if !ok {
			break
		}
		for _, it := range batch {
			e := it.e
			if s.out != nil && s.stdoutErr == nil && it.json && e.Kind() != sessions.KindSession {
				s.writeJSON(withSentences(e))
			}
			if it.record {
				s.rec.Record(e)
			}
			s.progress.Add(1)
		}
		s.writes.recycle(batch)
		// Flushed when caught up, once a batch: a reader sees each event promptly, and a
		// storm of events costs one write per batch, not one per event.
		if s.out != nil && s.stdoutErr == nil {
			if err := s.out.Flush(); err != nil {
				s.fail(err)
			}
		}
	}
}

// writeJSON writes e as one JSON line to --json (the bytes a json.Encoder that does not
// escape HTML writes, without its second pass over them), through one buffer kept between
// events.
func (s *session) writeJSON(e sessions.Event) {
	var err error
	if s.line, err = e.AppendJSON(s.line[:0]); err == nil {
		s.line = append(s.line, '\n')
		_, err = s.out.Write(s.line)
	}
	if cap(s.line) > maxKeptLine {
		s.line = nil // a big matrix's line is not kept for the small ones after it
	}
	if err != nil {
		s.fail(err)
	}
}

// maxKeptLine is the biggest line buffer writeJSON keeps for the next event.
const maxKeptLine = 64 << 10

// fail records the first failed --json write (the consumer went away).
func (s *session) fail(err error) {
	s.stdoutErr = err
	s.goneOnce.Do(func() { close(s.stdoutGone) })
}

// applyLoop applies each batch of emitted events to the State, in order, and hands it to
// the writer and the TUI.
func (s *session) applyLoop() {
	defer close(s.applied)
	for {
		batch, ok := s.in.take()
		if !ok {
			s.writes.close()
			return
		}
		s.mu.Lock()
		for _, e := range batch {
			s.state.Apply(e)
		}
		// Handed to the writer under mu, so what a reducer says of the State (emitUp, under
		// mu too) comes after the events it has seen.
		if items := s.toWrite(batch); len(items) > 0 {
			s.writes.pushAll(items) // nothing to write (the TUI without --record) wakes no one
		}
		s.mu.Unlock()
		if s.changes != nil {
			s.changes.note()
		}
		s.in.done(len(batch))
		s.in.recycle(batch)
		// What comes meanwhile waits for the next batch: an emit then wakes no one (a
		// Broadcast without a waiter is an atomic load), so the tracer's loop makes no
		// futex call for an event, and a storm costs one wake here per applyEvery.
		time.Sleep(applyEvery)
	}
}

// toWrite is what writeLoop does with each of batch. A reducing view writes its inputs'
// events only to its recording (and those passUp lets through): at a million tasks,
// queueing each for nothing would cost.
func (s *session) toWrite(batch []sessions.Event) []writeItem {
	var items []writeItem
	for _, e := range batch {
		it := writeItem{e: e, json: s.out != nil && (!s.reduced || s.passUp(e)), record: s.rec != nil}
		if it.json || it.record {
			items = append(items, it)
		}
	}
	return items
}

// writeItem is an event for writeLoop, for --json, for the recording or both.
type writeItem struct {
	e            sessions.Event
	json, record bool
}

// emitUp writes a reducer's events on --json (view --reduce): they say what the State
// applied, so they are neither applied nor recorded. Call it with mu held, after reading
// the State for them.
func (s *session) emitUp(es []sessions.Event) {
	items := make([]writeItem, len(es))
	for i, e := range es {
		items[i] = writeItem{e: e, json: true}
	}
	s.writes.pushAll(items)
}

// applyEvery is how often, at most, applyLoop takes a batch: the State, --json and the TUI
// lag the tracer by up to this much.
const applyEvery = time.Millisecond

// settle waits until every event emitted so far is in the State.
func (s *session) settle() { s.in.settle() }

// withSentences is e as --json writes it. The tracer emits facts and recordings keep them
// alone; people and scripts reading --json also get a thread's explanation and outcome, and
// each matrix cell's explanation and disagreement, in the words the TUI shows (explain,
// outcome and disagree, as recordings of older format versions had them).
func withSentences(e sessions.Event) sessions.Event {
	switch b := e.Body.(type) {
	case sessions.Thread:
		if b.Explain == "" {
			b.Explain = views.ThreadExplain(&b)
		}
		if b.Outcome == "" {
			b.Outcome = views.ThreadOutcome(&b)
		}
		e.Body = b
	case sessions.Matrix:
		// A copy: the State holds the event's cells.
		b.Cells = slices.Clone(b.Cells)
		for i := range b.Cells {
			c := &b.Cells[i]
			c.Explain, c.Disagree = views.CellWhy(c), views.CellDisagree(c)
		}
		e.Body = b
	}
	return e
}

// watchReader notices a --json reader that went away (crashtui --json | head -1) even when no
// event is being written: the write end of a pipe or socket whose reader closed polls as
// POLLERR or POLLHUP (fs/pipe.c pipe_poll). Other outputs (a file, a terminal) never do.
func (s *session) watchReader(stdout io.Writer) {
	f, ok := stdout.(*os.File)
	if !ok {
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || (st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK) {
		return
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd())}} // no events asked: POLLERR and POLLHUP always come
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			s.goneOnce.Do(func() { close(s.stdoutGone) })
			return
		}
	}
}

// withStdout returns ctx, also cancelled when the --json consumer goes away: crashtui then
// detaches and ends as on a signal (exit status 0: a closed reader is not a tracing failure).
func (s *session) withStdout(ctx context.Context) (context.Context, func()) {
	return cancelWhen(ctx, s.stdoutGone)
}

// cancelWhen returns a context derived from parent that is also cancelled when done closes.
func cancelWhen(parent context.Context, done <-chan struct{}) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func header(job, host string) sessions.Header {
	return sessions.Header{Crashtui: version, Arch: runtime.GOARCH, Kernel: tracer.KernelRelease(),
		Start: time.Now().UTC(), Job: job, Host: host}
}

// emit is the tracer's Emit callback: it must not block, so it only queues the event
// (applyLoop applies it).
func (s *session) emit(e sessions.Event) { s.in.push(e) }

// maxQueued is how many events a view's readers may have queued ahead of applyLoop before
// they wait: a view reads its streams as fast as it can decode them, and without a bound a
// tree's first level would hold its whole input decoded (the tracer's emit never waits).
const maxQueued = 1 << 14

// emitRead queues events read from a stream (a view's sources): it waits while maxQueued
// are ahead of them, so the stream's reader goes at the pace the State is reduced at.
func (s *session) emitRead(es []sessions.Event) {
	if len(es) > 0 {
		s.in.pushAllWait(es, maxQueued)
	}
}

// finish queues the summary event (derived from the State), waits until every event and
// then the summary have been written, and closes the recording. Call it after detaching:
// it may wait on a slow --json reader.
func (s *session) finish(host string) sessions.Summary {
	s.settle()
	s.mu.Lock()
	sum := s.state.Summary()
	s.mu.Unlock()
	s.emit(sessions.Event{Time: time.Now(), Host: host, Body: sum})
	s.in.close()
	<-s.applied
	if s.changes != nil {
		s.changes.close()
	}
	// Told to stop, crashtui has detached by now: a reader that takes nothing for two
	// seconds while crashtui waits for it does not keep it from exiting. One that keeps
	// reading gets everything, the summary last, however long crashtui itself takes to
	// write an event: a pipe the reader has emptied is crashtui's own wait, even inside a
	// write (a loaded machine can leave crashtui's writer unscheduled between two chunks
	// of a long line for seconds). Told a second time, a quarter of a second without
	// progress ends the wait, whatever the writer is doing.
	pending := func() int { return -1 }
	if s.unread != nil {
		pending = s.unread
	}
	// The wait is counted in looks, stallLooks of them a stall apart, not in time: a
	// machine that stops running crashtui and its reader alike (a VM its host pauses, a
	// laptop suspended) resumes both with the wait's time all gone, and the reader has not
	// yet had its turn. Such a pause is one look (each look's timer is set after the last),
	// so a reader is let go only after crashtui has itself run and looked for the whole wait.
	// (A loaded 2-CPU VM here stopped processes for 10 to 90 s at a time, its kernel
	// reporting "workqueue lockup": one 2 s timer runs out inside such a stop.)
	for last, waiting, still := s.progress.Load(), pending(), 0; ; {
		stall, second := 2*time.Second, s.stop.second
		select {
		case <-s.stop.second:
			stall, second = 250*time.Millisecond, nil
		default:
		}
		select {
		case <-s.written:
		case <-second:
			still = 0
			continue // told again while waiting: wait less
		case <-time.After(stall / stallLooks):
			now, in := s.progress.Load(), pending()
			ownWait := !s.waiting.Load() || in == 0 // nothing is the reader's to take
			if now != last || in < waiting || (second != nil && ownWait) {
				last, waiting, still = now, in, 0
				continue
			}
			if still++; still < stallLooks {
				continue
			}
			select {
			case <-s.stop.first:
			default:
				continue // not told to stop: a slow reader is waited for
			}
			// What is not written is lost: say so where the user looks when output ends
			// short (the reader itself may be a script that never knew).
			if s.warn != nil {
				held := ""
				if in > 0 {
					held = fmt.Sprintf(" (%d bytes left in its pipe)", in)
				}
				fmt.Fprintf(s.warn, "crashtui: the --json reader took nothing for %v%s after crashtui was told to stop: "+
					"crashtui stopped waiting for it, and the rest of its output (the summary last) is not written\n", stall, held)
			}
		}
		break
	}
	if s.recF != nil {
		s.recF.Close()
	}
	return sum
}

// stallLooks is how many looks at the reader's progress, a twentieth of the wait apart,
// must all see none before finish lets the reader go.
const stallLooks = 20

// progressWriter writes to w at most progressChunk bytes a call and counts each write the
// reader took. One event's line can be megabytes (a 100-process matrix is 2.3 MB): a slow
// reader taking it steadily is progress, and finish, which lets a stalled reader go after
// two seconds without any, must not cut that line (and lose the summary after it) because
// the whole line took longer than that.
type progressWriter struct {
	w       io.Writer
	n       *atomic.Int64
	waiting *atomic.Bool // set while a write waits for the reader
}

// progressChunk is a page, the least a pipe holds: a write of it completes as soon as the
// reader has taken one page, however small the pipe (64 KiB, 16 pages of a 4 KiB pipe, took
// a loaded reader over two seconds and was cut).
const progressChunk = 4 << 10

func (p progressWriter) Write(b []byte) (int, error) {
	done := 0
	p.waiting.Store(true)
	defer p.waiting.Store(false)
	for done < len(b) {
		n, err := p.w.Write(b[done:min(len(b), done+progressChunk)])
		done += n
		if n > 0 {
			p.n.Add(1)
		}
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, io.ErrShortWrite
		}
	}
	return done, nil
}

// batchQueue is an unbounded FIFO of events taken in batches: whatever came while its
// reader was busy is taken at once, so a storm of events costs one wake of the reader per
// batch. It counts what it was given and what its reader is done with (settle).
type batchQueue[T any] struct {
	mu          sync.Mutex
	cond        *sync.Cond // signalled when items come, when closed, and when done
	items       []T
	spare       []T // a taken batch's array, given back (recycle) for the next items
	closed      bool
	pushed, got int64
}

func (q *batchQueue[T]) init() { q.cond = sync.NewCond(&q.mu) }

func (q *batchQueue[T]) push(e T) {
	q.mu.Lock()
	q.items = append(q.items, e)
	q.pushed++
	q.mu.Unlock()
	q.cond.Broadcast()
}

// pushAllWait is pushAll, after waiting while limit items wait to be taken (or until
// closed).
func (q *batchQueue[T]) pushAllWait(es []T, limit int) {
	q.mu.Lock()
	for len(q.items) >= limit && !q.closed {
		q.cond.Wait()
	}
	q.items = append(q.items, es...)
	q.pushed += int64(len(es))
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *batchQueue[T]) pushAll(es []T) {
	q.mu.Lock()
	q.items = append(q.items, es...)
	q.pushed += int64(len(es))
	q.mu.Unlock()
	q.cond.Broadcast()
}

// take waits for items and returns them all; ok is false once the queue is closed and
// empty.
func (q *batchQueue[T]) take() (batch []T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	batch, q.items, q.spare = q.items, q.spare, nil
	if len(batch) > 0 {
		q.cond.Broadcast() // room again for pushAllWait
	}
	return batch, len(batch) > 0 || !q.closed
}

// done says the reader has handled n more items.
func (q *batchQueue[T]) done(n int) {
	q.mu.Lock()
	q.got += int64(n)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// recycle gives back a batch take returned, once its reader is done with it: its array
// holds the next items, so a stream of batches does not grow a new array for each (a tree's
// first level queues tens of thousands of events a second).
func (q *batchQueue[T]) recycle(batch []T) {
	clear(batch) // what it pointed to is not kept alive by the queue
	q.mu.Lock()
	if q.spare == nil && cap(batch) > 0 {
		q.spare = batch[:0]
	}
	q.mu.Unlock()
}

// settle waits until the reader is done with every item pushed before the call.
func (q *batchQueue[T]) settle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for want := q.pushed; q.got < want; {
		q.cond.Wait()
	}
}

func (q *batchQueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// changes tells the TUI that the State it reads has changed (tui.Options.Changed). The
// TUI reads the State itself, under the session's lock, so it is told of a batch, never
// handed its events: a storm of them costs applyLoop a send that finds the channel full,
// and the TUI one wake a frame.
type changes struct {
	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

// note says the State changed: it never blocks.
func (c *changes) note() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		select {
		case c.ch <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

// close says nothing more will change (after the last batch); later notes are dropped.
func (c *changes) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.ch)
	}
}

// signalContext is cancelled on SIGINT, SIGTERM or SIGHUP: crashtui then finishes its
// current step, detaches and exits 0. Every tracing command holds it for its whole life:
// dying by a default signal action mid-injection would leave a process with crashtui's
// breakpoint and registers, to die of SIGTRAP. SIGPIPE is received too (and ignored): Go
// then fails a write to a closed stdout with EPIPE instead of exiting with SIGPIPE, and the
// session turns that into a detach (withStdout).
func signalContext() (context.Context, func()) {
	return cancelWhen(context.Background(), quit.first)
}

// quit is how crashtui is told to stop: the first SIGINT, SIGTERM or SIGHUP closes first
// (the command detaches and exits 0 with its summary), a second one closes second (the
// summary is not waited for: a --json reader that never reads cannot hold crashtui). The
// handlers are installed by catchSignals, the first thing main does, so no signal in the
// first milliseconds takes the default action, and nothing is attached before.
var quit = stopSignals{make(chan struct{}), make(chan struct{})}

// stopSignals are closed at the first and at the second signal to stop.
type stopSignals struct {
	first, second chan struct{}
}

// catchSignals installs crashtui's handlers. SIGPIPE stays caught for the whole run: a write
// to a closed stdout (the summary, an error message) must fail with EPIPE, not kill crashtui.
func catchSignals() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		<-sigs
		close(quit.first)
		<-sigs
		close(quit.second)
	}()
}

// splitList helps flags like --restore.
func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return true
		}
	}
	return false
}

// unreadOf returns how many bytes wait unread in w's pipe (FIONREAD, alias TIOCINQ), or -1
// always where w is not a pipe or the kernel cannot say. Only a pipe's count is the
// reader's: on a socket or a terminal the same ioctl counts what waits to be read on
// crashtui's own side, 0 however stuck the reader.
func unreadOf(w io.Writer) func() int {
	f, ok := w.(*os.File)
	if !ok {
		return func() int { return -1 }
	}
	rc, err := f.SyscallConn() // not Fd, which would put the file in blocking mode
	if err != nil {
		return func() int { return -1 }
	}
	pipe := false
	rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		pipe = unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
	})
	if !pipe {
		return func() int { return -1 }
	}
	return func() int {
		n := -1
		rc.Control(func(fd uintptr) {
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
				n = v
			}
		})
		return n
	}
}
