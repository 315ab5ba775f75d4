package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/access"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// The asker's side of the control socket (ctlsock.go): a one-shot command whose job is traced
// by a running crashtui asks it instead of attaching.

// holder is a running crashtui that traces a job: the process at the other end of its
// control socket.
type holder struct {
	pid  int
	uid  int
	path string // its control socket
	cmd  string // its command line, sanitised, for messages
}

func (h *holder) String() string { return fmt.Sprintf("crashtui pid %d (%s)", h.pid, h.cmd) }

// findHolder looks at what traces job's processes now. When one running crashtui traces all of
// them, it returns it: the command asks it. Otherwise it returns nil and the processes of the
// job that are crashtuis themselves (skip: never traced, never sampled). A JOB that names a
// crashtui itself (pid:N of one, or only crashtuis) is refused, exit status 2.
func findHolder(job tracer.Job) (*holder, map[int]string, error) {
	pids, skip, err := crashtuisIn(job)
	if err != nil || len(pids) == 0 {
		return nil, skip, err
	}
	tp := tracerOf(pids[0])
	for _, pid := range pids[1:] {
		if tracerOf(pid) != tp {
			return nil, skip, nil // traced by several, or in part: attach, and say who holds the rest
		}
	}
	if tp == 0 || tp == os.Getpid() {
		return nil, skip, nil
	}
	h, err := holderAt(tp)
	return h, skip, err
}

// crashtuisIn resolves job and sets apart the processes that are crashtuis themselves: pids
// are the others, skip the crashtuis with why. A JOB that is a crashtui (pid:N of one, or
// only crashtuis) is refused, exit status 2. A JOB that resolves to nothing is no error here:
// the attach says what is wrong with it.
func crashtuisIn(job tracer.Job) (pids []int, skip map[int]string, err error) {
	all, err := job.Resolve()
	if err != nil {
		return nil, nil, nil
	}
	if job.Kind == tracer.JobPID && isCrashtui(job.ID) {
		return nil, nil, &exitError{2, crashtuiJobError(job, job.ID)}
	}
	is := make([]bool, len(all)) // a few reads of /proc each: in parallel, each in its own slot
	procfs.InParallel(len(all), func(i int) { is[i] = isCrashtui(all[i]) })
	for i, pid := range all {
		if !is[i] {
			pids = append(pids, pid)
			continue
		}
		if skip == nil {
			skip = map[int]string{}
		}
		skip[pid] = fmt.Sprintf("pid %d is a crashtui: crashtui never traces or samples another one (ask it: name the job it traces)", pid)
	}
	if len(pids) == 0 {
		for pid := range skip {
			return nil, nil, &exitError{2, crashtuiJobError(job, pid)}
		}
	}
	return pids, skip, nil
}

// tracerOf is the process tracing pid (its main thread's TracerPid is the tracing thread;
// its thread group is the tracer), 0 when none.
func tracerOf(pid int) int {
	_, tid := procfs.TaskStatus(pid)
	if tid == 0 {
		return 0
	}
	tgid, _ := procfs.TaskStatus(tid)
	if tgid == 0 {
		return tid
	}
	return tgid
}

// isCrashtui says whether pid is a crashtui: it runs crashtui's own executable, or it answers
// on a control socket (a stale one, of a dead crashtui whose pid it took, does not count).
func isCrashtui(pid int) bool {
	self := selfExe()
	var st unix.Stat_t
	if self != nil && unix.Stat(procfs.Path(pid, "exe"), &st) == nil && st.Dev == self.Dev && st.Ino == self.Ino {
		return true
	}
	uid := procfs.UID(pid)
	if uid < 0 {
		return false
	}
	h := &holder{pid: pid, uid: uid}
	return h.find() == nil
}

// selfExe is crashtui's own executable's inode (nil if /proc does not say).
var selfExe = sync.OnceValue(func() *unix.Stat_t {
	var st unix.Stat_t
	if unix.Stat("/proc/self/exe", &st) != nil {
		return nil
	}
	return &st
})

// ctlDirsOf are the control directories of the crashtui pid of uid, from its environment
// (readable by root and its own user only: the only ones it answers anyway).
func ctlDirsOf(pid, uid int) []string {
	var env []byte
	procfs.ReadFile(procfs.Path(pid, "environ"), func(b []byte) { env = append(env, b...) })
	return ctlDirs(uid, func(name string) string {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok {
				return string(v)
			}
		}
		return ""
	})
}

// holderAt returns the crashtui pid tp as a holder when it answers on its control socket; nil
// when it is not a crashtui (strace, gdb; or a crashtui that died and whose pid was taken since:
// its socket is stale, and removed when it is crashtui's own user's).
func holderAt(tp int) (*holder, error) {
	uid := procfs.UID(tp)
	if uid < 0 {
		return nil, nil
	}
	h := &holder{pid: tp, uid: uid, cmd: commandLine(tp)}
	switch err := h.find(); {
	case errors.Is(err, errNoSocket):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return h, nil
}

// errNoSocket: the process has no control socket (it is no crashtui, or one that died).
var errNoSocket = errors.New("no control socket")

// find looks for the holder's control socket in its directories and sets h.path to the one
// it answers on. It fails with errNoSocket when there is none, and with h.refused when the
// holder is closed to this user.
func (h *holder) find() error {
	me := os.Geteuid()
	for _, dir := range ctlDirsOf(h.pid, h.uid) {
		path := filepath.Join(dir, ctlName(h.pid))
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if errors.Is(err, unix.EACCES) && me != 0 && me != h.uid {
				return h.refused(err) // another user's directory
			}
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			continue
		}
		h.path = path
		c, err := h.dial()
		if err == nil {
			c.Close()
			return nil
		}
		if errors.Is(err, unix.ECONNREFUSED) {
			removeStale(path) // a dead crashtui's
			continue
		}
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return h.refused(err)
		}
		return fmt.Errorf("pid %d (%s) traces the job, but asking it failed: %w", h.pid, h.cmd, err)
	}
	h.path = ""
	return errNoSocket
}

func (h *holder) refused(err error) error {
	return fmt.Errorf("the job is traced by %v, which answers only root and uid %d (you are uid %d: %v): run this as one of them",
		h, h.uid, os.Geteuid(), err)
}

// dial connects to the holder's socket and checks that the process listening there is the
// holder, before a word is written: a socket put in its place is never believed.
func (h *holder) dial() (*net.UnixConn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: h.path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	cred, err := peerCred(c)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("peer credentials of %s: %w", h.path, err)
	}
	if int(cred.Pid) != h.pid || int(cred.Uid) != h.uid {
		c.Close()
		return nil, fmt.Errorf("%s is answered by pid %d (uid %d), not by pid %d (uid %d), which traces the job: not believed", h.path, cred.Pid, cred.Uid, h.pid, h.uid)
	}
	return c, nil
}

// commandLine is pid's argv, sanitised and shortened, for a message.
func commandLine(pid int) string {
	s := sessions.Sanitize(strings.Join(procfs.Argv(pid), " "))
	if s == "" {
		s = sessions.Sanitize(procfs.Comm(pid))
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// crashtuiJobError refuses a JOB that names a crashtui itself, and says what to name instead.
func crashtuiJobError(job tracer.Job, pid int) error {
	what := "the job it traces"
	if spec := tracedJob(pid); spec != "" {
		what += " (" + spec + ")"
	}
	return fmt.Errorf("job %s is crashtui itself (pid %d: %s): crashtui never samples or checkpoints a crashtui; name %s and this command asks that crashtui",
		sessions.Sanitize(job.Spec), pid, commandLine(pid), what)
}

// tracedJob names the processes the crashtui pid traces as a JOB: their process group when
// they share one, else one of them.
func tracedJob(pid int) string {
	var traced []int
	procfs.ReadDirNumbers("/proc", func(p int) {
		if p != pid && tracerOf(p) == pid {
			traced = append(traced, p)
		}
	})
	if len(traced) == 0 {
		return ""
	}
	sort.Ints(traced)
	groups := map[int]bool{}
	for _, p := range traced {
		if st, err := procfs.ReadStat(p); err == nil {
			groups[st.Pgrp] = true
		}
	}
	if len(groups) == 1 {
		for g := range groups {
			return "pgid:" + strconv.Itoa(g)
		}
	}
	return "pid:" + strconv.Itoa(traced[0])
}

// asker is a one-shot command's job as a holder answers for it (jobOps).
type asker struct {
	h           *holder
	job         tracer.Job
	s           *session
	host        string
	seen        map[int]bool // the processes already in the session
	checkpoints int
}

func newAsker(h *holder, job tracer.Job, s *session, host string) *asker {
	a := &asker{h: h, job: job, s: s, host: host, seen: map[int]bool{}}
	for pid, why := range job.Skip {
		s.emit(sessions.Event{Time: time.Now(), Host: host, Body: sessions.Error{PID: pid, Op: "attach", Message: "not traced: " + why}})
	}
	return a
}

// ctlMaxAnswer bounds an answer: a line, and the whole (a holder is trusted with the job, not
// with the asker's memory).
const (
	ctlMaxLine   = 64 << 20
	ctlMaxAnswer = 1 << 30
)

// ask sends requests about the job's processes the holder traces and returns its answer's
// events (the summary that closes it left out).
func (a *asker) ask(requests ...string) ([]sessions.Event, error) {
	all, err := a.job.Resolve()
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, p := range all {
		if a.job.Skip[p] == "" && tracerOf(p) == a.h.pid {
			pids = append(pids, strconv.Itoa(p))
		}
	}
	if len(pids) == 0 {
		return nil, a.gone(errors.New("it traces none of the job's processes now"))
	}
	c, err := a.h.dial()
	if err != nil {
		return nil, a.gone(err)
	}
	defer c.Close()
	answered := make(chan struct{})
	defer close(answered)
	go func() {
		// A second signal gives up on an answer that does not come (the first one lets it
		// finish, as an attached step is let finish).
		select {
		case <-quit.second:
			c.Close()
		case <-answered:
		}
	}()
	req := "pids " + strings.Join(pids, " ") + "\n"
	for _, r := range requests {
		req += r + "\n"
	}
	// A holder that refuses answers why without reading: a failed write still has an answer.
	io.WriteString(c, req)
	c.CloseWrite()
	var evs []sessions.Event
	sc := sessions.NewLineScanner(io.LimitReader(c, ctlMaxAnswer), ctlMaxLine)
	for sc.Scan() {
		if sc.TooLong() {
			return nil, fmt.Errorf("%v: answer line %d: %w", a.h, sc.Line(), sessions.TooLongError{Max: ctlMaxLine})
		}
		var e sessions.Event
		if err := e.UnmarshalJSON(sc.Bytes()); err != nil {
			return nil, fmt.Errorf("%v: answer line %d: %w", a.h, sc.Line(), err)
		}
		if _, ok := e.Body.(sessions.Summary); ok {
			return evs, nil
		}
		evs = append(evs, e)
	}
	err = sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, a.gone(err)
}

// gone is the error of a holder that went away before its answer was complete: crashtui
// detaches when it quits, so the job is no longer traced.
func (a *asker) gone(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err // not the socket's addresses: its name is in the message already
	}
	return fmt.Errorf("%v, which traced job %s, went away before it answered (%v): it has let go of the job; run this command again to trace it directly",
		a.h, sessions.Sanitize(a.job.Spec), err)
}

// take puts the answer's events into the session as the command's own (its host, its sample
// and checkpoint numbers), and returns the error the holder answered for the request, if any.
func (a *asker) take(evs []sessions.Event, seq int) (matrix *sessions.Matrix, err error) {
	var errs []string
	for _, e := range evs {
		e.Host = a.host
		switch b := e.Body.(type) {
		case sessions.Process:
			if a.seen[b.PID] {
				continue
			}
			a.seen[b.PID] = true
		case sessions.Sample:
			b.Seq = seq
			e.Body = b
		case sessions.Goroutines:
			b.Seq = seq
			e.Body = b
		case sessions.Thread:
			b.Checkpoint = a.checkpoints
			e.Body = b
		case sessions.Matrix:
			m := b
			matrix = &m
		case sessions.MatrixProgress:
		case sessions.Error:
			if b.Op == "request" || b.Op == "control" {
				errs = append(errs, b.Message)
				continue
			}
		default:
			continue
		}
		a.s.emit(e)
	}
	if len(errs) > 0 {
		err = fmt.Errorf("%v answered: %s", a.h, strings.Join(errs, "; "))
	}
	return matrix, err
}

func (a *asker) Sample(seq int) error {
	evs, err := a.ask("sample")
	if err != nil {
		return err
	}
	_, err = a.take(evs, seq)
	return err
}

func (a *asker) Matrix(measure bool) (sessions.Matrix, error) {
	if !measure {
		// A prediction reads /proc only: made here, for the processes the holder names.
		evs, err := a.ask()
		if err != nil {
			return sessions.Matrix{}, err
		}
		if _, err := a.take(evs, 0); err != nil {
			return sessions.Matrix{}, err
		}
		var pids []int
		for p := range a.seen {
			pids = append(pids, p)
		}
		sort.Ints(pids)
		procs, _ := access.ReadProcs(pids)
		m := access.PredictAll(access.ReadSystem(), procs)
		a.s.emit(sessions.Event{Time: time.Now(), Host: a.host, Body: m})
		return m, nil
	}
	evs, err := a.ask("measure")
	if err != nil {
		return sessions.Matrix{}, err
	}
	m, err := a.take(evs, 0)
	if m == nil {
		if err == nil {
			err = fmt.Errorf("%v answered no matrix", a.h)
		}
		return sessions.Matrix{}, err
	}
	return *m, err
}

func (a *asker) Checkpoint(policy sessions.Policy, image io.Writer) ([]sessions.Thread, error) {
	if image != nil {
		return nil, a.noImage()
	}
	evs, err := a.ask("checkpoint " + string(policy))
	if err != nil {
		return nil, err
	}
	a.checkpoints++
	if _, err = a.take(evs, 0); err != nil {
		return nil, err
	}
	// The threads as they ended up: each one's last event (captured, then what it did next).
	var threads []sessions.Thread
	at := map[int]int{}
	for _, e := range evs {
		th, ok := e.Body.(sessions.Thread)
		if !ok {
			continue
		}
		th.Checkpoint = a.checkpoints
		if i, ok := at[th.TID]; ok {
			threads[i] = th
		} else {
			at[th.TID] = len(threads)
			threads = append(threads, th)
		}
	}
	return threads, nil
}

func (a *asker) noImage() error {
	return &exitError{2, fmt.Errorf("checkpoint --image: job %s is traced by %v, which does the checkpoint but cannot write its image here; leave out --image, or quit that crashtui first",
		sessions.Sanitize(a.job.Spec), a.h)}
}
