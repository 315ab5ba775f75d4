package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/crashtui/crashtui/demo/access/peertest"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// matrixPeers starts demo/access/peer in four identities in one process group: root, uid
// 65534, root under a container-like seccomp EPERM filter, and root renamed to a comm holding
// an escape sequence. It returns the group id and each peer's pid by role.
func matrixPeers(t *testing.T) (pgid int, pids map[string]int) {
	t.Helper()
	needRoot(t)
	bin := peertest.Build(t)
	roles := []struct {
		name string
		args []string
		cred *syscall.Credential
	}{
		{name: "root"},
		{name: "nobody", cred: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}},
		{name: "seccomp", args: []string{"-seccomp"}},
		{name: "evil", args: []string{"-name", "\x1b[31mevil"}},
	}
	pids = map[string]int{}
	for _, r := range roles {
		pid := peertest.Start(t, bin, r.name, r.args, &syscall.SysProcAttr{Credential: r.cred}, pgid).PID
		if pgid == 0 {
			pgid = pid
		}
		pids[r.name] = pid
	}
	return pgid, pids
}

// runMatrix runs `crashtui matrix ARGS` to completion.
func runMatrix(t *testing.T, args ...string) (stdout []byte, code int) {
	t.Helper()
	cmd := exec.Command(crashtuiBin, append([]string{"matrix"}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Logf("crashtui matrix %v: exit %d, stderr: %s", args, code, errb.String())
	}
	return out, code
}

func jsonEvents(t *testing.T, out []byte) []event {
	t.Helper()
	var evs []event
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e event
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// matrixCells returns the single matrix event's cells by (from, to), checking that every
// cell has exactly the fields with the types.
func matrixCells(t *testing.T, evs []event, measured bool) map[[2]int]map[string]any {
	t.Helper()
	if n := count(evs, "matrix"); n != 1 {
		t.Fatalf("%d matrix events, want 1", n)
	}
	var m event
	at := 0
	for i, e := range evs {
		if e.kind() == "matrix" {
			m, at = e, i
		}
	}
	if count(evs[at+1:], "summary") != 1 || evs[len(evs)-1].kind() != "summary" {
		t.Errorf("the matrix event is not followed by a final summary")
	}
	reasons := map[string]bool{"seccomp": true, "uid": true, "dumpable": true, "capabilities": true,
		"pidns": true, "userns": true, "yama": true, "enosys": true, "exited": true}
	cells := map[[2]int]map[string]any{}
	list, _ := m["cells"].([]any)
	for _, ci := range list {
		c, _ := ci.(map[string]any)
		for _, k := range []string{"from", "to", "vm_readv", "kcmp", "openmpi", "reason", "explain"} {
			if _, ok := c[k]; !ok {
				t.Fatalf("cell without %q: %v", k, c)
			}
		}
		if _, ok := c["openmpi"].(bool); !ok {
			t.Errorf("openmpi is not a bool: %v", c)
		}
		if r, ok := c["reason"].(string); c["reason"] != nil && (!ok || !reasons[r]) {
			t.Errorf("reason %v is not one of the issue's", c["reason"])
		}
		if _, ok := c["explain"].(string); !ok {
			t.Errorf("explain is not a string: %v", c)
		}
		for _, call := range []string{"vm_readv", "kcmp"} {
			ch, _ := c[call].(map[string]any)
			for _, k := range []string{"predicted", "measured", "errno"} {
				if _, ok := ch[k]; !ok {
					t.Fatalf("%s without %q: %v", call, k, ch)
				}
			}
			if _, ok := ch["predicted"].(bool); !ok {
				t.Errorf("%s.predicted is not a bool: %v", call, ch)
			}
			// A call the gate did not run (the thread's seccomp filter does not allow it) is
			// predicted only, and says why.
			_, notRun := ch["not_run"].(map[string]any)
			if _, ok := ch["measured"].(bool); ok != (measured && !notRun) || (!measured && ch["measured"] != nil) {
				t.Errorf("%s.measured = %v, want a bool: %v (not run: %v)", call, ch["measured"], measured, ch["not_run"])
			}
			// An errno, or what a seccomp filter does instead of failing the call.
			predictedOnly := map[string]bool{"SIGSYS": true, "SIGKILL": true, "USER_NOTIF": true}
			if e, ok := ch["errno"].(string); ch["errno"] != nil && (!ok || !strings.HasPrefix(e, "E") && !predictedOnly[e]) {
				t.Errorf("%s.errno = %v", call, ch["errno"])
			}
		}
		from, _ := c["from"].(float64)
		to, _ := c["to"].(float64)
		cells[[2]int{int(from), int(to)}] = c
	}
	pids, _ := m["pids"].([]any)
	if len(cells) != len(pids)*(len(pids)-1) {
		t.Errorf("%d cells for %d pids", len(cells), len(pids))
	}
	return cells
}

// cellSummary renders the parts of a cell a test asserts.
func cellSummary(c map[string]any) string {
	check := func(k string) string {
		ch, _ := c[k].(map[string]any)
		return fmt.Sprintf("%v/%v/%v", ch["predicted"], ch["measured"], ch["errno"])
	}
	return fmt.Sprintf("vm %s kcmp %s openmpi %v reason %v", check("vm_readv"), check("kcmp"), c["openmpi"], c["reason"])
}

// TestMatrixCommand runs `crashtui matrix` on a small mixed job: JSON with one matrix event
// holding the fields and a summary after it, --measure=false leaving measured null,
// a table naming the reasons with no escape sequence from a hostile comm, and exit status 2
// for a JOB that names nothing.
func TestMatrixCommand(t *testing.T) {
	pgid, pids := matrixPeers(t)
	job := "pgid:" + strconv.Itoa(pgid)

	out, code := runMatrix(t, "--json", job)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	cells := matrixCells(t, jsonEvents(t, out), true)
	if len(cells) != 12 {
		t.Fatalf("%d cells for 4 peers", len(cells))
	}
	for _, tc := range []struct{ from, to, want string }{
		{"root", "nobody", "vm true/true/<nil> kcmp true/true/<nil> openmpi true reason <nil>"},
		{"root", "seccomp", "vm true/true/<nil> kcmp true/true/<nil> openmpi true reason <nil>"},
		{"nobody", "root", "vm false/false/EPERM kcmp false/false/EPERM openmpi false reason uid"},
		{"nobody", "evil", "vm false/false/EPERM kcmp false/false/EPERM openmpi false reason uid"},
		// The seccomp peer's filter returns EPERM for both calls: not injected, predicted.
		{"seccomp", "root", "vm false/<nil>/EPERM kcmp false/<nil>/EPERM openmpi false reason seccomp"},
		{"seccomp", "nobody", "vm false/<nil>/EPERM kcmp false/<nil>/EPERM openmpi false reason seccomp"},
		{"evil", "seccomp", "vm true/true/<nil> kcmp true/true/<nil> openmpi true reason <nil>"},
	} {
		c := cells[[2]int{pids[tc.from], pids[tc.to]}]
		if got := cellSummary(c); got != tc.want {
			t.Errorf("%s -> %s: %s, want %s (%v)", tc.from, tc.to, got, tc.want, c["explain"])
		}
	}

	out, code = runMatrix(t, "--json", "--measure=false", job)
	if code != 0 {
		t.Fatalf("--measure=false: exit %d", code)
	}
	cells = matrixCells(t, jsonEvents(t, out), false)
	if c := cells[[2]int{pids["seccomp"], pids["root"]}]; cellSummary(c) != "vm false/<nil>/EPERM kcmp false/<nil>/EPERM openmpi false reason seccomp" {
		t.Errorf("--measure=false seccomp -> root: %s", cellSummary(c))
	}

	out, code = runMatrix(t, job)
	if code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	text := string(out)
	if i := bytes.IndexByte(out, 0x1b); i >= 0 {
		t.Errorf("the table contains ESC at byte %d:\n%q", i, text)
	}
	for _, want := range []string{
		"legend:",
		"vm_readv denied (EPERM) [predicted]  kcmp denied (EPERM) [predicted]  openmpi refuses CMA  reason seccomp",
		fmt.Sprintf("%d->%d", pids["seccomp"], pids["root"]),
		"vm_readv denied (EPERM)  kcmp denied (EPERM)  openmpi refuses CMA  reason uid",
		fmt.Sprintf("%d->%d", pids["nobody"], pids["root"]),
		"Fix:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	// One paragraph per distinct reason, naming the pairs it covers (issue 13): the seccomp
	// peer's two denied pairs share one.
	if n := strings.Count(text, "openmpi refuses CMA  reason seccomp"); n != 1 {
		t.Errorf("the seccomp reason is written %d times, want once with its pairs:\n%s", n, text)
	}
	// The hostile peer's row keeps the visible part of its name, without the sequence.
	evilRow := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, strconv.Itoa(pids["evil"])+" ") && strings.Contains(l, "evil") && !strings.Contains(l, "[31m") {
			evilRow = true
		}
	}
	if !evilRow {
		t.Errorf("no row for the renamed peer %d showing a harmless name:\n%s", pids["evil"], text)
	}

	// A JOB that names nothing: a process group with no member (the pid of a reaped child).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"pgid:" + strconv.Itoa(gone.Process.Pid)}, {"--json", "pgid:" + strconv.Itoa(gone.Process.Pid)}} {
		if _, code := runMatrix(t, args...); code != 2 {
			t.Errorf("crashtui matrix %v: exit %d, want 2", args, code)
		}
	}
}

// A non-ASCII comm (here 15 bytes of Cyrillic, 8 runes) is cut by runes in the table's row
// label, never inside a UTF-8 sequence, and a reason with an escape sequence (a recorded or
// merged matrix is untrusted) is printed sanitised.
func TestMatrixTableNonASCIIAndReason(t *testing.T) {
	needRoot(t)
	bin := peertest.Build(t)
	var pgid int
	for i := 0; i < 2; i++ {
		pid := peertest.Start(t, bin, "peer", []string{"-name", "ранг-процесс"}, nil, pgid).PID
		if pgid == 0 {
			pgid = pid
		}
	}
	out, code := runMatrix(t, "--measure=false", "pgid:"+strconv.Itoa(pgid))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !utf8.Valid(out) {
		t.Errorf("the table is not valid UTF-8:\n%q", out)
	}
	// The kernel keeps 15 bytes of the name: "ранг-про", 8 runes, shown whole.
	if !strings.Contains(string(out), strconv.Itoa(pgid)+" ранг-про ") {
		t.Errorf("no row label with the whole 8-rune comm:\n%s", out)
	}

	// The reason comes from the event stream: a replayed or merged one is untrusted.
	evil := sessions.Reason("uid\x1b]52;c;aGk=\x07")
	st := sessions.NewState()
	st.Apply(sessions.Event{Body: sessions.Process{PID: 1, Rank: sessions.NoRank, Comm: "ñandú-ñandú-ñandú"}})
	var b strings.Builder
	printMatrix(&b, sessions.Matrix{PIDs: []int{1, 2}, Cells: []sessions.Cell{{From: 1, To: 2, Reason: &evil}, {From: 2, To: 1}}}, st)
	if strings.ContainsAny(b.String(), "\x1b\x07") || !utf8.ValidString(b.String()) {
		t.Errorf("the table carries the reason's escape sequence or broken UTF-8:\n%q", b.String())
	}
	if !strings.Contains(b.String(), "1 ñandú-ñandú- ") || !strings.Contains(b.String(), "reason uid") {
		t.Errorf("label not cut at 12 runes, or reason lost:\n%s", b.String())
	}
}

// TestMatrixRecordedFactsReplay: a matrix's recording holds the tracer's facts (each cell's
// rule and disagreements) and no sentence (format version 3), and replays to the same --json
// lines, every cell's explain included, as the live run printed.
func TestMatrixRecordedFactsReplay(t *testing.T) {
	pgid, pids := matrixPeers(t)
	rec := filepath.Join(t.TempDir(), "matrix.jsonl")
	live, stderr, code := runJSON(t, "matrix", "--json", "--record", rec, "pgid:"+strconv.Itoa(pgid))
	if code != 0 {
		t.Fatalf("crashtui matrix: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if h := withoutTime(lines[0]); h["version"] != float64(sessions.FormatVersion) {
		t.Fatalf("recording header %v, want version %d", h, sessions.FormatVersion)
	}
	matrices := 0
	for _, l := range lines[1:] {
		var e struct {
			Event string          `json:"event"`
			Cells []sessions.Cell `json:"cells"`
		}
		if json.Unmarshal([]byte(l), &e) != nil || e.Event != "matrix" {
			continue
		}
		matrices++
		if strings.Contains(l, `"explain"`) || strings.Contains(l, `"disagree"`) {
			t.Errorf("the recorded matrix has sentences: %s", l)
		}
		for _, c := range e.Cells {
			if c.Rule.Row == "" {
				t.Errorf("recorded cell %d->%d has no rule: %+v", c.From, c.To, c)
			}
			if c.From == pids["nobody"] && c.To == pids["root"] && (c.Rule.Row != sessions.RowIDs || c.Rule.AUID != 65534 || c.Rule.BUID != [3]uint32{}) {
				t.Errorf("nobody -> root: rule %+v, want the ids row with uid 65534 against 0", c.Rule)
			}
		}
	}
	if matrices != 1 {
		t.Fatalf("%d matrix events recorded, want 1", matrices)
	}
	replayed, stderr, code := runJSON(t, "replay", "--json", rec)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	var got [2]string
	for i, ls := range [][]string{live, replayed} {
		for _, l := range ls {
			if e := withoutTime(l); e["event"] == "matrix" {
				j, _ := json.Marshal(e)
				got[i] = string(j)
			}
		}
	}
	if got[0] == "" || got[0] != got[1] {
		t.Errorf("live and replayed matrix lines differ:\n%s\n---\n%s", got[0], got[1])
	}
	for k, c := range matrixCells(t, jsonEvents(t, []byte(strings.Join(replayed, "\n"))), true) {
		if why, _ := c["explain"].(string); why == "" || (c["reason"] != nil && !strings.Contains(why, "Fix:")) {
			t.Errorf("replayed cell %v: explain %q (reason %v)", k, why, c["reason"])
		}
	}
}

// TestMatrixMarksAsInTheTUI: `crashtui matrix` marks every cell as the TUI's Matrix tab does
// (+ allowed, x denied, then ! for a measurement that contradicts the prediction), row by row
// on the same matrix, so a user moving between the two reads one notation.
func TestMatrixMarksAsInTheTUI(t *testing.T) {
	yes, no := true, false
	check := func(predicted bool, measured *bool) sessions.Check {
		return sessions.Check{Predicted: predicted, Measured: measured}
	}
	m := sessions.Matrix{PIDs: []int{101, 102, 103}, Measured: true, Cells: []sessions.Cell{
		{From: 101, To: 102, VMReadv: check(true, &yes), Kcmp: check(true, &yes)},
		{From: 101, To: 103, VMReadv: check(false, &no), Kcmp: check(true, &yes)},
		{From: 102, To: 101, VMReadv: check(false, &no), Kcmp: check(false, &no)},
		{From: 102, To: 103, VMReadv: check(false, &yes), Kcmp: check(true, &yes)}, // measured allowed
		{From: 103, To: 101, VMReadv: check(true, nil), Kcmp: check(false, nil)},   // predicted only
		{From: 103, To: 102, VMReadv: check(true, &no), Kcmp: check(true, &yes)},   // measured denied
	}}
	st := sessions.NewState()
	st.Apply(sessions.Event{Body: m})
	tui := views.Matrix(views.Plain(), st, views.IndexMatrix("", st.Matrix[""]), views.MatrixOptions{Width: 120, Height: 30, Group: -1})
	var cli strings.Builder
	printMatrix(&cli, m, st)

	// marks returns, for each pid's row, its cells' marks in column order.
	marks := func(text string) map[string][]string {
		rows := map[string][]string{}
		for _, l := range strings.Split(text, "\n") {
			l = strings.NewReplacer(">", " ", "<", " ", "·", " ").Replace(l) // the cursor, the diagonal
			var pid string
			for _, f := range strings.Fields(l) {
				if pid == "" && (f == "101" || f == "102" || f == "103") {
					pid = f
				} else if pid != "" && strings.Trim(f, "+x!") == "" {
					rows[pid] = append(rows[pid], f)
				}
			}
		}
		return rows
	}
	want := map[string][]string{"101": {"++", "x+"}, "102": {"xx", "++!"}, "103": {"+x", "x+!"}}
	for name, text := range map[string]string{"crashtui matrix": cli.String(), "the TUI": tui} {
		if got := marks(text); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s marks the rows %v, want %v:\n%s", name, got, want, text)
		}
	}
	if !strings.Contains(cli.String(), "+ allowed, x denied, ! measured differs from predicted") {
		t.Errorf("the legend does not name x for denied:\n%s", cli.String())
	}
}
