package views

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

func hexp(v uint64) *sessions.Hex { h := sessions.Hex(v); return &h }
func intp(v int) *int             { return &v }
func i64p(v int64) *int64         { return &v }

// TestThreadOutcomeWords: the sentence for each outcome the tracer distinguishes, word for
// word what the tracer wrote before it emitted facts (tracer/checkpoint_outcome.go at 093ef09).
func TestThreadOutcomeWords(t *testing.T) {
	read := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "read", Nr: 0, Code: "ERESTARTSYS", Restore: "rewind"}
	sleep := sessions.Thread{Arch: "amd64", InSyscall: true, Syscall: "clock_nanosleep", Nr: 230, Code: "ERESTART_RESTARTBLOCK", Restore: "eintr"}
	with := func(th sessions.Thread, f func(*sessions.Thread)) *sessions.Thread { f(&th); return &th }
	for _, tc := range []struct {
		name string
		th   *sessions.Thread
		want string
	}{
		{"restarted", with(read, func(t *sessions.Thread) {
			t.OutcomeKind, t.NextNr, t.NextSyscall = sessions.OutcomeRestarted, intp(0), "read"
		}),
			"back in read: the syscall was restarted and the program never noticed"},
		{"restarted through restart_syscall", with(sleep, func(t *sessions.Thread) {
			t.OutcomeKind, t.NextNr, t.NextSyscall = sessions.OutcomeRestarted, intp(219), "restart_syscall"
		}), "back in clock_nanosleep: the syscall was restarted and the program never noticed"},
		{"leaked, then called again", with(read, func(t *sessions.Thread) {
			t.OutcomeKind, t.Returned, t.NextNr, t.NextSyscall = sessions.OutcomeERESTARTLeaked, i64p(-512), intp(0), "read"
		}), "read returned ERESTARTSYS (512) to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261); the program then called read again"},
		{"leaked 516, then exited", with(sleep, func(t *sessions.Thread) {
			t.OutcomeKind, t.Returned, t.Exited = sessions.OutcomeERESTARTLeaked, i64p(-516), true
		}), "clock_nanosleep returned ERESTART_RESTARTBLOCK (516) to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261); the thread then exited"},
		{"leaked 514, then ran on", with(read, func(t *sessions.Thread) {
			t.Code, t.OutcomeKind, t.Returned = "ERESTARTNOHAND", sessions.OutcomeERESTARTLeaked, i64p(-514)
		}), "read returned ERESTARTNOHAND (514) to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261)"},
		{"EINTR", with(sleep, func(t *sessions.Thread) { t.OutcomeKind, t.Returned = sessions.OutcomeEINTR, i64p(-4) }),
			"clock_nanosleep returned EINTR, as after a real restore (a restart block cannot be carried over)"},
		{"EINTR, then called again", with(sleep, func(t *sessions.Thread) {
			t.OutcomeKind, t.Returned, t.NextNr, t.NextSyscall = sessions.OutcomeEINTR, i64p(-4), intp(230), "clock_nanosleep"
		}), "clock_nanosleep returned EINTR, as after a real restore (a restart block cannot be carried over); the program then called clock_nanosleep again"},
		{"EINTR, then exited", with(sleep, func(t *sessions.Thread) { t.OutcomeKind, t.Returned, t.Exited = sessions.OutcomeEINTR, i64p(-4), true }),
			"clock_nanosleep returned EINTR, as after a real restore (a restart block cannot be carried over); the thread then exited"},
		{"left", with(read, func(t *sessions.Thread) { t.OutcomeKind = sessions.OutcomeLeft }), "left read (it completed, or a handler ran)"},
		{"left into another syscall", with(read, func(t *sessions.Thread) {
			t.OutcomeKind, t.NextNr, t.NextSyscall = sessions.OutcomeLeft, intp(1), "write"
		}),
			"left read (it completed, or a handler ran)"},
		{"exited", with(read, func(t *sessions.Thread) { t.OutcomeKind, t.Exited = sessions.OutcomeLeft, true }), "left read and the thread exited"},
		{"job control", with(read, func(t *sessions.Thread) { t.OutcomeKind = sessions.OutcomeJobStopped }),
			"still stopped by job control: the restore takes effect when the job continues"},
		{"unnamed syscall", with(read, func(t *sessions.Thread) { t.Syscall, t.Nr, t.OutcomeKind = "", 999, sessions.OutcomeLeft }),
			"left syscall 999 (it completed, or a handler ran)"},
		{"no outcome", with(read, func(*sessions.Thread) {}), ""},
		{"a recording's own words, its jargon reworded", with(read, func(t *sessions.Thread) {
			t.OutcomeKind, t.Outcome = sessions.OutcomeERESTARTLeaked, "read returned ERESTARTSYS (512) to the program, the seed 002 bug"
		}), "read returned ERESTARTSYS (512) to the program (checkpoint-restore/criu#2261)"},
	} {
		if got := ThreadOutcome(tc.th); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// amd64Read is a thread stopped by PTRACE_INTERRUPT in read(3, …) with -ERESTARTSYS in rax,
// as the tracer captures it.
func amd64Read() sessions.Thread {
	words := make([]uint64, arch.NumWords(arch.AMD64))
	set := func(name string, v uint64) {
		for i := range words {
			if arch.RegName(arch.AMD64, i) == name {
				words[i] = v
			}
		}
	}
	set("orig_rax", 0)
	ret := int64(-arch.ERESTARTSYS)
	set("rax", uint64(ret))
	set("rdi", 3)
	set("rip", 0x7f0000001002)
	var before []sessions.RegVal
	for _, n := range (arch.Regs{Arch: arch.AMD64, Words: words}).Named() {
		before = append(before, sessions.RegVal{Name: n.Name, Value: sessions.Hex(n.Value)})
	}
	return sessions.Thread{PID: 100, TID: 101, Arch: "amd64", PC: 0x7f0000001002, InSyscall: true, Syscall: "read", Nr: 0,
		Insn: "syscall", Ret: -512, Code: "ERESTARTSYS", OnResume: "restart", Restore: "rewind", Before: before,
		InsnBytes: "0f05", Stop: sessions.StopInterrupt, Handler: sessions.HandlerNone}
}

// TestThreadExplainWords: the reason of each held stop, in the words the tracer wrote before
// it emitted facts (tracer/checkpoint.go and tracer/sigaction.go at 093ef09), followed by the
// kernel's rule for the handler the facts name.
func TestThreadExplainWords(t *testing.T) {
	st := arch.Decode(arch.Regs{Arch: arch.AMD64, Words: func() []uint64 {
		th := amd64Read()
		w := make([]uint64, len(th.Before))
		for i, r := range th.Before {
			w[i] = uint64(r.Value)
		}
		return w
	}()}, []byte{0x0f, 0x05})
	none, restart, norestart := st.Explain(arch.NoHandler), st.Explain(arch.HandlerRestart), st.Explain(arch.HandlerNoRestart)
	unknown := "If the handler has SA_RESTART: " + restart + " If not: " + norestart
	caught := "SIGUSR1 is caught (SigCgt); whether its handler has SA_RESTART is kernel-private (only rt_sigaction inside the process reads it)."
	with := func(f func(*sessions.Thread)) *sessions.Thread { th := amd64Read(); f(&th); return &th }
	signal := func(sig string, d sessions.Disposition, h sessions.HandlerKind, sa *sessions.Sigaction) *sessions.Thread {
		return with(func(t *sessions.Thread) {
			t.Stop, t.Signal, t.Disposition, t.Handler, t.Sigaction = sessions.StopSignal, sig, d, h, sa
		})
	}
	for _, tc := range []struct {
		name string
		th   *sessions.Thread
		want string
	}{
		{"interrupt stop", with(func(*sessions.Thread) {}), none},
		{"group-stop", with(func(t *sessions.Thread) { t.Stop = sessions.StopGroup }),
			"The thread is in a group-stop: the stop signal's action is stop, so after SIGCONT the kernel decides as with no handler. " + none},
		{"exiting", with(func(t *sessions.Thread) { t.Stop = sessions.StopExit }),
			"The thread is exiting (PTRACE_EVENT_EXIT): it never returns to user space. " + none},
		{"ignored", signal("SIGTERM", sessions.DispIgnored, sessions.HandlerNone, nil),
			"SIGTERM is ignored (SigIgn), so the kernel decides as with no handler. " + none},
		{"default stop", signal("SIGTSTP", sessions.DispDefaultStop, sessions.HandlerNone, nil),
			"SIGTSTP's default action is stop, so the kernel decides as with no handler once the thread continues. " + none},
		{"default ignore", signal("SIGWINCH", sessions.DispDefaultIgnore, sessions.HandlerNone, nil),
			"SIGWINCH's default action is to ignore it, so the kernel decides as with no handler. " + none},
		{"default kill", signal("SIGTERM", sessions.DispDefaultKill, sessions.HandlerNone, nil),
			"SIGTERM's default action kills the process: the syscall never returns. " + none},
		{"SA_RESTART", signal("SIGUSR1", sessions.DispCaught, sessions.HandlerRestart, &sessions.Sigaction{TID: 100, Handler: hexp(0x401136), Flags: hexp(0x14000000)}),
			"SIGUSR1 is caught by a handler with SA_RESTART (flags 0x14000000, read with rt_sigaction inside the process, thread 100). " + restart},
		{"no SA_RESTART", signal("SIGUSR2", sessions.DispCaught, sessions.HandlerNoRestart, &sessions.Sigaction{TID: 100, Handler: hexp(0x401136), Flags: hexp(0x4000000)}),
			"SIGUSR2 is caught by a handler without SA_RESTART (flags 0x4000000, read with rt_sigaction inside the process, thread 100). " + norestart},
		{"every thread held", signal("SIGUSR1", sessions.DispCaught, sessions.HandlerUnknown, &sessions.Sigaction{AllHeld: true}),
			caught + " (Running rt_sigaction inside the process to read it failed: every thread of 100 is held at a signal; code is run only in a thread held at an interrupt stop, which a crashtui that died could leave exactly as it was.) " + unknown},
		{"rt_sigaction failed", signal("SIGUSR1", sessions.DispCaught, sessions.HandlerUnknown, &sessions.Sigaction{TID: 100, Error: "inject rt_sigaction in 100: no such process"}),
			caught + " (Running rt_sigaction inside the process to read it failed: inject rt_sigaction in 100: no such process.) " + unknown},
		{"handler just removed", signal("SIGUSR1", sessions.DispCaught, sessions.HandlerUnknown, &sessions.Sigaction{TID: 100, Handler: hexp(0), Flags: hexp(0)}),
			caught + " (rt_sigaction inside the process, thread 100, now returns SIG_DFL: the handler was just removed.) " + unknown},
		{"handler just ignored", signal("SIGUSR1", sessions.DispCaught, sessions.HandlerUnknown, &sessions.Sigaction{TID: 100, Handler: hexp(1), Flags: hexp(0)}),
			caught + " (rt_sigaction inside the process, thread 100, now returns SIG_IGN: the handler was just removed.) " + unknown},
		{"a recording's own words", with(func(t *sessions.Thread) { t.Explain = "recorded words" }), "recorded words"},
		{"no facts", &sessions.Thread{InSyscall: true, Syscall: "read"}, ""},
	} {
		if got := ThreadExplain(tc.th); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// The same thread stopped where the bytes before rip are not a syscall: the decoder's
	// note comes first, as the tracer put it.
	odd := amd64Read()
	odd.InsnBytes = "9090"
	if got, note := ThreadExplain(&odd), arch.Decode(arch.Regs{Arch: arch.AMD64, Words: make([]uint64, 27)}, []byte{0x90, 0x90}).Note; note == "" || !strings.HasPrefix(got, "The bytes before rip are 90 90") {
		t.Errorf("bytes 90 90 before rip: %q, want the decoder's note first (%q)", got, note)
	}
	// Facts from a recording are untrusted: what they name is sanitized.
	evil := signal("SIG\x1b[2J", sessions.DispCaught, sessions.HandlerUnknown, &sessions.Sigaction{Error: "\x1b]52;c;AAAA\x07"})
	if got := ThreadExplain(evil); strings.ContainsRune(got, 0x1b) || strings.ContainsRune(got, 0x07) {
		t.Errorf("escape sequences from the facts reach the screen: %q", got)
	}
}

// TestOldRecordingsSayTheSame replays recordings of format version 1 (the tracer's sentences:
// sessions/testdata/v1-checkpoint.jsonl from 093ef09 on amd64, the committed demo and the
// POWER8/POWER10 stories): views show every recorded sentence as it was, and worded from the
// facts alone (the sentences dropped, the facts derived from them by the reader) every one
// comes out the same, the project's jargon ("seed 002") reworded in both.
func TestOldRecordingsSayTheSame(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "demo", "sessions", "*.jsonl"))
	files = append(files, filepath.Join("..", "demo", "session.jsonl"), filepath.Join("..", "sessions", "testdata", "v1-checkpoint.jsonl"))
	n, outcomes := 0, 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		h, evs, err := sessions.ReadRecording(f)
		f.Close()
		if err != nil || h.Version != 1 {
			t.Fatalf("%s: %v, version %d: want a version 1 recording", name, err, h.Version)
		}
		for _, e := range evs {
			th, ok := e.Body.(sessions.Thread)
			if !ok {
				continue
			}
			n++
			if th.Outcome != "" {
				outcomes++
			}
			// The recorded words are shown with the project's jargon reworded (recordedWords).
			said, outcome := recordedWords(sessions.Sanitize(th.Explain)), recordedWords(sessions.Sanitize(th.Outcome))
			if got := ThreadExplain(&th); got != said {
				t.Errorf("%s: thread %d: shown %q, recorded %q", name, th.TID, got, th.Explain)
			}
			if got := ThreadOutcome(&th); got != outcome {
				t.Errorf("%s: thread %d: outcome shown %q, recorded %q", name, th.TID, got, th.Outcome)
			}
			facts := th
			facts.Explain, facts.Outcome = "", ""
			if got := ThreadExplain(&facts); got != said {
				t.Errorf("%s: thread %d: worded from the facts\n%q\nrecorded\n%q", name, th.TID, got, th.Explain)
			}
			if got := ThreadOutcome(&facts); got != outcome {
				t.Errorf("%s: thread %d: outcome worded from the facts %q, recorded %q", name, th.TID, got, th.Outcome)
			}
			if OutcomeBad(&th) != strings.Contains(th.Outcome, "to the program") {
				t.Errorf("%s: thread %d: outcome %q marked bad %v", name, th.TID, th.Outcome, OutcomeBad(&th))
			}
		}
	}
	if n < 40 || outcomes < 20 {
		t.Errorf("%d thread events, %d with an outcome: the recordings lost their checkpoints?", n, outcomes)
	}
}

// TestThreadsMarkLeaksByKind: the Threads list marks the row of a thread whose restore leaked
// an ERESTART code by its outcome kind, not by the words of its outcome.
func TestThreadsMarkLeaksByKind(t *testing.T) {
	s := sessions.NewState()
	s.Apply(sessions.Event{Body: sessions.Process{PID: 100, Rank: sessions.NoRank, Threads: 4}})
	add := func(tid int, f func(*sessions.Thread)) {
		s.Apply(sessions.Event{Body: sessions.Task{PID: 100, TID: tid}})
		th := amd64Read()
		th.TID, th.Checkpoint, th.Applied = tid, 1, "naive"
		f(&th)
		s.Apply(sessions.Event{Body: th})
	}
	add(100, func(t *sessions.Thread) { t.OutcomeKind, t.Returned = sessions.OutcomeERESTARTLeaked, i64p(-512) })
	add(101, func(t *sessions.Thread) { t.OutcomeKind = sessions.OutcomeLeft })
	// Words that a search of the text would take for a leak or a failure.
	add(102, func(t *sessions.Thread) {
		t.OutcomeKind, t.Outcome = sessions.OutcomeLeft, "left read: not an ERESTARTSYS leak, nothing failed"
	})
	add(103, func(t *sessions.Thread) { t.InSyscall, t.Code = false, "" }) // the cursor's row
	st := Plain()
	st.Bad = lipgloss.NewStyle().Transform(func(s string) string { return "BAD " + s })
	out := Threads(st, s, ThreadOptions{Width: 200, Height: 20, Cursor: 3})
	row := func(tid int) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, fmt.Sprintf(" %d %d ", 100, tid)) {
				return l
			}
		}
		t.Fatalf("no row for thread %d:\n%s", tid, out)
		return ""
	}
	if r := row(100); !strings.HasPrefix(r, "BAD ") || !strings.Contains(r, "read returned ERESTARTSYS (512) to the program") {
		t.Errorf("leaked row %q: want it marked, its outcome worded", r)
	}
	for _, tid := range []int{101, 102} {
		if r := row(tid); strings.Contains(r, "BAD") {
			t.Errorf("row %q marked: it left its syscall", r)
		}
	}
}
