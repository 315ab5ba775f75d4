package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer/stacks"
)

// The control socket. A job has one tracer at a time (ptrace), so while a crashtui runs on a
// job (attach, run, demo, agent) a second crashtui command on it (stacks, matrix, checkpoint)
// could only fail "already traced". Instead the running one, the holder, listens on a unix
// socket named for its pid, and the second one, the asker, finds it through /proc (the
// TracerPid of the job's processes) and asks it over that socket: the holder samples, measures
// or checkpoints with its own tracer, and the asker prints the answer as it would have printed
// its own.
//
// The socket is PID.sock in a directory of the holder's user only, mode 0700: /run/crashtui
// for root, $XDG_RUNTIME_DIR/crashtui or $TMPDIR/crashtui-UID for another user (ctlDirs), checked by
// sessions/outfile's rules (no directory on the way that another user owns or can write). The
// holder answers only root and its own uid (SO_PEERCRED); the asker talks only to the process
// that traces its job (SO_PEERCRED's pid), so a socket planted or left behind is never
// believed. A socket of a crashtui that died (SIGKILL) is removed by the next crashtui that
// finds it refusing connections.
//
// The protocol is agent --control's, in JSON Lines back:
//
//	asker:  pids PID...               the processes the requests concern (the asker's JOB)
//	        sample | measure | checkpoint POLICY    agent --control's request lines
//	        (end of writing)
//	holder: a process event for each of those pids it traces, as its State has it
//	        each request's events: the samples, the matrix, the checkpoint's thread events
//	        (only those of the pids), error events for what failed
//	        a summary: the answer is complete (a stream cut before it: the holder went away)

// ctlRoot is root's control directory.
const ctlRoot = "/run/crashtui"

// ctlDirs are the directories a crashtui of uid, with env (getenv of its environment), keeps
// its control socket in, best first: root's /run/crashtui (a system without /run, such as the
// QEMU stages' guests, falls back to $TMPDIR), another user's $XDG_RUNTIME_DIR/crashtui (the
// user's own runtime directory, 0700, under systemd) or $TMPDIR/crashtui-UID.
func ctlDirs(uid int, env func(string) string) []string {
	var dirs []string
	if uid == 0 {
		dirs = append(dirs, ctlRoot)
	} else if x := env("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Join(x, "crashtui"))
	}
	tmp := env("TMPDIR")
	if !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return append(dirs, filepath.Join(tmp, "crashtui-"+strconv.Itoa(uid)))
}

// ctlName is the socket's name for the crashtui of pid.
func ctlName(pid int) string { return strconv.Itoa(pid) + ".sock" }

// ctlMaxConns bounds the askers answered at once; ctlIdle is how long a connection may send
// nothing before it is dropped; ctlWriteTimeout, how long an asker may leave an answer unread.
const (
	ctlMaxConns     = 8
	ctlIdle         = time.Minute
	ctlWriteTimeout = 30 * time.Second
)

// ctlServer is a holder's control socket.
type ctlServer struct {
	t    *tracing
	s    *session
	tap  *eventTap
	ctl  requester // the TUI's controller, for what the socket passes on as it is
	host string

	ln   *net.UnixListener
	path string
	once sync.Once
	sem  chan struct{}
}

// serveControl opens the control socket of a crashtui that holds t's job and answers on it
// until stop. It returns an error, and no server, when no directory will do.
func serveControl(t *tracing, s *session, tap *eventTap, ctl requester, host string) (*ctlServer, error) {
	ln, path, err := listenControl(ctlDirs(os.Geteuid(), os.Getenv))
	if err != nil {
		return nil, err
	}
	cs := &ctlServer{t: t, s: s, tap: tap, ctl: ctl, host: host, ln: ln, path: path, sem: make(chan struct{}, ctlMaxConns)}
	go cs.accept()
	return cs, nil
}

// stop closes the socket and removes its name: no new asker. One being answered gets its
// answer, or a cut stream if crashtui exits first.
func (cs *ctlServer) stop() {
	if cs == nil {
		return
	}
	cs.once.Do(func() {
		os.Remove(cs.path) // our own name in our own directory: nobody else can have replaced it
		cs.ln.Close()
		if dir := filepath.Dir(cs.path); dir != ctlRoot {
			os.Remove(dir) // a user's: removed once empty, as a temporary directory should be
		}
	})
}

// listenControl listens on PID.sock in the first of dirs that is usable.
func listenControl(dirs []string) (*net.UnixListener, string, error) {
	var errs []string
	for _, dir := range dirs {
		ln, path, err := listenIn(dir)
		if err == nil {
			return ln, path, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, "", fmt.Errorf("control socket: %s", strings.Join(errs, "; "))
}

func listenIn(dir string) (*net.UnixListener, string, error) {
	if dir == ctlRoot {
		// Only the last component is made: a system without /run gets no /run from crashtui.
		if st, err := os.Lstat(filepath.Dir(dir)); err != nil || !st.IsDir() {
			return nil, "", fmt.Errorf("%s: no such directory", filepath.Dir(dir))
		}
	}
	if err := ctlDir(dir); err != nil {
		return nil, "", err
	}
	sweepStale(dir)
	// Bound under a temporary name, listening, then renamed: PID.sock is never a socket
	// nobody listens on, so a sweeper that finds one refusing connections knows it is stale.
	// The rename also replaces a stale PID.sock of a crashtui that died with this pid.
	path := filepath.Join(dir, ctlName(os.Getpid()))
	tmp := path + ".new"
	os.Remove(tmp) // ours: this pid's, from a crashtui that died between bind and rename
	if live(path) {
		return nil, "", fmt.Errorf("%s: a crashtui of another pid namespace answers there", path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, "", fmt.Errorf("listen %s: %w", tmp, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, "", fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, "", fmt.Errorf("rename %s: %w", tmp, err)
	}
	return ln, path, nil
}

// ctlDir makes sure dir is a control directory: by outfile's rules (created 0700 when absent,
// refused when it or a directory above it belongs to another user or is writable by others),
// owned by crashtui's own user, and 0700 (a socket in it can be reached by no one else).
func ctlDir(dir string) error {
	if err := outfile.Dir(dir); err != nil {
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to uid %d (crashtui)", dir, st.Uid, os.Geteuid())
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("chmod 0700 %s: %w", dir, err)
		}
	}
	return nil
}

// sweepStale removes the sockets of crashtuis that died without removing theirs: a PID.sock
// of crashtui's own user that refuses connections (nobody listens: the process that did is
// gone), and a PID.sock.new whose process is gone. Anything else is left alone.
func sweepStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		base, tmp := strings.CutSuffix(name, ".new")
		n, ok := strings.CutSuffix(base, ".sock")
		pid, err := strconv.Atoi(n)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		path := filepath.Join(dir, name)
		if tmp {
			if unix.Kill(pid, 0) == unix.ESRCH && ownSocket(path) {
				os.Remove(path)
			}
			continue
		}
		removeStale(path)
	}
}

// removeStale removes path when it is a socket of crashtui's own user that nobody listens on;
// it says whether it did.
func removeStale(path string) bool {
	if !ownSocket(path) || !refused(path) {
		return false
	}
	return os.Remove(path) == nil
}

// ownSocket says whether path (not what a link there points to) is a socket of crashtui's user.
func ownSocket(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK && int(st.Uid) == os.Geteuid()
}

// refused says whether connecting to the socket at path fails with ECONNREFUSED: no process
// listens on it (unix(7)).
func refused(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, unix.ECONNREFUSED)
}

// live says whether something listens on the socket at path.
func live(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (cs *ctlServer) accept() {
	for {
		conn, err := cs.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: let it pass
			continue
		}
		// At most ctlMaxConns at once; the next ones wait in the listen backlog.
		cs.sem <- struct{}{}
		go func() {
			defer func() { <-cs.sem }()
			cs.serveConn(conn)
		}()
	}
}

// serveConn answers one asker.
func (cs *ctlServer) serveConn(conn *net.UnixConn) {
	a := newCtlAnswer(conn, cs.host)
	defer a.end()
	cred, err := peerCred(conn)
	if err != nil {
		a.send(sessions.Error{Op: "control", Message: fmt.Sprintf("peer credentials: %v", err)})
		return
	}
	if me := os.Geteuid(); cred.Uid != 0 && int(cred.Uid) != me {
		a.send(sessions.Error{Op: "control", Message: fmt.Sprintf("uid %d may not ask crashtui (pid %d, uid %d) about its job: only root and uid %d may", cred.Uid, os.Getpid(), me, me)})
		return
	}
	r := bufio.NewReader(idleReader{conn})
	head, err := readLine(r, maxRequest)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			a.send(sessions.Error{Op: "control", Message: fmt.Sprintf("request: %v", err)})
		}
		return
	}
	pids, err := parsePIDs(head)
	if err != nil {
		a.send(sessions.Error{Op: "control", Message: err.Error()})
		return
	}
	rq := &ctlRequester{cs: cs, out: a, pids: pids}
	rq.sendProcesses()
	serveRequests(r, rq, a, cs.host, func() {
		a.send(sessions.Error{Op: "request", Message: fmt.Sprintf("detach: not over the control socket (q in that crashtui, or SIGINT to pid %d)", os.Getpid())})
	})
}

// parsePIDs parses the "pids PID..." line that opens a request.
func parsePIDs(line string) (map[int]bool, error) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "pids" {
		return nil, fmt.Errorf("request: want \"pids PID...\" first, got %q", sessions.Sanitize(truncRunes(line, 80)))
	}
	pids := map[int]bool{}
	for _, s := range f[1:] {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("request: bad pid %q", sessions.Sanitize(truncRunes(s, 20)))
		}
		pids[n] = true
	}
	return pids, nil
}

// readLine reads one line of at most max bytes (without its end of line).
func readLine(r *bufio.Reader, max int) (string, error) {
	var b []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(b)+len(part) > max {
			return "", sessions.TooLongError{Max: max}
		}
		b = append(b, part...)
		switch {
		case err == nil:
			return strings.TrimRight(string(b), "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(b) > 0:
			return string(b), nil
		default:
			return "", err
		}
	}
}

// idleReader drops a connection that sends nothing for ctlIdle.
type idleReader struct{ c *net.UnixConn }

func (r idleReader) Read(b []byte) (int, error) {
	r.c.SetReadDeadline(time.Now().Add(ctlIdle))
	return r.c.Read(b)
}

// peerCred is the credentials of the process at the other end of conn: the connecting
// process for a holder, the listening one for an asker (unix(7), SO_PEERCRED).
func peerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// ctlAnswer writes an answer as JSON Lines. The events are the tracer's facts, as a
// recording keeps them: the asker's own session adds the sentences its --json shows.
type ctlAnswer struct {
	mu      sync.Mutex
	conn    *net.UnixConn
	w       *bufio.Writer
	enc     *json.Encoder
	err     error
	host    string
	procs   int
	errs    int
	stopped bool
}

func newCtlAnswer(conn *net.UnixConn, host string) *ctlAnswer {
	w := bufio.NewWriter(conn)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &ctlAnswer{conn: conn, w: w, enc: enc, host: host}
}

// emit is serveRequests' emitter: one event of the answer.
func (a *ctlAnswer) emit(e sessions.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil || a.stopped {
		return
	}
	switch e.Body.(type) {
	case sessions.Process:
		a.procs++
	case sessions.Error:
		a.errs++
	}
	a.conn.SetWriteDeadline(time.Now().Add(ctlWriteTimeout))
	a.err = a.enc.Encode(e)
}

func (a *ctlAnswer) send(b sessions.Body) {
	a.emit(sessions.Event{Time: time.Now(), Host: a.host, Body: b})
}

// end writes the summary that closes a complete answer, and closes the connection.
func (a *ctlAnswer) end() {
	a.send(sessions.Summary{Processes: a.procs, Errors: a.errs, Groups: []sessions.GroupSummary{}})
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	if a.err == nil {
		a.conn.SetWriteDeadline(time.Now().Add(ctlWriteTimeout))
		a.w.Flush()
	}
	a.conn.Close()
}

// ctlRequester is serveRequests' requester for one asker: the holder's features, for the
// asker's processes only. A sample and a measurement are of the holder's whole job, as its own
// S and m keys take them (its Stacks and Matrix tabs show the latest, which must cover every
// rank), and only the asker's processes are answered; a checkpoint freezes and writes back the
// asker's processes only (the others run on untouched).
type ctlRequester struct {
	cs   *ctlServer
	out  *ctlAnswer
	pids map[int]bool
}

// sendProcesses answers a process event for each of the asked pids the holder traces.
func (r *ctlRequester) sendProcesses() {
	var procs []sessions.Process
	r.cs.s.mu.Lock()
	for _, p := range r.cs.s.state.SortedProcs() {
		if p.Host == r.cs.host && p.Alive && r.pids[p.PID] {
			pr := p.Process
			if len(p.Tasks) > 0 {
				pr.Threads = len(p.Tasks)
			}
			procs = append(procs, pr)
		}
	}
	r.cs.s.mu.Unlock()
	for _, p := range procs {
		r.out.send(p)
	}
}

func (r *ctlRequester) Sample() error {
	var smps []sessions.Sample
	var err error
	// The samples, and the goroutines that complete those of Go processes.
	evs := r.cs.tap.watch(func(e sessions.Event) bool {
		switch b := e.Body.(type) {
		case sessions.Sample:
			return r.pids[b.PID]
		case sessions.Goroutines:
			return r.pids[b.PID]
		}
		return false
	}, func() { smps, _, err = r.cs.t.stacks.Sample(stacks.Options{}) })
	if len(smps) > 0 {
		// The tracer's own events, with their times: only this sample's (another one, the
		// holder's periodic sampling, may have run meanwhile).
		for _, e := range evs {
			seq := 0
			switch b := e.Body.(type) {
			case sessions.Sample:
				seq = b.Seq
			case sessions.Goroutines:
				seq = b.Seq
			}
			if seq == smps[0].Seq {
				r.out.emit(e)
			}
		}
	}
	return err
}

func (r *ctlRequester) Measure() error {
	var m sessions.Matrix
	var err error
	progress := r.cs.tap.watch(func(e sessions.Event) bool { return e.Kind() == sessions.KindMatrixProgress },
		func() { m, _, err = r.cs.t.access.Matrix(true) })
	if err != nil {
		return err
	}
	mine := matrixOf(m, r.pids)
	if len(mine.PIDs) == len(m.PIDs) {
		// The asker's processes are the whole job: the measurement's progress is theirs.
		for _, e := range progress {
			r.out.emit(e)
		}
	}
	r.out.send(mine)
	return nil
}

func (r *ctlRequester) Checkpoint(policy sessions.Policy) error {
	if !policy.Valid() {
		return fmt.Errorf("checkpoint: unknown policy %q", policy)
	}
	var pids []int
	for p := range r.pids {
		pids = append(pids, p)
	}
	var threads []sessions.Thread
	var err error
	evs := r.cs.tap.watch(func(e sessions.Event) bool {
		switch b := e.Body.(type) {
		case sessions.Thread:
			return r.pids[b.PID]
		case sessions.Error:
			return r.pids[b.PID] && strings.HasPrefix(b.Op, "checkpoint")
		}
		return false
	}, func() { threads, err = r.cs.t.checkpoints.RunOf(pids, policy, nil) })
	// Its thread events as the tracer emitted them (captured, then what each did next), and
	// its errors; not another checkpoint's (the holder's c) that ran meanwhile.
	id := -1
	if len(threads) > 0 {
		id = threads[0].Checkpoint
	}
	for _, e := range evs {
		if th, ok := e.Body.(sessions.Thread); !ok || th.Checkpoint == id {
			r.out.emit(e)
		}
	}
	return err
}

// AutoSample turns the holder's periodic sampling on or off, as its a key does.
func (r *ctlRequester) AutoSample(on bool) { r.cs.ctl.AutoSample(on) }

// Signal is refused: the socket asks about the job, it does not act on it.
func (r *ctlRequester) Signal(pid int, sig string) error {
	return fmt.Errorf("signal: not over the control socket")
}

// matrixOf is m restricted to the processes pids: the pairs between two of them.
func matrixOf(m sessions.Matrix, pids map[int]bool) sessions.Matrix {
	out := sessions.Matrix{Measured: m.Measured, PIDs: []int{}}
	for _, p := range m.PIDs {
		if pids[p] {
			out.PIDs = append(out.PIDs, p)
		}
	}
	for _, c := range m.Cells {
		if pids[c.From] && pids[c.To] {
			out.Cells = append(out.Cells, c)
		}
	}
	return out
}

// eventTap lets a request see the events the tracer emits while it runs.
type eventTap struct {
	mu      sync.Mutex
	watches map[*tapWatch]bool
}

type tapWatch struct {
	keep func(sessions.Event) bool
	evs  []sessions.Event
}

// wrap returns emit that also shows every event to the watches under way. It runs on the
// tracer's goroutine: it only appends.
func (et *eventTap) wrap(emit func(sessions.Event)) func(sessions.Event) {
	return func(e sessions.Event) {
		emit(e)
		et.mu.Lock()
		for w := range et.watches {
			if w.keep(e) {
				w.evs = append(w.evs, e)
			}
		}
		et.mu.Unlock()
	}
}

// watch runs fn and returns the events kept by keep that were emitted meanwhile, in order.
func (et *eventTap) watch(keep func(sessions.Event) bool, fn func()) []sessions.Event {
	w := &tapWatch{keep: keep}
	et.mu.Lock()
	if et.watches == nil {
		et.watches = map[*tapWatch]bool{}
	}
	et.watches[w] = true
	et.mu.Unlock()
	fn()
	et.mu.Lock()
	delete(et.watches, w)
	et.mu.Unlock()
	return w.evs
}
