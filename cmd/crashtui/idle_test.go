package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A tracer of a job that sleeps must sleep too: on an HPC node every wake of a crashtui
// thread is noise on a CPU a rank may need (issue 23). Attached to one sleeping process,
// crashtui's threads used to wake some 800 times a second: the loop's idle wait ended every
// 100 ms, its watcher looked every 20 ms, and each return from a blocking wait set the
// runtime's sysmon polling again. Now an idle wait ends only for a stop or a request, unless
// something is due (queued events, an image being read, a fault's verdict).
func TestIdleTracerSleeps(t *testing.T) {
	needRoot(t)
	job := exec.Command("sleep", "600")
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Process.Kill(); job.Wait() })
	pid := job.Process.Pid
	c := startCrashtui(t, "attach", "--json", "pid:"+strconv.Itoa(pid))
	c.waitFor(t, "the process event", 30*time.Second, func(evs []event) bool { return count(evs, "process") >= 1 })
	if tp := tracerPID(pid); tp == 0 {
		t.Fatalf("pid %d is not traced", pid)
	}
	// What the attach left to do (its events' flush, the exe's read) is done in well under a
	// second; then count every wake of every crashtui thread for two seconds.
	time.Sleep(time.Second)
	self := c.cmd.Process.Pid
	before := contextSwitches(t, self)
	time.Sleep(2 * time.Second)
	after := contextSwitches(t, self)
	woke := after - before
	t.Logf("crashtui's threads were switched in %d times in 2 s beside a sleeping job", woke)
	// Before: 1,500-1,700. A few remain: the runtime's own (sysmon going back to sleep).
	if woke > 40 {
		t.Errorf("crashtui's threads woke %d times in 2 s while the job slept, want at most 40", woke)
	}
	if s := procState(pid); s != "S" {
		t.Errorf("the job's state is %q, want S (sleeping)", s)
	}
}

// contextSwitches is the sum of every thread's voluntary and involuntary context switches
// of process pid.
func contextSwitches(t *testing.T, pid int) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("the threads of %d: %v", pid, err)
	}
	n := 0
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended
		}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				m, _ := strconv.Atoi(strings.TrimSpace(v))
				n += m
			}
		}
	}
	return n
}
