package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// readLineWithin reads one line from r, or fails the test after d.
func readLineWithin(t *testing.T, r *bufio.Reader, d time.Duration) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		l, _ := r.ReadString('\n')
		ch <- l
	}()
	select {
	case l := <-ch:
		return strings.TrimSpace(l)
	case <-patience.After(d):
		t.Fatalf("no line within %v", d)
		return ""
	}
}

// TestTUISignalK: K on the Processes tab sends the chosen signal to the selected process, after
// a dialog that names it, and the process really gets it: its SIGUSR1 handler runs, SIGSTOP
// stops it (the kernel's state and, after a sample, the STATE column say so), SIGCONT resumes
// it, and SIGTERM ends it with that signal in the wait status its parent (this test) reaps.
func TestTUISignalK(t *testing.T) {
	needRoot(t)
	prog := exec.Command(buildC(t, "usr1"))
	out, err := prog.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- prog.Wait() }()
	t.Cleanup(func() {
		prog.Process.Signal(syscall.SIGCONT)
		prog.Process.Kill()
		<-waited
	})
	rd := bufio.NewReader(out)
	if l := readLineWithin(t, rd, 10*time.Second); l != "ready" {
		t.Fatalf("usr1 said %q", l)
	}
	pid := prog.Process.Pid

	scr := tuitest.Open(t, 100, 30)
	cmd := exec.Command(crashtuiBin, "attach", "--matrix", "off", "--sample-every", "0", "pid:"+strconv.Itoa(pid))
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	proc := startWaited(t, cmd, syscall.SIGTERM)
	scr.WaitFor(t, 20*time.Second, "procs 1/1", "K signal")

	// send opens the dialog, moves to sig (right from TERM) and sends it.
	send := func(sig string) {
		t.Helper()
		scr.Key(t, "K")
		scr.WaitFor(t, 5*time.Second, "Send a signal", fmt.Sprintf("pid %d · rank - · usr1", pid))
		for !strings.Contains(scr.Text(), "["+strings.TrimPrefix(sig, "SIG")+"]") {
			scr.Key(t, "l")
		}
		scr.WaitFor(t, 5*time.Second, fmt.Sprintf("Send %s to pid %d (rank -, usr1)?", sig, pid))
		scr.Key(t, "\r")
		scr.WaitFor(t, 10*time.Second, fmt.Sprintf("%s to pid %d (rank -) done", sig, pid))
	}

	send("SIGUSR1")
	if l := readLineWithin(t, rd, 10*time.Second); l != "usr1 1" {
		t.Fatalf("after K SIGUSR1 the program said %q, want its handler's \"usr1 1\"", l)
	}

	send("SIGSTOP")
	waitState(t, pid, "Tt")
	scr.Key(t, "S") // a sample: STATE comes from it (S shows the Stacks tab)
	scr.WaitFor(t, 10*time.Second, "stack sample done")
	scr.Key(t, "1")
	txt := scr.WaitFor(t, 10*time.Second, "state as of")
	if row := rowWith(txt, strconv.Itoa(pid)); !strings.Contains(row, " T ") && !strings.Contains(row, " t ") {
		t.Errorf("the stopped process's STATE is not T or t: %q\n%s", row, txt)
	}

	send("SIGCONT")
	waitState(t, pid, "S")
	scr.Key(t, "S")
	scr.WaitFor(t, 10*time.Second, "stack sample done")
	scr.Key(t, "1")
	scr.WaitFor(t, 10*time.Second, "S pause")

	send("SIGTERM")
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Fatalf("usr1 ended with %v, want killed by SIGTERM", err)
		}
		waited <- err // for the cleanup
	case <-patience.After(10 * time.Second):
		t.Fatal("usr1 did not end after K SIGTERM")
	}
	scr.WaitFor(t, 10*time.Second, "killed SIGTERM")
	scr.Key(t, "K") // an ended process is not signalled again
	scr.WaitFor(t, 5*time.Second, "has ended")

	scr.Type("q")
	select {
	case <-proc.exited:
		if proc.err != nil {
			t.Errorf("crashtui exited with %v", proc.err)
		}
	case <-patience.After(20 * time.Second):
		t.Fatalf("crashtui did not quit on q:\n%s", scr.Text())
	}
}

// rowWith is the Processes row whose PID column is pid.
func rowWith(txt, pid string) string {
	for _, l := range strings.Split(txt, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == pid {
			return l
		}
	}
	return ""
}

// TestTUIGdbOnCore: a crashing C program under crashtui run --cores; the Crashes detail
// shows the core's path, D asks naming the core, pid and rank, y opens gdb EXE CORE in the
// terminal on the representative's core,
// gdb's backtrace names the crashing function, and quitting gdb comes back to crashtui.
func TestTUIGdbOnCore(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb is not installed (make test installs it with apt-get)")
	}
	segv := buildC(t, "segv")
	cores := t.TempDir()
	scr := tuitest.Open(t, 120, 40)
	// The shell raises RLIMIT_CORE for the rank: crashtui honours each process's own limit.
	cmd := exec.Command("/bin/sh", "-c", `ulimit -c unlimited; exec "$0" "$@"`, crashtuiBin, "run", "--matrix", "off",
		"--sample-every", "0", "--cores", cores, "--", segv)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	proc := startWaited(t, cmd, syscall.SIGTERM)
	scr.WaitFor(t, 30*time.Second, "crashtui run", "crashes 1 in 1 group")
	scr.Key(t, "3")
	scr.WaitFor(t, 10*time.Second, "crash_here", "SIGSEGV")
	scr.Key(t, "\r")
	txt := scr.WaitFor(t, 10*time.Second, "core "+cores+"/core.1.")
	core := strings.Fields(txt[strings.Index(txt, "core "+cores):])[1]
	if _, err := os.Stat(core); err != nil {
		t.Fatalf("the detail names core %s: %v", core, err)
	}
	scr.Key(t, "D")
	scr.WaitFor(t, 10*time.Second, "Open gdb on "+filepath.Base(core)+" (pid ", "rank 0)? y/n")
	scr.Key(t, "y")
	scr.WaitFor(t, 30*time.Second, "(gdb)", "Core was generated by", "SIGSEGV")
	scr.Type("bt\r")
	scr.WaitFor(t, 10*time.Second, "#0", "crash_here", "main")
	scr.Type("quit\r")
	scr.WaitFor(t, 20*time.Second, "gdb on "+filepath.Base(core)+" done in")
	scr.WaitFor(t, 5*time.Second, "core "+core) // back on the same detail

	scr.Type("q")
	select {
	case <-proc.exited:
		if proc.err != nil {
			t.Errorf("crashtui exited with %v", proc.err)
		}
	case <-patience.After(20 * time.Second):
		t.Fatalf("crashtui did not quit on q:\n%s", scr.Text())
	}
}
