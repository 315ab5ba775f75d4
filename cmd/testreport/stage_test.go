package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stage runs script with sh -c as the stage name, with the results in dir, and returns the
// exit status and what the console showed.
func stage(t *testing.T, dir, name, script string, all bool, quiet time.Duration) (int, string) {
	t.Helper()
	var con strings.Builder
	o := stageOptions{name: name, log: filepath.Join(dir, name+".log"), results: filepath.Join(dir, "results"), all: all, quiet: quiet}
	code := runStage(o, []string{"sh", "-c", script}, &con)
	return code, durations.ReplaceAllString(con.String(), "${1}D")
}

// durations are the stage times, which depend on the machine: the tests see them as D.
var durations = regexp.MustCompile(`( )\d+(?:m\d+)?s\b`)

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// TestStages: a passing stage shows only its progress lines and its ok line with its time and
// counts; a failing one its FAIL line, the lines around each failure and the end of its log;
// every line is in the log; a stage whose target failed before it started is named in the
// summary; the summary has one line per stage, the totals, and exit status 1 when any failed.
func TestStages(t *testing.T) {
	dir := t.TempDir()
	code, con := stage(t, dir, "one", `echo noise; echo "progress: installing qemu-system-ppc (12s)"; echo "one: 5 passed, 0 failed"`, false, 0)
	if code != 0 {
		t.Errorf("a passing stage: exit %d", code)
	}
	contains(t, "a passing stage's console", con, "== one (log: ", "     installing qemu-system-ppc (12s)\n", "ok   one D: one: 5 passed, 0 failed (log: ")
	if strings.Contains(con, "noise") {
		t.Errorf("a line that is not progress reached the console:\n%s", con)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "one.log")); string(b) != "noise\nprogress: installing qemu-system-ppc (12s)\none: 5 passed, 0 failed\n" {
		t.Errorf("the log holds %q, want every line", b)
	}

	code, con = stage(t, dir, "two", `echo "--- FAIL: TestX (1.0s)"; echo "    x_test.go:3: broken"; for i in $(seq 40); do echo "line $i"; done; echo "go: 3 passed, 1 failed, 2 skipped"; exit 3`, false, 0)
	if code != 1 {
		t.Errorf("a failing stage: exit %d, want 1", code)
	}
	contains(t, "a failing stage's console", con, "FAIL two D: go: 3 passed, 1 failed, 2 skipped (exit status 3; log: ",
		"its failures:\n     --- FAIL: TestX (1.0s)\n         x_test.go:3: broken\n", "the end of its log:\n", "     line 40\n")
	// The 15 lines after the failure, then the last 30 of the log: line 5 only in the first,
	// line 15 only in the second, line 12 in both.
	for l, n := range map[string]int{"line 5": 1, "line 15": 1, "line 12": 2} {
		if got := strings.Count(con, "     "+l+"\n"); got != n {
			t.Errorf("%q shown %d times, want %d:\n%s", l, got, n, con)
		}
	}

	// -all: every line, and the failures are not repeated.
	code, con = stage(t, dir, "three", `echo "ok   some/pkg  1.0s"; echo "FAIL other/pkg 2.0s"; exit 1`, true, 0)
	if code != 1 || strings.Count(con, "FAIL other/pkg") != 1 || !strings.Contains(con, "ok   some/pkg") {
		t.Errorf("-all: exit %d, console:\n%s", code, con)
	}

	// A stage with no counts closes with its last progress line.
	_, con = stage(t, dir, "cross", `echo "progress: GOARCH=arm64 go vet ./... ok (3s)"`, false, 0)
	contains(t, "a stage without counts", con, "ok   cross D: GOARCH=arm64 go vet ./... ok (3s)")

	var sum strings.Builder
	code = summary(filepath.Join(dir, "results"), []string{"one", "two", "three", "cross", "never"}, &sum)
	if code != 1 {
		t.Errorf("summary with failures: exit %d, want 1", code)
	}
	contains(t, "the summary", durations.ReplaceAllString(sum.String(), "${1}D"),
		"ok   one  ", "one: 5 passed, 0 failed\n",
		"FAIL two  ", "go: 3 passed, 1 failed, 2 skipped (log: ",
		"FAIL never", "did not run: make never failed before the stage started",
		"make test: FAIL (two, three, never): 2 of 5 stages passed; tests 8 passed, 1 failed, 2 skipped; D in all")

	// Every stage passed: exit 0. A stage run again counts with its last result.
	results := filepath.Join(dir, "results2")
	for _, r := range []stageResult{
		{Stage: "one", OK: true, Seconds: 9, Closing: "one: 5 passed, 0 failed", Counted: true, Passed: 5},
		{Stage: "two", OK: false, Seconds: 30, Closing: "go: 3 passed, 1 failed", Counted: true, Passed: 3, Failed: 1},
		{Stage: "two", OK: true, Seconds: 61, Closing: "go: 4 passed, 0 failed", Counted: true, Passed: 4},
	} {
		if err := appendResult(results, r); err != nil {
			t.Fatal(err)
		}
	}
	sum.Reset()
	if code := summary(results, []string{"one", "two"}, &sum); code != 0 {
		t.Errorf("summary of passing stages: exit %d\n%s", code, sum.String())
	}
	contains(t, "the summary of passing stages", sum.String(), "ok   one      9s  one: 5 passed, 0 failed\n", "ok   two    1m1s  go: 4 passed, 0 failed\n",
		"make test: ok: 2 of 2 stages passed; tests 9 passed, 0 failed, 0 skipped; 1m10s in all")
}

// TestStageStillRunning: a stage that is silent on the console for -quiet gets a line saying
// it still runs and what it printed last. The stage's script waits for that line, naming its
// own last line, in the console file (no clock decides whether it came), then ends: under
// load a first "still running" can come before the stage's reader has its line ("it has
// printed nothing yet"), and the next one, a quiet period later, names it.
func TestStageStillRunning(t *testing.T) {
	dir := t.TempDir()
	conFile := filepath.Join(dir, "console")
	f, err := os.Create(conFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := stageOptions{name: "slow", log: filepath.Join(dir, "slow.log"), quiet: 20 * time.Millisecond}
	script := `echo "booting power9"; i=0; until grep -q "its last line: booting power9" ` + conFile + `; do i=$((i+1)); [ $i -lt 60000 ] || exit 9; sleep 0.01; done`
	if code := runStage(o, []string{"sh", "-c", script}, f); code != 0 {
		b, _ := os.ReadFile(conFile)
		t.Fatalf("exit %d:\n%s", code, b)
	}
	b, _ := os.ReadFile(conFile)
	contains(t, "the console", string(b), "     slow: still running, ", "so far; its last line: booting power9")
}

// TestReportStillRunning: while a package's tests run and nothing was printed for quiet,
// report names the test running longest, how many more run and how many passed.
func TestReportStillRunning(t *testing.T) {
	var out strings.Builder
	r := &running{out: &out, tests: map[string]time.Time{}}
	now := time.Now()
	r.tests["p TestLong"] = now.Add(-90 * time.Second)
	r.tests["p TestShort"] = now.Add(-time.Second)
	r.passed = 7
	r.last = now.Add(-time.Second)
	r.heartbeat(now, time.Minute)
	if out.Len() != 0 {
		t.Errorf("a line after a second of silence: %q", out.String())
	}
	r.last = now.Add(-time.Minute)
	r.heartbeat(now, time.Minute)
	if got, want := out.String(), "     running TestLong (p) for 1m30s (and 1 more); 7 passed so far\n"; got != want {
		t.Errorf("still-running line %q, want %q", got, want)
	}
	out.Reset()
	r.stopped = true
	r.last = now.Add(-time.Hour)
	r.heartbeat(now, time.Minute)
	if out.Len() != 0 {
		t.Errorf("a still-running line after the closing lines began: %q", out.String())
	}
}

// TestMakeTestRunsEveryStage runs the Makefile's own test target on four stand-in stages
// (MAKEFILES adds them to every make, the stages' own included): one fails, one never starts
// (its target fails first), one hangs past its limit (LIMIT_stage) and is stopped, and the
// last still runs and passes; the summary names each and make test exits non-zero.
func TestMakeTestRunsEveryStage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	extra := filepath.Join(dir, "stages.mk")
	mk := `
fake-fail: testreport
	$(call stage,fake-fail)
stage-fake-fail:
	@echo "progress: step one ok (1s)"; echo "--- FAIL: TestX"; echo "fake-fail: 1 passed, 1 failed"; exit 1
fake-pass: testreport
	$(call stage,fake-pass)
stage-fake-pass:
	@echo "progress: step two ok (2s)"; echo "fake-pass: 2 passed, 0 failed, 1 skipped"
fake-never:
	@echo "installing: nothing"; exit 1
fake-hang: testreport
	$(call stage,fake-hang)
stage-fake-hang:
	@while :; do sleep 0.05; done
`
	if err := os.WriteFile(extra, []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	build := filepath.Join(dir, "build")
	cmd := exec.Command("make", "--no-print-directory", "-C", "../..", "test", "STAGES=fake-fail fake-never fake-hang fake-pass", "BUILD="+build, "LIMIT_fake-hang=100ms", "STAGE_GRACE=100ms")
	cmd.Env = append(os.Environ(), "MAKEFILES="+extra, "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("make test with a failing stage: %v, want a non-zero exit\n%s", err, out)
	}
	got := durations.ReplaceAllString(string(out), "${1}D")
	contains(t, "make test's output", got,
		"== fake-fail (log: "+build+"/test-logs/fake-fail.log)", "     step one ok (1s)\n",
		"FAIL fake-fail D: fake-fail: 1 passed, 1 failed (exit status 2; log: ", "--- FAIL: TestX",
		"installing: nothing",
		"== fake-pass", "     step two ok (2s)\n", "ok   fake-pass D: fake-pass: 2 passed, 0 failed, 1 skipped",
		"== summary\n",
		"FAIL fake-fail ", "FAIL fake-never ", "did not run: make fake-never failed before the stage started",
		"FAIL fake-hang D: stopped at its time limit (0s)",
		"ok   fake-pass ",
		"make test: FAIL (fake-fail, fake-never, fake-hang): 1 of 4 stages passed; tests 3 passed, 1 failed, 1 skipped; D in all")
	if i, j := strings.Index(got, "== fake-fail"), strings.Index(got, "== fake-pass"); i < 0 || j < i {
		t.Errorf("the stages did not run in order:\n%s", got)
	}
}

// TestStageTimeLimit: a stage past its limit gets SIGQUIT in all it runs (its shell's trap
// says so in the log) and fails saying it was stopped; one that ignores SIGQUIT is killed
// after the grace; one whose make test budget is spent before it starts does not run. The
// limits are short so that the stages reach them; nothing here asserts how long anything took.
func TestStageTimeLimit(t *testing.T) {
	dir := t.TempDir()
	run := func(name, script string, o stageOptions) (int, string, string) {
		t.Helper()
		var con strings.Builder
		o.name, o.log, o.results = name, filepath.Join(dir, name+".log"), filepath.Join(dir, "results")
		code := runStage(o, []string{"sh", "-c", script}, &con)
		log, _ := os.ReadFile(o.log)
		return code, durations.ReplaceAllString(con.String(), "${1}D"), string(log)
	}
	// Its trap, once set (the file says so), says it got SIGQUIT: its last progress line
	// closes the FAIL line. The limit is ended by the test then, not by a clock.
	armed := filepath.Join(dir, "armed")
	expire := make(chan struct{})
	go func() {
		for {
			if _, err := os.Stat(armed); err == nil {
				close(expire)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	code, con, log := run("hang", `trap 'echo "progress: got QUIT"; exit 7' QUIT; touch `+armed+`; while :; do sleep 0.05; done`,
		stageOptions{limit: time.Hour, grace: time.Hour, expire: expire})
	if code != 1 {
		t.Errorf("a stage past its limit: exit %d, want 1", code)
	}
	contains(t, "a stopped stage's console", con, "     hang: stopped at its time limit (", "SIGQUIT to all it runs",
		"FAIL hang D: stopped at its time limit (1h0m0s); its last line: got QUIT")
	contains(t, "a stopped stage's log", log, "got QUIT")

	code, con, _ = run("deaf", `trap '' QUIT; while :; do sleep 0.05; done`,
		stageOptions{limit: 100 * time.Millisecond, grace: 100 * time.Millisecond})
	if code != 1 {
		t.Errorf("a stage that ignores SIGQUIT: exit %d, want 1", code)
	}
	contains(t, "a killed stage's console", con, "FAIL deaf D: stopped at its time limit (")

	code, con, _ = run("late", `echo ran`, stageOptions{deadline: time.Now().Add(-time.Second), grace: time.Second})
	if code != 1 {
		t.Errorf("a stage after the budget's end: exit %d, want 1", code)
	}
	contains(t, "a stage after the budget's end", con, "FAIL late: not run: make test's time budget was spent")

	// Within its limit and the budget a stage runs as ever.
	code, con, _ = run("quick", `echo "quick: 1 passed, 0 failed"`, stageOptions{limit: time.Hour, deadline: time.Now().Add(time.Hour), grace: time.Second})
	if code != 0 {
		t.Errorf("a stage within its limit: exit %d\n%s", code, con)
	}
	var sum strings.Builder
	summary(filepath.Join(dir, "results"), []string{"hang", "deaf", "late", "quick"}, &sum)
	contains(t, "the summary", sum.String(), "FAIL hang ", "stopped at its time limit", "FAIL late ", "not run: make test's time budget", "ok   quick ")
}
