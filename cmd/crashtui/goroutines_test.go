package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// goParkSrc is a Go rank whose goroutines park and stay parked: three in a chan receive at
// one statement, one in a select, one on a locked sync.Mutex, one in time.Sleep, and main in
// a chan receive of its own. gdb, eu-stack and STAT show none of them (issue 24 item 7).
const goParkSrc = `package main

import (
	"fmt"
	"sync"
	"time"
)

var mu sync.Mutex

//go:noinline
func recvForever(ch chan int) { <-ch }

//go:noinline
func selectForever(a, b chan int) {
	select {
	case <-a:
	case <-b:
	}
}

//go:noinline
func lockForever() { mu.Lock() }

//go:noinline
func sleepLong() { time.Sleep(time.Hour) }

func main() {
	mu.Lock()
	ch, a, b := make(chan int), make(chan int), make(chan int)
	for i := 0; i < 3; i++ {
		go recvForever(ch) // the go statement of recvForever
	}
	go selectForever(a, b)
	go lockForever()
	go sleepLong()
	fmt.Println("ready")
	<-make(chan struct{})
}
`

// buildGoPark builds goParkSrc.
func buildGoPark(t *testing.T) (bin, src string) {
	t.Helper()
	dir := t.TempDir()
	src = filepath.Join(dir, "gopark.go")
	if err := os.WriteFile(src, []byte(goParkSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "gopark")
	build := exec.Command("go", "build", "-o", bin, "gopark.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, src
}

// srcLine is the line of goParkSrc that contains text.
func srcLine(t *testing.T, text string) int {
	t.Helper()
	for i, l := range strings.Split(goParkSrc, "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("no line %q in the test program", text)
	return 0
}

// goClass is the goroutine class whose path goes through fn.
func goClass(st sessions.Stacks, fn string) *sessions.StackClass {
	if st.Goroutines == nil {
		return nil
	}
	for i, c := range st.Goroutines.Classes {
		if hasFunction(c.Frames, fn) {
			return &st.Goroutines.Classes[i]
		}
	}
	return nil
}

// parkedAll says every goroutine of the test program has parked where it should.
func parkedAll(st sessions.Stacks) bool {
	for _, fn := range []string{"main.recvForever", "main.selectForever", "main.lockForever", "main.sleepLong"} {
		if c := goClass(st, fn); c == nil || c.Status != sessions.GoWaiting {
			return false
		}
	}
	return true
}

// TestStacksGoroutines: two ranks of a Go program whose goroutines are parked. crashtui stacks
// reads every goroutine of both from outside and classes them by call path and by wait
// reason, in --json and in the text report: the six in chan receive at recvForever (ranks
// 0-1) apart from main's own chan receive, the select, the sync.Mutex.Lock, the sleep; the
// runtime's own goroutines put aside; each class with the go statement that started it. The
// threads' stacks end at runtime.mcall or another first function, with no junk frame above,
// and those running only the runtime's code are helpers. Both ranks are left untraced and
// asleep.
func TestStacksGoroutines(t *testing.T) {
	needRoot(t)
	bin, _ := buildGoPark(t)
	j := startHung(t, bin, 2)
	job := "pgid:" + strconv.Itoa(j.pgid)
	stacksWhen(t, job, "every goroutine parked", parkedAll)
	samples, st := stacksJSON(t, "--samples", "2", "--interval", "100ms", job)
	g := st.Goroutines
	if g == nil || g.Processes != 2 || len(g.Unread) != 0 {
		t.Fatalf("goroutines of 2 Go processes, want read: %+v", g)
	}
	created := srcLine(t, "go recvForever(ch)")
	want := []struct {
		fn      string
		reasons []string // Go before 1.20 had sync.Mutex wait in semacquire
		count   int
		goStmt  int
	}{
		{"main.recvForever", []string{"chan receive"}, 6, created},
		{"main.selectForever", []string{"select"}, 2, srcLine(t, "go selectForever(a, b)")},
		{"main.lockForever", []string{"sync.Mutex.Lock", "semacquire"}, 2, srcLine(t, "go lockForever()")},
		{"main.sleepLong", []string{"sleep"}, 2, srcLine(t, "go sleepLong()")},
	}
	for _, w := range want {
		c := goClass(st, w.fn)
		switch {
		case c == nil:
			t.Errorf("no goroutine class through %s: %+v", w.fn, g.Classes)
		case c.Status != sessions.GoWaiting || !slices.Contains(w.reasons, c.WaitReason) || c.Count != w.count || c.Ranks != "0-1" || c.Role != "":
			t.Errorf("%s: %s %q, %d goroutines of ranks %q, role %q; want waiting %v, %d of ranks 0-1", w.fn, c.Status, c.WaitReason, c.Count, c.Ranks, c.Role, w.reasons, w.count)
		case c.Progress != sessions.Stuck:
			t.Errorf("%s: %s over 2 samples, want stuck", w.fn, c.Progress)
		case c.CreatedBy == nil || c.CreatedBy.Function != "main.main" || c.CreatedBy.Line != w.goStmt:
			t.Errorf("%s: created by %+v, want main.main at line %d", w.fn, c.CreatedBy, w.goStmt)
		}
	}
	// main's own chan receive is another place than recvForever's: a class of its own, in the
	// same wait, with no go statement.
	if c := goClass(st, "main.main"); c == nil || c.WaitReason != "chan receive" || c.Count != 2 || c.CreatedBy != nil || hasFunction(c.Frames, "main.recvForever") {
		t.Errorf("main goroutine's class: %+v", c)
	}
	waits := map[string]int{}
	for _, w := range g.Waits {
		waits[w.WaitReason] += w.Count
	}
	if waits["chan receive"] != 8 || waits["select"] != 2 || waits["sleep"] != 2 || waits["sync.Mutex.Lock"]+waits["semacquire"] != 2 || len(waits) != 4 {
		t.Errorf("goroutines by wait: %v, want 8 chan receive, 2 select, 2 sync.Mutex.Lock, 2 sleep", waits)
	}
	system := 0
	for _, c := range g.Classes {
		if c.Role == sessions.RoleHelper {
			system += c.Count
			if !strings.HasPrefix(c.Frames[min(1, len(c.Frames)-1)].Function, "runtime.") {
				t.Errorf("a goroutine of the program put aside as the runtime's: %+v", c)
			}
		}
	}
	if system == 0 || system != g.System || g.Aside == nil || g.Aside.Count != system || g.Count != 14+system {
		t.Errorf("the runtime's goroutines: %d in classes, %d counted, aside %+v; %d in all, want 14 of the program's", system, g.System, g.Aside, g.Count)
	}
	// Class numbers follow the threads': one number, one class.
	seen := map[int]bool{}
	for _, c := range append(slices.Clone(st.Classes), g.Classes...) {
		if seen[c.Class] {
			t.Errorf("class number %d twice", c.Class)
		}
		seen[c.Class] = true
	}
	// The threads: every stack ends at a thread's first function (runtime.mcall switches to
	// the thread's own stack: nothing above it is a caller), and the runtime's own threads
	// are helpers, folded.
	for _, c := range st.Classes {
		if i := slices.IndexFunc(c.Frames, func(f sessions.StackFrame) bool { return f.Function == "runtime.mcall" }); i > 0 {
			t.Errorf("class %d: %d frames above runtime.mcall: %+v", c.Class, i, c.Frames[:i])
		}
		if c.Role != sessions.RoleHelper {
			t.Errorf("class %d: role %q, want the Go runtime's threads put aside: %+v", c.Class, c.Role, c.Frames)
		}
	}
	for _, s := range samples {
		for _, th := range s.Threads {
			if n := len(th.Frames); n > 0 && !strings.HasPrefix(th.Frames[n-1].Function, "runtime.") {
				t.Errorf("pid %d thread %d ends in %s+%s (%s)", s.PID, th.TID, th.Frames[n-1].Module, th.Frames[n-1].Offset, th.Frames[n-1].Function)
			}
		}
	}

	// The text report says the same.
	out, err := exec.Command(crashtuiBin, "stacks", "--samples", "2", "--interval", "100ms", job).CombinedOutput()
	if err != nil {
		t.Fatalf("crashtui stacks: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"2 ranks, ", "goroutines", "main.recvForever", "chan receive", "select", "sleep",
		"goroutine classes (by call path and wait):", "Goroutines of 2 Go processes: 8 in chan receive",
		"6 goroutines", "▸ ", "Go runtime threads", "goroutines of the runtime"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text report lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "sync.Mutex.Lock") && !strings.Contains(text, "semacquire") {
		t.Errorf("the text report lacks the mutex's wait:\n%s", text)
	}
	t.Logf("%s", text)
	checkDetached(t, j.pids, []string{"S", "S"})
}

// TestStacksGoroutinesInTheTUI drives the Stacks tab at 80×24 on a pty, in colour and under
// NO_COLOR, as a user would on a Go job: S twice shows the goroutines' tree with each leaf's
// wait and the classes by wait; → opens the line the Go runtime's threads are folded under;
// e on a goroutine frame explains its class (its wait, its go statement); after q every rank
// is untraced and still parked.
func TestStacksGoroutinesInTheTUI(t *testing.T) {
	needRoot(t)
	bin, _ := buildGoPark(t)
	for _, noColor := range []bool{false, true} {
		t.Run(map[bool]string{false: "colour", true: "NO_COLOR"}[noColor], func(t *testing.T) {
			if noColor {
				t.Setenv("NO_COLOR", "1")
			}
			j := startHung(t, bin, 2)
			stacksWhen(t, "pgid:"+strconv.Itoa(j.pgid), "every goroutine parked", parkedAll)
			scr := tuitest.Open(t, 80, 24)
			proc, _ := startTUI(t, scr, "attach", "--matrix", "off", "--sample-every", "0", "pgid:"+strconv.Itoa(j.pgid))
			scr.WaitFor(t, 20*time.Second, "procs 2/2")
			scr.Key(t, "5")
			scr.WaitFor(t, 5*time.Second, "no stack samples yet")
			scr.Key(t, "S")
			scr.WaitFor(t, 20*time.Second, "1 sample", "goroutines")
			scr.Key(t, "S")
			// Both processes' samples (the screen is drawn as their events come: the first
			// drawing of the second round may have one of them).
			scr.WaitFor(t, 20*time.Second, "2 samples", "2 ranks", "RANKS", "▸ ", "Go runtime threads", "→ opens", "goroutines", "chan receive")
			// The first line is the folded runtime threads (no thread of the program runs
			// its own code): → opens it.
			scr.Key(t, "\x1b[C")
			scr.WaitFor(t, 5*time.Second, "▾ ", "← folds", "runtime.")
			scr.Key(t, "\x1b[D")
			scr.WaitFor(t, 5*time.Second, "→ opens")
			// To recvForever's frame by the filter, and its class explained.
			scr.Key(t, "/")
			scr.Type("recvForever\r")
			scr.WaitFor(t, 5*time.Second, "filter: recvForever", "main.recvForever")
			scr.Key(t, "e")
			scr.WaitFor(t, 5*time.Second, "6 goroutines on one path, in chan receive", "ranks 0-1", "go statement")
			scr.Key(t, "\x1b")
			quitTUI(t, scr, proc)
			checkDetached(t, j.pids, []string{"S", "S"})
		})
	}
}

// TestStacksGoroutinesAskedOfTheHolder: crashtui stacks of a Go job that a running crashtui
// holds is answered by the holder over its control socket, goroutines included: the asker's
// stream has a goroutines event after each process's sample, with the sample's number, and
// its merged stacks class them by wait.
func TestStacksGoroutinesAskedOfTheHolder(t *testing.T) {
	needRoot(t)
	bin, _ := buildGoPark(t)
	j := startHung(t, bin, 2)
	pg := "pgid:" + strconv.Itoa(j.pgid)
	stacksWhen(t, pg, "every goroutine parked", parkedAll)
	h, _ := startHolder(t, 2, "attach", "--json", pg)
	out, stderr, code := crashtuiOut(t, "stacks", "--json", "--samples", "2", "--interval", "50ms", pg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	evs := jsonEvents(t, []byte(out))
	sampled := map[string]int{} // pid/seq -> index of its sample
	completed := 0
	for i, e := range evs {
		key := strconv.Itoa(e.int("pid")) + "/" + strconv.Itoa(e.int("seq"))
		switch e.kind() {
		case "sample":
			sampled[key] = i
		case "goroutines":
			if _, ok := sampled[key]; !ok || !slices.Contains(j.pids, e.int("pid")) {
				t.Errorf("goroutines event %s before its sample, or of no rank asked for", key)
			}
			if gs, _ := e["goroutines"].([]any); len(gs) < 7 {
				t.Errorf("goroutines event %s: %d goroutines, want the program's 7 and the runtime's", key, len(gs))
			}
			completed++
		}
	}
	if completed != 4 {
		t.Errorf("%d goroutines events, want one per sample of each of 2 ranks over 2 samples:\n%s", completed, out)
	}
	_, st := stacksJSON(t, "--samples", "1", pg)
	if !parkedAll(st) {
		t.Errorf("the holder's answer merged: %+v", st.Goroutines)
	}
	if code, _ := h.stop(t); code != 0 {
		t.Fatalf("holder: exit %d", code)
	}
	checkDetached(t, j.pids, []string{"S", "S"})
}
