package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
	"golang.org/x/sys/unix"
)

// seccompJob is demo/c/seccompworker.c in MODE (a worker thread alone filtered, its main
// thread in epoll_wait) and a sleep in the same process group, so that there are cells both
// ways.
type seccompJob struct {
	pgid, pid, worker int
	lines             chan string
}

func startSeccompJob(t *testing.T, mode string) *seccompJob {
	t.Helper()
	j := startSeccompWorker(t, mode, 0)
	peer := exec.Command("sleep", "1000")
	peer.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: j.pgid}
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		peer.Process.Kill()
		peer.Wait()
	})
	return j
}

// startSeccompWorker starts seccompworker MODE in process group pgid (0: its own).
func startSeccompWorker(t *testing.T, mode string, pgid int) *seccompJob {
	t.Helper()
	pid, lines := startReporter(t, pgid, buildC(t, "seccompworker"), mode)
	if pgid == 0 {
		pgid = pid
	}
	j := &seccompJob{pgid: pgid, pid: pid, lines: lines}
	deadline := patience.After(20 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-j.lines:
			if !ok {
				t.Fatalf("seccompworker %s ended before it was ready", mode)
			}
			fmt.Sscanf(l, "worker %d", &j.worker)
			ready = strings.HasPrefix(l, "ready ")
			if strings.HasPrefix(l, "bad ") {
				t.Fatalf("seccompworker %s: %s", mode, l)
			}
		case <-deadline:
			t.Fatalf("seccompworker %s never ready", mode)
		}
	}
	// The main thread must be in epoll_wait (so that the measurement goes to the worker)
	// before crashtui looks.
	waitSyscall(t, j.pid, j.pid, "epoll_")
	return j
}

// startReporter starts bin ARGS in process group pgid (0: its own), reaped at cleanup, and
// returns its pid and its stdout's lines as they come (the victims here report on stdout).
func startReporter(t *testing.T, pgid int, bin string, args ...string) (int, chan string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 4096)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd.Process.Pid, lines
}

// waitSyscall waits until thread tid of pid is blocked in a syscall whose name starts with
// prefix (/proc's task/TID/syscall, its number named for this machine).
func waitSyscall(t *testing.T, pid, tid int, prefix string) {
	t.Helper()
	deadline := patience.New(10 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			if nr, err := strconv.Atoi(f[0]); err == nil && strings.HasPrefix(arch.SyscallName(arch.Host(), nr), prefix) {
				return
			}
		}
		if deadline.Passed() {
			t.Fatalf("thread %d of %d never blocked in %s*: %q", tid, pid, prefix, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// harmed says what happened to the job that must not have: the process or its worker gone,
// a "bad" line (an EINTR, a supervisor notified of crashtui's call).
func (j *seccompJob) harmed() []string {
	var out []string
	if st := procState(j.pid); st == "" || st == "Z" || st == "X" {
		out = append(out, fmt.Sprintf("the process died (state %q)", st))
	} else if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", j.pid, j.worker)); err != nil {
		out = append(out, "its worker thread died")
	}
	for {
		select {
		case l, ok := <-j.lines:
			if !ok {
				return out
			}
			if strings.HasPrefix(l, "bad ") {
				out = append(out, l)
			}
		default:
			return out
		}
	}
}

// TestMatrixPerThreadSeccomp is issue 22's first item: a worker thread alone has a filter
// (or syscall user dispatch) on the calls the matrix injects, and the main thread sits in
// epoll_wait, which an interrupt would end with EINTR, so the measurement runs in the
// worker. The thread's own filter, evaluated with the real arguments and instruction
// pointer, decides: where it does not allow the call, nothing is injected, the cell is
// predicted and says why with the worker's tid, in JSON and in text. Three runs each; the
// process, its worker and its supervisor see nothing.
func TestMatrixPerThreadSeccomp(t *testing.T) {
	needRoot(t)
	cases := []struct {
		mode string
		// want is the not_run of vm_readv and kcmp from the victim ("-": measured).
		vm, kcmp string
	}{
		{"kill_process", "seccomp KILL_PROCESS", "seccomp KILL_PROCESS"},
		{"kill_thread", "seccomp KILL_THREAD", "seccomp KILL_THREAD"},
		{"trap", "seccomp TRAP", "seccomp TRAP"},
		{"user_notif", "seccomp USER_NOTIF", "seccomp USER_NOTIF"},
		{"errno", "seccomp ERRNO(EPERM)", "seccomp ERRNO(EPERM)"},
		{"ip", "-", "seccomp KILL_PROCESS"},
		{"sud", "user_dispatch", "user_dispatch"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			j := startSeccompJob(t, c.mode)
			job := "pgid:" + strconv.Itoa(j.pgid)
			for run := 0; run < 3; run++ {
				out, code := runMatrix(t, "--json", job)
				if code != 0 {
					t.Fatalf("run %d: exit %d", run, code)
				}
				if h := j.harmed(); len(h) > 0 {
					t.Fatalf("run %d harmed the job: %s", run, strings.Join(h, "; "))
				}
				cells := matrixCells(t, jsonEvents(t, out), true)
				n := 0
				for k, cell := range cells {
					if k[0] != j.pid {
						// The peer's cells run in the peer: measured.
						for _, call := range []string{"vm_readv", "kcmp"} {
							if got := notRunOf(cell, call); got != "-" {
								t.Errorf("run %d: %d -> %d %s not run (%s), want measured", run, k[0], k[1], call, got)
							}
						}
						continue
					}
					n++
					for call, want := range map[string]string{"vm_readv": c.vm, "kcmp": c.kcmp} {
						got := notRunOf(cell, call)
						if got != want {
							t.Errorf("run %d: %d -> %d %s: not run %q, want %q", run, k[0], k[1], call, got, want)
						}
						ch, _ := cell[call].(map[string]any)
						nr, _ := ch["not_run"].(map[string]any)
						tid, _ := nr["tid"].(float64)
						if want != "-" && int(tid) != j.worker {
							t.Errorf("run %d: %s not run in thread %v, want the worker %d", run, call, ch["not_run"], j.worker)
						}
					}
				}
				if n != 1 {
					t.Fatalf("run %d: %d cells from the victim, want 1", run, n)
				}
			}
			// The text names the worker and what its filter does, and never claims a
			// measurement that did not happen.
			out, code := runMatrix(t, job)
			if code != 0 {
				t.Fatalf("text: exit %d", code)
			}
			text := string(out)
			if strings.Contains(text, "every process may read every other") {
				t.Errorf("the text claims every pair was measured:\n%s", text)
			}
			wantText := fmt.Sprintf("thread %d's seccomp filter", j.worker)
			if c.mode == "sud" {
				wantText = fmt.Sprintf("thread %d has syscall user dispatch on", j.worker)
			}
			if !strings.Contains(text, "not run: "+wantText) {
				t.Errorf("the text does not say %q:\n%s", wantText, text)
			}
			if h := j.harmed(); len(h) > 0 {
				t.Fatalf("the text run harmed the job: %s", strings.Join(h, "; "))
			}
		})
	}
}

// notRunOf is a check's not_run as "WHY ACTION", or "-" when the call ran.
func notRunOf(cell map[string]any, call string) string {
	ch, _ := cell[call].(map[string]any)
	n, ok := ch["not_run"].(map[string]any)
	if !ok {
		if _, measured := ch["measured"].(bool); !measured {
			return "unmeasured without a reason"
		}
		return "-"
	}
	s, _ := n["why"].(string)
	if a, _ := n["action"].(string); a != "" {
		s += " " + a
	}
	return s
}

// TestCheckpointRunsNothingInside is issue 22's second item: a checkpoint reads every
// thread from outside and runs no call inside the job, so a job whose filter kills
// rt_sigaction (which an older checkpoint injected to read a held signal's SA_RESTART)
// lives through three checkpoints with every restore policy that leaves it working, while
// SIGUSR1s caught by its worker keep landing on signal-delivery-stops; and nothing claims
// a handler was removed.
func TestCheckpointRunsNothingInside(t *testing.T) {
	needRoot(t)
	j := startSeccompJob(t, "sigaction")
	stop := make(chan struct{})
	done := make(chan int)
	go func() { // a storm of caught signals at the worker
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if unix.Tgkill(j.pid, j.worker, unix.SIGUSR1) == nil {
				n++
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	defer func() {
		close(stop)
		if n := <-done; n == 0 {
			t.Errorf("no SIGUSR1 was sent")
		}
	}()
	job := "pgid:" + strconv.Itoa(j.pgid)
	for run, restore := range []string{"none", "correct", "none"} {
		cmd := exec.Command(crashtuiBin, "checkpoint", "--json", "--restore="+restore, job)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: checkpoint: %v", run, err)
		}
		if h := j.harmed(); len(h) > 0 {
			t.Fatalf("run %d (--restore=%s) harmed the job: %s", run, restore, strings.Join(h, "; "))
		}
		threads := 0
		for _, e := range jsonEvents(t, out) {
			if e.kind() != "thread" {
				continue
			}
			threads++
			if _, ok := e["sigaction"]; ok {
				t.Errorf("run %d: thread %v says it ran rt_sigaction inside: %v", run, e["tid"], e["sigaction"])
			}
		}
		if threads < 3 { // the victim's two threads and the sleep
			t.Errorf("run %d: %d thread events, want at least 3:\n%s", run, threads, out)
		}
	}
}

// eintrJob is demo/c/eintr.c: one thread blocked in each call an interrupt would end with
// EINTR, one in nanosleep; its lines, and the SysV semaphore it made removed at cleanup.
type eintrJob struct {
	pid   int
	tids  map[string]int
	lines chan string
}

func startEINTRJob(t *testing.T) *eintrJob {
	t.Helper()
	semid := -1
	t.Cleanup(func() { // cleanups run last first: this one after the process is gone
		if semid >= 0 {
			unix.Syscall(unix.SYS_SEMCTL, uintptr(semid), 0, 0 /* IPC_RMID */)
		}
	})
	pid, lines := startReporter(t, 0, buildC(t, "eintr"))
	j := &eintrJob{pid: pid, tids: map[string]int{}, lines: lines}
	deadline := patience.After(20 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-j.lines:
			if !ok {
				t.Fatal("eintr ended before it was ready")
			}
			var tid int
			var name string
			if _, err := fmt.Sscanf(l, "thread %d %s", &tid, &name); err == nil {
				j.tids[name] = tid
			}
			fmt.Sscanf(l, "sem %d", &semid)
			if strings.HasPrefix(l, "no io_uring") {
				t.Logf("eintr: %s: io_uring_enter is not tried", l)
				delete(j.tids, "io_uring_enter")
			}
			ready = strings.HasPrefix(l, "ready ")
		case <-deadline:
			t.Fatal("eintr never ready")
		}
	}
	for name, tid := range j.tids {
		if name == "io_uring_enter" && len(j.tids) < 8 {
			continue
		}
		want := map[string]string{"recv": "recv", "read": "read", "accept": "accept", "epoll_wait": "epoll_",
			"rt_sigtimedwait": "rt_sigtimedwait", "semop": "sem", "io_uring_enter": "io_uring_enter", "nanosleep": "clock_nanosleep"}[name]
		waitSyscall(t, j.pid, tid, want)
	}
	return j
}

// bad is every "bad" line the job printed so far.
func (j *eintrJob) bad() []string {
	var out []string
	for {
		select {
		case l, ok := <-j.lines:
			if !ok {
				return append(out, "the job's output ended")
			}
			if strings.HasPrefix(l, "bad ") {
				out = append(out, l)
			}
		default:
			return out
		}
	}
}

// TestNoEINTRFromCrashtui is issue 22's third item: the matrix, stack samples, a checkpoint
// and a live session that measures and samples never stop a thread blocked in a call the
// kernel would not restart (signal(7)), so none of its calls fails with EINTR; the thread
// in nanosleep is the one measured.
func TestNoEINTRFromCrashtui(t *testing.T) {
	needRoot(t)
	j := startEINTRJob(t)
	job := "pid:" + strconv.Itoa(j.pid)
	for _, args := range [][]string{
		{"matrix", "--json", job},
		{"stacks", "--json", "--samples", "5", "--interval", "100ms", job},
		// Not --restore=correct: it turns the restart block of the nanosleep threads into
		// EINTR by design (CRIU's fix-up; TestCheckpointCorrectTable).
		{"checkpoint", "--json", job},
	} {
		out, err := exec.Command(crashtuiBin, args...).Output()
		if err != nil {
			t.Fatalf("crashtui %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if b := j.bad(); len(b) > 0 {
			t.Errorf("crashtui %s: %s", strings.Join(args, " "), strings.Join(b, "; "))
		}
	}
	// A live session measuring and sampling, ended by SIGINT once it has sampled twice.
	c := startCrashtui(t, "attach", "--json", "--matrix", "measure", "--sample-every", "100ms", job)
	c.waitFor(t, "two stack samples", 60*time.Second, func(evs []event) bool { return count(evs, "sample") >= 2 })
	c.stop(t)
	if b := j.bad(); len(b) > 0 {
		t.Errorf("crashtui attach: %s", strings.Join(b, "; "))
	}
}

// TestSecondSignalQuitsAtOnce is issue 22's seventh item: ranks that ignore SIGINT and fork
// all the time, and a --grace of an hour: the first SIGINT asks crashtui to end them (it
// waits for their exit), the second makes it SIGKILL them at once, detach and still write
// its summary.
func TestSecondSignalQuitsAtOnce(t *testing.T) {
	needRoot(t)
	forker := buildC(t, "forker")
	dir := t.TempDir()
	c := startCrashtui(t, "run", "--json", "--grace", "1h", "-n", "2", "--",
		"sh", "-c", `trap "" INT; exec "$0" "$1"`, forker, dir+"/count")
	evs := c.waitFor(t, "the ranks and 50 of their children", 60*time.Second, func(evs []event) bool { return count(evs, "process") >= 52 })
	var ranks []int
	for _, e := range evs {
		if e.kind() == "process" && len(ranks) < 2 {
			ranks = append(ranks, e.int("pid"))
		}
	}
	t.Cleanup(func() { // should the test fail before crashtui ends them
		for _, pid := range ranks {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	c.cmd.Process.Signal(syscall.SIGINT)
	// The first one is taken (the ranks get a SIGINT they ignore); then the second.
	for deadline := patience.New(60 * time.Second); !strings.Contains(c.errText(), "ending the job"); time.Sleep(10 * time.Millisecond) {
		if deadline.Passed() {
			t.Fatalf("crashtui never said it was ending the job; stderr: %s", c.errText())
		}
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-patience.After(60 * time.Second):
		t.Fatal("crashtui did not end after a second SIGINT (it waits out the hour's grace)")
	}
	c.cmd.Wait()
	evs = c.snapshot()
	if len(evs) == 0 || evs[len(evs)-1].kind() != "summary" {
		t.Fatalf("no summary at the end; stderr: %s", c.stderr.String())
	}
	for _, pid := range ranks {
		if st := procState(pid); st != "" && st != "Z" {
			t.Errorf("rank %d still there (state %s)", pid, st)
		}
	}
}

// errText is crashtui's stderr so far.
func (c *crashtuiProc) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// TestUnattachedNamedInText is issue 22's eighth item: a process of the job that another
// tracer holds (here a second crashtui) is left out of matrix, checkpoint and stacks, and
// their text says so, naming the tracer's pid and name, as --json does with facts.
func TestUnattachedNamedInText(t *testing.T) {
	needRoot(t)
	a := exec.Command("sleep", "1000")
	a.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	b := exec.Command("sleep", "1000")
	b.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: a.Process.Pid}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range []*exec.Cmd{a, b} {
			c.Process.Kill()
			c.Wait()
		}
	})
	holder := startCrashtui(t, "attach", "--json", "pid:"+strconv.Itoa(b.Process.Pid))
	holder.waitFor(t, "the other crashtui to attach", 30*time.Second, func(evs []event) bool { return count(evs, "process") >= 1 })
	job := "pgid:" + strconv.Itoa(a.Process.Pid)
	want := fmt.Sprintf("pid %d (sleep) was not attached: another crashtui (pid %d) traces it", b.Process.Pid, holder.cmd.Process.Pid)
	for _, args := range [][]string{{"matrix", job}, {"checkpoint", job}, {"stacks", "--samples", "1", job}} {
		out, err := exec.Command(crashtuiBin, args...).Output()
		if err != nil {
			t.Fatalf("crashtui %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if text := strings.Join(strings.Fields(string(out)), " "); !strings.Contains(text, want) {
			t.Errorf("crashtui %s does not say %q:\n%s", strings.Join(args, " "), want, out)
		}
	}
	out, _ := runMatrix(t, "--json", job)
	found := false
	for _, e := range jsonEvents(t, out) {
		if e.kind() == "error" && e.int("pid") == b.Process.Pid {
			r, _ := e["refused"].(map[string]any)
			tp, _ := r["tracer_pid"].(float64)
			found = int(tp) == holder.cmd.Process.Pid && r["tracer_comm"] == "crashtui" && r["errno"] == "EPERM"
			if !found {
				t.Errorf("the error event's facts: %v", e)
			}
		}
	}
	if !found {
		t.Errorf("--json has no error event with the refusal of %d:\n%s", b.Process.Pid, out)
	}
}

// TestMatrixOfOneProcess: the text of a one-process matrix says there is no pair, and
// claims nothing about who may read whom.
func TestMatrixOfOneProcess(t *testing.T) {
	needRoot(t)
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out, code := runMatrix(t, "pid:"+strconv.Itoa(cmd.Process.Pid))
	if code != 0 || !strings.Contains(string(out), "no pair to check") || strings.Contains(string(out), "every process may read") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
