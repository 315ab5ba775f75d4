package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// longRecording writes a recording whose fourth line is over 64 MiB (sessions.MaxLine), with
// events before and after it.
func longRecording(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"format":"crashtui-session","version":2,"job":"pgid:1"}` + "\n")
	b.WriteString(`{"event":"process","time":"2026-11-30T00:00:00Z","pid":10,"ppid":1,"rank":0,"exe":"/x","comm":"x","argv":null,"uid":0,"threads":1}` + "\n")
	b.WriteString(`{"event":"process","time":"2026-11-30T00:00:01Z","pid":11,"ppid":1,"rank":1,"exe":"/x","comm":"x","argv":null,"uid":0,"threads":1}` + "\n")
	b.WriteString(`{"event":"error","op":"x","message":"`)
	b.Write(bytes.Repeat([]byte("A"), 64<<20+16))
	b.WriteString("\"}\n")
	b.WriteString(`{"event":"exit","time":"2026-11-30T00:00:02Z","pid":10,"code":0}` + "\n")
	b.WriteString(`{"event":"exit","time":"2026-11-30T00:00:03Z","pid":11,"code":0}` + "\n")
	p := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func kinds(lines []string) map[string]int {
	out := map[string]int{}
	for _, l := range lines {
		var e struct{ Event string }
		json.Unmarshal([]byte(l), &e)
		out[e.Event]++
	}
	return out
}

// TestReplayAndViewSkipLongLine: a line over 64 MiB is skipped with a warning that names it,
// and the events after it are read: replay used to abort, view to stop reading.
func TestReplayAndViewSkipLongLine(t *testing.T) {
	rec := longRecording(t)
	lines, stderr, code := runJSON(t, "replay", "--json", rec)
	if code != 0 || !strings.Contains(stderr, "line 4: longer than 64 MiB (skipped)") || kinds(lines)["exit"] != 2 {
		t.Errorf("replay: exit %d, stderr %q, events %v; want 0, line 4 skipped, both exits", code, stderr, kinds(lines))
	}
	lines, stderr, code = runJSON(t, "view", "--json", rec)
	k := kinds(lines)
	if code != 0 || k["exit"] != 2 || k["error"] != 1 || !strings.Contains(strings.Join(lines, "\n"), "line 4: longer than 64 MiB (line skipped)") {
		t.Errorf("view: exit %d, stderr %q, events %v; want 0, an error naming line 4, both exits", code, stderr, k)
	}
}

// TestAgentControlSkipsLongRequest: agent --control reads on past a request line over 64 KiB
// (it says so in an error event naming the line), so a later detach is obeyed.
func TestAgentControlSkipsLongRequest(t *testing.T) {
	needRoot(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	stdin := "autosample off\n" + strings.Repeat("measure ", 10<<10) + "\ndetach\n"
	cmd := exec.Command(crashtuiBin, "agent", "--control", "--matrix", "off", "--host", "h", "pid:"+strconv.Itoa(sleeper.Process.Pid))
	cmd.Stdin = strings.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	proc := startWaited(t, cmd, 0)
	select {
	case <-proc.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent did not detach: the request after the long line was not read\n%s", stderr.String())
	}
	if proc.err != nil {
		t.Fatalf("agent: %v\n%s", proc.err, stderr.String())
	}
	var msgs []string
	for _, l := range strings.Split(out.String(), "\n") {
		var e struct{ Event, Op, Message string }
		if json.Unmarshal([]byte(l), &e) == nil && e.Event == "error" && e.Op == "request" {
			msgs = append(msgs, e.Message)
		}
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "line 2: longer than 64 KiB") {
		t.Errorf("request errors %q, want one naming line 2", msgs)
	}
	if tracerPID(sleeper.Process.Pid) != 0 {
		t.Errorf("the job is still traced")
	}
}
