package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer/qemu"
	"github.com/crashtui/crashtui/tui"
)

// demo --guest: the restart-state story on a real kernel of another architecture, on any
// laptop. The project's QEMU guest (tracer/qemu: Debian's kernel, busybox, crashtui and the C
// helpers cross-built for it) boots with a shell command that starts sigpending (threads
// blocked in glibc's own read, sem_wait, nanosleep and poll: scv on POWER9/10, sc on POWER8,
// svc on arm64) and execs `crashtui agent --control` on it. The agent's JSON Lines come back
// on the guest's console (QEMU's stdio serial) and are shown here as a live session; the
// TUI's requests (c, m, S, a, K, q) go down the same console to the agent's stdin.
//
//	host: crashtui demo --guest ppc64le --cpu power10
//	        └─ qemu-system-ppc64 -serial mon:stdio   (stdin: requests, stdout: events)
//	guest:      init → sh -c 'stty -echo; sigpending ... & exec crashtui agent --control ...'

// guestHost stamps the guest agent's events.
const guestHost = "guest"

// guestCommand is the shell command the guest runs. The console is a tty: echo goes off
// first, so that the requests are not echoed into the event stream. sigpending reads its
// stdin in its main thread, so it gets a pipe (from a sleep that never ends), not the
// console; its protocol lines go to a file, and the agent attaches once all four calls are
// about to block. The job is one process: its matrix has no pair to measure, so the agent
// only predicts it (an agent measures by default, and measuring a one-process job still
// stops it and sets up an injection for nothing, which fails on the static sigpending: "no
// unused executable bytes within reach").
func guestCommand(sampleEvery string) string {
	return strings.Join([]string{
		"stty -echo",
		"dmesg -n 1 2>/dev/null", // no kernel messages in the middle of an event line
		"sleep 1000000 </dev/null 2>/dev/null | sigpending -s 1000000 futex nanosleep poll >/tmp/sigpending.out 2>&1 &",
		`i=0; while [ "$(grep -c ^ready /tmp/sigpending.out 2>/dev/null)" != 4 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`,
		"echo", // the agent's first line starts a line of its own on the console
		"exec crashtui agent --control --matrix predict --host " + guestHost + " --sample-every " + sampleEvery + " pid:$(pidof sigpending)",
	}, "\n")
}

// demoGuest is crashtui demo --guest ARCH [--cpu CPU].
func demoGuest(c *common, archName, cpu string, stdout, stderr io.Writer) error {
	a := qemu.ArchByName(archName)
	if a == nil {
		return usageErr("demo --guest %q: want ppc64le or arm64", archName)
	}
	if cpu == "" {
		cpu = a.CPUs[len(a.CPUs)-1]
	}
	if !oneOf(cpu, a.CPUs...) {
		return usageErr("demo --guest %s --cpu %q: want one of %s", a.GOARCH, cpu, strings.Join(a.CPUs, ", "))
	}
	cpu = strings.ToLower(cpu)
	if c.tour {
		return usageErr("demo --guest: --tour walks the built-in demo, not a guest")
	}
	if c.cores != "" || c.crashLog != "" {
		return usageErr("demo --guest: --cores and --crash-log would be written in the guest, which has no disk")
	}
	if !c.json {
		if err := needTerminal("demo"); err != nil {
			return err
		}
	}
	if miss := a.Missing(context.Background(), ""); len(miss) > 0 {
		return fmt.Errorf("demo --guest %s: missing %s: run `make test-%s` once in crashtui's source tree, as root (it installs them with apt-get and caches Debian's kernel and busybox in ~/.cache/crashtui/%s)",
			a.GOARCH, strings.Join(miss, "; "), a.GOARCH, a.GOARCH)
	}

	ctx, stop := signalContext()
	defer stop()
	s, err := newSession(c, stdout, "guest "+a.GOARCH+" "+cpu+": sigpending", "demo")
	if err != nil {
		return err
	}
	s.header.Arch, s.header.Host, s.header.Kernel = a.GOARCH, guestHost, "QEMU "+cpu
	// The session is the guest's: the header shows its architecture, not this machine's (the
	// agent's own session event stays in the guest: --json streams never carry one).
	s.emit(sessions.Event{Time: time.Now(), Body: sessions.Session{Job: "guest " + a.GOARCH + " " + cpu + ": sigpending",
		Mode: "demo", Arch: a.GOARCH, Kernel: "QEMU " + cpu, Version: version, PID: os.Getpid()}})
	ctx, cancel := s.withStdout(ctx)
	defer cancel()
	if c.duration > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}

	// The guest's progress (build, boot) goes to stderr with --json, else to a log file: the
	// screen is the TUI's, whose Output tab reads the file and whose Processes tab shows its
	// newest line until the guest's processes come.
	var log io.Writer = stderr
	logPath := ""
	if !c.json {
		f, err := outfile.CreateTemp("", "crashtui-guest-*.log")
		if err != nil {
			return err
		}
		defer f.Close()
		log, logPath = f, f.Name()
		fmt.Fprintf(stderr, "crashtui: the guest's build and boot log goes to %s\n", f.Name())
	}
	fmt.Fprintf(log, "demo --guest: building crashtui and the guest's programs for %s, then booting QEMU %s\n", a.GOARCH, cpu)
	sampleEvery := "5s"
	if c.sampleEvery >= 0 {
		sampleEvery = c.sampleEvery.String()
	} else if c.json {
		sampleEvery = "0"
	}

	g, err := startGuest(a, cpu, guestCommand(sampleEvery), log, c.duration)
	if err != nil {
		return err
	}
	defer g.stop()

	start := time.Now()
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		g.stream(s, start, log)
	}()

	if c.json {
		// Requests on stdin, as the TUI's keys would send them: lets a script (the stage's
		// test) drive the guest's agent. EOF changes nothing.
		detached := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(os.Stdin)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" {
					continue
				}
				if line == "detach" {
					close(detached)
					return
				}
				if err := g.send(line); err != nil {
					s.emit(sessions.Event{Time: time.Now(), Body: sessions.Error{Op: "request", Message: err.Error()}})
				}
			}
		}()
		select {
		case <-streamed:
		case <-ctx.Done():
		case <-detached:
		}
	} else {
		go func() {
			<-streamed
			s.changes.close() // the guest ended: the session stays for reading
		}()
		every, _ := time.ParseDuration(sampleEvery)
		err = runTUI(ctx, c, tui.Options{Changed: s.changes.ch, State: s.state, Lock: &s.mu, Header: s.header,
			Mode: "demo", Control: g, Recording: c.record, SampleEvery: every, GuestLog: logPath})
	}
	// A guest that ended before it was asked to (a failed build, a boot that did not come
	// up, the agent's failure) is this command's failure.
	ended := false
	select {
	case <-g.done:
		ended = !g.stopped()
	default:
	}
	g.Detach()
	<-streamed
	if gerr := g.result(); gerr != nil && err == nil && ended {
		err = gerr
	}
	s.finish("")
	return err
}

// guest is one booted guest with its console: requests are written to in, the guest's
// output (the shell command's, filtered by qemu.BootCommand) is read from out.
type guest struct {
	in   *os.File // QEMU's stdin: the guest's console input
	inR  *os.File
	out  *io.PipeReader
	kill context.CancelFunc
	done chan struct{} // RunGuest returned
	err  error         // its error, or the command's bad exit status

	mu       sync.Mutex
	detached bool
	killed   bool
	once     sync.Once
}

func startGuest(a *qemu.Arch, cpu, command string, log io.Writer, duration time.Duration) (*guest, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW := io.Pipe()
	ctx, kill := context.WithCancel(context.Background())
	g := &guest{in: inW, inR: inR, out: outR, kill: kill, done: make(chan struct{})}
	timeout := time.Hour
	if duration > 0 {
		timeout = duration + 2*time.Minute
	}
	// The guest's programs are kept built between demos (in the cache, next to the kernel):
	// a warm start then links nothing anew.
	buildDir := ""
	if cache, err := a.DefaultCacheDir(); err == nil {
		buildDir = filepath.Join(cache, "demo-build")
	}
	go func() {
		defer close(g.done)
		status, err := qemu.RunGuest(ctx, qemu.GuestOptions{
			Arch: a, CPU: cpu, Command: command, Stdin: inR, Stdout: outW, WholeLines: true, Log: log, Timeout: timeout,
			BuildDir: buildDir,
		})
		if err == nil && status != 0 {
			err = fmt.Errorf("the guest's agent exited with status %d", status)
		}
		g.err = err
		outW.Close()
	}()
	return g, nil
}

// stream turns the guest's output into the session's events until the guest ends. The
// agent's own summary and merged stacks are dropped: this session derives both. Lines that
// are not events (a kernel message on the console, a shell's complaint) are skipped, the
// first one said as an error event, the rest only counted in the log.
func (g *guest) stream(s *session, start time.Time, log io.Writer) {
	first := true
	skipped := 0
	bad := func(le *sessions.LineError) {
		skipped++
		if skipped == 1 {
			s.emit(sessions.Event{Time: time.Now(), Host: guestHost, Body: sessions.Error{Op: "guest console",
				Message: fmt.Sprintf("skipping lines that are not events (the first: line %d, %v)", le.Line, le.Err)}})
		}
	}
	err := sessions.StreamEvents(g.out, func(e sessions.Event) {
		if k := e.Kind(); k == sessions.KindSummary || k == sessions.KindStacks {
			return
		}
		if first && e.Kind() == sessions.KindProcess {
			first = false
			fmt.Fprintf(log, "demo --guest: the guest's agent is attached: first process event %.1fs after start\n", time.Since(start).Seconds())
		}
		if e.Host == "" {
			e.Host = guestHost
		}
		s.emit(e)
	}, bad)
	if err != nil {
		var le *sessions.LineError
		if errors.As(err, &le) {
			bad(le)
		}
	}
	io.Copy(io.Discard, g.out) // keep the guest's console flowing until it ends
	if skipped > 1 {
		fmt.Fprintf(log, "demo --guest: %d console lines were not events\n", skipped)
	}
	<-g.done
	if g.err != nil && !g.stopped() {
		s.emit(sessions.Event{Time: time.Now(), Host: guestHost, Body: sessions.Error{Op: "guest", Message: g.err.Error()}})
	}
}

// send writes one request line down the console.
func (g *guest) send(line string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.done:
		return errors.New("the guest has ended")
	default:
	}
	if g.detached {
		return errors.New("the guest's agent is detaching")
	}
	_, err := io.WriteString(g.in, line+"\n")
	return err
}

func (g *guest) result() error {
	<-g.done
	return g.err
}

func (g *guest) stopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.detached || g.killed
}

// stop ends the guest: QEMU is killed if it is still running.
func (g *guest) stop() {
	g.mu.Lock()
	g.killed = true
	g.mu.Unlock()
	g.kill()
	<-g.done
	g.in.Close()
	g.inR.Close()
}

// tui.Controller over the console.

func (g *guest) Measure() error { return g.send("measure") }
func (g *guest) Sample() error  { return g.send("sample") }

func (g *guest) Checkpoint(policy sessions.Policy) error {
	if !policy.Valid() {
		return fmt.Errorf("checkpoint: unknown restore policy %q (want %s)", policy, sessions.PolicyList())
	}
	return g.send("checkpoint " + string(policy))
}

func (g *guest) AutoSample(on bool) {
	if on {
		g.send("autosample on")
	} else {
		g.send("autosample off")
	}
}

func (g *guest) Signal(pid int, sig string) error {
	if strings.ContainsAny(sig, " \n\r\t") {
		return fmt.Errorf("signal %d: bad signal name %q", pid, sig)
	}
	return g.send(fmt.Sprintf("signal %d %s", pid, sig))
}

func (g *guest) Release(pid int) error {
	return fmt.Errorf("process %d runs in the QEMU guest, which has no debugger to hand it to", pid)
}

func (g *guest) Reacquire(pid int) error { return nil }

func (g *guest) ProcDetail(pid int) (sessions.ProcDetail, error) {
	return sessions.ProcDetail{}, fmt.Errorf("process %d runs in the QEMU guest: its /proc is not this machine's", pid)
}

// Detach asks the agent to detach (it leaves sigpending running and ends with its summary;
// the guest then powers off), and ends the guest if it has not within 5 seconds.
func (g *guest) Detach() error {
	g.once.Do(func() {
		err := g.send("detach")
		g.mu.Lock()
		g.detached = true
		g.mu.Unlock()
		if err == nil {
			select {
			case <-g.done:
			case <-time.After(5 * time.Second):
			}
		}
		g.stop()
	})
	return nil
}
