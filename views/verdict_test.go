package views

import (
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// TestVerdictNamesTheRanksOwnWait: what TestStacksOpenMPI met under load. Ranks 1 and 2 share
// MPI_Barrier's class, whose progress is spinning because rank 2 spins, while rank 1 stayed
// blocked there; every rank's helper threads block in epoll_wait. "1 rank is blocked" names
// MPI_Barrier, where rank 1 is, never the helpers' epoll_wait.
func TestVerdictNamesTheRanksOwnWait(t *testing.T) {
	f := func(fn string) []sessions.StackFrame {
		return []sessions.StackFrame{{Function: "main"}, {Function: fn}}
	}
	st := sessions.Stacks{
		Samples: 3,
		Classes: []sessions.StackClass{
			{Class: 1, Count: 2, Progress: sessions.Spinning, Frames: f("MPI_Barrier"), CPUShare: 0.2},
			{Class: 2, Count: 1, Progress: sessions.Spinning, Frames: f("MPI_Recv"), CPUShare: 0.9},
			{Class: 3, Count: 1, Progress: sessions.Moving, Frames: f("solve")},
			{Class: 4, Count: 4, Progress: sessions.Stuck, Frames: f("progress_thread"), Syscall: "epoll_wait", Role: sessions.RoleHelper},
		},
		Ranks: []sessions.RankState{
			{PID: 10, Rank: 0, Progress: sessions.Spinning, Classes: []int{2, 4}},
			{PID: 11, Rank: 1, Progress: sessions.Stuck, Classes: []int{1, 4}},
			{PID: 12, Rank: 2, Progress: sessions.Spinning, Classes: []int{1, 4}},
			{PID: 13, Rank: 3, Progress: sessions.Moving, Classes: []int{3, 4}},
		},
	}
	text := strings.Join(progressVerdict(st), " ")
	if !strings.Contains(text, "1 rank is blocked in MPI_Barrier") || strings.Contains(text, "epoll_wait") {
		t.Errorf("verdict: %s", text)
	}
	if !strings.Contains(text, "2 ranks spin: 1 in MPI_Recv, 1 in MPI_Barrier") && !strings.Contains(text, "2 ranks spin: 1 in MPI_Barrier, 1 in MPI_Recv") {
		t.Errorf("the spinning ranks, one each where they are: %s", text)
	}
}
