package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/restart/restarttest"
	"github.com/crashtui/crashtui/sessions"
)

// End-to-end tests of `crashtui checkpoint` (issue 5): the real binary on demo/restart.

func needAMD64Restart(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the restart codes asserted here are amd64's (running on %s)", runtime.GOARCH)
	}
}

func TestCheckpointNaiveJSON(t *testing.T) {
	needAMD64Restart(t)
	p := restarttest.Start(t, restarttest.Build(t))
	img := filepath.Join(t.TempDir(), "image.json")
	cmd := exec.Command(crashtuiBin, "checkpoint", "pid:"+strconv.Itoa(p.PID), "--json", "--restore=naive", "--yes", "--image", img)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crashtui checkpoint: %v\n%s", err, stderr.String())
	}
	var evs []event
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		evs = append(evs, e)
	}
	// What the kernel left in rax at the PTRACE_INTERRUPT stop, by thread.
	want := map[string]struct {
		syscall, code, onResume, restore string
		ret                              int
	}{
		"main":        {"read", "ERESTARTSYS", "restart", "rewind", -512},
		"read":        {"read", "ERESTARTSYS", "restart", "rewind", -512},
		"read-sa":     {"read", "ERESTARTSYS", "restart", "rewind", -512},
		"read-nosa":   {"read", "ERESTARTSYS", "restart", "rewind", -512},
		"futex":       {"futex", "ERESTARTSYS", "restart", "rewind", -512},
		"futex-timed": {"futex", "ERESTART_RESTARTBLOCK", "restart_syscall", "eintr", -516},
		"nanosleep":   {"nanosleep", "ERESTART_RESTARTBLOCK", "restart_syscall", "eintr", -516},
		"ppoll":       {"ppoll", "ERESTARTNOHAND", "restart", "rewind", -514},
		"ppoll-sa":    {"ppoll", "ERESTARTNOHAND", "restart", "rewind", -514},
		"poll":        {"poll", "ERESTART_RESTARTBLOCK", "restart_syscall", "eintr", -516},
	}
	byTID := map[int]event{}
	for _, e := range evs {
		if e.kind() == "thread" {
			byTID[e.int("tid")] = e
		}
	}
	// One event when the policy is applied and one more when its outcome is known.
	if n := count(evs, "thread"); len(byTID) != len(p.Threads) || n > 2*len(p.Threads) {
		t.Fatalf("%d thread events for %d threads (%d distinct)", n, len(p.Threads), len(byTID))
	}
	for _, th := range p.Threads {
		w := want[th.Name]
		e := byTID[th.TID]
		if e.int("pid") != p.PID || e.str("arch") != "amd64" || e["in_syscall"] != true || e.str("insn") != "syscall" ||
			e.str("syscall") != w.syscall || e.int("nr") != th.Nr || e.int("ret") != w.ret || e.str("code") != w.code ||
			e.str("on_resume") != w.onResume || e.str("restore") != w.restore || e.str("applied") != "naive" ||
			!strings.Contains(e.str("explain"), w.code) {
			t.Errorf("%s (%d): %v, want %+v applied naive", th.Name, th.TID, e, w)
		}
		// Naive hands the code to the program: the outcome says so, naming the restorer bug.
		if o := e.str("outcome"); !strings.Contains(o, w.code) || !strings.Contains(o, "criu#2261") {
			t.Errorf("%s (%d): outcome %q, want the leaked %s named", th.Name, th.TID, o, w.code)
		}
		// The facts the words are made of: an interrupt stop, and the code handed to the program.
		if e.str("stop") != "interrupt" || e.str("handler") != "none" || e.str("insn_bytes") != "0f05" ||
			e.str("outcome_kind") != "erestart_leaked" || e.int("returned") != w.ret {
			t.Errorf("%s (%d): stop %q handler %q insn_bytes %q outcome_kind %q returned %v; want interrupt, none, 0f05, erestart_leaked, %d",
				th.Name, th.TID, e.str("stop"), e.str("handler"), e.str("insn_bytes"), e.str("outcome_kind"), e["returned"], w.ret)
		}
		before, _ := e["before"].([]any)
		after, _ := e["after"].([]any)
		if len(before) != 27 || len(after) != 27 {
			t.Errorf("%s: %d before and %d after registers, want 27 each", th.Name, len(before), len(after))
		}
	}
	last := evs[len(evs)-1]
	if last.kind() != "summary" || last.int("processes") != 1 || last.int("errors") != 0 {
		t.Errorf("last line %v, want a summary of 1 process and no errors", last)
	}
	var image struct {
		Policy  string `json:"policy"`
		Threads []struct {
			TID         int    `json:"tid"`
			Code        string `json:"code"`
			InsnBytes   string `json:"insn_bytes"`
			RestoreRegs []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"restore_regs"`
		} `json:"threads"`
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &image); err != nil {
		t.Fatalf("image: %v\n%s", err, b)
	}
	if image.Policy != "naive" || len(image.Threads) != len(p.Threads) {
		t.Fatalf("image policy %q with %d threads", image.Policy, len(image.Threads))
	}
	for _, it := range image.Threads {
		origRAX := ""
		for _, r := range it.RestoreRegs {
			if r.Name == "orig_rax" {
				origRAX = r.Value
			}
		}
		if it.InsnBytes != "0f05" || origRAX != "0xffffffffffffffff" || it.Code != byTID[it.TID].str("code") {
			t.Errorf("image thread %d: insn %q restore orig_rax %q code %q", it.TID, it.InsnBytes, origRAX, it.Code)
		}
	}

	// crashtui detached and the program runs: every call returns its leaked code (seed 002).
	states, tracer := p.ThreadStates(t)
	if tracer != 0 {
		t.Errorf("TracerPid %d after crashtui exited", tracer)
	}
	for tid, st := range states {
		if st == "t" || st == "T" {
			t.Errorf("thread %d left stopped (%s)", tid, st)
		}
	}
	leaked := map[string]int{}
	for _, th := range p.Threads {
		leaked[th.Name] = -want[th.Name].ret
	}
	for len(leaked) > 0 {
		r := p.Result(t, 20*time.Second)
		if e, ok := leaked[r.Name]; !ok || r.Errno != e || r.OK {
			t.Fatalf("result %+v, want the leaked code of one of %v", r, leaked)
		}
		delete(leaked, r.Name)
	}
	p.Go(t)
	if rest := p.Rest(t, 30*time.Second); len(rest) != 1 || rest[0] != fmt.Sprintf("verdict bad=%d", len(p.Threads)) {
		t.Fatalf("after naive: %q", rest)
	}
}

func TestCheckpointCorrectTable(t *testing.T) {
	needAMD64Restart(t)
	p := restarttest.Start(t, restarttest.Build(t))
	out, err := exec.Command(crashtuiBin, "checkpoint", "--restore=correct", strconv.Itoa(p.PID)).CombinedOutput()
	if err != nil {
		t.Fatalf("crashtui checkpoint: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.HasPrefix(text, "PID") || !strings.Contains(text, "ON_RESUME") {
		t.Fatalf("no table header:\n%s", text)
	}
	for _, th := range p.Threads {
		row := ""
		for _, l := range strings.Split(text, "\n") {
			if f := strings.Fields(l); len(f) >= 9 && f[0] == strconv.Itoa(p.PID) && f[1] == strconv.Itoa(th.TID) && f[2] == "restart" {
				row = l
			}
		}
		if row == "" || !strings.Contains(row, " restart") || !strings.HasSuffix(strings.TrimSpace(row), "correct") {
			t.Errorf("%s (%d): row %q", th.Name, th.TID, row)
		}
	}
	for _, s := range []string{"ERESTARTSYS", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK", "compel_get_task_regs", `restore "correct" applied`} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	// After the correct restore the program completes as if never stopped (the restart
	// blocks with EINTR, as after a real restore).
	p.Go(t)
	rest := p.Rest(t, 30*time.Second)
	if len(rest) == 0 || rest[len(rest)-1] != "verdict ok" {
		t.Fatalf("after correct: %q", rest)
	}
}

func TestCheckpointUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"checkpoint", "--restore=sloppy", "pid:1"}, &stdout, &stderr); code != 2 {
		t.Errorf("--restore=sloppy: exit %d, want 2 (stderr %q)", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"checkpoint"}, &stdout, &stderr); code != 2 {
		t.Errorf("no JOB: exit %d, want 2", code)
	}
	stderr.Reset()
	if code := run([]string{"checkpoint", "--json", "pid:999999999"}, &stdout, &stderr); code != 2 {
		t.Errorf("a JOB that names nothing: exit %d, want 2 (stderr %q)", code, stderr.String())
	}
}

// TestCheckpointRecordedFactsReplay: a checkpoint's recording holds the tracer's facts and no
// sentence (format version 2), and replays to the same --json lines, sentences included, as
// the live run printed.
func TestCheckpointRecordedFactsReplay(t *testing.T) {
	needAMD64Restart(t)
	p := restarttest.Start(t, restarttest.Build(t))
	rec := filepath.Join(t.TempDir(), "checkpoint.jsonl")
	live, stderr, code := runJSON(t, "checkpoint", "pid:"+strconv.Itoa(p.PID), "--json", "--restore=correct", "--record", rec)
	if code != 0 {
		t.Fatalf("crashtui checkpoint: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if h := withoutTime(lines[0]); h["format"] != "crashtui-session" || h["version"] != float64(sessions.FormatVersion) {
		t.Fatalf("recording header %v, want crashtui-session version %d", h, sessions.FormatVersion)
	}
	threads, outcomes := 0, 0
	for _, l := range lines[1:] {
		e := event(withoutTime(l))
		if e.kind() != "thread" {
			continue
		}
		threads++
		if e.str("stop") != "interrupt" || e.str("handler") != "none" || e.str("insn_bytes") == "" {
			t.Errorf("recorded thread %d: stop %q handler %q insn_bytes %q, want the facts of an interrupt stop", e.int("tid"), e.str("stop"), e.str("handler"), e.str("insn_bytes"))
		}
		if _, ok := e["explain"]; ok {
			t.Errorf("recorded thread %d has a sentence: explain %q", e.int("tid"), e.str("explain"))
		}
		if _, ok := e["outcome"]; ok {
			t.Errorf("recorded thread %d has a sentence: outcome %q", e.int("tid"), e.str("outcome"))
		}
		if e.str("outcome_kind") != "" {
			outcomes++
		}
	}
	if threads < len(p.Threads) || outcomes != len(p.Threads) {
		t.Errorf("recording: %d thread events, %d with an outcome; want every one of %d threads with its outcome", threads, outcomes, len(p.Threads))
	}
	replayed, stderr, code := runJSON(t, "replay", "--json", rec)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	var liveThreads, replayedThreads []string
	for _, ls := range [][]string{live, replayed} {
		var out []string
		for _, l := range ls {
			if e := withoutTime(l); e["event"] == "thread" {
				if e["explain"] == nil || (e["outcome_kind"] != nil && e["outcome"] == nil) {
					t.Errorf("--json thread line without its sentences: %s", l)
				}
				j, _ := json.Marshal(e)
				out = append(out, string(j))
			}
		}
		if liveThreads == nil {
			liveThreads = out
		} else {
			replayedThreads = out
		}
	}
	if strings.Join(liveThreads, "\n") != strings.Join(replayedThreads, "\n") || len(liveThreads) != threads {
		t.Errorf("live and replayed thread lines differ (%d live, %d replayed, %d recorded):\n%s\n---\n%s",
			len(liveThreads), len(replayedThreads), threads, strings.Join(liveThreads, "\n"), strings.Join(replayedThreads, "\n"))
	}
}
