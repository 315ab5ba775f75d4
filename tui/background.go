package tui

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Is the terminal's background light or dark? The palette's adaptive colours need to know:
// bright yellow and cyan are unreadable on white. termenv asks the terminal itself (OSC 11)
// but not under TERM=screen* or tmux* (tmux answers the query for its pane), and not on a
// terminal that is not the process's controlling one; when it does not ask, it says dark.
// So crashtui asks, once, before Bubble Tea reads the terminal: the OSC 11 query, then a
// cursor position request (CSI 6n) that every terminal answers, so that a terminal that does
// not know OSC 11 costs one round trip and no timeout.

// queryTimeout bounds the wait for the terminal's answers (ssh round trips included).
const queryTimeout = 1500 * time.Millisecond

// termBackground asks the terminal on in/out for its background colour; ok is false when it
// did not say (no OSC 11 answer), when crashtui runs in the background of its terminal
// (reading it would stop crashtui with SIGTTIN), or when in is not a terminal.
func termBackground(in, out *os.File, timeout time.Duration) (dark, ok bool) {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, false // not a terminal
	}
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg != unix.Getpgrp() {
		return false, false // a background job: the terminal is someone else's now
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 0, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return false, false
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	if _, err := out.WriteString("\x1b]11;?\x1b\\\x1b[6n"); err != nil {
		return false, false
	}
	var got []byte
	buf := make([]byte, 256)
	deadline := time.Now().Add(timeout)
	for !cprIn(got) {
		left := time.Until(deadline)
		if left <= 0 || len(got) > 4096 {
			break
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		k, err := unix.Read(fd, buf)
		if k <= 0 || err != nil {
			break
		}
		got = append(got, buf[:k]...)
	}
	return parseOSC11(got)
}

// cprIn says whether b holds a cursor position report (ESC [ row ; col R), the answer that
// ends the query.
func cprIn(b []byte) bool {
	for i := bytes.Index(b, []byte("\x1b[")); i >= 0; {
		j := i + 2
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';') {
			j++
		}
		if j < len(b) && b[j] == 'R' && j > i+2 {
			return true
		}
		next := bytes.Index(b[i+2:], []byte("\x1b["))
		if next < 0 {
			return false
		}
		i += 2 + next
	}
	return false
}

// parseOSC11 reads the terminal's answer to OSC 11 in b: ESC ] 11 ; rgb:RRRR/GGGG/BBBB
// (1 to 4 hex digits a channel, xterm's form) or #RRGGBB, ended by BEL or ST. dark is its
// luminance below one half.
func parseOSC11(b []byte) (dark, ok bool) {
	i := bytes.Index(b, []byte("\x1b]11;"))
	if i < 0 {
		return false, false
	}
	s := string(b[i+5:])
	if j := strings.IndexAny(s, "\x07\x1b"); j >= 0 {
		s = s[:j]
	}
	var ch [3]float64
	switch {
	case strings.HasPrefix(s, "rgb:") || strings.HasPrefix(s, "rgba:"):
		parts := strings.Split(s[strings.IndexByte(s, ':')+1:], "/")
		if len(parts) < 3 {
			return false, false
		}
		for k := 0; k < 3; k++ {
			p := parts[k]
			if len(p) == 0 || len(p) > 4 {
				return false, false
			}
			v, err := strconv.ParseUint(p, 16, 16)
			if err != nil {
				return false, false
			}
			ch[k] = float64(v) / float64(uint64(1)<<(4*len(p))-1)
		}
	case strings.HasPrefix(s, "#") && len(s) == 7:
		for k := 0; k < 3; k++ {
			v, err := strconv.ParseUint(s[1+2*k:3+2*k], 16, 8)
			if err != nil {
				return false, false
			}
			ch[k] = float64(v) / 255
		}
	default:
		return false, false
	}
	// Rec. 601 luma: what the eye takes for light.
	return 0.299*ch[0]+0.587*ch[1]+0.114*ch[2] < 0.5, true
}
