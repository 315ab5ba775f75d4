package tuitest

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"golang.org/x/sys/unix"
)

// fatalTB records Fatalf and ends the calling goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, a ...any) {
	f.msg = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

// keyOutcome runs Key on its own goroutine (a failing Key ends it) and returns the failure.
func keyOutcome(t *testing.T, s *Screen, k string) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); s.Key(tb, k) }()
	<-done
	return tb.msg
}

// The pty's line discipline is the "program" here: with ECHO on, a typed key shows on the
// screen and Key returns; with ECHO off and no reader nothing changes, and Key must fail the
// test (showing the screen) instead of letting the next key merge with this one.
func TestKeyWaitsForTheScreen(t *testing.T) {
	s := Open(t, 40, 5)
	defer func(d time.Duration) { KeyTimeout = d }(KeyTimeout)
	KeyTimeout = 300 * time.Millisecond

	if msg := keyOutcome(t, s, "x"); msg != "" {
		t.Fatalf("echoed key reported as unanswered: %s", msg)
	}
	if !strings.Contains(s.Text(), "x") {
		t.Fatalf("Key returned before the echo was on the screen:\n%s", s.Text())
	}

	tio, err := unix.IoctlGetTermios(int(s.TTY.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(int(s.TTY.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	msg := keyOutcome(t, s, "y")
	if !strings.Contains(msg, `did not change`) || !strings.Contains(msg, "x") {
		t.Fatalf("Key on a silent screen: %q, want a failure showing the screen", msg)
	}
}

// A frame that reaches the emulator in two pieces: WaitUntil, finding what it waits for in
// the first, returns only once the second has come, so that the text it returns is one
// frame's. The second piece is written only once the wait has seen the first.
func TestWaitForTakesWholeFrames(t *testing.T) {
	settle := settleAfter
	settleAfter = time.Hour // only the end of a frame says it is drawn
	t.Cleanup(func() { settleAfter = settle })
	s := Open(t, 40, 3)
	frame := func(top, bottom string) string {
		return "\x1b[H" + top + "\x1b[K\r\nmiddle\x1b[K\r\n" + bottom + "\x1b[K\x1b[3;H"
	}
	s.Write([]byte(frame("old top", "old bottom")))
	next := frame("new top", "new bottom")
	cut := strings.Index(next, "middle")
	s.Write([]byte(next[:cut]))
	rest := make(chan struct{})
	go func() {
		<-rest
		s.Write([]byte(next[cut:]))
	}()
	if txt, whole := s.snapshot(); !strings.Contains(txt, "new top") || whole {
		t.Fatalf("half a frame: the screen shows %q, whole %v; want the new top, not whole", txt, whole)
	}
	var once sync.Once
	txt := s.WaitUntil(t, 10*time.Second, func(txt string) string {
		if !strings.Contains(txt, "new top") {
			return `"new top"`
		}
		once.Do(func() { close(rest) })
		return ""
	})
	if !strings.Contains(txt, "new bottom") {
		t.Errorf("WaitUntil returned half a frame:\n%s", txt)
	}
}

// A Remote answers a program's terminal queries once each, a query split between two writes
// too, and keeps what the program writes after.
func TestRemoteAnswersQueries(t *testing.T) {
	r := OpenRemote(t, 80, 24)
	want := ""
	for _, q := range remoteAnswers {
		want += q.answer
	}
	// In raw mode the program reads the answers as they come and writes them back, in
	// octal so that they are not queries to answer again, then whatever else comes in a
	// second: nothing, if each query was answered once.
	script := fmt.Sprintf(`stty raw -echo; printf '\033]1'; sleep 0.3; printf '1;?\033\\\033[6n'; `+
		`head -c %d | od -An -b | tr -d ' \n'; echo; echo "more:$(timeout 1 head -c 1 | od -An -b)."`, len(want))
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.TTY, r.TTY, r.TTY
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	octal := ""
	for _, c := range []byte(want) {
		octal += fmt.Sprintf("%03o", c)
	}
	for deadline := patience.New(30 * time.Second); !strings.Contains(r.Tail(), "more:"); time.Sleep(20 * time.Millisecond) {
		if deadline.Passed() {
			t.Fatalf("the program never read its answers; it wrote %q", r.Tail())
		}
	}
	for deadline := patience.New(30 * time.Second); !strings.Contains(r.Tail(), "."); time.Sleep(20 * time.Millisecond) {
		if deadline.Passed() {
			t.Fatalf("the program never finished; it wrote %q", r.Tail())
		}
	}
	if tail := r.Tail(); !strings.Contains(tail, octal) || !strings.Contains(tail, "more:.") {
		t.Errorf("the program read %q, want the answers (%s) and nothing more", tail, octal)
	}
}
