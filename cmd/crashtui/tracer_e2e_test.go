package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
)

// The acceptance tests of the tracer (issue 2), run on the real binary.

func TestRunNullDerefFourRanks(t *testing.T) {
	segv := buildC(t, "segv")
	cmd := exec.Command(crashtuiBin, "run", "--json", "-n", "4", "--", segv)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crashtui run: %v\n%s", err, stderr.String())
	}
	var evs []event
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		evs = append(evs, e)
	}
	if n := count(evs, "process"); n != 4 {
		t.Errorf("%d process events, want 4", n)
	}
	sites := map[string]int{}
	ranks := map[int]bool{}
	for _, e := range evs {
		if e.kind() != "crash" {
			continue
		}
		if e.str("signal") != "SIGSEGV" || e.str("code") != "SEGV_MAPERR" || e.str("addr") != "0x0" {
			t.Errorf("crash %v: want SIGSEGV SEGV_MAPERR at 0x0", e)
		}
		if e.str("function") != "crash_here" {
			t.Errorf("crash function %q, want crash_here", e.str("function"))
		}
		sites[e.str("module")+"+"+e.str("offset")]++
		ranks[e.int("rank")] = true
	}
	if len(sites) != 1 || len(ranks) != 4 {
		t.Errorf("crash sites %v over ranks %v: want one site for 4 ranks", sites, ranks)
	}
	for site, n := range sites {
		if n != 4 || !strings.HasPrefix(site, segv+"+0x") {
			t.Errorf("site %s seen %d times, want %s+0x… 4 times", site, n, segv)
		}
	}
	last := evs[len(evs)-1]
	if last.kind() != "summary" || last.int("processes") != 4 || last.int("crashes") != 4 || last.int("exits") != 4 {
		t.Errorf("last line %v, want a summary of 4 processes, 4 crashes, 4 exits", last)
	}
}

func TestAttachFollowsForksAndThreadsThenDetaches(t *testing.T) {
	needRoot(t)
	j := startJob(t, 50)
	want := pgroupPIDs(j.pgid)
	if len(want) != 50 {
		t.Fatalf("job has %d processes, want 50", len(want))
	}
	c := startCrashtui(t, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	c.waitFor(t, "50 process events", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 50 })
	tasksBefore := count(c.snapshot(), "task")

	// While attached the job forks 10 more processes and every worker starts a thread.
	syscall.Kill(-j.pgid, syscall.SIGUSR2)
	j.waitLines(t, "forked", 1)
	j.waitLines(t, "ready", 10)
	c.waitFor(t, "60 process events", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 60 })
	c.waitFor(t, "new threads", 20*time.Second, func(evs []event) bool { return count(evs, "task") >= tasksBefore+49 })

	code, evs := c.stop(t)
	if code != 0 {
		t.Errorf("crashtui exit status %d after SIGINT, want 0", code)
	}
	if last := evs[len(evs)-1]; last.kind() != "summary" || last.int("processes") != 60 {
		t.Errorf("last event %v, want a summary with 60 processes", last)
	}
	traced := processPIDs(evs)
	now := pgroupPIDs(j.pgid)
	if len(now) != 60 {
		t.Fatalf("after detach the job has %d processes, want all 60 alive", len(now))
	}
	for _, pid := range now {
		if !traced[pid] {
			t.Errorf("pid %d of the job was never reported as traced", pid)
		}
		if s := procState(pid); s == "t" || s == "T" {
			t.Errorf("pid %d left in state %s after detach", pid, s)
		}
		if tp := tracerPID(pid); tp != 0 {
			t.Errorf("pid %d TracerPid %d after detach", pid, tp)
		}
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			if s := procState(tid); s == "t" {
				t.Errorf("thread %d of %d left in a tracing stop", tid, pid)
			}
		}
	}
}

func TestJobControlUnchangedUnderTracing(t *testing.T) {
	needRoot(t)
	j := startJob(t, 4)
	pids := pgroupPIDs(j.pgid)
	c := startCrashtui(t, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	c.waitFor(t, "4 process events", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 4 })

	waitStates := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := patience.New(10 * time.Second)
		for {
			all := true
			for _, pid := range pids {
				if !ok(procState(pid)) {
					all = false
				}
			}
			if all {
				return
			}
			if deadline.Passed() {
				var states []string
				for _, pid := range pids {
					states = append(states, strconv.Itoa(pid)+":"+procState(pid))
				}
				t.Fatalf("job not %s: %v", what, states)
			}
			time.Sleep(20 * time.Millisecond) // polling /proc: there is no event to wait on
		}
	}
	stopped := func(s string) bool { return s == "T" || s == "t" }
	running := func(s string) bool { return s == "S" || s == "R" }

	syscall.Kill(-j.pgid, syscall.SIGSTOP)
	waitStates("stopped by SIGSTOP", stopped)
	syscall.Kill(-j.pgid, syscall.SIGCONT)
	waitStates("running after SIGCONT", running)

	// SIGUSR1 has a handler in every process: each one sent is received, in order.
	target := pids[len(pids)-1]
	for i := 1; i <= 20; i++ {
		syscall.Kill(target, syscall.SIGUSR1)
		got := j.waitLines(t, "usr1 "+strconv.Itoa(target), 1)
		if want := "usr1 " + strconv.Itoa(target) + " " + strconv.Itoa(i); got[0] != want {
			t.Fatalf("handler said %q, want %q", got[0], want)
		}
	}

	// A job stopped when crashtui detaches stays stopped.
	syscall.Kill(-j.pgid, syscall.SIGSTOP)
	waitStates("stopped by SIGSTOP", stopped)
	if code, _ := c.stop(t); code != 0 {
		t.Errorf("crashtui exit status %d", code)
	}
	waitStates("still stopped (T) after detach", func(s string) bool { return s == "T" })
	for _, pid := range pids {
		if tp := tracerPID(pid); tp != 0 {
			t.Errorf("pid %d TracerPid %d after detach", pid, tp)
		}
	}
	syscall.Kill(-j.pgid, syscall.SIGCONT)
	waitStates("running after SIGCONT without crashtui", running)
}

func TestKill9OfCrashtuiLeavesJobRunning(t *testing.T) {
	needRoot(t)
	j := startJob(t, 6)
	pids := pgroupPIDs(j.pgid)
	c := startCrashtui(t, "attach", "--json", "pgid:"+strconv.Itoa(j.pgid))
	c.waitFor(t, "6 process events", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 6 })
	c.cmd.Process.Kill()
	<-c.done
	deadline := patience.New(10 * time.Second)
	for _, pid := range pids {
		for tracerPID(pid) != 0 && !deadline.Passed() {
			time.Sleep(10 * time.Millisecond) // the kernel detaches in exit_ptrace: poll /proc
		}
		if tp := tracerPID(pid); tp != 0 {
			t.Errorf("pid %d still traced by %d", pid, tp)
		}
	}
	// The job still works: a signal is handled by its handler.
	syscall.Kill(pids[0], syscall.SIGUSR1)
	j.waitLines(t, "usr1 "+strconv.Itoa(pids[0]), 1)
	for _, pid := range pids {
		if s := procState(pid); s != "S" && s != "R" {
			t.Errorf("pid %d in state %q after crashtui was killed", pid, s)
		}
	}
}

func TestJobsThatNameNothing(t *testing.T) {
	// A pid that exists nowhere: the highest pid_max value is never handed out twice quickly.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := strconv.Itoa(gone.Process.Pid)
	for _, tc := range []struct{ name, job, want string }{
		{"no such pid", "pid:" + deadPID, "no such process"},
		{"exited process group", "pgid:" + deadPID, "names no process"},
		{"no such cgroup", "cgroup:/crashtui-no-such-cgroup", "not found"},
		{"no such slurm job", "slurm:987654321", "job_987654321"},
		{"garbage", "pgid:abc", "positive number"},
		{"unknown kind", "container:x", "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(crashtuiBin, "attach", "--json", tc.job)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2; stderr %q", err, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "panic") {
				t.Errorf("stderr %q: want one line mentioning %q", msg, tc.want)
			}
		})
	}
}

func TestJobWhoseProcessesExitDuringAttach(t *testing.T) {
	needRoot(t)
	// A process group whose members live a few milliseconds each: attaching races with their
	// exits. crashtui must attach what is there or say the job names nothing — never hang or panic.
	sh := exec.Command("/bin/sh", "-c", "for i in $(seq 200); do /bin/true & done; wait")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	cmd := exec.Command(crashtuiBin, "attach", "--json", "pgid:"+strconv.Itoa(sh.Process.Pid))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	switch code {
	case 0:
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if !strings.Contains(lines[len(lines)-1], `"event":"summary"`) {
			t.Errorf("attached but last line is %q", lines[len(lines)-1])
		}
	case 2:
		if !strings.Contains(stderr.String(), "names no process") {
			t.Errorf("exit 2 with %q", stderr.String())
		}
	default:
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"attach"}, {"run", "--json"}, {"run", "-n", "0", "--", "true"}, {"run", "--", "/no/such/program"}} {
		cmd := exec.Command(crashtuiBin, args...)
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("crashtui %v: %v, want exit status 2", args, err)
		}
	}
	out, err := exec.Command(crashtuiBin, "--help").Output()
	if err != nil || !strings.Contains(string(out), "crashtui attach JOB") {
		t.Errorf("--help: %v %q", err, out)
	}
	out, err = exec.Command(crashtuiBin, "run", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-n") {
		t.Errorf("run --help: %v %q", err, out)
	}
}

func TestRunInterruptedEndsItsRanks(t *testing.T) {
	// A rank that ignores SIGINT is still ended (SIGKILL follows): nothing crashtui started
	// outlives it.
	c := startCrashtui(t, "run", "--json", "-n", "3", "--", "/bin/sh", "-c", "trap '' INT; sleep 100")
	evs := c.waitFor(t, "3 process events", 20*time.Second, func(evs []event) bool { return count(evs, "process") >= 3 })
	pids := processPIDs(evs)
	code, evs := c.stop(t)
	if code != 0 {
		t.Errorf("exit status %d", code)
	}
	for pid := range pids {
		if s := procState(pid); s != "" && s != "Z" {
			t.Errorf("rank %d still alive (%s) after crashtui ended", pid, s)
		}
	}
	if n := count(evs, "exit"); n < 3 {
		t.Errorf("%d exit events, want the 3 ranks' exits", n)
	}
}
