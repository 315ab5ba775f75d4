package main

import (
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// screen is the terminal a user would look at: an emulator fed by the pty's master side.
type screen struct {
	mu  sync.Mutex
	emu *vt.Emulator
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.Write(p)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

// waitFor polls the screen (there is nothing else to wait on) until every want shows.
func (s *screen) waitFor(t *testing.T, timeout time.Duration, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		txt := s.text()
		missing := ""
		for _, w := range want {
			if !strings.Contains(txt, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return txt
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q:\n%s", missing, txt)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// The built-in demo driven through every screen as a user would: the real binary on a pty.
func TestDemoInTheTUI(t *testing.T) {
	needRoot(t)
	buildC(t, "rank")
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptm.Close() }) // after crashtui has exited: it must never block on a full tty
	const cols, rows = 140, 45
	pty.Setsize(ptm, &pty.Winsize{Cols: cols, Rows: rows})
	scr := &screen{emu: vt.NewEmulator(cols, rows)}
	go func() { // drain the emulator's replies (cursor reports) or its writes block
		buf := make([]byte, 256)
		for {
			n, err := scr.emu.Read(buf)
			if err != nil {
				return
			}
			ptm.Write(buf[:n])
		}
	}()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptm.Read(buf)
			if n > 0 {
				scr.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(crashtuiBin, "demo")
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Signal(syscall.SIGTERM) // crashtui ends its demo ranks and detaches
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		}
	})
	// key types one key and waits until the screen reacts: two keys written at once reach
	// Bubble Tea as one multi-rune key, as a paste would.
	key := func(k string) {
		before := scr.text()
		ptm.Write([]byte(k))
		deadline := time.Now().Add(3 * time.Second)
		for scr.text() == before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}

	scr.waitFor(t, 30*time.Second, "crashtui demo", "crashes 3 in 2 groups")

	key("3") // crashes: two groups, the solver's SIGSEGV twice and the assert
	scr.waitFor(t, 5*time.Second, "SIGSEGV", "solver_step", "SIGABRT", "abort: rank: rank.c:")
	txt := scr.text()
	if !strings.Contains(txt, "    2 SIGSEGV") && !strings.Contains(txt, "2 SIGSEGV") {
		t.Errorf("the SIGSEGV group does not show its count 2:\n%s", txt)
	}

	key("2") // the matrix: rank 2 runs under a seccomp profile, its row is red
	scr.waitFor(t, 10*time.Second, "measured inside each process")
	// Down to rank 2's row (column 0 stays): its reads are refused by its seccomp filter.
	key("j")
	key("j")
	scr.waitFor(t, 5*time.Second, "reason: seccomp")

	key("4") // threads: a simulated checkpoint with the correct restore
	key("c")
	scr.waitFor(t, 5*time.Second, "correct")
	key("\r")
	scr.waitFor(t, 20*time.Second, "read", "restart")

	key("5") // the log
	scr.waitFor(t, 5*time.Second, "crash")

	key("q")
	scr.waitFor(t, 5*time.Second, "quit")
	key("y")
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("crashtui exited with %v", waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("crashtui did not quit after q, y")
	}
}
