package views

import (
	"fmt"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// The process list measures every row each frame without writing its cells
// (procCellWidths): each width must be the written cell's, or a column is too narrow (a cut
// value) or too wide. Rows with every kind of cell: no rank, another host, a named and an
// unnamed user, every way to end, faults of both kinds, arguments to sanitise, wide
// characters, a folded subtree, the tree's glyphs, negative numbers from a hostile stream.
func TestProcCellWidthsAreTheCells(t *testing.T) {
	s := sessions.NewState()
	code0, code137 := 0, 137
	procs := []*sessions.Proc{
		{Process: sessions.Process{PID: 1, Rank: sessions.NoRank, Comm: "sh", Argv: []string{"sh", "-c", "sleep 1"}, Threads: 1}},
		{Host: "node-ü1", Crashes: 3, Handled: 12, Process: sessions.Process{PID: 22, Rank: 7, Comm: "cfd", Exe: "/apps/cfd",
			Argv: []string{"cfd", "-i", "in\x1b[31m.dat"}, UID: 1000, Threads: 12}},
		{Process: sessions.Process{PID: 23, Rank: 8, Comm: "own", Argv: []string{"own", "x"}, UID: 1000}},
		{Process: sessions.Process{PID: 24, Rank: 9, Comm: "root", UID: 0}},
		{Handled: 1, Process: sessions.Process{PID: 333, Rank: 12345, Comm: "", Exe: "/bin/日本語", Argv: []string{"日本語", "引数", "x"}, UID: -5, Threads: -1}},
		{Exit: &sessions.Exit{Code: &code0}, Crashes: 1, Process: sessions.Process{PID: 4444, Rank: 0, Comm: "true", Argv: []string{"true"}}},
		{Exit: &sessions.Exit{Signal: "SIGKILL", CoreDumped: true}, Process: sessions.Process{PID: 55555, Rank: 3, Comm: "kill\tme"}},
		{Exit: &sessions.Exit{Detached: true}, Process: sessions.Process{PID: 6, Rank: 1, Comm: "gone"}},
		{Exit: &sessions.Exit{Code: &code137}, Process: sessions.Process{PID: 7, Rank: 2, Comm: "code", Argv: []string{"code", "a\xffb", ""}}},
		{Process: sessions.Process{PID: -9223372036854775808, Rank: 4, Comm: "neg", Threads: -9223372036854775808, Stopped: true}},
	}
	users := map[int]string{1000: "alice", 0: "röot\x07"}
	var rows []ProcRow
	for i, p := range procs {
		rows = append(rows, ProcRow{Proc: p})
		rows = append(rows, ProcRow{Proc: p, Depth: 2, Prefix: "│  └─ ", Children: i * 1000, Collapsed: i%2 == 1})
	}
	for _, r := range rows {
		cells := procCells(s, r, users)
		widths, named := procCellWidths(s, r, users)
		_, wantNamed := procUser(r.Proc, users)
		if named != wantNamed {
			t.Errorf("pid %d: named %v, the USER cell says %v", r.Proc.PID, named, wantNamed)
		}
		for j, c := range cells {
			if got, want := widths[j], cellWidth(c); got != want {
				t.Errorf("pid %d (prefix %q, folded %v) column %d: counted %d cells, %q takes %d", r.Proc.PID, r.Prefix, r.Collapsed, j, got, c, want)
			}
		}
	}
	for _, n := range []int{0, 9, 10, 99, 100, -1, -10, 1 << 40, -1 << 63} {
		if got, want := digits(n), len(fmt.Sprint(n)); got != want {
			t.Errorf("digits(%d) = %d, want %d", n, got, want)
		}
	}
}
