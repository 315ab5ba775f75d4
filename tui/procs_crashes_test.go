package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
	"github.com/crashtui/crashtui/views/viewtest"
)

// procFixture is the viewtest job plus what the Processes and Crashes tabs show beyond it: a
// stack sample of the processes still alive (mpirun asleep in nanosleep, the helper stopped),
// a second handled fault site hit by two ranks, and a crash whose stack has long source paths.
func procFixture() []sessions.Event {
	evs := viewtest.Events()
	t := evs[len(evs)-1].Time
	add := func(d time.Duration, b sessions.Body) {
		t = t.Add(d)
		evs = append(evs, sessions.Event{Time: t, Body: b})
	}
	add(time.Second, sessions.Sample{Seq: 1, PID: 4100, Rank: sessions.NoRank, Threads: []sessions.ThreadSample{
		{TID: 4100, State: "S", Syscall: "nanosleep"}, {TID: 4301, State: "R"}}})
	add(0, sessions.Sample{Seq: 1, PID: 4110, Rank: sessions.NoRank, Threads: []sessions.ThreadSample{{TID: 4110, State: "T"}}})
	for i, pid := range []int{4101, 4102} {
		add(time.Millisecond, sessions.Handled{PID: pid, TID: pid, Rank: sessions.Rank(i), Signal: "SIGSEGV", Code: "SEGV_ACCERR",
			Addr: 0x7f0000001000, PC: 0x55d0c0a01400, Module: "/home/ada/solver", Offset: 0x1400, Function: "safepoint_poll"})
	}
	deep := "/home/ada/projects/climate-model/src/dynamics/solvers/implicit/"
	core := "/scratch/ada/job-4100/cores/core.4.4100"
	add(time.Millisecond, sessions.Crash{PID: 4100, TID: 4100, Rank: sessions.NoRank, Exe: "/usr/bin/mpirun", Signal: "SIGBUS", Code: "BUS_ADRERR",
		Addr: 0x7f3a00000000, PC: 0x7f3a1d405678, Module: "/opt/ompi/lib/openmpi/mca_btl_vader_shared_memory.so", Offset: 0x5678,
		Function: "mca_btl_vader_component_progress_pending_fragments", File: deep + "helmholtz_preconditioner.c", Line: 1234,
		Key: "/usr/bin/mpirun|/opt/ompi/lib/openmpi/mca_btl_vader_shared_memory.so+0x5678", Representative: true, Core: &core,
		Stack: []sessions.Frame{
			{PC: 0x7f3a1d405678, Module: "/opt/ompi/lib/openmpi/mca_btl_vader_shared_memory.so", Offset: 0x5678,
				Function: "mca_btl_vader_component_progress_pending_fragments", File: deep + "helmholtz_preconditioner.c", Line: 1234},
			{PC: 0x7f3a1d4019f0, Module: "/opt/ompi/lib/libopen-pal.so.80", Offset: 0x19f0, Function: "opal_progress",
				File: deep + "progress.c", Line: 231},
			{PC: 0x55d0c0a01100, Module: "/usr/bin/mpirun", Offset: 0x1100, Function: "main", File: deep + "main.c", Line: 12},
		}})
	return evs
}

// fixtureModel is a model fed evs at w×h; live keeps the event channel open with ctrl as
// the controller (a running tracer).
func fixtureModel(t *testing.T, evs []sessions.Event, ctrl Controller, live bool, w, h int, st *views.Styles) *Model {
	t.Helper()
	ch := make(chan sessions.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	if !live {
		close(ch)
	}
	if st == nil {
		st = views.Plain()
	}
	m := NewModel(Options{Events: ch, Header: viewtest.Header(), Mode: "attach", Control: ctrl, Source: elfinfo.ReadFrameSource}, st)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	_, cmd := m.Update(m.Init()())
	for !live && cmd != nil {
		_, cmd = m.Update(cmd())
	}
	if got := m.State().Seq; got != len(evs) {
		t.Fatalf("applied %d events of %d", got, len(evs))
	}
	if live {
		// A live session names the uids from this machine's users: fix them for the goldens.
		m.proc.names = &userNames{names: map[int]string{0: "root", 1000: "ada"}, asked: map[int]bool{0: true, 1000: true}, ver: 1}
		m.proc.users, m.proc.namesAt = m.proc.names.snapshot(), 1
	}
	return m
}

// colourStyles draw with colour and attributes, as on a 256-colour terminal without NO_COLOR.
func colourStyles() *views.Styles {
	r := views.PlainRenderer(nil)
	r.SetColorProfile(termenv.ANSI256)
	r.SetHasDarkBackground(true)
	return views.NewStyles(r)
}

// TestProcsAndCrashesFrames: golden frames of the Processes and Crashes screens at 80×24
// and 200×60, without colour (what NO_COLOR draws: the cursor is a ">") and with colour (the
// cursor is reverse video).
func TestProcsAndCrashesFrames(t *testing.T) {
	type screen struct {
		name string
		keys []string
	}
	screens := []screen{
		{"procs", []string{"1"}},
		{"procs-folded", []string{"1", "h"}},
		{"procs-filter-uid", []string{"1", "/", "u", "i", "d", ":", "0", "enter"}},
		{"procs-signal", []string{"1", "K", "l", "l"}},
		{"crashes", []string{"3"}},
		{"crash-detail", []string{"3", "enter"}},
		{"crash-detail-long-paths", []string{"3", "j", "j", "j", "enter"}},
		{"handled", []string{"3", "t"}},
		{"handled-detail", []string{"3", "t", "j", "enter"}},
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		for _, colour := range []bool{false, true} {
			for _, sc := range screens {
				w, h := size[0], size[1]
				var st *views.Styles
				variant := "nocolor"
				if colour {
					st, variant = colourStyles(), "color"
					if w != 80 {
						continue // one colour size is enough to pin the attributes
					}
				}
				m := fixtureModel(t, procFixture(), &recorder{}, true, w, h, st)
				press(t, m, sc.keys...)
				name := fmt.Sprintf("pc-%s-%dx%d-%s", sc.name, w, h, variant)
				v := m.View()
				if colour {
					if !strings.Contains(v, "\x1b[7m") && !strings.Contains(v, ";7m") {
						t.Errorf("%s: no reverse video for the cursor", name)
					}
					if strings.Contains(ansi.Strip(v), "\n>") && !strings.Contains(sc.name, "detail") {
						t.Errorf("%s: the \">\" marker is only for NO_COLOR", name)
					}
				} else {
					checkFrame(t, name, v, w, h)
					if list := sc.name != "procs-signal" && !strings.Contains(sc.name, "detail"); list && !strings.Contains(v, "\n>") {
						t.Errorf("%s: no \">\" cursor marker without colour:\n%s", name, v)
					}
				}
				golden(t, name, v)
			}
		}
	}
}

func TestProcsStateFromSamples(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	v := m.View()
	for _, want := range []string{"S nanosleep", "killed SIGABRT", "killed SIGFPE", "state as of 01:00:01"} {
		if !strings.Contains(v, want) {
			t.Errorf("Processes lacks %q:\n%s", want, v)
		}
	}
	if row := lineWith(v, "job-helper"); !strings.Contains(row, " T ") {
		t.Errorf("the stopped helper's STATE is not T: %q", row)
	}
	// Without a sample, STATE says it does not know, rather than "running".
	m = liveModel(t, nil, false)
	if row := lineWith(m.View(), "mpirun"); !strings.Contains(row, " ? ") || strings.Contains(row, "running") {
		t.Errorf("mpirun without a sample: %q", row)
	}
	if !strings.Contains(m.View(), "until a stack sample") {
		t.Errorf("the title does not say where STATE comes from:\n%s", m.View())
	}
	// s by state sorts by that column.
	m = fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	press(t, m, "s", "s", "s", "s")
	if got := views.ProcSorts[m.proc.sort]; got != "state" {
		t.Fatalf("sort %s", got)
	}
	var got []string
	for _, r := range m.proc.rows(m) {
		st, _ := views.ProcStat(m.state, r.Proc)
		got = append(got, st)
	}
	if want := "S nanosleep,T,killed SIGABRT,killed SIGFPE,killed SIGSEGV,killed SIGSEGV"; strings.Join(got, ",") != want {
		t.Errorf("by state: %s, want %s", strings.Join(got, ","), want)
	}
}

func lineWith(v, s string) string {
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func TestProcsTreeFold(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	v := m.View()
	if !strings.Contains(lineWith(v, "4101"), "├─ ./solver") || !strings.Contains(lineWith(v, "4110"), "└─ job-helper") {
		t.Fatalf("tree glyphs:\n%s", v)
	}
	press(t, m, "h") // ←: mpirun folds its 5 children
	v = m.View()
	if !strings.Contains(v, "▸ mpirun (+5)") || strings.Contains(v, "4101") {
		t.Fatalf("← did not fold mpirun:\n%s", v)
	}
	press(t, m, "l")
	if !strings.Contains(m.View(), "4101") {
		t.Fatal("→ did not unfold")
	}
	press(t, m, "j", "j", "h") // on a leaf, ← goes to the parent
	if m.proc.cursor != 0 {
		t.Fatalf("← on a leaf: cursor %d, want the parent", m.proc.cursor)
	}
	press(t, m, "s", "h")
	if !strings.Contains(m.message, "sort: tree") {
		t.Errorf("← outside the tree order: %q", m.message)
	}
}

func TestProcsFilterUID(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	press(t, m, "/", "u", "i", "d", ":", "0", "enter")
	rows := m.proc.rows(m)
	if len(rows) != 2 || rows[0].Proc.PID != 4100 || !rows[0].Context || rows[1].Proc.PID != 4110 {
		t.Fatalf("uid:0 should keep the helper and, as context, its parent: %+v", rows)
	}
	if v := m.View(); !strings.Contains(v, "1 of 6 processes match") {
		t.Errorf("title:\n%s", v)
	}
	press(t, m, "esc", "/", "1", "0", "0", "0", "enter") // a bare uid matches too
	if n := len(m.proc.rows(m)); n != 5 {
		t.Errorf("filter 1000: %d rows, want mpirun and its 4 ranks", n)
	}
	// user:NAME with the names a live session resolved.
	m.proc.users = map[int]string{0: "root", 1000: "ada"}
	press(t, m, "esc", "/", "a", "d", "a", "enter")
	if n := len(m.proc.rows(m)); n != 5 {
		t.Errorf("filter ada: %d rows", n)
	}
}

func TestProcsPosition(t *testing.T) {
	m := NewModel(Options{Mode: "attach"}, views.Plain())
	m.state = viewtest.Big(201)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if v := m.View(); !strings.Contains(strings.Split(v, "\n")[3], "1/201") {
		t.Fatalf("no position on a long list:\n%s", v)
	}
	press(t, m, "j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	if v := m.View(); !strings.Contains(strings.Split(v, "\n")[3], "12/201") {
		t.Fatalf("position after 11 downs:\n%s", v)
	}
	press(t, m, "G")
	if v := m.View(); !strings.Contains(v, "201/201") {
		t.Fatalf("position at the end:\n%s", v)
	}
	// A short list needs none.
	if v := liveModel(t, nil, false).View(); strings.Contains(strings.Split(v, "\n")[3], "/6") {
		t.Errorf("a list that fits shows a position:\n%s", v)
	}
}

func TestSignalDialog(t *testing.T) {
	rec := &recorder{}
	m := fixtureModel(t, procFixture(), rec, true, 80, 24, nil)
	if !strings.Contains(m.View(), "K signal") {
		t.Errorf("the footer does not offer K in a live session:\n%s", m.View())
	}
	press(t, m, "K")
	v := m.View()
	for _, want := range []string{"Send a signal", "pid 4100 · rank - · mpirun", "[TERM]", "Send SIGTERM to pid 4100"} {
		if !strings.Contains(v, want) {
			t.Fatalf("dialog lacks %q:\n%s", want, v)
		}
	}
	// The dialog takes every key: 2 does not switch tabs, m measures nothing, q and esc
	// cancel rather than quit.
	press(t, m, "2", "m")
	if m.tab != tabProcs || m.proc.sig == nil || len(rec.Calls()) != 0 {
		t.Fatalf("2, m in the dialog: tab %d dialog %v calls %v", m.tab, m.proc.sig, rec.Calls())
	}
	press(t, m, "q")
	if m.overlay != noOverlay || m.proc.sig != nil || len(rec.Calls()) != 0 {
		t.Fatalf("q in the dialog: overlay %d dialog %v calls %v", m.overlay, m.proc.sig, rec.Calls())
	}
	press(t, m, "K", "esc")
	if m.proc.sig != nil || !strings.Contains(m.message, "no signal sent") {
		t.Fatalf("esc in the dialog: %v %q", m.proc.sig, m.message)
	}
	// ←/→ choose from the list; enter sends to the process named, by pid.
	press(t, m, "K", "l", "l", "h", "l")
	if v := m.View(); !strings.Contains(v, "[KILL]") || !strings.Contains(v, "Send SIGKILL to pid 4100") {
		t.Fatalf("choice:\n%s", v)
	}
	press(t, m, "enter")
	if got := rec.Calls(); len(got) != 1 || got[0] != "signal SIGKILL 4100" {
		t.Fatalf("calls %v", got)
	}
	if !strings.Contains(m.message, "SIGKILL to pid 4100 (rank -) done") {
		t.Errorf("status: %q", m.message)
	}
	// Every signal of the list can be reached, and the list wraps.
	press(t, m, "K")
	for i := range views.Signals {
		if got := views.Signals[m.proc.sig.choice]; got != views.Signals[i] {
			t.Fatalf("choice %d is %s", i, got)
		}
		press(t, m, "right")
	}
	if m.proc.sig.choice != 0 {
		t.Error("the list does not wrap")
	}
	press(t, m, "esc")

	// Refused: in a replay, after the tracer ended, on an ended process.
	r := NewModel(Options{Replay: procFixture(), Mode: "replay"}, views.Plain())
	r.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(t, r, "}", "K")
	if r.proc.sig != nil || !strings.Contains(r.message, "needs a live session") {
		t.Errorf("K in replay: dialog %v message %q", r.proc.sig, r.message)
	}
	done := fixtureModel(t, procFixture(), rec, false, 80, 24, nil)
	press(t, done, "K")
	if done.proc.sig != nil || !strings.Contains(done.message, "live session") {
		t.Errorf("K after the tracer ended: %q", done.message)
	}
	press(t, m, "j", "j", "K") // 4102 was killed by its SIGSEGV
	if m.proc.sig != nil || !strings.Contains(m.message, "has ended") {
		t.Errorf("K on an ended process: %q", m.message)
	}
}

func TestHandledFaultsList(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	press(t, m, "3")
	if v := m.View(); !strings.Contains(v, "3 handled faults (t lists them)") {
		t.Fatalf("the crash list does not point at the handled faults:\n%s", v)
	}
	press(t, m, "t")
	v := m.View()
	for _, want := range []string{"3 handled faults at 2 sites", "SIGBUS  BUS_ADRERR", "map_grow (solver+0x1300)",
		"safepoint_poll (solver+0x1400)", "0-1"} {
		if !strings.Contains(v, want) {
			t.Errorf("handled list lacks %q:\n%s", want, v)
		}
	}
	if row := lineWith(v, "safepoint_poll"); !strings.Contains(row, "    2 SIGSEGV") {
		t.Errorf("the safepoint site's count: %q", row)
	}
	press(t, m, "j", "enter")
	v = m.View()
	if !strings.Contains(v, "handled · SIGSEGV SEGV_ACCERR × 2") || !strings.Contains(v, "not a crash, no core kept") {
		t.Fatalf("handled detail:\n%s", v)
	}
	press(t, m, "esc", "e")
	if m.overlay != explainOverlay || !strings.Contains(m.View(), "handled SIGSEGV at safepoint_poll") {
		t.Fatalf("explain on a handled site:\n%s", m.View())
	}
	press(t, m, "esc", "D")
	if !strings.Contains(m.message, "no core") {
		t.Errorf("D on a handled site: %q", m.message)
	}
	press(t, m, "t")
	if m.crash.handled || !strings.Contains(m.View(), "relax_cell") {
		t.Fatal("t does not come back to the crash groups")
	}
	// Clicks select in the handled list too.
	press(t, m, "t")
	m.Update(tea.MouseMsg{X: 5, Y: bodyTop + 2, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if m.crash.hcursor != 0 {
		t.Errorf("click on the first handled site: %d", m.crash.hcursor)
	}
}

// TestCrashDetailScroll (issue 12, item 5): the detail scrolls without a dead zone at the end
// (one k after G moves at once, as does one k after scrolling past the end), another group
// opens at its top, and the core's path stays on screen at every position.
func TestCrashDetailScroll(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	press(t, m, "3", "enter")
	top := m.View()
	press(t, m, "G")
	bottom := m.View()
	if bottom == top || !strings.Contains(bottom, "(representative)") {
		t.Fatalf("G does not reach the end of the detail:\n%s", bottom)
	}
	maxScroll := m.crash.scroll
	for range 10 {
		press(t, m, "j")
	}
	if m.crash.scroll != maxScroll || m.View() != bottom {
		t.Fatalf("scrolling past the end moved: %d, want %d", m.crash.scroll, maxScroll)
	}
	press(t, m, "k")
	if m.crash.scroll != maxScroll-1 || m.View() == bottom {
		t.Fatalf("one k at the end did not scroll back at once: %d", m.crash.scroll)
	}
	for _, v := range []string{top, bottom, m.View()} {
		if !strings.Contains(v, "core /var/crash/core.solver.4102") {
			t.Errorf("the core path is not on screen:\n%s", v)
		}
	}
	if !strings.Contains(bottom, fmt.Sprintf("-%d/%d", maxScroll+m.bodyH()-3, maxScroll+m.bodyH()-3)) {
		t.Errorf("no position in the detail:\n%s", bottom)
	}
	press(t, m, "esc", "j", "enter")
	if m.crash.scroll != 0 || !strings.Contains(m.View(), "group 2") {
		t.Errorf("another group opens scrolled (%d)", m.crash.scroll)
	}
}

// TestCrashesAt80Columns (item 7): at 80 columns the list's SITE and the stack's file:line are
// on screen, shortened (assert text, module base names, "…" inside long paths, paths relative
// to the sources' directory), and what does not fit went to the detail.
func TestCrashesAt80Columns(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	press(t, m, "3")
	v := m.View()
	for _, want := range []string{"relax_cell (libsolver.so+0x1234)", "halo.c:77 assert `n == expected'", "normalize (solver+0x1222)"} {
		if !strings.Contains(v, want) {
			t.Errorf("80 columns: the list lacks %q:\n%s", want, v)
		}
	}
	press(t, m, "j", "j", "j", "enter")
	v = m.View()
	for range 3 { // what the frame shows as the detail scrolls through
		press(t, m, "j", "j", "j", "j", "j", "j", "j", "j")
		v += m.View()
	}
	for _, want := range []string{"helmholtz_preconditioner.c:1234", "progress.c:231", "main.c:12", "sources under /home/ada/",
		"core /scratch/ada/job-4100/cores/core.4.4100", "at /home/ada/…/src/dynamics/solvers/implicit/helmholtz_preconditioner.c:1234",
		"in /opt/ompi/lib/openmpi/mca_btl_vader_shared_memory.so+0x5678", "#1  opal_progress  progress.c:231  libopen-pal.so.80+0x19f0"} {
		if !strings.Contains(v, want) {
			t.Errorf("80 columns: the detail lacks %q:\n%s", want, v)
		}
	}
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	v = m.View()
	if !strings.Contains(v, "/opt/ompi/lib/openmpi/mca_btl_vader_shared_memory.so+0x5678") || !strings.Contains(v, "0x7f3a1d405678") {
		t.Errorf("200 columns: the whole module path and the pcs:\n%s", v)
	}
	press(t, m, "esc")
	if v := m.View(); !strings.Contains(v, "→ /var/crash/core.solver.4102") || !strings.Contains(v, "FIRST") {
		t.Errorf("200 columns: the list shows times and core paths:\n%s", v)
	}
}

func TestCrashGdbRefusals(t *testing.T) {
	m := fixtureModel(t, procFixture(), nil, false, 80, 24, nil)
	press(t, m, "3")
	if !strings.Contains(m.View(), "D gdb core") {
		t.Errorf("the footer does not offer D:\n%s", m.View())
	}
	press(t, m, "j", "j", "D") // SIGFPE: no core
	if !strings.Contains(m.message, "group 3 has no core") || !strings.Contains(m.message, "--cores DIR") {
		t.Errorf("g without a core: %q", m.message)
	}
	press(t, m, "k", "k", "D") // /var/crash/core.solver.4102 is not on this machine
	if _, err := os.Stat("/var/crash/core.solver.4102"); err == nil {
		t.Skip("this machine has the fixture's core path")
	}
	if !strings.Contains(m.message, "not readable here") {
		t.Errorf("g on a missing core: %q", m.message)
	}
}

// TestCrashGdbRuns: D on a core that exists asks first, then y hands the terminal to gdb (a
// tea.Exec command); TestTUIGdbOnCore (cmd/crashtui) runs gdb itself on a pty and comes back.
func TestCrashGdbRuns(t *testing.T) {
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb is not installed (make test installs it)")
	}
	core := filepath.Join(t.TempDir(), "core.1.4102")
	if err := os.WriteFile(core, []byte("not a core"), 0o644); err != nil {
		t.Fatal(err)
	}
	evs := procFixture()
	for i, e := range evs {
		if c, ok := e.Body.(sessions.Crash); ok && c.PID == 4102 {
			c.Core = &core
			evs[i].Body = c
		}
	}
	m := fixtureModel(t, evs, nil, false, 80, 24, nil)
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("3")})
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("D")}); cmd != nil || !strings.Contains(m.View(), "Open gdb on core.1.4102") {
		t.Fatalf("D did not ask before gdb:\n%s", m.View())
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	if cmd == nil {
		t.Fatalf("y on an existing core runs nothing: %q", m.message)
	}
	_ = cmd() // tea.ExecProcess's message: the program runs it
}

// gdb's arguments never start with "-" where a path goes, whatever a replayed file says.
func TestGdbCoreArgsAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	evil := "--eval-command=shell touch pwned"
	if err := os.WriteFile(evil, []byte("core"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := "-ex=quit"
	if err := os.WriteFile(exe, []byte("exe"), 0o755); err != nil {
		t.Fatal(err)
	}
	args, core, err := gdbCoreArgs(exe, evil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-q", filepath.Join(dir, exe), filepath.Join(dir, evil)}
	if strings.Join(args, "\x00") != strings.Join(want, "\x00") || core != want[2] {
		t.Errorf("args %q, want %q", args, want)
	}
	args, _, _ = gdbCoreArgs("/nonexistent/exe", evil)
	if len(args) != 3 || args[1] != "-c" || args[2] != want[2] {
		t.Errorf("without the exe: %q", args)
	}
	if _, _, err := gdbCoreArgs("", "/nonexistent/core"); err == nil || !strings.Contains(err.Error(), "not readable here") {
		t.Errorf("a missing core: %v", err)
	}
}

// TestStacksDetailSourceOffUpdate: the detail of a frame shows its source line, read by a
// command after Update returns (a source file on a slow file system must not stall the
// screen or the tracer's events, which wait on Update's lock).
func TestStacksDetailSourceOffUpdate(t *testing.T) {
	wd, _ := os.Getwd()
	file := filepath.Join(wd, "procs_crashes_test.go")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const line = 3
	text := strings.Split(string(b), "\n")[line-1]
	evs := viewtest.Events()
	at := evs[len(evs)-1].Time.Add(time.Second)
	evs = append(evs, sessions.Event{Time: at, Body: sessions.Sample{Seq: 1, PID: 4101, Rank: 0, Threads: []sessions.ThreadSample{
		{TID: 4101, State: "S", Held: true, Frames: []sessions.Frame{{PC: 0x401000, Module: "/nonexistent/solver", Offset: 0x1000,
			Function: "solve", File: file, Line: line}}}}}})
	m := fixtureModel(t, evs, nil, false, 120, 40, nil)
	m.tab = tabStacks
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if v := m.View(); !strings.Contains(v, "reading source") || strings.Contains(v, text) {
		t.Fatalf("before its command ran, the detail should say it is reading the source:\n%s", v)
	}
	run(t, m, cmd)
	if v := m.View(); !regexp.MustCompile(`>\s+` + strconv.Itoa(line) + `\s+` + regexp.QuoteMeta(text)).MatchString(v) {
		t.Errorf("the detail lacks source line %d %q:\n%s", line, text, v)
	}
}

// TestDebuggerHandOff: D, y on a class lets go of its first process for gdb and takes it back
// when gdb exits; with no debugger installed nothing is let go of, and the screen says why.
func TestDebuggerHandOff(t *testing.T) {
	evs := viewtest.Events()
	at := evs[len(evs)-1].Time.Add(time.Second)
	evs = append(evs, sessions.Event{Time: at, Body: sessions.Sample{Seq: 1, PID: 4100, Rank: sessions.NoRank, Threads: []sessions.ThreadSample{
		{TID: 4100, State: "S", Held: true, Frames: []sessions.Frame{{PC: 0x401000, Module: "/nonexistent/solver", Offset: 0x1000, Function: "solve"}}}}}})
	rec := &recorder{}
	m := fixtureModel(t, evs, rec, true, 120, 40, nil)
	m.tab = tabStacks
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})

	t.Setenv("PATH", t.TempDir()) // no gdb, no dlv
	press(t, m, "D", "y")
	if !strings.Contains(m.message, "no debugger") || len(rec.Calls()) != 0 {
		t.Fatalf("without a debugger: message %q, calls %v", m.message, rec.Calls())
	}

	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gdb"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	var release tea.Msg
	for _, msg := range press(t, m, "D", "y") {
		if r, ok := msg.(releasedMsg); ok {
			release = r
		}
	}
	if r, ok := release.(releasedMsg); !ok || r.name != "gdb" || r.err != nil || !slices.Contains(r.argv, "4100") {
		t.Fatalf("D, y: %+v", release)
	}
	if calls := rec.Calls(); !slices.Equal(calls, []string{"release 4100"}) {
		t.Fatalf("D, y asked the tracer for %v", calls)
	}
	_, cmd := m.Update(debuggerDoneMsg{pid: 4100, name: "gdb"})
	run(t, m, cmd)
	if calls := rec.Calls(); !slices.Equal(calls, []string{"release 4100", "reacquire 4100"}) {
		t.Errorf("after gdb exited the tracer was asked for %v", calls)
	}
}

// TestStacksDetailNothingToShow: a frame with no source and no code to show (a stripped
// module) is read once, not again and again.
func TestStacksDetailNothingToShow(t *testing.T) {
	evs := viewtest.Events()
	at := evs[len(evs)-1].Time.Add(time.Second)
	evs = append(evs, sessions.Event{Time: at, Body: sessions.Sample{Seq: 1, PID: 4101, Rank: 0, Threads: []sessions.ThreadSample{
		{TID: 4101, State: "S", Held: true, Frames: []sessions.Frame{{PC: 0x401000, Module: "[vdso]", Offset: 0x1000}}}}}})
	m := fixtureModel(t, evs, nil, false, 120, 40, nil)
	m.tab = tabStacks
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	msg, ok := cmd().(sourceMsg)
	if !ok || len(msg.lines) != 0 {
		t.Fatalf("the read of a frame with nothing to show: %#v", msg)
	}
	if _, again := m.Update(msg); again != nil {
		t.Errorf("an empty read starts another (%T)", again())
	}
	if v := m.View(); strings.Contains(v, "reading source") {
		t.Errorf("the detail still says it is reading:\n%s", v)
	}
}
