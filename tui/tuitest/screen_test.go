package tuitest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

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
