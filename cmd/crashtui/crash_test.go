package main

// End-to-end tests of crash grouping (issue 3): the crash-pattern suite of demo/crashes runs as
// `crashtui run --json -n N` under the real binary, and the tests assert what crashtui reported
// against what the kernel and the ELF files say (group counts, representatives, keys that match
// the symbol tables, handled faults, cores that gdb reads).

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/crashes"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
)

var (
	crSuiteOnce sync.Once
	crSuite     crashes.Suite
	crSuiteErr  error
)

// crashSuite builds demo/crashes once per test binary, next to the crashtui binary (TestMain
// removes that directory).
func crashSuite(t *testing.T) crashes.Suite {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("crash tests trace their own children and set other processes' RLIMIT_CORE: run as root")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the crash-pattern suite is C")
	}
	crSuiteOnce.Do(func() {
		dir := filepath.Join(filepath.Dir(crashtuiBin), "crashes")
		if crSuiteErr = os.MkdirAll(dir, 0o755); crSuiteErr != nil {
			return
		}
		if dir, crSuiteErr = filepath.EvalSymlinks(dir); crSuiteErr != nil {
			return
		}
		crSuite, crSuiteErr = crashes.Build(dir)
	})
	if crSuiteErr != nil {
		t.Fatal(crSuiteErr)
	}
	return crSuite
}

// crRun is one `crashtui run --json` of a suite program, read as it goes.
type crRun struct {
	t       *testing.T
	cmd     *exec.Cmd
	dir     string // the ranks' working directory (where the kernel writes cores)
	mu      sync.Mutex
	events  []sessions.Event
	bad     []string
	stderr  []string
	changed chan struct{}
	done    chan struct{}
	exe     string
}

// startCrashRun starts crashtui with flags, N ranks of argv. RLIMIT_CORE is raised for the
// ranks (ulimit -c in the shell that execs crashtui) so Spindle's policy is visible in the
// ranks' wait statuses: only representatives may dump.
func startCrashRun(t *testing.T, n int, flags []string, argv ...string) *crRun {
	t.Helper()
	return startCrashRunLimit(t, "unlimited", n, flags, argv...)
}

// startCrashRunLimit is startCrashRun with crashtui started under `ulimit -c LIMIT`.
func startCrashRunLimit(t *testing.T, limit string, n int, flags []string, argv ...string) *crRun {
	t.Helper()
	r := &crRun{t: t, dir: t.TempDir(), changed: make(chan struct{}, 1), done: make(chan struct{}), exe: argv[0]}
	args := append([]string{"-c", `ulimit -c ` + limit + ` 2>/dev/null; exec "$0" "$@"`, crashtuiBin, "run", "--json", "-n", strconv.Itoa(n)}, flags...)
	args = append(append(args, "--"), argv...)
	r.cmd = exec.Command("/bin/sh", args...)
	r.cmd.Dir = r.dir
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errp, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e sessions.Event
			err := json.Unmarshal(sc.Bytes(), &e)
			r.mu.Lock()
			if err != nil {
				r.bad = append(r.bad, sc.Text())
			} else {
				r.events = append(r.events, e)
			}
			r.mu.Unlock()
			r.poke()
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr = append(r.stderr, sc.Text())
			r.mu.Unlock()
			r.poke()
		}
	}()
	go func() {
		readers.Wait()
		r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Signal(syscall.SIGINT) // crashtui detaches
			select {
			case <-r.done:
			case <-patience.After(20 * time.Second):
				r.cmd.Process.Kill()
				<-r.done
			}
		}
		// Ranks still alive (a failed test) are ours: kill them by pid, checking it is still
		// the suite program.
		for _, pid := range r.pids() {
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && exe == r.exe {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return r
}

func (r *crRun) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *crRun) pids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, e := range r.events {
		if p, ok := e.Body.(sessions.Process); ok {
			out = append(out, p.PID)
		}
	}
	return out
}

// waitUntil waits for cond on (events, stderr lines) or fails after timeout.
func (r *crRun) waitUntil(what string, timeout time.Duration, cond func([]sessions.Event, []string) bool) {
	r.t.Helper()
	deadline := patience.After(timeout)
	for {
		r.mu.Lock()
		ok := cond(r.events, r.stderr)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-r.done:
			r.mu.Lock()
			ok := cond(r.events, r.stderr)
			r.mu.Unlock()
			if !ok {
				r.t.Fatalf("crashtui ended before %s\n%s", what, r.tail())
			}
			return
		case <-deadline:
			r.t.Fatalf("timed out waiting for %s\n%s", what, r.tail())
		}
	}
}

func (r *crRun) tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stderr
	if len(s) > 30 {
		s = s[len(s)-30:]
	}
	return "stderr:\n" + strings.Join(s, "\n")
}

// crResult is everything a finished run said.
type crResult struct {
	Events  []sessions.Event
	Crashes []sessions.Crash
	Handled []sessions.Handled
	Exits   []sessions.Exit
	Procs   []sessions.Process
	Errors  []sessions.Error
	Summary sessions.Summary
	Stderr  []string
	Dir     string
}

// wait waits for crashtui to finish (the job ends by itself) and decodes the stream.
func (r *crRun) wait(timeout time.Duration) crResult {
	r.t.Helper()
	select {
	case <-r.done:
	case <-patience.After(timeout):
		r.t.Fatalf("crashtui still running after %v\n%s", timeout, r.tail())
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		r.t.Fatalf("crashtui exited with %d\n%s", code, r.tail())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		r.t.Fatalf("unparsable JSON lines: %q", r.bad)
	}
	res := crResult{Events: r.events, Stderr: r.stderr, Dir: r.dir}
	sawSummary := false
	for _, e := range r.events {
		switch b := e.Body.(type) {
		case sessions.Crash:
			res.Crashes = append(res.Crashes, b)
		case sessions.Handled:
			res.Handled = append(res.Handled, b)
		case sessions.Exit:
			res.Exits = append(res.Exits, b)
		case sessions.Process:
			res.Procs = append(res.Procs, b)
		case sessions.Error:
			res.Errors = append(res.Errors, b)
		case sessions.Summary:
			res.Summary, sawSummary = b, true
		}
	}
	if !sawSummary {
		r.t.Fatal("no summary event")
	}
	return res
}

// runCrashes runs a suite program to the end.
func runCrashes(t *testing.T, n int, flags []string, argv ...string) crResult {
	t.Helper()
	return startCrashRun(t, n, flags, argv...).wait(120 * time.Second)
}

// checkGroups asserts the grouping invariants and the expected group sizes (in group-id order):
// ids 1..n in first-seen order, one representative per group and it is the group's first crash,
// the summary (derived by sessions.State) agrees with the events, and every crash's pid is a
// distinct traced process.
func checkGroups(t *testing.T, res crResult, wantCounts ...int) {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Errorf("error events: %+v", res.Errors)
	}
	if len(res.Summary.Groups) != len(wantCounts) {
		t.Fatalf("%d groups, want %d: %+v", len(res.Summary.Groups), len(wantCounts), res.Summary.Groups)
	}
	first := map[int]sessions.Crash{}
	reps := map[int][]int{}
	keys := map[int]string{}
	counts := map[int]int{}
	seen := map[int]bool{}
	next := 1
	for _, c := range res.Crashes {
		if seen[c.PID] {
			t.Errorf("pid %d crashed twice", c.PID)
		}
		seen[c.PID] = true
		if _, ok := first[c.Group]; !ok {
			if c.Group != next {
				t.Errorf("crash of pid %d opens group %d, want %d (first-seen order)", c.PID, c.Group, next)
			}
			next++
			first[c.Group] = c
			keys[c.Group] = c.Key
		}
		if c.Key != keys[c.Group] {
			t.Errorf("group %d has keys %q and %q", c.Group, keys[c.Group], c.Key)
		}
		if c.Representative {
			reps[c.Group] = append(reps[c.Group], c.PID)
		}
		counts[c.Group]++
		if c.Key == "" || !strings.HasPrefix(c.Key, c.Exe+"|") {
			t.Errorf("crash of pid %d: key %q does not start with the exe %q", c.PID, c.Key, c.Exe)
		}
	}
	for i, g := range res.Summary.Groups {
		id := i + 1
		if g.Group != id {
			t.Errorf("summary group %d has id %d", i, g.Group)
		}
		if g.Count != wantCounts[i] || counts[id] != wantCounts[i] {
			t.Errorf("group %d (%s): summary count %d, %d crash events, want %d", id, g.Key, g.Count, counts[id], wantCounts[i])
		}
		if g.Key != keys[id] {
			t.Errorf("group %d: summary key %q, events %q", id, g.Key, keys[id])
		}
		if len(reps[id]) != 1 || reps[id][0] != first[id].PID || g.Representative != first[id].PID {
			t.Errorf("group %d: representatives %v, summary %d, first crash pid %d", id, reps[id], g.Representative, first[id].PID)
		}
	}
	if res.Summary.Crashes != len(res.Crashes) {
		t.Errorf("summary crashes %d, %d crash events", res.Summary.Crashes, len(res.Crashes))
	}
}

// checkKernelCores asserts Spindle's policy from the ranks' wait statuses: only a group's
// representative may dump core (RLIMIT_CORE was set to 0 for every other crashing rank); with
// --cores, none does. Skipped when core_pattern pipes to a helper (dumps are not ours to see).
func checkKernelCores(t *testing.T, res crResult, withCores bool) {
	t.Helper()
	pat, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil || strings.HasPrefix(string(pat), "|") {
		t.Logf("core_pattern %q: kernel core counts not checked", pat)
		return
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); lim.Max == 0 {
		t.Log("hard RLIMIT_CORE is 0: kernel core counts not checked")
		return
	}
	rep := map[int]bool{}
	for _, c := range res.Crashes {
		rep[c.PID] = c.Representative
	}
	dumped := 0
	for _, e := range res.Exits {
		if !e.CoreDumped {
			continue
		}
		dumped++
		if withCores {
			t.Errorf("pid %d: kernel dumped core although --cores suppresses the kernel's cores", e.PID)
		} else if !rep[e.PID] {
			t.Errorf("pid %d: kernel dumped core but it is not a representative", e.PID)
		}
	}
	// Representatives dumping at once into one cwd race for the file name "core" (the kernel
	// unlinks and opens it O_EXCL, fs/coredump.c), so a representative may lose its dump; a
	// non-representative must never have one.
	if !withCores && len(res.Summary.Groups) > 0 && dumped == 0 {
		t.Errorf("no kernel core at all, want one per group (%d)", len(res.Summary.Groups))
	}
}

// symRange returns [value, value+size) of a function symbol in an ELF file.
func symRange(t *testing.T, path, name string) (uint64, uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return s.Value, s.Value + s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0, 0
}

// checkSite asserts that every crash is in function fn of module, at an offset inside fn's
// symbol (a link-time address, whatever the load address was).
func checkSite(t *testing.T, res crResult, module, fn string) {
	t.Helper()
	lo, hi := symRange(t, module, fn)
	for _, c := range res.Crashes {
		if c.Module != module || c.Function != fn || uint64(c.Offset) < lo || uint64(c.Offset) >= hi {
			t.Errorf("pid %d crashed at %s+%s (%s), want %s in [%#x,%#x)", c.PID, c.Module, c.Offset, c.Function, fn, lo, hi)
		}
		if want := c.Exe + "|" + module + "+" + c.Offset.String(); c.Key != want {
			t.Errorf("pid %d: key %q, want %q", c.PID, c.Key, want)
		}
		if len(c.Stack) == 0 || c.Stack[0].Function != fn || c.Stack[0].Offset != c.Offset {
			t.Errorf("pid %d: stack does not start at the crash: %+v", c.PID, c.Stack)
		}
	}
}

func TestCrashAllSameSitePIE(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, []string{"--dedup-kernel-cores"}, s.PIE, "same")
	checkGroups(t, res, 6)
	checkSite(t, res, s.PIE, "crash_same")
	checkKernelCores(t, res, false)
	for _, c := range res.Crashes {
		if c.Signal != "SIGSEGV" || c.Code != "SEGV_MAPERR" || c.Addr != 0 || c.Core != nil {
			t.Errorf("crash %+v: want SIGSEGV SEGV_MAPERR at address 0 and no core", c)
		}
		if len(c.Stack) < 2 || c.Stack[1].Function != "main" {
			t.Errorf("pid %d: caller of crash_same is not main: %+v", c.PID, c.Stack)
		}
		if _, ok := c.Regs["rip"]; !ok && len(c.Regs) == 0 {
			t.Errorf("pid %d: no registers", c.PID)
		}
	}
	if lo, _ := symRange(t, s.PIE, "crash_same"); lo > 0x100000 {
		t.Errorf("PIE crash_same links at %#x: not a PIE build?", lo)
	}
}

func TestCrashNonPIE(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.NoPIE, "same")
	checkGroups(t, res, 6)
	checkSite(t, res, s.NoPIE, "crash_same")
	for _, c := range res.Crashes {
		if uint64(c.Offset) != uint64(c.PC) {
			t.Errorf("non-PIE pid %d: offset %s != pc %s (load bias must be 0)", c.PID, c.Offset, c.PC)
		}
	}
}

func TestCrashAllDifferentSites(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, []string{"--dedup-kernel-cores"}, s.PIE, "different")
	checkGroups(t, res, 1, 1, 1, 1, 1, 1)
	checkKernelCores(t, res, false)
	for _, c := range res.Crashes {
		if want := fmt.Sprintf("crash_%d", int(c.Rank)%8); c.Function != want {
			t.Errorf("rank %d crashed in %s, want %s", c.Rank, c.Function, want)
		}
	}
}

func TestCrashTwoGroups(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, []string{"--dedup-kernel-cores"}, s.PIE, "two")
	checkGroups(t, res, 3, 3)
	checkKernelCores(t, res, false)
	for _, c := range res.Crashes {
		if want := fmt.Sprintf("crash_%d", int(c.Rank)%2); c.Function != want {
			t.Errorf("rank %d crashed in %s, want %s", c.Rank, c.Function, want)
		}
	}
}

func TestCrashMixedAbortAndSegv(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "abort-segv")
	checkGroups(t, res, 3, 3)
	for _, c := range res.Crashes {
		switch c.Signal {
		case "SIGABRT":
			if !strings.Contains(c.AbortMessage, "Assertion") || !strings.Contains(c.AbortMessage, "rank must be negative") {
				t.Errorf("abort of rank %d: message %q", c.Rank, c.AbortMessage)
			}
			if want := c.Exe + "|abort:" + c.AbortMessage; c.Key != want {
				t.Errorf("abort key %q, want %q", c.Key, want)
			}
			if int(c.Rank)%2 != 0 {
				t.Errorf("odd rank %d aborted", c.Rank)
			}
		case "SIGSEGV":
			if c.Function != "crash_same" || c.AbortMessage != "" {
				t.Errorf("segv of rank %d in %s (message %q)", c.Rank, c.Function, c.AbortMessage)
			}
		default:
			t.Errorf("unexpected %s", c.Signal)
		}
	}
	for _, g := range res.Summary.Groups {
		if g.Signal == "SIGABRT" && g.AbortMessage == "" {
			t.Errorf("abort group without message in the summary: %+v", g)
		}
	}
}

func TestCrashAbortWithoutMessageKeyedByCaller(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "abort")
	checkGroups(t, res, 6)
	// The site is do_abort's call of abort: a return address, which for a noreturn call may
	// be the first byte after the function (gdb shows the same).
	lo, hi := symRange(t, s.PIE, "do_abort")
	for _, c := range res.Crashes {
		if c.Signal != "SIGABRT" || c.AbortMessage != "" || c.Module != s.PIE || c.Function != "do_abort" ||
			uint64(c.Offset) <= lo || uint64(c.Offset) > hi {
			t.Errorf("abort of pid %d keyed at %s+%s (%s), want do_abort's call in (%#x,%#x]", c.PID, c.Module, c.Offset, c.Function, lo, hi)
		}
		if len(c.Stack) == 0 || !strings.Contains(c.Stack[0].Module, "libc") {
			t.Errorf("pid %d: the stack should start inside libc's abort: %+v", c.PID, c.Stack)
		}
	}
}

func TestCrashInSharedLibrary(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "lib")
	checkGroups(t, res, 6)
	checkSite(t, res, s.LibFuncs, "crash_in_lib")
}

func TestCrashInDlmopenLibrary(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "dlmopen", s.LibDL)
	checkGroups(t, res, 6)
	checkSite(t, res, s.LibDL, "crash_in_dl")
}

func TestCrashInFixedAddressLibrary(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "fixed-lib")
	checkGroups(t, res, 6)
	checkSite(t, res, s.LibFixed, "crash_in_fixed")
	for _, c := range res.Crashes {
		if uint64(c.Offset) < crashes.FixedBase || uint64(c.Offset) != uint64(c.PC) {
			t.Errorf("fixed-address library: offset %s pc %s, want equal and >= %#x", c.Offset, c.PC, crashes.FixedBase)
		}
	}
}

func TestCrashOnNonMainThread(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "thread")
	checkGroups(t, res, 6)
	checkSite(t, res, s.PIE, "crash_same")
	for _, c := range res.Crashes {
		if c.TID == c.PID {
			t.Errorf("pid %d crashed on its main thread; the suite crashes on a second one", c.PID)
		}
		if len(c.Stack) < 2 || c.Stack[1].Function != "thread_main" {
			t.Errorf("pid %d: caller is not thread_main: %+v", c.PID, c.Stack)
		}
	}
}

// checkCleanExits asserts every rank exited 0.
func checkCleanExits(t *testing.T, res crResult, n int) {
	t.Helper()
	ok := 0
	for _, e := range res.Exits {
		if e.Code != nil && *e.Code == 0 {
			ok++
		}
	}
	if ok != n {
		t.Errorf("%d of %d ranks exited 0: %+v", ok, n, res.Exits)
	}
}

func TestCrashSafepointIsHandled(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "safepoint")
	checkGroups(t, res)
	checkCleanExits(t, res, 6)
	if len(res.Handled) != 6 || res.Summary.Handled != 6 {
		t.Fatalf("%d handled events (summary %d), want one per rank", len(res.Handled), res.Summary.Handled)
	}
	lo, hi := symRange(t, s.PIE, "poll_safepoint")
	for _, h := range res.Handled {
		if h.Signal != "SIGSEGV" || h.Code != "SEGV_ACCERR" || h.Function != "poll_safepoint" || uint64(h.Offset) < lo || uint64(h.Offset) >= hi {
			t.Errorf("handled %+v: want SIGSEGV SEGV_ACCERR in poll_safepoint", h)
		}
	}
}

func TestCrashSafepointLeftBySiglongjmpIsHandled(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "safepoint-longjmp")
	checkGroups(t, res)
	checkCleanExits(t, res, 6)
	if len(res.Handled) != 6 {
		t.Fatalf("%d handled events, want one per rank", len(res.Handled))
	}
	for _, h := range res.Handled {
		if h.Function != "poll_safepoint" {
			t.Errorf("handled %+v: want poll_safepoint", h)
		}
	}
}

// A handler that makes the page readable does not repair a write (Spindle's
// safepoint-bad-write): the fault comes back, so it is not handled, and when the handler gives
// up it is a crash at the original site.
func TestCrashSafepointBadWriteIsNotHandled(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "safepoint-bad-write")
	checkGroups(t, res, 6)
	checkSite(t, res, s.PIE, "poke_safepoint")
	if len(res.Handled) != 0 {
		t.Errorf("%d handled events, want none: %+v", len(res.Handled), res.Handled)
	}
	for _, c := range res.Crashes {
		if c.Code != "SEGV_ACCERR" {
			t.Errorf("pid %d: %s, want SEGV_ACCERR (the page exists, the write is refused)", c.PID, c.Code)
		}
	}
}

func TestCrashSafepointThenRealCrash(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "safepoint-crash")
	checkGroups(t, res, 6)
	checkSite(t, res, s.PIE, "crash_same")
	if len(res.Handled) != 6 {
		t.Errorf("%d handled events, want 6 (one safepoint per rank)", len(res.Handled))
	}
	// Handled is reported as it happens: before the rank's crash.
	handledAt := map[int]int{}
	for i, e := range res.Events {
		switch b := e.Body.(type) {
		case sessions.Handled:
			handledAt[b.PID] = i + 1
		case sessions.Crash:
			if handledAt[b.PID] == 0 {
				t.Errorf("pid %d: crash before its safepoint was reported handled", b.PID)
			}
		}
	}
}

func TestCrashSigbusRepairedByFtruncate(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "sigbus-fixed")
	checkGroups(t, res)
	checkCleanExits(t, res, 6)
	if len(res.Handled) != 6 {
		t.Fatalf("%d handled events, want 6", len(res.Handled))
	}
	for _, h := range res.Handled {
		if h.Signal != "SIGBUS" || h.Function != "read_page2" {
			t.Errorf("handled %+v: want SIGBUS in read_page2", h)
		}
	}
}

func TestCrashSigbusNotRepairedKeyedAtOriginalSite(t *testing.T) {
	s := crashSuite(t)
	res := runCrashes(t, 6, nil, s.PIE, "sigbus-bad")
	checkGroups(t, res, 6)
	// The handler re-raises from inside libc's raise; the crash belongs to the faulting read.
	checkSite(t, res, s.PIE, "read_page2")
	if len(res.Handled) != 0 {
		t.Errorf("%d handled events, want none", len(res.Handled))
	}
	for _, c := range res.Crashes {
		if c.Signal != "SIGBUS" {
			t.Errorf("pid %d: %s, want SIGBUS", c.PID, c.Signal)
		}
	}
}

var readyRE = regexp.MustCompile(`^ready pid=(\d+) rank=(\d+)$`)

// inPause reports whether pid is blocked in pause (or ppoll, glibc's pause where there is no
// pause syscall), from /proc/PID/syscall.
func inPause(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	name := arch.SyscallName(arch.Host(), nr)
	return name == "pause" || name == "ppoll"
}

func TestCrashKillSegvFromOutside(t *testing.T) {
	s := crashSuite(t)
	r := startCrashRun(t, 6, nil, s.PIE, "kill")
	pids := map[int]bool{}
	r.waitUntil("6 ranks ready", 60*time.Second, func(_ []sessions.Event, lines []string) bool {
		for _, l := range lines {
			if m := readyRE.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				pids[n] = true
			}
		}
		return len(pids) == 6
	})
	// "ready" is printed just before pause(): wait until each is asleep in it, so every rank
	// is keyed at the same place.
	for pid := range pids {
		for dl := patience.New(5 * time.Second); ; {
			if inPause(pid) {
				break
			}
			if dl.Passed() {
				t.Fatalf("pid %d never slept in pause() (%v)", pid, dl.Waited())
			}
			time.Sleep(time.Millisecond) // polling /proc: the state change has no event to wait on
		}
		if err := syscall.Kill(pid, syscall.SIGSEGV); err != nil {
			t.Fatal(err)
		}
	}
	res := r.wait(60 * time.Second)
	checkGroups(t, res, 6)
	for _, c := range res.Crashes {
		if !c.UserSent || c.Code != "SI_USER" || c.Signal != "SIGSEGV" {
			t.Errorf("crash %+v: want a user-sent SIGSEGV", c)
		}
		if !strings.Contains(filepath.Base(c.Module), "libc") {
			t.Errorf("pid %d keyed at %s+%s (%s): want where the thread was, in libc's pause", c.PID, c.Module, c.Offset, c.Function)
		}
	}
}

// TestCrashAttachedJob: crashes of processes crashtui attached to (not started) are grouped the
// same way, ranks read from their environment.
func TestCrashAttachedJob(t *testing.T) {
	s := crashSuite(t)
	const n = 3
	var procs []*exec.Cmd
	pgid := 0
	ready := make(chan int, n)
	for i := 0; i < n; i++ {
		cmd := exec.Command(s.PIE, "kill")
		cmd.Env = append(os.Environ(), "CRASHTUI_RANK="+strconv.Itoa(i))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		errp, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if pgid == 0 {
			pgid = cmd.Process.Pid
		}
		procs = append(procs, cmd)
		go func() {
			sc := bufio.NewScanner(errp)
			for sc.Scan() {
				if m := readyRE.FindStringSubmatch(sc.Text()); m != nil {
					p, _ := strconv.Atoi(m[1])
					ready <- p
				}
			}
		}()
	}
	t.Cleanup(func() {
		for _, c := range procs {
			c.Process.Kill()
			c.Wait()
		}
	})
	for i := 0; i < n; i++ {
		select {
		case <-ready:
		case <-patience.After(30 * time.Second):
			t.Fatal("processes did not start")
		}
	}
	cmd := exec.Command(crashtuiBin, "attach", "--json", "pgid:"+strconv.Itoa(pgid))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
			return
		default:
		}
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-patience.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	// Attached means a TracerPid (crashtui's tracer thread), for every process.
	for _, c := range procs {
		for dl := patience.New(10 * time.Second); tracerPID(c.Process.Pid) == 0 || !inPause(c.Process.Pid); {
			if dl.Passed() {
				t.Fatalf("pid %d: not attached and asleep in pause (%v)", c.Process.Pid, dl.Waited())
			}
			time.Sleep(time.Millisecond) // polling /proc: attach and sleep have no event to wait on
		}
	}
	for _, c := range procs {
		syscall.Kill(c.Process.Pid, syscall.SIGSEGV)
	}
	for _, c := range procs {
		c.Wait()
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("crashtui attach: %v", waitErr)
		}
	case <-patience.After(30 * time.Second):
		t.Fatal("crashtui did not end with the job")
	}
	res := crResult{}
	for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var e sessions.Event
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		switch b := e.Body.(type) {
		case sessions.Crash:
			res.Crashes = append(res.Crashes, b)
		case sessions.Summary:
			res.Summary = b
		case sessions.Error:
			res.Errors = append(res.Errors, b)
		}
	}
	checkGroups(t, res, n)
	ranks := map[sessions.Rank]bool{}
	for _, c := range res.Crashes {
		ranks[c.Rank] = true
		if !c.UserSent {
			t.Errorf("pid %d: not user-sent", c.PID)
		}
	}
	if len(ranks) != n || ranks[sessions.NoRank] {
		t.Errorf("ranks %v, want 0..%d from CRASHTUI_RANK", ranks, n-1)
	}
}

func TestCrashGroupByStackSplitsOneSite(t *testing.T) {
	s := crashSuite(t)
	site := runCrashes(t, 6, []string{"--group-by", "site"}, s.PIE, "stack")
	checkGroups(t, site, 6)
	checkSite(t, site, s.PIE, "crash_common")

	res := runCrashes(t, 6, []string{"--group-by", "stack", "--stack-depth", "2"}, s.PIE, "stack")
	checkGroups(t, res, 3, 3)
	for _, c := range res.Crashes {
		want := "caller_a"
		if int(c.Rank)%2 == 1 {
			want = "caller_b"
		}
		if c.Function != "crash_common" || len(c.Stack) < 2 || c.Stack[1].Function != want {
			t.Errorf("rank %d: %s called from %+v, want crash_common from %s", c.Rank, c.Function, c.Stack, want)
		}
		if !strings.HasPrefix(c.Key, site.Crashes[0].Key+"|stack:") {
			t.Errorf("stack key %q does not extend the site key %q", c.Key, site.Crashes[0].Key)
		}
	}
	// With one frame, the call path is the same faulting function: one group again.
	one := runCrashes(t, 6, []string{"--group-by", "stack", "--stack-depth", "1"}, s.PIE, "stack")
	checkGroups(t, one, 6)
}

// gdbTopFrame returns gdb's frame #0 line for a core, or skips when gdb is missing.
func gdbTopFrame(t *testing.T, exe, core string) string {
	t.Helper()
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		t.Skip("gdb is not installed: cannot check that cores are readable")
	}
	ctx, cancel := patience.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, gdb, "-nx", "-batch", "-ex", "bt", exe, core).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "#0") {
			return l
		}
	}
	t.Fatalf("gdb printed no frame for %s:\n%s", core, out)
	return ""
}

// checkCores asserts one core per group, named core.<group>.<representative pid>, reported in
// the events and the summary, with gdb's top frame naming the crashing function.
func checkCores(t *testing.T, res crResult, dir, exe string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		files = append(files, e.Name())
	}
	sort.Strings(files)
	var want []string
	fn := map[string]string{}
	for _, g := range res.Summary.Groups {
		name := fmt.Sprintf("core.%d.%d", g.Group, g.Representative)
		want = append(want, name)
		fn[name] = g.Function
		if g.Core == nil || *g.Core != filepath.Join(dir, name) {
			t.Errorf("group %d: summary core %v, want %s", g.Group, g.Core, filepath.Join(dir, name))
		}
	}
	sort.Strings(want)
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("cores %v, want %v", files, want)
	}
	for _, c := range res.Crashes {
		if c.Representative != (c.Core != nil) {
			t.Errorf("pid %d: representative %v but core %v", c.PID, c.Representative, c.Core)
		}
	}
	for _, name := range want {
		top := gdbTopFrame(t, exe, filepath.Join(dir, name))
		if !strings.Contains(top, " "+fn[name]+" ") {
			t.Errorf("%s: gdb's top frame %q does not name %s", name, top, fn[name])
		}
	}
}

// readCrashLog reads --crash-log and checks it against the crash events.
func readCrashLog(t *testing.T, path string, res crResult) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != "rank,pid,group,representative,signal,site" {
		t.Fatalf("crash log header %v", recs)
	}
	recs = recs[1:]
	if len(recs) != len(res.Crashes) {
		t.Fatalf("crash log has %d records, %d crashes", len(recs), len(res.Crashes))
	}
	for i, c := range res.Crashes {
		want := []string{c.Rank.String(), strconv.Itoa(c.PID), strconv.Itoa(c.Group), strconv.FormatBool(c.Representative), c.Signal,
			strings.TrimPrefix(c.Key, c.Exe+"|")}
		if strings.Join(recs[i], ",") != strings.Join(want, ",") {
			t.Errorf("crash log record %d: %q, want %q", i, recs[i], want)
		}
	}
}

func TestCrashCoresOnePerGroupReadableByGDB(t *testing.T) {
	s := crashSuite(t)
	cores := t.TempDir()
	log := filepath.Join(t.TempDir(), "crash.csv")
	res := runCrashes(t, 6, []string{"--cores", cores, "--crash-log", log}, s.PIE, "two")
	checkGroups(t, res, 3, 3)
	checkKernelCores(t, res, true)
	readCrashLog(t, log, res)
	checkCores(t, res, cores, s.PIE)
}

func TestCrashCoresThreadsAndLibraries(t *testing.T) {
	s := crashSuite(t)
	for _, mode := range []string{"thread", "lib", "abort-segv"} {
		t.Run(mode, func(t *testing.T) {
			cores := t.TempDir()
			res := runCrashes(t, 4, []string{"--cores", cores}, s.NoPIE, mode)
			if len(res.Summary.Groups) == 0 {
				t.Fatal("no groups")
			}
			checkKernelCores(t, res, true)
			if mode == "abort-segv" {
				// gdb's frame #0 of an abort is inside libc; check only the files.
				for _, g := range res.Summary.Groups {
					if g.Core == nil {
						t.Errorf("group %d has no core", g.Group)
					} else if _, err := os.Stat(*g.Core); err != nil {
						t.Error(err)
					}
				}
				return
			}
			checkCores(t, res, cores, s.NoPIE)
		})
	}
}

// TestCrashStorm: 256 ranks crash within a moment of each other at 4 sites; every rank is
// accounted for, 4 groups, 4 cores.
func TestCrashStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the storm starts 256 processes")
	}
	s := crashSuite(t)
	const n = 256
	cores := t.TempDir()
	gofile := filepath.Join(t.TempDir(), "go")
	r := startCrashRun(t, n, []string{"--cores", cores}, s.PIE, "storm", gofile)
	r.waitUntil("all ranks running the storm program", 120*time.Second, func(evs []sessions.Event, _ []string) bool {
		running := map[int]bool{}
		for _, e := range evs {
			switch b := e.Body.(type) {
			case sessions.Process:
				if b.Exe == s.PIE {
					running[b.PID] = true
				}
			case sessions.Exec:
				if b.Exe == s.PIE {
					running[b.PID] = true
				}
			}
		}
		return len(running) == n
	})
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.wait(180 * time.Second)
	checkGroups(t, res, n/4, n/4, n/4, n/4)
	checkKernelCores(t, res, true)
	ranks := map[sessions.Rank]bool{}
	for _, c := range res.Crashes {
		ranks[c.Rank] = true
		if want := fmt.Sprintf("crash_%d", int(c.Rank)%4); c.Function != want {
			t.Errorf("rank %d crashed in %s, want %s", c.Rank, c.Function, want)
		}
	}
	if len(ranks) != n {
		t.Errorf("%d distinct ranks crashed, want %d", len(ranks), n)
	}
	checkCores(t, res, cores, s.PIE)
	if len(res.Crashes) > 1 {
		first, last := res.Crashes[0], res.Crashes[len(res.Crashes)-1]
		var tf, tl time.Time
		for _, e := range res.Events {
			if c, ok := e.Body.(sessions.Crash); ok {
				if c.PID == first.PID {
					tf = e.Time
				}
				if c.PID == last.PID {
					tl = e.Time
				}
			}
		}
		t.Logf("storm: %d crashes decided in %v", len(res.Crashes), tl.Sub(tf))
	}
}

func TestCrashFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--json", "--group-by", "bogus", "--", "/bin/true"},
		{"run", "--json", "--stack-depth", "0", "--", "/bin/true"},
		{"run", "--json", "--crash-log", "/nonexistent/dir/x.csv", "--", "/bin/true"},
	} {
		out, err := exec.Command(crashtuiBin, args...).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Errorf("crashtui %q: %v, want exit status 2\n%s", args, err, out)
		}
	}
}

// TestUnrepairedFaultFlag: a handler that never repairs its fault (demo/c/loophandler): by
// default the fault is delivered as if no handler were installed, so `run` ends with the
// rank dead of SIGSEGV and its crash says unrepaired; with --unrepaired=leave the rank loops
// on as it would without crashtui, reported after three tries, until crashtui ends it.
func TestUnrepairedFaultFlag(t *testing.T) {
	bin := buildC(t, "loophandler")
	res := runCrashes(t, 1, nil, bin, "read")
	if len(res.Crashes) != 1 || !res.Crashes[0].Unrepaired || res.Crashes[0].HandlerTries != 1 {
		t.Fatalf("crashes %+v, want one, unrepaired after the handler's first failure", res.Crashes)
	}
	if len(res.Exits) != 1 || res.Exits[0].Signal != "SIGSEGV" {
		t.Errorf("exits %+v, want the rank dead of SIGSEGV", res.Exits)
	}

	r := startCrashRun(t, 1, []string{"--unrepaired=leave"}, bin, "read")
	var cr sessions.Crash
	r.waitUntil("the loop's crash", 20*time.Second, func(evs []sessions.Event, _ []string) bool {
		for _, e := range evs {
			if c, ok := e.Body.(sessions.Crash); ok {
				cr = c
				return true
			}
		}
		return false
	})
	if cr.Unrepaired || cr.HandlerTries != 3 {
		t.Errorf("crash unrepaired %v after %d tries, want left alone after 3", cr.Unrepaired, cr.HandlerTries)
	}
	if st := procState(cr.PID); st != "R" && st != "S" && st != "t" {
		t.Errorf("with --unrepaired=leave the rank is %q, want it still looping", st)
	}
	r.cmd.Process.Signal(syscall.SIGINT) // run ends the ranks it started
	res = r.wait(60 * time.Second)
	if len(res.Exits) != 1 || res.Exits[0].Signal == "SIGSEGV" {
		t.Errorf("exits %+v: the rank died of its fault although it was left alone", res.Exits)
	}
}

// A fault repaired by its handler in a thread that then computes without a syscall: no stop
// will ever say the instruction went through, so the verdict is the Watcher's Tick's (the
// thread ran on for stepVerdict without faulting again). The idle loop sleeps unless the
// watcher asks for its ticks (Loop.WantTick): without the ask this waits forever.
func TestCrashSafepointThenComputeIsHandled(t *testing.T) {
	s := crashSuite(t)
	c := startCrashtui(t, "run", "--json", "--", s.PIE, "safepoint-spin")
	evs := c.waitFor(t, "the handled event", 120*time.Second, func(evs []event) bool { return count(evs, "handled") >= 1 })
	var h event
	for _, e := range evs {
		if e.kind() == "handled" {
			h = e
		}
	}
	if h.str("function") != "poll_safepoint" || h.str("code") != "SEGV_ACCERR" {
		t.Errorf("handled %v: want SEGV_ACCERR in poll_safepoint", h)
	}
	if n := count(evs, "crash"); n != 0 {
		t.Errorf("%d crash events for a repaired fault", n)
	}
	if st := procState(h.int("pid")); st != "R" {
		// R: still computing (the verdict did not wait for a syscall it never makes).
		t.Errorf("the rank is in state %q after the verdict, want it still running", st)
	}
}
