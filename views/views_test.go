package views

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views/viewtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name.golden, and checks the frame's shape: no escape
// sequence (the ASCII profile) and no line wider than width.
func golden(t *testing.T, name, got string, width int) {
	t.Helper()
	if strings.ContainsRune(got, 0x1b) {
		t.Errorf("%s: output contains ESC on the ASCII profile:\n%q", name, got)
	}
	for i, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("%s: line %d is %d cells wide (> %d): %q", name, i+1, w, width, l)
		}
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./views -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s; got:\n%s", name, path, got)
	}
}

func TestGoldenViews(t *testing.T) {
	st := Plain()
	s := viewtest.State()
	host, m := MatrixFor(s, "")
	ix := IndexMatrix(host, m)
	hdr := viewtest.Header()
	cases := []struct {
		name   string
		width  int
		render func(w int) string
	}{
		{"header-live", 100, func(w int) string { return Header(st, s, hdr, Status{Mode: "attach", Recording: "/tmp/s.jsonl"}, w) }},
		{"header-replay", 80, func(w int) string {
			return Header(st, s, hdr, Status{Mode: "replay", Replay: &ReplayStatus{Pos: 61 * time.Second, Len: 125 * time.Second, Speed: 2, Paused: true, Index: 7, Total: 30}}, w)
		}},
		{"header-finished-narrow", 40, func(w int) string { return Header(st, s, hdr, Status{Mode: "run", Finished: true}, w) }},
		{"tabs", 80, func(w int) string { r, _ := Tabs(st, s, 2, 6, w); return r }},
		{"tabs-narrow", 40, func(w int) string { r, _ := Tabs(st, s, 0, 6, w); return r }},
		{"procs-tree", 100, func(w int) string {
			return Processes(st, s, ProcRows(s, "tree", ""), ProcOptions{Width: w, Height: 12, Cursor: 2, Sort: "tree"})
		}},
		{"procs-filter-crashes", 80, func(w int) string {
			return Processes(st, s, ProcRows(s, "crashes", "solver"), ProcOptions{Width: w, Height: 8, Sort: "crashes", Filter: "solver"})
		}},
		{"matrix", 80, func(w int) string { return Matrix(st, s, ix, MatrixOptions{Width: w, Height: 18, Row: 4, Col: 2}) }},
		{"matrix-denied-uid", 80, func(w int) string { return Matrix(st, s, ix, MatrixOptions{Width: w, Height: 18, Row: 1, Col: 5}) }},
		{"matrix-classes", 80, func(w int) string {
			return Matrix(st, s, ix, MatrixOptions{Width: w, Height: 18, Group: 1, Row: 1, Col: 0})
		}},
		{"crashes", 100, func(w int) string { return Crashes(st, s, CrashOptions{Width: w, Height: 10}) }},
		{"crash-detail-segv", 100, func(w int) string { return Crashes(st, s, CrashOptions{Width: w, Height: 50, Detail: true}) }},
		{"crash-detail-abort", 80, func(w int) string { return Crashes(st, s, CrashOptions{Width: w, Height: 30, Cursor: 1, Detail: true}) }},
		{"threads", 100, func(w int) string { return Threads(st, s, ThreadOptions{Width: w, Height: 20}) }},
		{"log", 100, func(w int) string { return Log(st, s, LogOptions{Width: w, Height: 12, Cursor: -1, Following: true}) }},
		{"log-filter", 80, func(w int) string {
			return Log(st, s, LogOptions{Width: w, Height: 6, Filter: "crash", Cursor: -1, Following: true})
		}},
		{"explain-cell-dumpable", 80, func(w int) string {
			return RenderExplanation(st, ExplainCell(ix.PairCell(Unit{Member: 5}, Unit{Member: 1})), w, 22)
		}},
		{"explain-group-abort", 80, func(w int) string { return RenderExplanation(st, ExplainGroup(s.Groups[1]), w, 22) }},
		{"explain-thread", 80, func(w int) string {
			return RenderExplanation(st, ExplainThread(ThreadList(s)[0].Thread), w, 22)
		}},
		{"checkpoint-dialog", 80, func(w int) string { return CheckpointDialog(st, 1, w, 0) }},
		{"checkpoint-dialog-80x24", 80, func(w int) string { return CheckpointDialog(st, 2, w, 20) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, tc.render(tc.width), tc.width) })
	}
}

// A process or abort message carrying terminal escape sequences must reach the screen
// without a single ESC, in every view that shows it.
func TestSanitizedRendering(t *testing.T) {
	evil := "pwn\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m"
	s := sessions.NewState()
	s.Apply(sessions.Event{Time: viewtest.T0, Body: sessions.Process{PID: 7, Rank: 0, Comm: evil, Exe: "/x/" + evil, Argv: []string{evil, evil}}})
	s.Apply(sessions.Event{Time: viewtest.T0, Host: evil, Body: sessions.Process{PID: 8, Rank: 1, Comm: "ok"}})
	s.Apply(sessions.Event{Time: viewtest.T0, Body: sessions.Crash{PID: 7, TID: 7, Signal: "SIGABRT" + evil, Code: evil,
		Module: evil, Function: evil, File: evil, AbortMessage: evil, Core: &evil,
		Stack: []sessions.Frame{{Module: evil, Function: evil, File: evil}}, Regs: map[string]sessions.Hex{evil: 1}}})
	reason := sessions.Reason(evil)
	s.Apply(sessions.Event{Body: sessions.Matrix{PIDs: []int{7, 8}, Cells: []sessions.Cell{{From: 7, To: 8, Reason: &reason, Explain: evil, Disagree: evil,
		Rule: sessions.Rule{Row: sessions.Row(evil), Call: evil, Action: evil}, VMReadv: sessions.Check{Errno: &evil}},
		// Facts only (a recording of format version 3): views word them with the untrusted
		// strings they carry.
		{From: 8, To: 7, Reason: &reason, Rule: sessions.Rule{Row: sessions.RowSeccompFilter, Call: evil, Action: evil},
			Disagreements: []sessions.Disagreement{{Kind: sessions.DisagreeKind(evil)}, {Kind: sessions.DisagreeCMAFails, Errno: evil, Reason: sessions.Reason(evil)}},
			VMReadv:       sessions.Check{NotRun: &sessions.NotRun{Why: sessions.NotRunSeccomp, Action: evil}}, Kcmp: sessions.Check{NotRun: &sessions.NotRun{Why: sessions.NotRunWhy(evil)}}}}}})
	s.Apply(sessions.Event{Body: sessions.Thread{PID: 7, TID: 7, Syscall: evil, InSyscall: true, Code: evil, OnResume: evil, Explain: evil, Outcome: evil, Applied: sessions.Policy(evil), Policy: sessions.Policy(evil), Insn: evil, Arch: evil,
		Before: []sessions.RegVal{{Name: evil}}}})
	s.Apply(sessions.Event{Body: sessions.Error{Op: evil, Message: evil}})
	s.Apply(sessions.Event{Body: sessions.Session{Job: evil, Arch: evil, Kernel: evil}})

	st := Plain()
	ix := IndexMatrix("", s.Matrix[""])
	outs := map[string]string{
		"header":         Header(st, s, sessions.Header{Job: evil}, Status{Mode: evil, Recording: evil, Message: evil}, 200),
		"procs":          Processes(st, s, ProcRows(s, "tree", ""), ProcOptions{Width: 200, Height: 10, Filter: evil}),
		"crashes":        Crashes(st, s, CrashOptions{Width: 200, Height: 10}),
		"detail":         Crashes(st, s, CrashOptions{Width: 200, Height: 60, Detail: true}),
		"matrix":         Matrix(st, s, ix, MatrixOptions{Width: 200, Height: 20, Row: 0, Col: 1}),
		"threads":        Threads(st, s, ThreadOptions{Width: 200, Height: 20}),
		"log":            Log(st, s, LogOptions{Width: 400, Height: 20, Cursor: -1, Following: true}),
		"explain-group":  RenderExplanation(st, ExplainGroup(s.Groups[0]), 200, 40),
		"explain-cell":   RenderExplanation(st, ExplainCell(&s.Matrix[""].Cells[0]), 200, 40),
		"explain-facts":  RenderExplanation(st, ExplainCell(&s.Matrix[""].Cells[1]), 200, 60),
		"matrix-facts":   Matrix(st, s, ix, MatrixOptions{Width: 400, Height: 20, Row: 1, Col: 0}),
		"cell-why":       CellWhy(&s.Matrix[""].Cells[1]) + CellDisagree(&s.Matrix[""].Cells[1]),
		"explain-thread": RenderExplanation(st, ExplainThread(ThreadList(s)[0].Thread), 200, 40),
		"explain-proc":   RenderExplanation(st, ExplainProc(s.Procs[sessions.ProcKey{PID: 7}]), 200, 40),
	}
	if !rawC1("pwn\x9b31m") || rawC1("␛") { // ␛ is E2 90 9B: 9B within a sequence is not C1
		t.Fatal("rawC1 is wrong")
	}
	for name, out := range outs {
		if strings.ContainsAny(out, "\x1b\x07\u009b") || rawC1(out) {
			t.Errorf("%s: escape or control byte reached the screen: %q", name, out)
		}
		if !strings.Contains(out, "pwn") && name != "explain-thread" && name != "explain-cell" {
			t.Errorf("%s: the sanitised text is missing altogether: %q", name, out)
		}
	}
}

func TestMatrixClasses(t *testing.T) {
	s := viewtest.Big(300)
	_, m := MatrixFor(s, "")
	ix := IndexMatrix("", m)
	// uid blocks of 64 ranks, with ranks 0, 100 and 200 (seccomp) apart: the blocks 0-63,
	// 64-127, 128-191, 192-255, 256-299 minus the three seccomp ranks, plus those three.
	if got, want := len(ix.Classes), 5+3; got != want {
		t.Fatalf("%d classes, want %d", got, want)
	}
	for _, c := range ix.Classes {
		for _, a := range c.Members {
			for _, b := range c.Members {
				if ix.ClassOf(a) != ix.ClassOf(b) {
					t.Fatal("class membership is inconsistent")
				}
			}
		}
	}
	o := MatrixOptions{Width: 80, Height: 24}
	if !Grouped(ix, o) {
		t.Fatal("a 300-process matrix on 80 columns must collapse into classes")
	}
	us := Units(ix, o)
	if len(us) != 8 {
		t.Fatalf("%d units, want 8", len(us))
	}
	// Every pair of units is uniform: that is what the refinement guarantees.
	for _, a := range us {
		for _, b := range us {
			if ix.unitCode(a, b) == 254 {
				t.Fatalf("units %v and %v are mixed", a, b)
			}
		}
	}
	// Expanding the first class shows its members one by one.
	o.Expanded = map[int]bool{ix.Classes[us[0].Class].ID: true}
	if got := len(Units(ix, o)); got != 8-1+len(ix.Classes[us[0].Class].Members) {
		t.Fatalf("expanded: %d units", got)
	}
}

func TestRankList(t *testing.T) {
	for _, tc := range []struct {
		in   []sessions.Rank
		want string
	}{
		{nil, "-"},
		{[]sessions.Rank{3, 0, 1, 2, 7, 9, 10, 9}, "0-3,7,9-10"},
		{[]sessions.Rank{-1, 5, -1}, "5,+2 unranked"},
	} {
		if got := RankList(tc.in); got != tc.want {
			t.Errorf("RankList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSigCodeText(t *testing.T) {
	for code, want := range map[string]string{
		"SEGV_MAPERR": "not mapped", "SEGV_ACCERR": "not permitted", "BUS_ADRERR": "no backing page",
		"FPE_INTDIV": "division by zero", "ILL_ILLOPN": "illegal operand", "SI_USER": "kill()", "SI_TKILL": "tgkill",
	} {
		if got := SigCodeText("", code); !strings.Contains(got, want) {
			t.Errorf("%s: %q lacks %q", code, got, want)
		}
	}
}

func BenchmarkIndexMatrix1000(b *testing.B) {
	s := viewtest.Big(1000)
	_, m := MatrixFor(s, "")
	b.ResetTimer()
	for range b.N {
		IndexMatrix("", m)
	}
}

// rawC1 says whether s holds a byte 0x80-0x9f that is not part of a UTF-8 sequence (a C1
// control, CSI 0x9b among them, as a terminal in an 8-bit mode reads it).
func rawC1(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError && s[i] >= 0x80 && s[i] <= 0x9f {
			return true
		}
	}
	return false
}

// TestGoroutinesUnreadMore: a root that lists the first Go processes whose goroutines could
// not be read says how many more there are.
func TestGoroutinesUnreadMore(t *testing.T) {
	st := sessions.Stacks{Samples: 2, Classes: []sessions.StackClass{{Class: 1, Count: 1, Ranks: "0", Progress: sessions.Stuck}},
		Goroutines: &sessions.GoroutineStacks{Processes: 3,
			Unread:     []sessions.GoroutinesUnread{{Host: "n1", PID: 7, Rank: 3, Note: "no DWARF"}},
			UnreadMore: 41}}
	sum := strings.Join(StacksSummary(st), "\n")
	for _, want := range []string{"could not be read: no DWARF.", "Nor could those of 41 more Go processes."} {
		if !strings.Contains(sum, want) {
			t.Errorf("the summary lacks %q:\n%s", want, sum)
		}
	}
}
