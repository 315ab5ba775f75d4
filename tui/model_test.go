package tui

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
	"github.com/crashtui/crashtui/views/viewtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// recorder is a Controller test double that records the requests (it stands for the tracer's
// request channel, not for ptrace).
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
	return nil
}
func (r *recorder) Measure() error                     { return r.add("measure") }
func (r *recorder) Checkpoint(p sessions.Policy) error { return r.add("checkpoint " + string(p)) }
func (r *recorder) Detach() error                      { return r.add("detach") }
func (r *recorder) Sample() error                      { return r.add("sample") }
func (r *recorder) AutoSample(on bool)                 { r.add(fmt.Sprint("auto ", on)) }
func (r *recorder) Release(pid int) error              { return r.add(fmt.Sprint("release ", pid)) }
func (r *recorder) Reacquire(pid int) error            { return r.add(fmt.Sprint("reacquire ", pid)) }
func (r *recorder) Signal(pid int, sig string) error {
	return r.add(fmt.Sprint("signal ", sig, " ", pid))
}
func (r *recorder) ProcDetail(pid int) (sessions.ProcDetail, error) {
	r.add(fmt.Sprint("detail ", pid))
	return sessions.ProcDetail{PID: pid, Cmdline: []string{"fixture", strconv.Itoa(pid)}, Cwd: "/home/ada/run", State: "S (sleeping)",
		Threads: []sessions.ThreadDetail{{TID: pid, Comm: "fixture", State: "S", Syscall: "nanosleep"}}}, nil
}
func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// run executes a command the way Bubble Tea would, feeding its messages back into Update,
// and returns every message it produced (Quit included). Batches and sequences are unrolled;
// ticks are not run (replay tests drive them with their own clock).
func run(t *testing.T, m *Model, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	if cmd == nil {
		return nil
	}
	msg := cmd()
	var out []tea.Msg
	v := reflect.ValueOf(msg)
	if v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeOf(tea.Cmd(nil)) {
		for i := 0; i < v.Len(); i++ {
			out = append(out, run(t, m, v.Index(i).Interface().(tea.Cmd))...)
		}
		return out
	}
	out = append(out, msg)
	switch msg.(type) {
	case tea.QuitMsg, tickMsg:
		return out
	}
	_, next := m.Update(msg)
	return append(out, run(t, m, next)...)
}

func press(t *testing.T, m *Model, keys ...string) []tea.Msg {
	t.Helper()
	var out []tea.Msg
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "shift+tab":
			msg = tea.KeyMsg{Type: tea.KeyShiftTab}
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "up":
			msg = tea.KeyMsg{Type: tea.KeyUp}
		case "right":
			msg = tea.KeyMsg{Type: tea.KeyRight}
		case "backspace":
			msg = tea.KeyMsg{Type: tea.KeyBackspace}
		case "ctrl+c":
			msg = tea.KeyMsg{Type: tea.KeyCtrlC}
		case " ":
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		_, cmd := m.Update(msg)
		out = append(out, run(t, m, cmd)...)
	}
	return out
}

// liveModel is a model fed the fixture through a live channel; open leaves the channel open
// (the tracer still running).
func liveModel(t *testing.T, ctrl Controller, open bool) *Model {
	t.Helper()
	evs := viewtest.Events()
	ch := make(chan sessions.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	if !open {
		close(ch)
	}
	m := NewModel(Options{Events: ch, Header: viewtest.Header(), Mode: "attach", Control: ctrl}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	msg := m.Init()()
	_, cmd := m.Update(msg)
	if !open {
		for cmd != nil { // the close arrives as its own message when the batch filled up first
			_, cmd = m.Update(cmd())
		}
	}
	if got := m.State().Seq; got != len(evs) {
		t.Fatalf("applied %d events of %d", got, len(evs))
	}
	return m
}

// checkFrame asserts the frame is exactly w×h and carries no escape sequences (Plain styles).
func checkFrame(t *testing.T, name, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("%s: %d lines, want %d", name, len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("%s: line %d is %d wide (> %d): %q", name, i+1, n, w, l)
		}
	}
	if strings.ContainsRune(v, 0x1b) {
		t.Errorf("%s: ESC in a plain frame", name)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s; got:\n%s", name, path, got)
	}
}

func TestFramesAtSizes(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {40, 12}, {200, 60}} {
		m := liveModel(t, nil, false)
		w, h := size[0], size[1]
		m.Update(tea.WindowSizeMsg{Width: w, Height: h})
		for tab := 0; tab < m.ntabs(); tab++ {
			press(t, m, fmt.Sprint(tab+1))
			name := fmt.Sprintf("frame-%d-%s-%dx%d", tab+1, strings.ToLower(views.TabNames[tab]), w, h)
			v := m.View()
			checkFrame(t, name, v, w, h)
			golden(t, name, v)
		}
	}
	m := liveModel(t, nil, false)
	m.Update(tea.WindowSizeMsg{Width: 20, Height: 5})
	v := m.View()
	checkFrame(t, "tiny", v, 20, 5)
	if !strings.Contains(v, "too") {
		t.Errorf("tiny terminal: %q", v)
	}
}

func TestTabsCursorFilter(t *testing.T) {
	m := liveModel(t, nil, false)
	if !strings.Contains(m.View(), "job finished") {
		t.Error("a closed event stream must show \"job finished\"")
	}
	press(t, m, "tab")
	if m.tab != tabMatrix {
		t.Fatalf("tab: at %d", m.tab)
	}
	press(t, m, "shift+tab", "shift+tab")
	if m.tab != tabLog {
		t.Fatalf("shift+tab wraps: at %d", m.tab)
	}
	press(t, m, "1", "j", "j", "down", "k")
	if m.proc.cursor != 2 {
		t.Fatalf("cursor %d, want 2", m.proc.cursor)
	}
	press(t, m, "/", "4", "1", "0", "3", "enter")
	v := m.View()
	if !strings.Contains(v, "4103") || strings.Contains(v, "4104") || !strings.Contains(v, "filter: 4103") {
		t.Fatalf("filter 4103:\n%s", v)
	}
	press(t, m, "esc")
	if m.proc.filter != "" || !strings.Contains(m.View(), "4104") {
		t.Fatal("esc must clear the filter")
	}
	press(t, m, "s")
	if views.ProcSorts[m.proc.sort] != "rank" || !strings.Contains(m.View(), "sort: rank") {
		t.Fatal("s must cycle the sort order")
	}
	// Matrix cursor moves in both directions; enter on a crashed process jumps to its group.
	press(t, m, "2", "j", "j", "l", "l", "l")
	if m.mx.row != 2 || m.mx.col != 3 {
		t.Fatalf("matrix cursor %d,%d", m.mx.row, m.mx.col)
	}
	press(t, m, "1", "g", "enter")
	if m.tab != tabCrashes || !m.crash.detail || !strings.Contains(m.View(), "abort message") {
		t.Fatalf("enter on rank 0 should open its crash group:\n%s", m.View())
	}
	press(t, m, "esc")
	if m.crash.detail {
		t.Fatal("esc must leave the detail")
	}
	press(t, m, "6", "/", "f", "p", "e", "enter")
	if v := m.View(); !strings.Contains(v, "SIGFPE") || strings.Contains(v, "SIGSEGV") {
		t.Fatalf("log filter:\n%s", v)
	}
}

func TestExplainOverlay(t *testing.T) {
	m := liveModel(t, nil, false)
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"3", "e"}, "Spindle"},
		{[]string{"2", "j", "j", "j", "j", "l", "e"}, "seccomp"},
		{[]string{"4", "e"}, "criu#2261"},
		{[]string{"1", "e"}, "pid 4100"},
	} {
		press(t, m, tc.keys...)
		if m.overlay != explainOverlay || !strings.Contains(m.View(), tc.want) {
			t.Errorf("%v: overlay %d, view lacks %q:\n%s", tc.keys, m.overlay, tc.want, m.View())
		}
		press(t, m, "esc")
		if m.overlay != noOverlay {
			t.Errorf("%v: esc did not close the explanation", tc.keys)
		}
	}
	press(t, m, "?")
	if m.overlay != helpOverlay || !strings.Contains(m.View(), "Processes keys") {
		t.Fatalf("help overlay (the tab's own keys first):\n%s", m.View())
	}
	press(t, m, "?")
	if m.overlay != noOverlay {
		t.Fatal("? toggles help")
	}
}

func TestControllerRequests(t *testing.T) {
	rec := &recorder{}
	m := liveModel(t, rec, true)
	press(t, m, "c")
	if m.overlay != checkpointOverlay || !strings.Contains(m.View(), "Simulated checkpoint") {
		t.Fatalf("checkpoint dialog:\n%s", m.View())
	}
	// naive on a job crashtui did not start asks first: any key but y cancels.
	press(t, m, "j", "enter")
	if m.overlay != naiveOverlay || !strings.Contains(m.View(), "breaks this job") {
		t.Fatalf("naive restore of an attached job: no confirmation\n%s", m.View())
	}
	press(t, m, "n")
	if len(rec.Calls()) != 0 || m.overlay != noOverlay {
		t.Fatalf("n did not cancel: calls %v", rec.Calls())
	}
	press(t, m, "c", "enter", "y") // the dialog remembers the last choice
	press(t, m, "m")
	if got, want := rec.Calls(), []string{"checkpoint naive", "measure"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("controller calls %v, want %v", got, want)
	}
	if m.tab != tabThreads {
		t.Error("a checkpoint shows the Threads tab")
	}
	// q asks first while the tracer runs; n keeps going; y detaches then quits.
	if msgs := press(t, m, "q"); m.overlay != quitOverlay || len(msgs) != 0 {
		t.Fatalf("q on a live session must ask: overlay %d msgs %v", m.overlay, msgs)
	}
	press(t, m, "n")
	if m.overlay != noOverlay {
		t.Fatal("n cancels")
	}
	msgs := press(t, m, "q", "y")
	if got := rec.Calls(); got[len(got)-1] != "detach" {
		t.Fatalf("quit did not detach: %v", got)
	}
	if _, ok := msgs[len(msgs)-1].(tea.QuitMsg); !ok {
		t.Fatalf("quit did not quit: %v", msgs)
	}
}

func TestReplayRefusesControls(t *testing.T) {
	m := NewModel(Options{Replay: viewtest.Events(), Mode: "replay"}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(t, m, "m")
	if !strings.Contains(m.message, "replay") {
		t.Fatalf("measure in replay: %q", m.message)
	}
	// c says at once that it needs a live session, instead of opening the dialog first.
	press(t, m, "c")
	if m.overlay == checkpointOverlay || !strings.Contains(m.message, "live session") {
		t.Fatalf("c in replay: overlay %d, message %q", m.overlay, m.message)
	}
	msgs := press(t, m, "q")
	if len(msgs) != 1 {
		t.Fatalf("q in replay quits at once: %v", msgs)
	}
	if _, ok := msgs[0].(tea.QuitMsg); !ok {
		t.Fatalf("q in replay quits at once: %v", msgs)
	}
}

func TestMouse(t *testing.T) {
	m := liveModel(t, nil, false)
	_, spans := views.Tabs(m.st, m.state, m.tab, m.ntabs(), m.width)
	m.Update(tea.MouseMsg{X: spans[2].From + 1, Y: headerH, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if m.tab != tabCrashes {
		t.Fatalf("click on tab 3 left tab %d", m.tab)
	}
	m.Update(tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelDown})
	if m.crash.cursor != 1 {
		t.Fatalf("wheel: cursor %d", m.crash.cursor)
	}
	m.Update(tea.MouseMsg{X: 5, Y: bodyTop + 2 + 2, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if m.crash.cursor != 2 {
		t.Fatalf("click on the third group: cursor %d", m.crash.cursor)
	}
	press(t, m, "2")
	m.Update(tea.MouseMsg{X: 14 + 3*4 + 1, Y: bodyTop + 2 + 1, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if m.mx.row != 1 || m.mx.col != 4 {
		t.Fatalf("click on matrix cell: %d,%d", m.mx.row, m.mx.col)
	}
}

// Everything untrusted that flows through the live path reaches the frame without an ESC,
// even when the styles would emit colour.
func TestSanitizedLive(t *testing.T) {
	evil := "x\x1b]0;owned\x07\x1b[31mred"
	ch := make(chan sessions.Event, 4)
	ch <- sessions.Event{Body: sessions.Process{PID: 5, Rank: 0, Comm: evil, Argv: []string{evil}}}
	ch <- sessions.Event{Body: sessions.Crash{PID: 5, Signal: "SIGABRT", AbortMessage: evil}}
	close(ch)
	m := NewModel(Options{Events: ch, Mode: "run"}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	run(t, m, m.Init())
	for tab := 1; tab <= nTabs; tab++ {
		press(t, m, fmt.Sprint(tab))
		if v := m.View(); strings.ContainsRune(v, 0x1b) || strings.ContainsRune(v, 0x07) {
			t.Fatalf("tab %d: escape reached the frame: %q", tab, v)
		}
	}
	press(t, m, "3", "enter")
	if v := m.View(); !strings.Contains(v, "x␛␛red") {
		t.Fatalf("abort message not shown sanitised:\n%s", v)
	}
}

// A recording played to the end yields the same State as applying its events directly; so
// do stepping through it, and seeking back and forth.
func TestReplayMatchesDirect(t *testing.T) {
	var buf bytes.Buffer
	rec, err := sessions.NewRecorder(&buf, viewtest.Header())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range viewtest.Events() {
		if err := rec.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	hdr, evs, err := sessions.ReadRecording(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := sessions.NewState()
	for _, e := range evs {
		want.Apply(e)
	}
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	newReplay := func() *Model {
		m := NewModel(Options{Replay: evs, Header: hdr, Mode: "replay"}, views.Plain())
		m.now = func() time.Time { return clock }
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		return m
	}

	// Paced: it opens paused at its first frame; space plays, then ticks at 100 ms of a fake
	// clock until the player is done.
	m := newReplay()
	if !m.player.Paused() || m.State().Seq != views.FirstFrame(evs) {
		t.Fatalf("the replay opened playing (%v) at event %d, want paused at its first frame (%d)", !m.player.Paused(), m.State().Seq, views.FirstFrame(evs))
	}
	run(t, m, m.Init())
	msgs := press(t, m, " ")
	for i := 0; !m.player.Done(); i++ {
		if i > 10000 {
			t.Fatal("replay never finished")
		}
		clock = clock.Add(100 * time.Millisecond)
		var tick tickMsg
		for _, msg := range msgs {
			if tm, ok := msg.(tickMsg); ok {
				tick = tm
			}
		}
		tick.at = clock
		if tick.seq == 0 {
			t.Fatal("no tick scheduled while playing")
		}
		_, cmd := m.Update(tick)
		if cmd == nil {
			break
		}
		msgs = []tea.Msg{tickMsg{seq: m.tickSeq}}
	}
	if !reflect.DeepEqual(m.State(), want) {
		t.Fatal("paced replay differs from direct application")
	}
	if v := m.View(); !strings.Contains(v, "■ end") {
		t.Errorf("header does not say the replay ended:\n%s", v)
	}

	// Stepped: from the first frame, every event.
	m = newReplay()
	for m.player.Index() < len(evs) {
		press(t, m, ".")
	}
	if !reflect.DeepEqual(m.State(), want) {
		t.Fatal("stepped replay differs")
	}
	// Seek back to the start and forward to the end.
	press(t, m, "{")
	if m.State().Seq != 1 {
		t.Fatalf("seek to start left %d events", m.State().Seq)
	}
	press(t, m, "}")
	if !reflect.DeepEqual(m.State(), want) {
		t.Fatal("seek start then end differs")
	}
	press(t, m, "+", "+")
	if m.player.Speed() != 4 {
		t.Fatalf("speed %v", m.player.Speed())
	}
}

// BenchmarkView1000 is a frame of each tab at 1000 processes: what every Update ends with
// (normalize) and the View after it.
func BenchmarkView1000(b *testing.B) {
	for _, tab := range []int{tabProcs, tabMatrix, tabCrashes, tabLog} {
		b.Run(views.TabNames[tab], func(b *testing.B) {
			m := NewModel(Options{Mode: "attach"}, views.Plain())
			m.state = viewtest.Big(1000)
			m.normalize()
			m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
			m.tab = tab
			m.View()
			b.ResetTimer()
			for range b.N {
				m.normalize()
				m.View()
			}
		})
	}
}

type failing struct{ recorder }

func (f *failing) Measure() error { return errors.New("tracer busy") }

func TestControllerErrorShown(t *testing.T) {
	m := liveModel(t, &failing{}, true)
	press(t, m, "2", "m")
	if v := m.View(); !strings.Contains(v, "measure failed") || !strings.Contains(v, "tracer busy") {
		t.Fatalf("the controller's error is not shown:\n%s", v)
	}
}

// Events from several hosts: each host has its own matrix and H switches between them.
func TestMatrixHosts(t *testing.T) {
	ch := make(chan sessions.Event, 4)
	for _, h := range []string{"node2", "node1"} {
		ch <- sessions.Event{Host: h, Body: sessions.Matrix{PIDs: []int{1, 2}, Cells: []sessions.Cell{{From: 1, To: 2}, {From: 2, To: 1}}}}
	}
	close(ch)
	m := NewModel(Options{Events: ch, Mode: "attach"}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	run(t, m, m.Init())
	press(t, m, "2")
	if m.mx.ix.Host != "node1" || !strings.Contains(m.View(), "node1 (H: next host)") {
		t.Fatalf("first host: %q\n%s", m.mx.ix.Host, m.View())
	}
	press(t, m, "H")
	if m.mx.ix.Host != "node2" || !strings.Contains(m.View(), "node2") {
		t.Fatalf("H: host %q", m.mx.ix.Host)
	}
	press(t, m, "H")
	if m.mx.ix.Host != "node1" {
		t.Fatalf("H wraps: host %q", m.mx.ix.Host)
	}
}

// TestQuitWithoutAskingWhenNothingIsLeft: a live session whose processes have all exited
// quits on q without asking about detaching from 0 processes.
func TestQuitWithoutAskingWhenNothingIsLeft(t *testing.T) {
	rec := &recorder{}
	ch := make(chan sessions.Event, 4)
	ch <- sessions.Event{Body: sessions.Process{PID: 10, Rank: 0, Comm: "solver"}}
	code := 0
	ch <- sessions.Event{Body: sessions.Exit{PID: 10, Code: &code}}
	m := NewModel(Options{Events: ch, Header: viewtest.Header(), Mode: "run", Control: rec}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	_, cmd := m.Update(m.Init()())
	_ = cmd
	if n, _ := m.State().Live(); n != 0 {
		t.Fatalf("%d live processes after their exit", n)
	}
	msgs := press(t, m, "q")
	if m.overlay == quitOverlay {
		t.Fatal("q asked about detaching from 0 processes")
	}
	if len(msgs) == 0 {
		t.Fatal("q did not quit")
	}
	if _, ok := msgs[len(msgs)-1].(tea.QuitMsg); !ok {
		t.Fatalf("q: %v, want a quit", msgs)
	}
}

// TestKeyBurstActsPerRune: "jjjjj" delivered as one KeyRunes message (typed faster than the
// program reads) moves five rows, as five separate j presses do.
func TestKeyBurstActsPerRune(t *testing.T) {
	one, burst := liveModel(t, nil, false), liveModel(t, nil, false)
	press(t, one, "j", "j", "j", "j", "j")
	burst.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjjjj")})
	if one.View() != burst.View() {
		t.Errorf("a burst of jjjjj differs from five j presses:\n%s\n--- burst:\n%s", one.View(), burst.View())
	}
	press(t, one, "k")
	if one.View() == burst.View() {
		t.Error("the views cannot tell rows apart: the test proves nothing")
	}
}

// TestFilterAndSortSayWhyNot: / and s on the tab without a filter or a sort (the matrix) say
// so, instead of doing nothing; n without a filter says what it needs.
func TestFilterAndSortSayWhyNot(t *testing.T) {
	m := liveModel(t, nil, false)
	press(t, m, "2", "/")
	if m.filtering || !strings.Contains(m.message, "no filter") {
		t.Errorf("/ on Matrix: filtering %v, message %q", m.filtering, m.message)
	}
	press(t, m, "2", "s")
	if !strings.Contains(m.message, "keeps its own order") {
		t.Errorf("s on Matrix: message %q", m.message)
	}
	press(t, m, "3", "n")
	if !strings.Contains(m.message, "/ first") {
		t.Errorf("n without a filter: message %q", m.message)
	}
	press(t, m, "1", "/")
	if !m.filtering {
		t.Error("/ on Processes does not filter")
	}
}

// TestLogTopShowsTheOldestPage: g on the Log tab shows the oldest events, not a blank page.
func TestLogTopShowsTheOldestPage(t *testing.T) {
	m := liveModel(t, nil, false)
	press(t, m, "6", "g")
	v := m.View()
	first := views.EventLine(m.State().Log[0].Event)
	if len(first) > 20 {
		first = first[:20]
	}
	if !strings.Contains(v, first) {
		t.Errorf("g on the Log tab does not show the oldest event %q:\n%s", first, v)
	}
}

// TestReplayArrowsMoveNotStep: in a replay → moves or opens on every tab as it does live;
// only . steps. While paused the footer says space plays, and q only quits.
func TestReplayArrowsMoveNotStep(t *testing.T) {
	m := NewModel(Options{Replay: viewtest.Events(), Mode: "replay"}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	press(t, m, "}") // everything applied: groups exist; paused since it opened
	at := m.player.Index()
	press(t, m, "3", "right")
	if !m.crash.detail || m.player.Index() != at {
		t.Fatalf("→ on Crashes: detail %v, player %d → %d (must not step)", m.crash.detail, at, m.player.Index())
	}
	v := m.View()
	if !strings.Contains(v, "space play") || strings.Contains(v, "detach") {
		t.Errorf("paused replay footer:\n%s", v[strings.LastIndex(v, "\n")+1:])
	}
	press(t, m, "{", ".") // back to the start, one step
	if m.player.Index() == 0 {
		t.Errorf(". did not step")
	}
}

// The ranks' file is read on its own, and the screen is told only of what changed: a file
// that does not grow is no message (no frame), a new line is one, and the reads stop when the
// program has ended.
func TestRanksTailTellsOnlyNews(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ranks.log")
	if err := os.WriteFile(path, []byte("rank 0: starting\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	m := NewModel(Options{Mode: "run", RanksLog: path}, views.Plain())
	m.ended = ended
	first := m.out.start()().(outputMsg)
	if len(first.lines) != 1 {
		t.Fatalf("first read: %+v, want the one line", first)
	}
	next := m.out.take(m, first)
	got := make(chan tea.Msg, 1)
	go func() { got <- next() }()
	// Three reads' worth of time with nothing written: nothing to tell. (Load only makes
	// the wait longer; it cannot make a message come.)
	select {
	case msg := <-got:
		t.Fatalf("a file that did not grow was told: %+v", msg)
	case <-time.After(3 * outputEvery):
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "rank 1: residual 0.5")
	f.Close()
	select {
	case msg := <-got:
		om, ok := msg.(outputMsg)
		if !ok || len(om.lines) != 1 || om.lines[0].Text != "rank 1: residual 0.5" {
			t.Fatalf("after a line was written: %#v", msg)
		}
	case <-patience.After(30 * time.Second):
		t.Fatal("a new line was never told")
	}
	close(ended)
	after := m.out.take(m, outputMsg{})
	go func() { got <- after() }()
	select {
	case msg := <-got:
		if msg != nil {
			t.Fatalf("after the end: %#v, want nothing", msg)
		}
	case <-patience.After(30 * time.Second):
		t.Fatal("the reads went on after the program ended")
	}
}
