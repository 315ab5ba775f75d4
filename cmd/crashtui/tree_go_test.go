package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tui/tuitest"
	"github.com/crashtui/crashtui/views"
)

// recordGoAgent runs a launcher (sh, no rank) of two ranks of the Go program whose goroutines
// park (goParkSrc) under a real `crashtui agent --control`, asks it for two samples, lets go
// and returns its stream: three processes, two samples of each (the Go runtime's threads,
// the launcher's), two readings of each rank's goroutines, its summary. The agent's host is
// "base".
func recordGoAgent(t *testing.T) []byte {
	t.Helper()
	needRoot(t)
	bin, _ := buildGoPark(t)
	launcher := exec.Command("sh", "-c", `CRASHTUI_RANK=0 "$0" & CRASHTUI_RANK=1 "$0" & wait`, bin)
	launcher.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	launcher.Stderr = os.Stderr
	out, err := launcher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := launcher.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := launcher.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL) // the launcher's group, which this test made
		launcher.Wait()
	})
	rd := bufio.NewReader(out)
	for r := 0; r < 2; r++ {
		if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
			t.Fatalf("rank %d: %q, %v", r, line, err)
		}
	}
	job := "pgid:" + strconv.Itoa(pgid)
	stacksWhen(t, job, "every goroutine parked", parkedAll)

	a := startAgentRec(t, pgid, "base")
	a.wait("the launcher and its ranks attached", time.Minute, func(k map[string]int) bool { return k["process"] >= 3 })
	for round := 1; round <= 2; round++ {
		a.request("sample")
		a.wait("a sample of each process, and each rank's goroutines", time.Minute, func(k map[string]int) bool {
			return k["sample"] >= 3*round && k["goroutines"] >= 2*round
		})
	}
	a.request("detach")
	stream, kinds := a.end()
	if kinds["summary"] != 1 || kinds["goroutines"] != 4 {
		t.Fatalf("the agent's stream: %v, want 4 goroutines events and its summary", kinds)
	}
	return stream
}

// stacksOf is the merged stacks a `view --json` wrote last.
func stacksOf(t *testing.T, out []byte) sessions.Stacks {
	t.Helper()
	var st *sessions.Stacks
	err := sessions.StreamEvents(bytes.NewReader(out), func(e sessions.Event) {
		if b, ok := e.Body.(sessions.Stacks); ok {
			st = &b
		}
	}, func(le *sessions.LineError) { t.Fatalf("view output: %v", le) })
	if err != nil || st == nil {
		t.Fatalf("view output: %v, no stacks event", err)
	}
	return *st
}

// showsGoroutines is what a view's merged stacks say beyond shows: the threads and goroutines
// put aside (helpers, the launcher, the runtime's own), the goroutines' counts, classes (by
// path, status and wait, with their go statements) and waits, and their tree's first
// branches.
func showsGoroutines(st sessions.Stacks) string {
	pathOf := map[int]string{}
	classes := func(cs []sessions.StackClass) string {
		var out []string
		for _, c := range cs {
			var path []string
			for _, f := range c.Frames {
				path = append(path, f.Function)
			}
			p := strings.Join(path, " > ") + " [" + c.Role + " " + c.Status + " " + c.WaitReason + "]"
			pathOf[c.Class] = p
			created := ""
			if c.CreatedBy != nil {
				created = fmt.Sprintf(", go at %s:%d", c.CreatedBy.Function, c.CreatedBy.Line)
			}
			out = append(out, fmt.Sprintf("class %s: %d, ranks %s, %s%s", p, c.Count, c.Ranks, c.Progress, created))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	aside := func(a *sessions.Aside) string {
		if a == nil {
			return "none"
		}
		var cs []string
		for _, c := range a.Classes {
			cs = append(cs, pathOf[c])
		}
		sort.Strings(cs)
		unranked := 0
		if a.Unranked != "" {
			unranked = len(strings.Split(a.Unranked, ","))
		}
		return fmt.Sprintf("%d (%d helpers, %d of the launcher), ranks %s, unranked %d, %s, classes %q", a.Count, a.Helpers, a.Launcher,
			a.Ranks, unranked, a.Progress, cs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nthreads aside: %s\n", classes(st.Classes), aside(st.Aside))
	g := st.Goroutines
	if g == nil {
		return b.String() + "no goroutines\n"
	}
	fmt.Fprintf(&b, "goroutines of %d Go processes: %d, %d the runtime's, %d unread\n%s\n", g.Processes, g.Count, g.System,
		len(g.Unread)+g.UnreadMore, classes(g.Classes))
	fmt.Fprintf(&b, "goroutines aside: %s\n", aside(g.Aside))
	for _, w := range g.Waits {
		var cs []string
		for _, c := range w.Classes {
			cs = append(cs, pathOf[c])
		}
		fmt.Fprintf(&b, "wait %s %q: %d, ranks %s, %s, classes %q\n", w.Status, w.WaitReason, w.Count, w.Ranks, w.Progress, cs)
	}
	for _, n := range g.Tree.Children {
		fmt.Fprintf(&b, "goroutine branch %s [%s]: %d, ranks %s\n", n.Label, n.Role, n.Count, n.Ranks)
	}
	return b.String()
}

// TestTreeShowsGoroutinesAndHelpers: 8 copies of a real agent's stream of a Go job (a
// launcher and two ranks whose goroutines park in chan receives, a select, a sync.Mutex and a
// sleep) through two `view --json --reduce` of four copies each into a root `view --json`:
// the root puts aside the same Go runtime threads and launcher, and shows the same goroutine
// classes (call path, status and wait, go statement, count, ranks) and the same goroutines by
// wait as one flat view of all eight, counts the same ranks and launchers and finds the
// same hang, in --json, in the text report and in the TUI's Stacks tab.
func TestTreeShowsGoroutinesAndHelpers(t *testing.T) {
	tpl := newStreamTemplate(recordGoAgent(t), 2)
	const copies, fan = 8, 4
	flat := runView(t, func(w io.Writer) error { return tpl.merged(w, 0, copies) }, "--json")
	flatSt := stacksOf(t, flat.out)
	want := showsGoroutines(flatSt)
	for _, s := range []string{
		"goroutines of 16 Go processes: ",
		"main.recvForever > ",
		" [ waiting chan receive]: 48, ranks 0-15, stuck, go at main.main:" + strconv.Itoa(srcLine(t, "go recvForever(ch)")) + "\n",
		"wait waiting \"chan receive\": 64, ranks 0-15, stuck",
		" helpers, 8 of the launcher), ranks 0-15, unranked 8, ", // the Go runtime's threads, and sh's
		"goroutines aside: ",
		" helpers, 0 of the launcher), ranks 0-15, unranked 0, ",
	} {
		if !strings.Contains(want, s) {
			t.Fatalf("the flat view does not show %q:\n%s", s, want)
		}
	}
	dir := t.TempDir()
	var files []string
	for v := 0; v < copies/fan; v++ {
		mid := runView(t, func(w io.Writer) error { return tpl.merged(w, v*fan, fan) }, "--json", "--reduce", "--host", fmt.Sprintf("view%d", v))
		f := filepath.Join(dir, fmt.Sprintf("view%d.jsonl", v))
		if err := os.WriteFile(f, mid.out, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	root := runView(t, nil, append([]string{"--json"}, files...)...)
	rootSt := stacksOf(t, root.out)
	if got := showsGoroutines(rootSt); got != want {
		t.Errorf("the root shows\n%s\none flat view shows\n%s", got, want)
	}
	if got, want := shows(t, root.out), shows(t, flat.out); got != want {
		t.Errorf("the root shows\n%s\none flat view shows\n%s", got, want)
	}

	// The text report: the same heading, tree (the same lines folded), classes and summary.
	if got, want := views.StacksText(rootSt, 0), views.StacksText(flatSt, 0); got != want {
		t.Errorf("the root's text report:\n%s\none flat view's:\n%s", got, want)
	}
	for _, want := range []string{"16 ranks and 8 launchers, ", "Go runtime threads + 8 launcher threads", "goroutines of the runtime",
		"Goroutines of 16 Go processes: 64 in chan receive", "No rank moved over 2 samples"} {
		if got := views.StacksText(rootSt, 0); !strings.Contains(got, want) {
			t.Errorf("the root's text report lacks %q:\n%s", want, got)
		}
	}

	// The root's TUI: the Stacks tab folds the same threads and shows the goroutines.
	scr := tuitest.Open(t, 120, 40)
	proc, _ := startTUI(t, scr, append([]string{"view"}, files...)...)
	scr.WaitFor(t, 20*time.Second, "crashtui view")
	scr.Key(t, "5")
	scr.WaitFor(t, 20*time.Second, "2 samples", "▸ ", "Go runtime threads", "goroutines", "main.recvForever", "chan receive", "launcher th")
	scr.Key(t, "q")
	select {
	case <-proc.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the root's view did not quit on q:\n%s", scr.Text())
	}
}
