package checkpoint

import (
	"os"
	"strconv"
	"testing"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestRunOfPartOfTheJob: a checkpoint of one process of a four-process job (demo/c/job.c, whose
// fourth process runs three threads) freezes and reports every thread of that process and no
// thread of the others; a checkpoint of the whole job then reports them all.
func TestRunOfPartOfTheJob(t *testing.T) {
	pgid, pids := tracertest.StartJobN(t, 4)
	log := &tracertest.EventLog{}
	tr := tracertest.Attach(t, tracer.Options{Emit: log.Emit}, tracertest.PGID(pgid))
	c := New(tr)
	tasks := func(pid int) map[int]bool {
		out := map[int]bool{}
		ents, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			out[tid] = true
		}
		return out
	}
	one := 0
	var want map[int]bool
	for _, p := range pids {
		if tt := tasks(p); len(tt) == 3 {
			one, want = p, tt
		}
	}
	if one == 0 {
		t.Fatalf("no process of job %v runs three threads", pids)
	}
	threads, err := c.RunOf([]int{one}, sessions.PolicyNone, nil)
	if err != nil {
		t.Fatalf("checkpoint of pid %d: %v", one, err)
	}
	got := map[int]bool{}
	for _, th := range threads {
		if th.PID != one {
			t.Errorf("thread %d of pid %d checkpointed; only pid %d was asked for", th.TID, th.PID, one)
		}
		got[th.TID] = true
	}
	for tid := range want {
		if !got[tid] {
			t.Errorf("thread %d of pid %d not checkpointed", tid, one)
		}
	}
	for _, th := range tracertest.Of[sessions.Thread](log) {
		if th.PID != one {
			t.Errorf("a thread event of pid %d, which was not asked for", th.PID)
		}
	}
	all, err := c.Run(sessions.PolicyNone, nil)
	if err != nil {
		t.Fatalf("checkpoint of the job: %v", err)
	}
	seen := map[int]bool{}
	for _, th := range all {
		seen[th.PID] = true
	}
	for _, p := range pids {
		if !seen[p] {
			t.Errorf("the whole job's checkpoint left out pid %d", p)
		}
	}
}
