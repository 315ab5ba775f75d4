package tui

import (
	"context"
	"encoding/base64"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui/tuitest"
	"github.com/crashtui/crashtui/views"
	"github.com/crashtui/crashtui/views/viewtest"
)

// The second pass's pty tests (issue 25): the program on a real pseudo-terminal, keys in,
// screen text out, at the two sizes a user has most often, a laptop's 80×24 and a wide 200×50.

var ptySizes = []struct{ w, h int }{{80, 24}, {200, 50}}

func sizeName(w, h int) string { return fmt.Sprintf("%dx%d", w, h) }

// ptyTUI is Run on a pty.
type ptyTUI struct {
	*tuitest.Screen
	done chan error
}

// startPty runs the program with o on a w×h pty; it is ended (its context cancelled) and
// waited for at cleanup.
//
// NO_COLOR is set unless the test set it: the cursor row is then marked with a ">", which
// the screen's text shows (reverse video it does not).
func startPty(t *testing.T, w, h int, o Options) *ptyTUI { return startPtyOn(t, w, h, nil, o) }

// startPtyOn is startPty on a terminal whose background is bg.
func startPtyOn(t *testing.T, w, h int, bg color.Color, o Options) *ptyTUI {
	t.Helper()
	if _, ok := os.LookupEnv("NO_COLOR"); !ok {
		t.Setenv("NO_COLOR", "1")
	}
	scr := tuitest.OpenOn(t, w, h, bg)
	o.Input, o.Output = scr.TTY, scr.TTY
	ctx, cancel := context.WithCancel(context.Background())
	p := &ptyTUI{Screen: scr, done: make(chan error, 1)}
	go func() {
		_, err := Run(ctx, o)
		p.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Errorf("the program did not end 20 s after its context")
		}
	})
	return p
}

// quit presses q (and y when asked) and waits for Run to return.
func (p *ptyTUI) quit(t *testing.T) {
	t.Helper()
	p.Type("q")
	deadline := time.After(15 * time.Second)
	for {
		select {
		case err := <-p.done:
			p.done <- err // for the cleanup
			if err != nil {
				t.Errorf("Run: %v", err)
			}
			return
		case <-deadline:
			t.Fatalf("q did not end the program:\n%s", p.Text())
		case <-time.After(100 * time.Millisecond):
			if strings.Contains(p.Text(), "y confirm") {
				p.Type("y")
			}
		}
	}
}

// liveEvents streams evs into a channel that stays open (a tracer still running) until the
// test ends.
func liveEvents(t *testing.T, evs []sessions.Event) <-chan sessions.Event {
	ch := make(chan sessions.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	t.Cleanup(func() { close(ch) })
	return ch
}

// withStack is the fixture with a stack sample of mpirun (pid 4100, alive), in wait_ranks.
func withStack() []sessions.Event {
	evs := procFixture()
	at := evs[len(evs)-1].Time.Add(time.Second)
	return append(evs, sessions.Event{Time: at, Body: sessions.Sample{Seq: 2, PID: 4100, Rank: sessions.NoRank, Threads: []sessions.ThreadSample{
		{TID: 4100, State: "S", Syscall: "nanosleep", Held: true, Frames: []sessions.Frame{
			{PC: 0x401000, Module: "/usr/bin/mpirun", Offset: 0x1000, Function: "wait_ranks"},
			{PC: 0x401100, Module: "/usr/bin/mpirun", Offset: 0x1100, Function: "main"}}}}}})
}

// slowRelease is a controller whose Release waits until the test lets it return: the keys
// typed meanwhile are the ones that must not reach the debugger.
type slowRelease struct {
	recorder
	release chan struct{}
}

func (s *slowRelease) Release(pid int) error {
	<-s.release
	return s.recorder.Release(pid)
}

// fakeGdb installs a gdb on PATH that records what was already typed when it started (the
// input it can read without waiting), says it runs, and exits on a line of input.
func fakeGdb(t *testing.T) (typedAhead string) {
	t.Helper()
	bin := t.TempDir()
	typedAhead = filepath.Join(bin, "typed-ahead")
	script := `#!/bin/sh
stty -icanon min 0 time 0
cat > ` + typedAhead + `
stty icanon
echo "FAKE GDB $*"
read line
`
	if err := os.WriteFile(filepath.Join(bin, "gdb"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	return typedAhead
}

// Item 1: g and G are the top and the bottom on every tab; D hands a process to the
// debugger (Stacks, Processes) or opens gdb on a core (Crashes), after a one-line question
// naming the pid and the rank; the keys typed while crashtui lets go are dropped, not typed
// into gdb.
func TestOneKeyOneMeaningOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			typedAhead := fakeGdb(t)
			core := filepath.Join(t.TempDir(), "core.1.4102")
			if err := os.WriteFile(core, []byte("not a core"), 0o600); err != nil {
				t.Fatal(err)
			}
			evs := withStack()
			for i, e := range evs {
				if c, ok := e.Body.(sessions.Crash); ok && c.PID == 4102 {
					c.Core = &core
					evs[i].Body = c
				}
			}
			ctrl := &slowRelease{release: make(chan struct{})}
			p := startPty(t, sz.w, sz.h, Options{Events: liveEvents(t, evs), Control: ctrl, Header: viewtest.Header(), Mode: "attach"})
			p.WaitFor(t, 15*time.Second, "● live", "procs ")

			// Processes: G goes to the last row, g back to the first; neither asks anything.
			p.Key(t, "G")
			p.waitCursor(t, "4110")
			p.Key(t, "g")
			p.waitCursor(t, "4100")
			if txt := p.Text(); strings.Contains(txt, "y/n") {
				t.Fatalf("g asked a question:\n%s", txt)
			}

			// Stacks: g is the top, D asks naming pid and rank, n cancels.
			p.Key(t, "5")
			p.WaitFor(t, 5*time.Second, ">main")
			p.Type("g") // already at the top: nothing changes, nothing is asked
			p.Key(t, "D")
			p.WaitFor(t, 5*time.Second, "Hand pid 4100 (mpirun, no rank) to a debugger? y/n")
			p.Key(t, "n")
			p.WaitFor(t, 5*time.Second, "cancelled: nothing was started")

			// y: crashtui lets go; the keys typed meanwhile are counted and dropped.
			p.Key(t, "D")
			p.Key(t, "y")
			p.WaitFor(t, 5*time.Second, "letting go of pid 4100")
			p.Key(t, "j")
			p.WaitFor(t, 5*time.Second, "1 key ignored until it starts")
			p.Type("jjq")
			p.WaitFor(t, 5*time.Second, "4 keys ignored until it starts")
			close(ctrl.release)
			p.WaitFor(t, 10*time.Second, "FAKE GDB -q -p 4100")
			p.Type("quit\r")
			p.WaitFor(t, 10*time.Second, "pid 4100 traced again")
			if b, err := os.ReadFile(typedAhead); err != nil || len(b) != 0 {
				t.Errorf("the debugger started with typed-ahead input %q (%v)", b, err)
			}
			if calls := ctrl.Calls(); len(calls) != 2 || calls[0] != "release 4100" || calls[1] != "reacquire 4100" {
				t.Errorf("controller calls %v", calls)
			}

			// Crashes: g and G move the list; D asks about the core, y opens gdb on it.
			p.Key(t, "3")
			p.WaitFor(t, 5*time.Second, "SIGSEGV")
			p.Key(t, "G")
			p.Key(t, "g")
			p.Key(t, "D")
			p.WaitFor(t, 5*time.Second, "Open gdb on core.1.4102 (pid 4102, rank 1)? y/n")
			p.Key(t, "y")
			p.WaitFor(t, 10*time.Second, "FAKE GDB -q", core)
			p.Type("quit\r")
			p.WaitFor(t, 10*time.Second, "gdb on core.1.4102 done in")
			p.quit(t)
		})
	}
}

// Item 2: the help overlay fits: at 80×24 every group is there whole (its fifth, the
// replay's, too), scrolling with j when it is taller than the screen; at 200×50 the groups
// stand side by side on one row.
func TestHelpFitsOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			p := startPty(t, sz.w, sz.h, Options{Replay: viewtest.Events(), Header: viewtest.Header(), Mode: "replay"})
			p.WaitFor(t, 15*time.Second, "crashtui replay")
			p.Key(t, "?")
			txt := p.WaitFor(t, 5*time.Second, "Processes keys", "move", "tabs", "actions", "replay", "space  play", "esc closes")
			if sz.w >= 200 {
				p.WaitFor(t, 5*time.Second, "ctrl+c  quit now")
				if l := lineWith(txt, "Processes keys"); !strings.Contains(l, "replay") {
					t.Errorf("at %d columns the groups are not side by side: %q", sz.w, l)
				}
				return
			}
			for !strings.Contains(p.Text(), "}      end") {
				if !strings.Contains(p.Text(), "more below") {
					t.Fatalf("the help ends before the replay keys and says no more:\n%s", p.Text())
				}
				p.Key(t, "j")
			}
			p.WaitFor(t, 5*time.Second, "k scrolls back", "{      start", "ctrl+c  quit now")
			p.Key(t, "\x1b")
			p.quit(t)
		})
	}
}

// cursorLine is the screen's line with the NO_COLOR cursor marker.
func cursorLine(txt string) string {
	for _, l := range strings.Split(txt, "\n") {
		if strings.HasPrefix(l, ">") {
			return l
		}
	}
	return ""
}

// waitCursor waits until the cursor's line contains want.
func (p *ptyTUI) waitCursor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(cursorLine(p.Text()), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the cursor is not on %q:\n%s", want, p.Text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// moveTo presses down until the cursor's line contains want.
// Each j is typed once the one before it has moved the cursor (its line changed), not on
// any change of the screen: a tab still being painted changed it, and a second j typed then
// came after the program had read the first, to move the cursor later, off what was reached
// (under load, after the next events had arrived).
func (p *ptyTUI) moveTo(t *testing.T, want string) {
	t.Helper()
	line := p.cursorMoved(t, "")
	for i := 0; !strings.Contains(line, want); i++ {
		if i > 40 {
			t.Fatalf("the cursor never reached %q:\n%s", want, p.Text())
		}
		p.Type("j")
		line = p.cursorMoved(t, line)
	}
}

// cursorMoved waits until the cursor's line is shown and is not from, and returns it.
func (p *ptyTUI) cursorMoved(t *testing.T, from string) string {
	t.Helper()
	deadline := patience.New(tuitest.KeyTimeout)
	for {
		if l := cursorLine(p.Text()); l != "" && l != from {
			return l
		}
		if deadline.Passed() {
			t.Fatalf("the cursor's line did not change from %q:\n%s", from, p.Text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stackSample(seq, pid int, fns ...string) sessions.Sample {
	var fs []sessions.Frame
	for i := len(fns) - 1; i >= 0; i-- { // fns are outermost first, a stack innermost first
		fs = append(fs, sessions.Frame{PC: sessions.Hex(0x401000 + 0x100*i), Module: "/usr/bin/x", Offset: sessions.Hex(0x1000 + 0x100*i), Function: fns[i]})
	}
	return sessions.Sample{Seq: seq, PID: pid, Rank: sessions.NoRank, Threads: []sessions.ThreadSample{{TID: pid, State: "S", Held: true, Frames: fs}}}
}

// Item 3: the cursor stays on what the user selected when updates reorder the lists: a
// process joining above the selected one, a sample that adds a bigger branch to the stacks,
// a new checkpoint; e then explains what is selected.
func TestSelectionByIdentityOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			evs := procFixture()
			at := evs[len(evs)-1].Time
			ev := func(b sessions.Body) sessions.Event {
				at = at.Add(time.Second)
				return sessions.Event{Time: at, Body: b}
			}
			evs = append(evs, ev(stackSample(2, 4100, "main", "wait_ranks")), ev(stackSample(2, 4110, "main", "watch_loop")))
			ch := make(chan sessions.Event, len(evs)+16)
			for _, e := range evs {
				ch <- e
			}
			t.Cleanup(func() { close(ch) })
			p := startPty(t, sz.w, sz.h, Options{Events: ch, Control: &recorder{}, Header: viewtest.Header(), Mode: "attach"})
			p.WaitFor(t, 15*time.Second, "● live", "job-helper")

			// Processes: the helper stays selected when a rank joins above it.
			p.Key(t, "G")
			p.waitCursor(t, "4110")
			ch <- ev(sessions.Process{PID: 4120, PPID: 4100, Rank: 4, Exe: "/home/ada/solver", Comm: "solver", Argv: []string{"./solver"}, UID: 1000, Threads: 1})
			txt := p.WaitFor(t, 5*time.Second, "4120")
			if l := cursorLine(txt); !strings.Contains(l, "4110") {
				t.Errorf("a process that joined moved the cursor off pid 4110: %q\n%s", l, txt)
			}

			// Stacks: watch_loop stays selected when a bigger branch sorts before it.
			p.Key(t, "5")
			p.WaitFor(t, 5*time.Second, "watch_loop")
			p.moveTo(t, "watch_loop")
			ch <- ev(stackSample(3, 4100, "main", "alpha_first", "alpha_inner"))
			ch <- ev(stackSample(3, 4120, "main", "alpha_first", "alpha_inner"))
			ch <- ev(stackSample(3, 4110, "main", "watch_loop"))
			// Three classes: rank 4's alpha path, the job-helper's watch_loop, and mpirun's
			// alpha path apart from rank 4's (mpirun launched rank 4: its threads are put aside).
			txt = p.WaitFor(t, 5*time.Second, "alpha_inner", "watch_loop", "3 classes")
			if l := cursorLine(txt); !strings.Contains(l, "watch_loop") {
				t.Errorf("a sample moved the cursor off watch_loop: %q\n%s", l, txt)
			}
			p.Key(t, "e") // the frame is drawn in pieces: wait for the title that names the class
			p.WaitFor(t, 5*time.Second, "1 thread on one path (pid 4110)", "What: 1 thread of pid 4110")
			p.Key(t, "\x1b")

			// Threads: tid 4201 stays selected when a new checkpoint lists a thread before it.
			p.Key(t, "4")
			p.WaitFor(t, 5*time.Second, "ON RESUME", "4201")
			p.moveTo(t, "4201")
			ch <- ev(sessions.Thread{Checkpoint: 2, Policy: "correct", PID: 4100, TID: 4100, Arch: "amd64", InSyscall: true, Syscall: "nanosleep", Code: "ERESTART_RESTARTBLOCK"})
			ch <- ev(sessions.Thread{Checkpoint: 2, Policy: "correct", PID: 4100, TID: 4300, Arch: "amd64", InSyscall: true, Syscall: "poll", Code: "ERESTART_RESTARTBLOCK"})
			ch <- ev(sessions.Thread{Checkpoint: 2, Policy: "correct", PID: 4101, TID: 4201, Arch: "amd64", InSyscall: true, Syscall: "futex", Code: "ERESTARTSYS"})
			txt = p.WaitFor(t, 5*time.Second, "checkpoint #2 (correct) at 01:00:08 · 3 threads")
			if l := cursorLine(txt); !strings.Contains(l, "4201") {
				t.Errorf("a new checkpoint moved the cursor off tid 4201: %q\n%s", l, txt)
			}
			p.quit(t)
		})
	}
}

// demoRecording is the recorded demo (demo/session.jsonl).
func demoRecording(t *testing.T) (sessions.Header, []sessions.Event) {
	t.Helper()
	return recordingAt(t, filepath.Join("..", "demo", "session.jsonl"))
}

// Item 4: columns take the width their content needs: the syscall names whole, the command
// line whole at 200 columns; the header keeps the replay's position in view when the job's
// name is long; the detail wraps between tokens (a path after a "/", never inside a number).
func TestNothingThatMattersIsCutOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			h, evs := demoRecording(t)
			for i, e := range evs {
				if s, ok := e.Body.(sessions.Session); ok {
					s.Kernel += "-with-a-long-local-version-string"
					evs[i].Body = s
				}
			}
			p := startPty(t, sz.w, sz.h, Options{Replay: evs, Header: h, Mode: "replay"})
			p.WaitFor(t, 15*time.Second, "crashtui replay")
			p.Key(t, "}")
			p.WaitFor(t, 5*time.Second, "■ end 0:17/0:17", "[94/94]") // the right of the header, whatever the left
			if sz.w >= 200 {
				p.WaitFor(t, 5*time.Second, "/root/.cache/crashtui/demo/05c26d4ae013/rank") // COMMAND whole
			}
			p.Key(t, "4")
			p.WaitFor(t, 5*time.Second, " restart_syscall ", " clock_nanosleep ") // SYSCALL whole
			p.Key(t, "\r")
			txt := p.WaitFor(t, 5*time.Second, "args (0x7fffc4a50370, 0x1,")
			for _, tok := range []string{"0x7f7b967768d0,", "rax=-516", "rax=-4;", "0x7f7b9686426f"} {
				if !strings.Contains(txt, tok) {
					t.Errorf("the thread detail cut %q:\n%s", tok, txt)
				}
			}
			p.Key(t, "\x1b")
			p.Key(t, "3")
			p.Key(t, "\r")
			txt = p.WaitFor(t, 5*time.Second, "key: ", "siginfo")
			if !strings.Contains(txt, "rank+0x1297") {
				t.Errorf("the crash key's offset is cut:\n%s", txt)
			}
			if !strings.Contains(lineWith(txt, "? help"), "q quit") {
				t.Errorf("the footer lost q:\n%s", txt)
			}
			p.quit(t)
		})
	}
}

// recording reads one of demo/sessions/*.jsonl.
func recording(t *testing.T, name string) (sessions.Header, []sessions.Event) {
	t.Helper()
	return recordingAt(t, filepath.Join("..", "demo", "sessions", name))
}

// recordingAt reads the recording at path.
func recordingAt(t *testing.T, path string) (sessions.Header, []sessions.Event) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, evs, err := sessions.ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	return h, evs
}

// Item 5: the words a user reads: singulars where there is one, no "session session", no
// project jargon ("seed 002") in a recording's explanations, UID (not USER) where the uids
// are another machine's, and q says it ends the job crashtui started.
func TestWordsOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h)+"/replay", func(t *testing.T) {
			h, evs := recording(t, "power10-scv-sc-only.jsonl")
			p := startPty(t, sz.w, sz.h, Options{Replay: evs, Header: h, Mode: "replay"})
			p.WaitFor(t, 15*time.Second, "crashtui replay")
			p.Key(t, "}")
			txt := p.WaitFor(t, 5*time.Second, "■ end", " UID ")
			if strings.Contains(txt, " USER ") {
				t.Errorf("a replay's uids are named from this machine:\n%s", txt)
			}
			p.Key(t, "4")
			p.Key(t, "\r")
			txt = p.WaitFor(t, 5*time.Second, "checkpoint-restore/criu#2261")
			if strings.Contains(txt, "seed 002") {
				t.Errorf("the thread detail speaks of seed 002:\n%s", txt)
			}
			p.Key(t, "\x1b")
			p.Key(t, "6")
			txt = p.WaitFor(t, 5*time.Second, "session checkpoint · job pid:84")
			if strings.Contains(txt, "session session") {
				t.Errorf("the Log says session twice:\n%s", txt)
			}
			p.quit(t)
		})
		t.Run(sizeName(sz.w, sz.h)+"/run", func(t *testing.T) {
			evs := procFixture()
			evs = append(evs, sessions.Event{Time: evs[len(evs)-1].Time.Add(time.Second), Body: sessions.Exit{PID: 4110, Code: new(int)}})
			p := startPty(t, sz.w, sz.h, Options{Events: liveEvents(t, evs), Control: &recorder{}, Header: viewtest.Header(), Mode: "run"})
			p.WaitFor(t, 15*time.Second, "procs 1/6", "q end job & quit")
			p.Key(t, "q")
			p.WaitFor(t, 5*time.Second, "End the 1 process crashtui started and quit?")
			p.Key(t, "n")
			p.Key(t, "2")
			p.Key(t, "j")
			p.WaitFor(t, 5*time.Second, "6 processes", "rank 0 (pid 4101) → pid 4100")
			p.quit(t)
		})
	}
}

// Item 6: every list filters with / (the matches highlighted, n and N going through them)
// and sorts with s (r reverses), the column marked ▲ or ▼; the Log's filter matches only what
// its rows show.
func TestFindAndSortEverywhereOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			h, evs := demoRecording(t)
			p := startPty(t, sz.w, sz.h, Options{Replay: evs, Header: h, Mode: "replay"})
			p.WaitFor(t, 15*time.Second, "crashtui replay")
			p.Key(t, "}")
			p.WaitFor(t, 5*time.Second, "■ end")

			// Processes: the filter, n/N through its matches, a sort and its reverse.
			p.Key(t, "/")
			p.Type("SEGV")
			p.Key(t, "\r")
			txt := p.WaitFor(t, 5*time.Second, "2 of 8 processes match", "filter: SEGV")
			if strings.Contains(txt, "killed SIGINT") {
				t.Errorf("the filter kept rows that do not match:\n%s", txt)
			}
			p.waitCursor(t, "22576")
			p.Key(t, "n")
			p.waitCursor(t, "22577")
			p.Key(t, "N")
			p.waitCursor(t, "22576")
			p.Key(t, "\x1b")
			p.Key(t, "s")
			p.WaitFor(t, 5*time.Second, "sort: rank", "RANK▲")
			p.Key(t, "r")
			txt = p.WaitFor(t, 5*time.Second, "sort: rank reversed", "RANK▼")
			if strings.Index(txt, " 7    22579") > strings.Index(txt, " 0    22572") {
				t.Errorf("r did not reverse the rank order:\n%s", txt)
			}

			// Crashes, Threads, Stacks: each filters and sorts.
			p.Key(t, "3")
			p.Key(t, "/")
			p.Type("assert")
			p.Key(t, "\r")
			txt = p.WaitFor(t, 5*time.Second, "1 of 2 groups match")
			if strings.Contains(txt, "solver_step") {
				t.Errorf("Crashes' filter kept the SIGSEGV group:\n%s", txt)
			}
			p.Key(t, "s")
			p.WaitFor(t, 5*time.Second, "COUNT▼")
			p.Key(t, "4")
			p.Key(t, "/")
			p.Type("futex")
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "1 thread matches", "22582")
			p.Key(t, "s")
			p.WaitFor(t, 5*time.Second, "TID▲")
			p.Key(t, "5")
			p.Key(t, "/")
			p.Type("poll")
			p.Key(t, "\r")
			txt = p.WaitFor(t, 5*time.Second, "1 frame matches", "__poll", "main")
			if strings.Contains(txt, "─ in_read") {
				t.Errorf("Stacks' filter kept a branch without the match:\n%s", txt)
			}
			p.waitCursor(t, "__poll") // n skips the callers shown for context: it is on the match
			p.Key(t, "s")
			p.WaitFor(t, 5*time.Second, "FRAME (by function)▲")

			// Log: the filter matches what a row shows, not what its cut hides.
			p.Key(t, "6")
			p.Key(t, "/")
			p.Type("SIGSEGV")
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "13 of 64 events match")
			p.Key(t, "\x1b")
			p.Key(t, "/")
			p.Type("libc_start") // only in the crash events' stacks, never on their rows
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "0 of 64 events match")
			p.Key(t, "\x1b")
			p.Key(t, "r")
			txt = p.WaitFor(t, 5*time.Second, "newest first")
			if !strings.Contains(cursorLine(txt), "summary") {
				t.Errorf("r did not put the newest event first, under the cursor:\n%s", txt)
			}
			p.quit(t)
		})
	}
}

// Item 7: y copies the selection's most useful text with OSC 52 (a pid, a core, a stack); the
// mouse is reported in cell-motion mode, never all-motion (a shift-drag still selects), and M
// turns it off and on.
func TestCopyAndMouseOnPty(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("TMUX", "")
	osc52 := func(s string) string { return "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(s)) + "\a" }
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			h, evs := demoRecording(t)
			p := startPty(t, sz.w, sz.h, Options{Replay: evs, Header: h, Mode: "replay"})
			p.WaitFor(t, 15*time.Second, "crashtui replay")
			p.Key(t, "}")
			p.WaitFor(t, 5*time.Second, "■ end")
			if raw := p.Raw(); !strings.Contains(raw, "\x1b[?1002h") || strings.Contains(raw, "\x1b[?1003h") {
				t.Errorf("the mouse is not in cell-motion mode (1002) only: %q", raw[:min(len(raw), 300)])
			}
			p.Key(t, "y")
			p.WaitFor(t, 5*time.Second, "copied pid 22572 to the clipboard")
			p.WaitForRaw(t, 5*time.Second, osc52("22572"))

			p.Key(t, "3")
			p.Key(t, "y") // the list: the group has no core, so its site
			p.WaitFor(t, 5*time.Second, "copied group 1's site")
			p.WaitForRaw(t, 5*time.Second, osc52("rank+0x1297"))
			p.Key(t, "\r")
			p.Key(t, "y") // the detail: its stack, as gdb's bt writes it
			p.WaitFor(t, 5*time.Second, "copied group 1's stack")
			raw := p.Raw()
			i := strings.LastIndex(raw, "\x1b]52;c;")
			j := strings.Index(raw[i:], "\a")
			stack, err := base64.StdEncoding.DecodeString(raw[i+len("\x1b]52;c;") : i+j])
			if err != nil || !strings.HasPrefix(string(stack), "#0  0x") || !strings.Contains(string(stack), "in solver_step at ") ||
				!strings.Contains(string(stack), "#1  ") {
				t.Errorf("y in the crash detail copied %q (%v), want the stack", stack, err)
			}

			p.Key(t, "M")
			p.WaitFor(t, 5*time.Second, "mouse off")
			p.WaitForRaw(t, 5*time.Second, "\x1b[?1002l")
			n := strings.Count(p.Raw(), "\x1b[?1002h")
			p.Key(t, "M")
			p.WaitFor(t, 5*time.Second, "mouse on")
			deadline := time.Now().Add(5 * time.Second)
			for strings.Count(p.Raw(), "\x1b[?1002h") == n {
				if time.Now().After(deadline) {
					t.Fatal("M did not turn the mouse back on")
				}
				time.Sleep(20 * time.Millisecond)
			}
			p.quit(t)
		})
	}
}

// Item 8: enter on a live process shows its detail, read from /proc through the Controller
// (here the recorder's canned one: TestProcDetailOfARealJob reads a real job's); on a
// process that ended, the facts the session recorded; esc goes back to the list.
func TestProcessDetailOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			rec := &recorder{}
			p := startPty(t, sz.w, sz.h, Options{Events: liveEvents(t, procFixture()), Control: rec, Header: viewtest.Header(), Mode: "attach"})
			p.WaitFor(t, 15*time.Second, "● live", "mpirun")
			p.waitCursor(t, "4100")
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "pid 4100 · no rank · mpirun · S (sleeping)", "read from /proc at", "command    fixture 4100",
				"cwd        /home/ada/run", "threads (1)", "4100 fixture", "in nanosleep")
			if calls := rec.Calls(); len(calls) == 0 || calls[0] != "detail 4100" {
				t.Errorf("the detail asked the controller %v", calls)
			}
			p.Key(t, "\x1b")
			p.Key(t, "j") // rank 0, ended by its SIGABRT: enter opens its crash group
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "group 2", "abort message")
			p.Key(t, "1")
			p.Key(t, "G") // the helper, alive: read again every 2 s while open
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "pid 4110", "command    fixture 4110")
			deadline := time.Now().Add(15 * time.Second)
			for n := 0; n < 2; {
				n = 0
				for _, c := range rec.Calls() {
					if c == "detail 4110" {
						n++
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("the open detail was not read again: %v", rec.Calls())
				}
				time.Sleep(50 * time.Millisecond)
			}
			p.quit(t)
		})
	}
}

// Item 9: under crashtui run the ranks' output has a pane: the file is named at the start, the
// Output tab (7) shows its lines as they are written, filters them, and copies one.
func TestRanksOutputOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crashtui-ranks.log")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fmt.Fprintln(f, "rank 0: starting")
			p := startPty(t, sz.w, sz.h, Options{Events: liveEvents(t, procFixture()), Control: &recorder{}, Header: viewtest.Header(),
				Mode: "run", RanksLog: path})
			p.WaitFor(t, 15*time.Second, "the ranks' output goes to /", "/crashtui-ranks.log (7: Output)", "7 Out")
			p.Key(t, "7")
			p.WaitFor(t, 5*time.Second, "ranks' stdout and stderr · 1 line", "file "+views.MidEllipsis(path, sz.w-5), "rank 0: starting")
			fmt.Fprintln(f, "rank 1: residual 0.5")
			fmt.Fprint(f, "rank 0: residual 0.25\nrank 1: half a li")
			p.WaitFor(t, 5*time.Second, "rank 1: residual 0.5", "rank 0: residual 0.25", "3 lines")
			if strings.Contains(p.Text(), "half a li") {
				t.Errorf("a line not yet ended is shown:\n%s", p.Text())
			}
			fmt.Fprintln(f, "ne")
			p.WaitFor(t, 5*time.Second, "rank 1: half a line")
			p.waitCursor(t, "half a line") // following the newest
			p.Key(t, "/")
			p.Type("rank 1")
			p.Key(t, "\r")
			txt := p.WaitFor(t, 5*time.Second, "2 of 4 lines match")
			if strings.Contains(txt, "rank 0: residual") {
				t.Errorf("the filter kept rank 0's line:\n%s", txt)
			}
			p.Key(t, "k")
			p.Key(t, "y")
			p.WaitFor(t, 5*time.Second, "copied the line to the clipboard (OSC 52): rank 1: residual 0.5")
			p.quit(t)
		})
	}
}

// Item 10: the tour's text is a band at the bottom, the tab above it with what the step
// selected in view; its numbers are the header's; the Stacks step explains the lone rank, not
// the majority; T starts the tour again in any session.
func TestTourBandOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h)+"/replay", func(t *testing.T) {
			h, evs := demoRecording(t)
			p := startPty(t, sz.w, sz.h, Options{Replay: evs, Header: h, Mode: "replay", Tour: true})
			txt := p.WaitFor(t, 15*time.Second, "Tour 1/5 · the job", "procs 0/8 · threads 0",
				"This session holds 8 processes, 0 of them running, with 0 threads")
			if !strings.Contains(cursorLine(txt), "22572") {
				t.Errorf("the band hides the selected process:\n%s", txt)
			}
			for _, want := range []string{"Tour 2/5", "Tour 3/5", "Tour 4/5", "Tour 5/5"} {
				p.Key(t, " ")
				p.WaitFor(t, 5*time.Second, want)
			}
			// Class 2: the ranks' main threads come first (issue 24 item 8), rank 3's second.
			txt = p.WaitFor(t, 5*time.Second, "Class 2: 1 thread on one path (rank 3)")
			if !strings.Contains(cursorLine(txt), "safepoints") {
				t.Errorf("the Stacks step does not show the lone rank's branch selected:\n%s", txt)
			}
			p.Key(t, "\x1b")
			p.WaitFor(t, 5*time.Second, "tour left")
			p.Key(t, "T")
			p.WaitFor(t, 5*time.Second, "Tour 1/5 · the job")
			p.Key(t, "\x1b")
			p.quit(t)
		})
		t.Run(sizeName(sz.w, sz.h)+"/live", func(t *testing.T) {
			p := startPty(t, sz.w, sz.h, Options{Events: liveEvents(t, procFixture()), Control: &recorder{}, Header: viewtest.Header(), Mode: "attach"})
			p.WaitFor(t, 15*time.Second, "● live", "procs 2/6 · threads 2")
			p.Key(t, "T")
			p.WaitFor(t, 5*time.Second, "Tour 1/5", "This session holds 6 processes, 2 of them running, with 2 threads")
			p.Key(t, "\x1b")
			p.quit(t)
		})
	}
}

// Item 12: every recording opens at its first frame (the job as crashtui found it), paused,
// with its story's title on the footer; . steps, space plays to the end.
func TestRecordingsOpenAtTheirFirstFrameOnPty(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "demo", "sessions", "*.jsonl"))
	files = append(files, filepath.Join("..", "demo", "session.jsonl"))
	titles := map[string]string{
		"crash-storm.jsonl":         "18 crashes of run:",
		"matrix-seccomp.jsonl":      "who may read whose memory in pid:21786: 8 of 20 pairs may not (seccomp)",
		"power10-scv-correct.jsonl": "a checkpoint of pid:84 on ppc64le (scv), restored correctly",
		"power10-scv-naive.jsonl":   "a checkpoint of pid:84 on ppc64le (scv), restored naively",
		"power10-scv-sc-only.jsonl": "restored as CRIU did before its fix",
		"power8-sc-sc-only.jsonl":   "a checkpoint of pid:83 on ppc64le (sc)",
		"session.jsonl":             "crashtui's demo job",
	}
	for _, sz := range ptySizes {
		for _, file := range files {
			name := filepath.Base(file)
			t.Run(sizeName(sz.w, sz.h)+"/"+name, func(t *testing.T) {
				f, err := os.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				h, evs, err := sessions.ReadRecording(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				first := views.FirstFrame(evs)
				if first == 0 || first >= len(evs) {
					t.Fatalf("%s: first frame %d of %d events", name, first, len(evs))
				}
				p := startPty(t, sz.w, sz.h, Options{Replay: evs, Header: h, Mode: "replay"})
				p.WaitFor(t, 15*time.Second, fmt.Sprintf("⏸ %s/%s ×1 [%d/%d]", clockText(evs[:first]), clockText(evs), first, len(evs)))
				title := views.StoryTitle(evs)
				if !strings.Contains(title, titles[name]) {
					t.Errorf("%s: story %q, want %q in it", name, title, titles[name])
				}
				shown := "⏸ " + title
				if r := []rune(shown); len(r) > sz.w-30 {
					shown = string(r[:sz.w-30]) // the footer cuts it at 80 columns
				}
				p.WaitFor(t, 5*time.Second, shown)
				p.Key(t, ".")
				p.WaitFor(t, 5*time.Second, fmt.Sprintf("[%d/%d]", first+1, len(evs)))
				p.Key(t, "+") // ×2, ×4: the demo's 17 s in 5
				p.Key(t, "+")
				p.Key(t, " ")
				p.WaitFor(t, 30*time.Second, "■ end", fmt.Sprintf("[%d/%d]", len(evs), len(evs)))
				p.quit(t)
			})
		}
	}
}

// clockText is the length of a recording as the header writes it.
func clockText(evs []sessions.Event) string {
	d := evs[len(evs)-1].Time.Sub(evs[0].Time).Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// Item 13: on a light terminal (its OSC 11 answer is white) the palette is the light one:
// dark red for a crash, never the bright red that is hard to read on white; on a dark one the
// bright one. The terminal is asked even where termenv would not (TERM=tmux-256color).
func TestLightTerminalOnPty(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("CI", "") // termenv treats any CI as "not a terminal"
	t.Setenv("COLORFGBG", "")
	for _, term := range []string{"xterm-256color", "tmux-256color"} {
		for _, sz := range ptySizes {
			for _, bg := range []struct {
				name      string
				c         color.Color
				want, not string
			}{
				{"light", color.White, "\x1b[1;31m", "\x1b[1;91m"},
				{"dark", color.Black, "\x1b[1;91m", "\x1b[1;31m"},
			} {
				t.Run(term+"/"+sizeName(sz.w, sz.h)+"/"+bg.name, func(t *testing.T) {
					t.Setenv("TERM", term)
					h, evs := demoRecording(t)
					scr := startPtyOn(t, sz.w, sz.h, bg.c, Options{Replay: evs, Header: h, Mode: "replay"})
					scr.WaitFor(t, 15*time.Second, "crashtui replay")
					scr.Key(t, "}")
					scr.Key(t, "3")
					scr.WaitFor(t, 5*time.Second, "solver_step", "SIGABRT")
					scr.Type("j") // the SIGSEGV group's row leaves the cursor: drawn in red (the text does not change)
					scr.WaitForRaw(t, 5*time.Second, bg.want+"  1     2 SIGSEGV")
					if raw := scr.Raw(); strings.Contains(raw, bg.not) {
						t.Errorf("the %s terminal got the other palette's red %q", bg.name, bg.not)
					}
					scr.quit(t)
				})
			}
		}
	}
}

// asyncCheckpoint is a controller like the guest's: Checkpoint passes the request on and
// returns; the threads come later as events (the test sends them).
type asyncCheckpoint struct{ recorder }

// Item 11, without QEMU (TestGuestDemoOnPty boots one): the guest's boot log shows as
// progress until its processes come; a checkpoint whose threads come after the controller
// returned is counted when they come, not as "0 threads"; a restore whose outcome the tracer
// never followed (the process crashed) says so instead of a blank.
func TestGuestDemoStatusOnPty(t *testing.T) {
	for _, sz := range ptySizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "crashtui-guest.log")
			f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fmt.Fprintln(f, "demo --guest: building crashtui and the guest's programs for ppc64le, then booting QEMU power10")
			ch := make(chan sessions.Event, 64)
			t.Cleanup(func() { close(ch) })
			at := viewtest.T0
			ev := func(b sessions.Body) sessions.Event {
				at = at.Add(time.Millisecond)
				return sessions.Event{Time: at, Host: "guest", Body: b}
			}
			p := startPty(t, sz.w, sz.h, Options{Events: ch, Control: &asyncCheckpoint{}, Header: sessions.Header{Arch: "ppc64le", Kernel: "QEMU power10"},
				Mode: "demo", GuestLog: logPath})
			p.WaitFor(t, 15*time.Second, "no processes yet", "building crashtui and the guest's programs")
			fmt.Fprintln(f, "guest: [  0.5s] booting power10")
			p.WaitFor(t, 5*time.Second, "booting power10 ·", "s since the start")
			ch <- ev(sessions.Process{PID: 86, PPID: 82, Rank: sessions.NoRank, Exe: "/bin/sigpending", Comm: "sigpending", Threads: 4})
			for _, tid := range []int{88, 89, 90} {
				ch <- ev(sessions.Task{PID: 86, TID: tid})
			}
			p.WaitFor(t, 5*time.Second, "sigpending", "procs 1/1")
			p.Key(t, "4")
			p.Key(t, "c")
			p.Type("jj") // sc-only
			p.WaitFor(t, 5*time.Second, "> sc-only")
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "checkpoint (sc-only) asked")
			for _, tid := range []int{86, 88, 89, 90} {
				ch <- ev(sessions.Thread{Checkpoint: 1, Policy: "sc-only", PID: 86, TID: tid, Arch: "ppc64le", InSyscall: true, Syscall: "read",
					Insn: "scv", Ret: -512, Code: "ERESTARTSYS", OnResume: "restart", Restore: "rewind", Applied: "sc-only"})
			}
			p.WaitFor(t, 5*time.Second, "checkpoint #1 (sc-only): 4 threads")
			ch <- ev(sessions.Crash{PID: 86, TID: 88, Rank: sessions.NoRank, Exe: "/bin/sigpending", Signal: "SIGABRT", Code: "SI_TKILL",
				Module: "/bin/sigpending", Offset: 0x926c, Function: "gsignal", Key: "/bin/sigpending|/bin/sigpending+0x926c", Representative: true})
			ch <- ev(sessions.Exit{PID: 86, Signal: "SIGABRT"})
			p.Key(t, "\r")
			p.WaitFor(t, 5*time.Second, "outcome: not followed: the process crashed with", "SIGABRT after the restore")
			p.quit(t)
		})
	}
}
