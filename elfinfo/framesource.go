package elfinfo

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// maxFuncOff is the farthest a frame's pc may be from its function's start for its code to be
// read: instructions are decoded from the start (on x86 they line up only from a boundary),
// and a larger offset is more likely a wrong symbol than a long function.
const maxFuncOff = 4096

// ReadFrameSource reads a frame's source line with two lines of context either side (when its
// file is readable here) and the code of its function from the start to 32 bytes past the
// pc, from the module's file: no process is touched. It is the Stacks tab's detail, read off
// the TUI's Update by the command the TUI is given (tui.Options.Source): a source file on a
// slow file system must stall neither the screen nor the tracer's events.
func ReadFrameSource(f sessions.StackFrame) sessions.FrameSource {
	var fs sessions.FrameSource
	if f.File != "" && f.Line > 0 {
		first := max(1, f.Line-2)
		if lines, err := readSourceLines(f.File, first, f.Line+2); err == nil {
			fs.First, fs.Lines = first, lines
		} else {
			fs.Unread = fmt.Sprintf("source %s:%d is not readable here", f.File, f.Line)
		}
	}
	if !strings.HasPrefix(f.Module, "/") || f.Function == "" || f.FuncOff > maxFuncOff {
		return fs
	}
	start := uint64(f.Offset) - uint64(f.FuncOff)
	if code, a, err := ReadCode(f.Module, start, int(f.FuncOff)+32); err == nil && a != "" {
		fs.Code, fs.CodeAt, fs.Arch = code, sessions.Hex(start), a
	}
	return fs
}

// readSourceLines reads lines from to to (1-based, inclusive) of the file at path.
func readSourceLines(path string, from, to int) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	var out []string
	for no := 1; sc.Scan() && no <= to; no++ {
		if no >= from {
			out = append(out, sc.Text())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no line %d", path, from)
	}
	return out, sc.Err()
}
