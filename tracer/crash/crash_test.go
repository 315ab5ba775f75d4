package crash

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/crashes"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// abortMsg lays out glibc's struct abort_msg_s {unsigned size; char msg[];}.
func abortMsg(size uint32, msg string) []byte {
	b := make([]byte, 4, 4+len(msg))
	binary.LittleEndian.PutUint32(b, size)
	return append(b, msg...)
}

func TestParseAbortMsg(t *testing.T) {
	assertMsg := "prog: x.c:3: main: Assertion `0' failed.\n"
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"assert, page-sized as glibc allocates it", abortMsg(4096, assertMsg+"\x00\x00junk"), strings.TrimSpace(assertMsg)},
		{"size 4 is empty (Spindle: 4 < size)", abortMsg(4, "abc\x00"), ""},
		{"size 5 keeps one byte", abortMsg(5, "ab\x00"), "a"},
		{"size over 64 KiB is garbage", abortMsg(64<<10+1, "abc\x00"), ""},
		{"exactly 64 KiB is accepted", abortMsg(64<<10, "abc\x00"), "abc"},
		{"no NUL within what was read", abortMsg(4096, "partial"), "partial"},
		{"short header", []byte{1, 2}, ""},
		{"invalid UTF-8 is replaced", abortMsg(100, "a\xffb\x00"), "a?b"},
	} {
		if got := parseAbortMsg(tc.in); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzParseAbortMsg: the bytes come from a crashed process's memory.
func FuzzParseAbortMsg(f *testing.F) {
	f.Add(abortMsg(4096, "x: y.c:1: f: Assertion `z' failed.\n\x00"))
	f.Add(abortMsg(0xffffffff, "\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := parseAbortMsg(b)
		if strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("message %q contains NUL", s)
		}
		if len(b) < 4 && s != "" {
			t.Fatalf("message %q from %d bytes", s, len(b))
		}
	})
}

func TestCrashKeys(t *testing.T) {
	frame := func(module string, off uint64, symbol string) elfinfo.Frame {
		return elfinfo.Frame{Location: elfinfo.Location{Module: module, Offset: off, Symbol: symbol, Function: symbol}}
	}
	stack := []elfinfo.Frame{
		frame("/lib/libc.so.6", 0x1000, "memcpy"),
		frame("/app/a.out", 0x1200, "copy_rows"),
		frame("/app/a.out", 0x1300, "main"),
		frame("/app/a.out", 0x1400, ""),
	}
	c := sessions.Crash{Exe: "/app/a.out", Module: "/lib/libc.so.6", Offset: 0x1000}
	if got := crashKey(c, GroupBySite, stackHash(stack, 3)); got != "/app/a.out|/lib/libc.so.6+0x1000" {
		t.Errorf("site key %q", got)
	}
	c.AbortMessage = "a.out: x.c:1: f: Assertion `0' failed."
	if got := crashKey(c, GroupBySite, stackHash(stack, 3)); got != "/app/a.out|abort:"+c.AbortMessage {
		t.Errorf("abort key %q", got)
	}
	c.AbortMessage = ""
	c.Key = "stale" // a key already set must not leak into a new one
	k3 := crashKey(c, GroupByStack, stackHash(stack, 3))
	if !strings.HasPrefix(k3, "/app/a.out|/lib/libc.so.6+0x1000|stack:") {
		t.Errorf("stack key %q", k3)
	}
	// Frames beyond N do not matter; a different caller within N does; so does N itself.
	other := append([]elfinfo.Frame(nil), stack...)
	other[3].Offset = 0x9999
	if stackHash(other, 3) != stackHash(stack, 3) {
		t.Error("a frame beyond N changed the hash")
	}
	other[1].Symbol = "copy_cols"
	if stackHash(other, 3) == stackHash(stack, 3) {
		t.Error("a different caller did not change the hash")
	}
	if stackHash(stack, 2) == stackHash(stack, 3) {
		t.Error("N frames and N-1 frames hash alike")
	}
	// What DWARF adds (a line, the name of code inlined there) does not change the hash: a
	// crash told before its lines were loaded keys like one told after.
	lined := append([]elfinfo.Frame(nil), stack...)
	lined[0].Function, lined[0].File, lined[0].Line = "inlined_copy", "copy.c", 12
	lined[0].InlinedInto = []elfinfo.SourceFrame{{Function: "memcpy", File: "memcpy.c", Line: 3}}
	if stackHash(lined, 3) != stackHash(stack, 3) {
		t.Error("lines and inlined names changed the hash")
	}
	// Unnamed frames hash by module base name + offset: the same binary installed elsewhere
	// hashes alike.
	moved := append([]elfinfo.Frame(nil), stack...)
	moved[3].Module = "/other/a.out"
	if stackHash(moved, 4) != stackHash(stack, 4) {
		t.Error("module directory changed the hash")
	}
}

func TestLibcPath(t *testing.T) {
	maps := []elfinfo.Mapping{
		{Start: 0x1000, End: 0x2000, Inode: 1, Path: "/usr/bin/prog"},
		{Start: 0x3000, End: 0x4000, Inode: 2, Path: "/usr/lib/libcrypto.so.3"},
		{Start: 0x5000, End: 0x6000, Inode: 3, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
	}
	if got := libcPath(maps); got != "/usr/lib/x86_64-linux-gnu/libc.so.6" {
		t.Errorf("libc %q", got)
	}
	if got := libcPath(maps[:2]); got != "" {
		t.Errorf("no libc: %q", got)
	}
	if got := libcPath([]elfinfo.Mapping{{Start: 1, End: 2, Inode: 4, Path: "/lib/libc-2.17.so"}}); got != "/lib/libc-2.17.so" {
		t.Errorf("old glibc name: %q", got)
	}
}

// ---- live: the tracer API on the crash suite ----

// crashSuite builds demo/crashes into a temporary directory. It must run before any tracer.Tracer
// exists: the tracer's waiter reaps every child of this process, gcc's included.
func crashSuite(tb testing.TB) crashes.Suite {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("live crash tests trace children and set their RLIMIT_CORE: run as root")
	}
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	s, err := crashes.Build(dir)
	if err != nil {
		if strings.Contains(err.Error(), "gcc not installed") {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	return s
}

// stormRun launches n ranks of the suite's storm mode, releases them together once every
// rank runs the program, and returns the events and the tracer's crash counters.
func stormRun(tb testing.TB, s crashes.Suite, n int, opts *Options) ([]sessions.Event, Stats) {
	tb.Helper()
	gofile := filepath.Join(tb.TempDir(), "go")
	var mu sync.Mutex
	var events []sessions.Event
	running := map[int]bool{}
	ready := make(chan struct{})
	c := New(*opts)
	tr := tracer.New(tracer.Options{Watcher: c, Emit: func(e sessions.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
		exe := ""
		pid := 0
		switch b := e.Body.(type) {
		case sessions.Process:
			exe, pid = b.Exe, b.PID
		case sessions.Exec:
			exe, pid = b.Exe, b.PID
		}
		if exe == s.PIE && !running[pid] {
			running[pid] = true
			if len(running) == n {
				close(ready)
			}
		}
	}})
	defer tr.Close()
	if _, err := tr.Launch(tracer.LaunchSpec{N: n, Argv: []string{s.PIE, "storm", gofile}}); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-ready:
	case <-patience.After(120 * time.Second):
		tb.Fatal("ranks did not start")
	}
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-tr.JobDone():
	case <-patience.After(120 * time.Second):
		tb.Fatal("ranks did not all crash")
	}
	st := c.Stats()
	mu.Lock()
	defer mu.Unlock()
	return append([]sessions.Event(nil), events...), st
}

// TestCrashStatsAgreeWithEvents runs a small storm through the tracer.Tracer API: the counters, the
// crash events and a sessions.State built from them agree, and RLIMIT_CORE policy shows in
// the exit statuses' absence of dumps (--cores semantics suppress all).
func TestCrashStatsAgreeWithEvents(t *testing.T) {
	s := crashSuite(t)
	tracertest.AllowCores(t)
	t.Chdir(t.TempDir()) // crashtui suppresses the kernel's cores; should one slip, not here
	const n = 16
	cores := t.TempDir()
	events, st := stormRun(t, s, n, &Options{CoresDir: cores})
	state := sessions.NewState()
	for _, e := range events {
		state.Apply(e)
	}
	sum := state.Summary()
	if st.Crashes != n || sum.Crashes != n || st.Groups != 4 || len(sum.Groups) != 4 || len(st.Decide) != n {
		t.Fatalf("stats %+v, summary %+v", st, sum)
	}
	if st.First.IsZero() || st.Last.Before(st.First) {
		t.Errorf("first %v last %v", st.First, st.Last)
	}
	ents, _ := os.ReadDir(cores)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 4 {
		t.Errorf("cores %v, want 4", names)
	}
	for _, g := range sum.Groups {
		if g.Core == nil || filepath.Base(*g.Core) != "core."+strconv.Itoa(g.Group)+"."+strconv.Itoa(g.Representative) {
			t.Errorf("group %d: core %v", g.Group, g.Core)
		}
	}
	for _, e := range events {
		if x, ok := e.Body.(sessions.Exit); ok && x.CoreDumped {
			t.Errorf("pid %d: the kernel dumped core although CoresDir suppresses it", x.PID)
		}
	}
}

// BenchmarkCrashStorm: 64 ranks crash together at 4 sites. Reports the time from the first
// crash's signal-delivery-stop to the last group decision, the first (cold: symbol tables and
// CFI loaded) crash's cost, and the mean cost of the others (warm caches). Goals: cold
// ≤ 20 ms, warm < 0.5 ms.
func BenchmarkCrashStorm(b *testing.B) {
	s := crashSuite(b)
	const n = 64
	var span, cold, warm time.Duration
	warmN := 0
	for i := 0; i < b.N; i++ {
		_, st := stormRun(b, s, n, &Options{})
		if st.Crashes != n {
			b.Fatalf("%d crashes, want %d", st.Crashes, n)
		}
		span += st.Last.Sub(st.First)
		cold += st.Decide[0]
		for _, d := range st.Decide[1:] {
			warm += d
			warmN++
		}
	}
	b.ReportMetric(float64(span.Microseconds())/1000/float64(b.N), "ms/first-to-last")
	b.ReportMetric(float64(cold.Microseconds())/1000/float64(b.N), "ms/cold-crash")
	b.ReportMetric(float64(warm.Microseconds())/1000/float64(warmN), "ms/warm-crash")
}

// coreLimit reads the soft "Max core file size" of pid ("unlimited" or a number).
func coreLimit(pid int) string {
	b, err := os.ReadFile(procfs.Path(pid, "limits"))
	if err != nil {
		return "gone"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max core file size") {
			if f := strings.Fields(strings.TrimPrefix(l, "Max core file size")); len(f) > 0 {
				return f[0]
			}
		}
	}
	return "?"
}

// TestCrashCoreLimitBeforeSignalProceeds checks the core policy at the moment it matters:
// while each crashing rank still sits in its signal-delivery-stop (the crash event is emitted
// there, before the signal is re-injected). By default no rank's RLIMIT_CORE is touched (the
// job's own core behaviour); with DedupKernelCores (Spindle's loser rule) a
// non-representative's is already 0 and a representative's is untouched.
func TestCrashCoreLimitBeforeSignalProceeds(t *testing.T) {
	s := crashSuite(t)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Max == 0 {
		t.Skip("hard RLIMIT_CORE is 0: cannot give ranks a core limit to take away")
	}
	// The ranks inherit this process's limit. They must not actually dump into the package
	// directory: run them from a temporary one.
	old := lim
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_CORE, &old) })
	t.Chdir(t.TempDir())
	for _, dedup := range []bool{false, true} {
		name := "default"
		if dedup {
			name = "dedup"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			limits := map[int]string{}
			reps := map[int]bool{}
			var errs []sessions.Error
			tr := tracer.New(tracer.Options{Watcher: New(Options{DedupKernelCores: dedup}), Emit: func(e sessions.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch b := e.Body.(type) {
				case sessions.Crash:
					limits[b.PID] = coreLimit(b.PID) // still stopped: the signal has not proceeded
					reps[b.PID] = b.Representative
				case sessions.Error:
					errs = append(errs, b)
				}
			}})
			defer tr.Close()
			if _, err := tr.Launch(tracer.LaunchSpec{N: 6, Argv: []string{s.PIE, "two"}}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-tr.JobDone():
			case <-patience.After(60 * time.Second):
				t.Fatal("ranks did not finish")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) > 0 {
				t.Fatalf("errors: %+v", errs)
			}
			if len(limits) != 6 {
				t.Fatalf("%d crashes, want 6", len(limits))
			}
			nrep := 0
			for pid, l := range limits {
				if reps[pid] {
					nrep++
				}
				switch {
				case (reps[pid] || !dedup) && l == "0":
					t.Errorf("%d (representative %v) lost its core limit", pid, reps[pid])
				case dedup && !reps[pid] && l != "0":
					t.Errorf("non-representative %d: core limit %s at its crash, want 0", pid, l)
				}
			}
			if nrep != 2 {
				t.Errorf("%d representatives, want 2", nrep)
			}
		})
	}
}
