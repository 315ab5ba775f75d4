package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runJSON runs crashtui and returns its stdout lines, stderr and exit status.
func runJSON(t *testing.T, args ...string) ([]string, string, int) {
	t.Helper()
	cmd := exec.Command(crashtuiBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), stderr.String(), code
}

func withoutTime(line string) map[string]any {
	var m map[string]any
	json.Unmarshal([]byte(line), &m)
	delete(m, "time")
	return m
}

// The demo, recorded live, replays to the same events and the same final State.
func TestRecordedDemoReplaysToTheSameState(t *testing.T) {
	needRoot(t)
	buildC(t, "rank")
	rec := filepath.Join(t.TempDir(), "demo.jsonl")
	live, stderr, code := runJSON(t, "demo", "--json", "--duration", "9s", "--record", rec)
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, stderr)
	}
	replayed, stderr, code := runJSON(t, "replay", "--json", rec)
	if code != 0 {
		t.Fatalf("replay exit %d: %s", code, stderr)
	}
	if len(live) != len(replayed) {
		t.Fatalf("live run printed %d events, replay %d", len(live), len(replayed))
	}
	for i := range live {
		a, b := withoutTime(live[i]), withoutTime(replayed[i])
		if i == len(live)-1 {
			if a["event"] != "summary" || b["event"] != "summary" {
				t.Fatalf("last lines %v / %v, want summaries", a["event"], b["event"])
			}
		}
		aj, _ := json.Marshal(a)
		bj, _ := json.Marshal(b)
		if !bytes.Equal(aj, bj) {
			t.Errorf("event %d differs:\n live   %s\n replay %s", i, aj, bj)
		}
	}
	sum := withoutTime(live[len(live)-1])
	if sum["crashes"].(float64) < 3 || len(sum["groups"].([]any)) != 2 || sum["handled"].(float64) < 1 {
		t.Errorf("demo summary %v: want 3 crashes in 2 groups and handled faults", sum)
	}
}

func TestReplayOfDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	good := `{"format":"crashtui-session","version":1,"job":"pgid:1"}
{"event":"process","time":"2026-11-30T00:00:00Z","pid":10,"ppid":1,"rank":0,"exe":"/x","comm":"x\u001b[31mevil","argv":null,"uid":0,"threads":1}
{"event":"crash","time":"2026-11-30T00:00:01Z","pid":10,"tid":10,"rank":0,"exe":"/x","signal":"SIGSEGV","code":"SEGV_MAPERR","addr":"0x0","pc":"0x1","module":"/x","offset":"0x1","representative":true,"core":null}
`
	truncated := good + `{"event":"exit","pid":10,"co`
	future := strings.Replace(good, `"version":1`, `"version":7`, 1)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	lines, stderr, code := runJSON(t, "replay", "--json", write("trunc.jsonl", truncated))
	if code != 0 || !strings.Contains(stderr, "line 4") || len(lines) != 3 {
		t.Errorf("truncated: exit %d, stderr %q, %d lines; want exit 0, a note naming line 4, 2 events + summary", code, stderr, len(lines))
	}
	_, stderr, code = runJSON(t, "replay", "--json", write("future.jsonl", future))
	if code != 2 || !strings.Contains(stderr, "newer") {
		t.Errorf("future version: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runJSON(t, "replay", "--json", write("garbage.jsonl", "\x1b]52;c;QUFB\x07not json\n"))
	if code != 2 || strings.ContainsRune(stderr, 0x1b) || !strings.Contains(stderr, "line 1") {
		t.Errorf("garbage: exit %d, stderr %q (must name line 1 and contain no ESC)", code, stderr)
	}
	_, _, code = runJSON(t, "replay", "--json", filepath.Join(dir, "missing.jsonl"))
	if code != 2 {
		t.Errorf("missing file: exit %d, want 2", code)
	}
}

// The recorded demo committed under demo/ replays headless: every capability is in it.
func TestCommittedDemoRecording(t *testing.T) {
	lines, stderr, code := runJSON(t, "replay", "--json", filepath.Join("..", "..", "demo", "session.jsonl"))
	if code != 0 || stderr != "" {
		t.Fatalf("replay of demo/session.jsonl: exit %d, stderr %q", code, stderr)
	}
	kinds := map[string]int{}
	var seccomp, outcome bool
	for _, l := range lines {
		e := withoutTime(l)
		kinds[e["event"].(string)]++
		if strings.Contains(l, `"reason":"seccomp"`) {
			seccomp = true
		}
		if strings.Contains(l, `"outcome":"back in read`) {
			outcome = true
		}
	}
	sum := withoutTime(lines[len(lines)-1])
	if kinds["crash"] != 3 || kinds["handled"] == 0 || kinds["matrix"] == 0 || kinds["thread"] == 0 ||
		len(sum["groups"].([]any)) != 2 || !seccomp || !outcome {
		t.Errorf("demo/session.jsonl: events %v, summary %v, seccomp cell %v, restart outcome %v", kinds, sum, seccomp, outcome)
	}
}

// TestReplaySkipsDamagedLine: a damaged line in the middle of a recording is skipped with a
// line-numbered warning (as crashtui view does), and the events after it still replay.
func TestReplaySkipsDamagedLine(t *testing.T) {
	b, err := os.ReadFile("../../demo/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	whole := len(lines) - 1              // events, the header aside
	lines[3] = `{"event":"crash","pid":` // damaged: line 4
	path := filepath.Join(t.TempDir(), "damaged.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(crashtuiBin, "replay", "--json", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "line 4:") || !strings.Contains(stderr.String(), "(skipped)") {
		t.Errorf("stderr %q: want a warning naming line 4", stderr.String())
	}
	// Every event but the damaged one, and the summary (the recording's own summary, if any,
	// is replaced by one made from the replayed events).
	got := strings.Count(string(out), "\n")
	if got < whole-2 {
		t.Errorf("%d events replayed of %d: replay stopped at the damaged line", got, whole)
	}
}

// TestRecordedStories replays the recorded sessions of demo/sessions, one per story a
// workshop tells, and checks each still says what it was recorded to show.
func TestRecordedStories(t *testing.T) {
	replay := func(name string) (map[string]int, []string, map[string]any) {
		lines, stderr, code := runJSON(t, "replay", "--json", filepath.Join("..", "..", "demo", "sessions", name))
		if code != 0 || stderr != "" || len(lines) == 0 {
			t.Fatalf("replay %s: exit %d, stderr %q", name, code, stderr)
		}
		kinds := map[string]int{}
		for _, l := range lines {
			kinds[withoutTime(l)["event"].(string)]++
		}
		return kinds, lines, withoutTime(lines[len(lines)-1])
	}
	// A crash storm: 24 ranks, three crash sites of six ranks each (two faults, one abort),
	// and six ranks whose safepoint handler repaired three faults each.
	kinds, _, sum := replay("crash-storm.jsonl")
	groups, _ := sum["groups"].([]any)
	if kinds["crash"] != 18 || kinds["handled"] != 18 || len(groups) != 3 {
		t.Errorf("crash-storm: events %v, %d groups", kinds, len(groups))
	}
	for _, g := range groups {
		if n := g.(map[string]any)["count"].(float64); n != 6 {
			t.Errorf("crash-storm: group of %v crashes, want 6: %v", n, g)
		}
	}
	// The access matrix under a container-like seccomp filter: the two filtered processes'
	// rows are refused for seccomp, measured inside them, the others allowed.
	kinds, lines, _ := replay("matrix-seccomp.jsonl")
	denied, measured := 0, false
	for _, l := range lines {
		if strings.Contains(l, `"event":"matrix"`) {
			measured = strings.Contains(l, `"measured":true`)
			denied = strings.Count(l, `"reason":"seccomp"`)
		}
	}
	if kinds["matrix"] != 1 || !measured || denied != 8 {
		t.Errorf("matrix-seccomp: events %v, measured %v, %d pairs refused for seccomp (want 8)", kinds, measured, denied)
	}
	// CRIU's ppc64le scv bug (checkpoint-restore/criu#2261) on a real POWER10 kernel under
	// QEMU, glibc's own scv: naive and sc-only (CRIU before the fix) leak 512/516 to the
	// program, correct restarts read and futex and gives the sleeps EINTR; on POWER8 glibc
	// uses sc, and sc-only restores it correctly.
	for _, tc := range []struct {
		file, insn string
		want       []string
	}{
		{"power10-scv-naive.jsonl", "scv", []string{"read returned ERESTARTSYS (512)", "poll returned ERESTART_RESTARTBLOCK (516)"}},
		{"power10-scv-sc-only.jsonl", "scv", []string{"read returned ERESTARTSYS (512)", "clock_nanosleep returned ERESTART_RESTARTBLOCK (516)"}},
		{"power10-scv-correct.jsonl", "scv", []string{"back in read", "back in futex", "poll returned EINTR"}},
		{"power8-sc-sc-only.jsonl", "sc", []string{"back in read", "clock_nanosleep returned EINTR"}},
	} {
		_, lines, _ := replay(tc.file)
		all := strings.Join(lines, "\n")
		if !strings.Contains(all, `"insn":"`+tc.insn+`"`) || strings.Contains(all, `"insn":"`+map[string]string{"sc": "scv", "scv": "sc"}[tc.insn]+`"`) {
			t.Errorf("%s: threads not all in %s", tc.file, tc.insn)
		}
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no outcome %q", tc.file, w)
			}
		}
	}
}
