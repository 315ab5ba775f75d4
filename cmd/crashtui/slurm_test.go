package main

// The Slurm stage's tests (make test-slurm, .ci/slurm): they run against the one-node cluster
// that the stage starts on this machine (SLURM_CONF names its slurm.conf), once with
// proctrack/cgroup (slurm:ID resolved through the job's cgroup) and once with
// proctrack/linuxproc (no job cgroup: through the tasks' environment, or scontrol listpids);
// CRASHTUI_SLURM_PROCTRACK says which. Plain `go test` skips them.
//
// Every job is an allocation of its own (salloc --no-shell), cancelled and waited for at the
// end of its test; every srun and salloc a test starts is its child, ended and reaped by
// startWaited. Slurm's own account of the tasks (scontrol listpids: pid and global rank) is
// what crashtui's answers are checked against.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
)

// slurmStage skips the test unless the Slurm stage runs it, and returns the proctrack plugin
// of the cluster (cgroup or linuxproc).
func slurmStage(t *testing.T) string {
	t.Helper()
	if os.Getenv("CRASHTUI_SLURM") != "1" {
		t.Skip("needs a Slurm cluster: run make test-slurm (it starts a one-node cluster on this machine)")
	}
	for _, c := range []string{"salloc", "srun", "scontrol", "scancel", "squeue"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	needRoot(t)
	mode := os.Getenv("CRASHTUI_SLURM_PROCTRACK")
	if mode != "cgroup" && mode != "linuxproc" {
		t.Fatalf("CRASHTUI_SLURM_PROCTRACK=%q, want cgroup or linuxproc", mode)
	}
	return mode
}

var grantedRE = regexp.MustCompile(`Granted job allocation (\d+)`)

// slurmAlloc makes an allocation for ntasks tasks on one node (overcommitted: the node has
// the machine's own CPUs) with no process in it, and returns its job id. It is cancelled, and
// waited for until Slurm has ended it, at the end of the test.
func slurmAlloc(t *testing.T, ntasks int) string {
	t.Helper()
	out, err := exec.Command("salloc", "--no-shell", "-N1", "-n", strconv.Itoa(ntasks), "-O", "-t", "10",
		"-J", "crashtui-"+t.Name()).CombinedOutput()
	m := grantedRE.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("salloc --no-shell: %v: %s", err, out)
	}
	id := string(m[1])
	t.Cleanup(func() { slurmEnd(t, id) })
	return id
}

// slurmEnd cancels job id and waits until it is no longer pending, running or completing.
func slurmEnd(t *testing.T, id string) {
	exec.Command("scancel", id).Run()
	for dl := patience.New(30 * time.Second); ; {
		out, _ := exec.Command("squeue", "-h", "-j", id, "-o", "%T").Output()
		st := strings.TrimSpace(string(out))
		if st == "" || !slices.Contains([]string{"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}, st) {
			return
		}
		if dl.Passed() {
			t.Errorf("job %s still %s %v after scancel", id, st, dl.Waited())
			return
		}
		time.Sleep(100 * time.Millisecond) // Slurm has no event to wait on from here
	}
}

// slurmCmd is a running srun or salloc whose stdout lines are read as they come.
type slurmCmd struct {
	w       *waitedProc
	mu      sync.Mutex
	lines   []string
	partial []byte // the start of a line not ended yet
	stderr  bytes.Buffer
	more    chan struct{}
}

// startSlurm starts a Slurm client command (srun, salloc) in the background, in a process
// group of its own. At the end of the test it gets SIGTERM (srun passes it on to its tasks),
// then SIGKILL, and is reaped; then what is left of its group (salloc's command: mpirun and
// its ranks) is killed.
func startSlurm(t *testing.T, argv ...string) *slurmCmd {
	t.Helper()
	s := &slurmCmd{more: make(chan struct{}, 1)}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this test made, by its id
		}
	})
	cmd.Stderr = &syncWriter{w: &s.stderr, mu: &s.mu}
	// Its stdout is a writer, not a pipe read beside Wait (which closes the pipe and may lose
	// its last lines): Wait returns once the copy has ended, or WaitDelay after the exit when
	// a task that inherited the stdout still holds it (the group is killed just after).
	cmd.Stdout = (*slurmLines)(s)
	cmd.WaitDelay = 2 * time.Second
	s.w = startWaited(t, cmd, syscall.SIGTERM)
	return s
}

// slurmLines splits what a slurmCmd writes into its lines.
type slurmLines slurmCmd

func (l *slurmLines) Write(b []byte) (int, error) {
	l.mu.Lock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return len(b), nil
}

// waitLines waits until n stdout lines match re and returns their submatches.
func (s *slurmCmd) waitLines(t *testing.T, n int, re *regexp.Regexp) [][]string {
	t.Helper()
	deadline := patience.After(60 * time.Second)
	match := func() ([][]string, []string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var got [][]string
		for _, l := range s.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				got = append(got, m)
			}
		}
		return got, slices.Clone(s.lines)
	}
	for {
		if got, _ := match(); len(got) >= n {
			return got
		}
		select {
		case <-s.more:
		case <-s.w.exited:
			// Wait has copied the last of stdout: the lines are all here.
			got, lines := match()
			if len(got) >= n {
				return got
			}
			t.Fatalf("%v ended (%v) with %d of %d lines matching %s; stdout %q; stderr %s", s.w.cmd.Args, s.w.err, len(got), n, re, lines, s.output())
		case <-deadline:
			got, lines := match()
			t.Fatalf("%v: %d of %d lines matching %s in 60 s of a quiet machine; stdout %q; stderr %s", s.w.cmd.Args, len(got), n, re, lines, s.output())
		}
	}
}

func (s *slurmCmd) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// wait waits for the command's exit.
func (s *slurmCmd) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-s.w.exited:
		return s.w.err
	case <-patience.After(within):
		t.Fatalf("%v did not end in %s; stderr %s", s.w.cmd.Args, within, s.output())
		return nil
	}
}

var slurmReadyRE = regexp.MustCompile(`^ready (\S+) (\d+) (\S+)$`)

// startRanks starts slurmrank GOFILE as step argv of job id and waits until its n tasks are
// ready; it returns pid -> the rank each task read from SLURM_PROCID (-1 if it had none).
func startRanks(t *testing.T, id string, n int, gofile string, step ...string) map[int]int {
	t.Helper()
	prog := buildC(t, "slurmrank")
	argv := append([]string{"srun", "--jobid", id, "-N1", "-n", strconv.Itoa(n), "-O"}, step...)
	s := startSlurm(t, append(argv, prog, gofile)...)
	tasks := map[int]int{}
	for _, m := range s.waitLines(t, n, slurmReadyRE) {
		pid, _ := strconv.Atoi(m[2])
		rank, err := strconv.Atoi(m[1])
		if err != nil {
			rank = -1
		}
		if m[3] != id && m[3] != "-" {
			t.Fatalf("task %d says SLURM_JOB_ID=%s, want %s", pid, m[3], id)
		}
		tasks[pid] = rank
	}
	return tasks
}

// slurmTasks is Slurm's own account of the job's tasks on this node (scontrol listpids): pid
// -> global rank, for the rows with a local task id (the others are Slurm's own processes).
func slurmTasks(t *testing.T, id string) map[int]int {
	t.Helper()
	out, err := exec.Command("scontrol", "listpids", id).CombinedOutput()
	if err != nil {
		t.Fatalf("scontrol listpids %s: %v: %s", id, err, out)
	}
	tasks := map[int]int{}
	for _, l := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 5 || f[3] == "-" {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		rank, err2 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil {
			t.Fatalf("scontrol listpids: bad row %q", l)
		}
		tasks[pid] = rank
	}
	return tasks
}

// processRanks are the process events of a stream: pid -> rank (-1 for none).
func processRanks(evs []sessions.Event) map[int]int {
	out := map[int]int{}
	for _, e := range evs {
		if p, ok := e.Body.(sessions.Process); ok {
			out[p.PID] = int(p.Rank)
		}
	}
	return out
}

func describe(pids map[int]int) string {
	var keys []int
	for p := range pids {
		keys = append(keys, p)
	}
	sort.Ints(keys)
	var b strings.Builder
	for _, p := range keys {
		comm := strings.TrimSpace(readFile("/proc/" + strconv.Itoa(p) + "/comm"))
		if comm == "" {
			comm = "gone"
		}
		fmt.Fprintf(&b, " %d(%s, rank %d)", p, comm, pids[p])
	}
	return b.String()
}

func readFile(p string) string { b, _ := os.ReadFile(p); return string(b) }

// crashtuiJSON runs crashtui ARGS... to its end and decodes its JSON Lines.
func crashtuiJSON(t *testing.T, env []string, args ...string) ([]sessions.Event, string, int) {
	t.Helper()
	cmd := exec.Command(crashtuiBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-patience.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("crashtui %v did not end in 60 s", args)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return decodeEvents(t, out), stderr.String(), code
}

// The design's multi-node session, launched by Slurm itself: a 4-task step whose ranks
// (SLURM_PROCID) crash at two sites, and `srun --overlap --jobid ID -N1 crashtui agent
// slurm:ID | crashtui view --json`. The view must show exactly the job's four tasks with
// Slurm's ranks, and two crash groups: ranks 0 and 2 in even_rank_fault, 1 and 3 in
// odd_rank_fault.
func TestUnderSlurmAgentView(t *testing.T) {
	slurmStage(t)
	id := slurmAlloc(t, 4)
	gofile := filepath.Join(t.TempDir(), "go")
	tasks := startRanks(t, id, 4, gofile)
	if want := slurmTasks(t, id); !maps.Equal(tasks, want) {
		t.Fatalf("the tasks say%s; scontrol listpids says%s", describe(tasks), describe(want))
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	agent := exec.Command("srun", "--overlap", "--jobid", id, "-N1", "-n1", crashtuiBin, "agent", "slurm:"+id)
	var agentErr, viewErr bytes.Buffer
	agent.Stdout, agent.Stderr = w, &agentErr
	view := exec.Command(crashtuiBin, "view", "--json")
	var viewOut bytes.Buffer
	view.Stdin, view.Stdout, view.Stderr = r, &viewOut, &viewErr
	viewProc := startWaited(t, view, syscall.SIGINT)
	agentProc := startWaited(t, agent, syscall.SIGTERM)
	w.Close() // the pipe is srun's and the view's now
	r.Close()

	for pid := range tasks {
		for dl := patience.New(60 * time.Second); tracerPID(pid) <= 0; {
			if dl.Passed() {
				t.Fatalf("task %d not traced %v after the agent started; srun: %s", pid, dl.Waited(), agentErr.String())
			}
			time.Sleep(100 * time.Millisecond) // attaching has no event to wait on from here
		}
	}
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-viewProc.exited:
	case <-patience.After(60 * time.Second):
		t.Fatalf("the view did not end within 60 s of the crashes; srun: %s", agentErr.String())
	}
	<-agentProc.exited
	if agentProc.err != nil || viewProc.err != nil {
		t.Fatalf("srun agent: %v (%s); view: %v (%s)", agentProc.err, agentErr.String(), viewProc.err, viewErr.String())
	}

	host, _ := os.Hostname()
	evs := decodeEvents(t, viewOut.Bytes())
	var sum *sessions.Summary
	for _, e := range evs {
		switch b := e.Body.(type) {
		case sessions.Process:
			if e.Host != host {
				t.Errorf("process %d from host %q, want the agent's %q", b.PID, e.Host, host)
			}
		case sessions.Summary:
			sum = &b
		case sessions.Error:
			t.Errorf("error event: %+v", b)
		}
	}
	if got := processRanks(evs); !maps.Equal(got, tasks) {
		t.Errorf("the view shows%s; the job's tasks are%s", describe(got), describe(tasks))
	}
	if sum == nil || sum.Crashes != 4 || len(sum.Groups) != 2 {
		t.Fatalf("summary %+v; want 4 crashes in 2 groups", sum)
	}
	for _, g := range sum.Groups {
		want := map[string]string{"even_rank_fault": "0,2", "odd_rank_fault": "1,3"}[g.Function]
		if want == "" || g.Ranks.String() != want {
			t.Errorf("group %d in %q: ranks %s; want ranks 0 and 2 in even_rank_fault, 1 and 3 in odd_rank_fault", g.Group, g.Function, g.Ranks)
		}
		if len(g.Members) != 2 {
			t.Errorf("group %d: members %+v, want its two", g.Group, g.Members)
		}
		for _, m := range g.Members {
			if tasks[m.PID] != int(m.Rank) || m.Host != host {
				t.Errorf("group %d: pid %d with rank %d on %q, Slurm's rank %d on %q", g.Group, m.PID, m.Rank, m.Host, tasks[m.PID], host)
			}
		}
	}
}

// `crashtui attach --json slurm:ID` and `crashtui matrix --json slurm:ID` (and slurm:ID.0)
// take exactly the job's tasks, with Slurm's ranks: never slurmstepd (in the job's cgroup
// under proctrack/cgroup), never Slurm's daemons, and not a process that only has the job's
// environment (what salloc's shell is: the job's, but no task of it on this node). A step the
// job does not have is exit status 2, and the error names everything that was tried.
func TestUnderSlurmAttachAndMatrix(t *testing.T) {
	mode := slurmStage(t)
	id := slurmAlloc(t, 4)
	tasks := startRanks(t, id, 4, filepath.Join(t.TempDir(), "never"))
	if want := slurmTasks(t, id); !maps.Equal(tasks, want) {
		t.Fatalf("the tasks say%s; scontrol listpids says%s", describe(tasks), describe(want))
	}
	shell := exec.Command("sleep", "600")
	shell.Env = append(os.Environ(), "SLURM_JOB_ID="+id, "SLURM_STEP_ID=0", "SLURM_PROCID=7")
	startWaited(t, shell, syscall.SIGKILL)
	for dl := patience.New(5 * time.Second); !strings.Contains(readFile("/proc/"+strconv.Itoa(shell.Process.Pid)+"/environ"), "SLURM_JOB_ID="+id); {
		if dl.Passed() {
			t.Fatalf("sleep with the job's environment did not exec in %v", dl.Waited())
		}
		time.Sleep(time.Millisecond) // exec has no event to wait on from here
	}

	c := startCrashtui(t, "attach", "--json", "slurm:"+id)
	c.waitFor(t, "the four tasks attached", 60*time.Second, func(evs []event) bool { return count(evs, "process") >= 4 })
	code, evs := c.stop(t)
	got := map[int]int{}
	for _, e := range evs {
		if e.kind() == "process" {
			got[e.int("pid")] = -1 // "rank": null
			if r, ok := e["rank"].(float64); ok {
				got[e.int("pid")] = int(r)
			}
		}
		if e.kind() == "error" {
			t.Errorf("attach: error event %v", e)
		}
	}
	if code != 0 || !maps.Equal(got, tasks) {
		t.Errorf("proctrack/%s: attach slurm:%s (exit %d) took%s; the job's tasks are%s", mode, id, code, describe(got), describe(tasks))
	}

	for _, spec := range []string{"slurm:" + id, "slurm:" + id + ".0"} {
		evs, stderr, code := crashtuiJSON(t, nil, "matrix", "--json", spec)
		var m *sessions.Matrix
		for _, e := range evs {
			if b, ok := e.Body.(sessions.Matrix); ok {
				m = &b
			}
		}
		want := slices.Sorted(maps.Keys(tasks))
		if code != 0 || m == nil || !slices.Equal(slices.Sorted(slices.Values(m.PIDs)), want) || !maps.Equal(processRanks(evs), tasks) {
			t.Errorf("proctrack/%s: matrix %s (exit %d, %s): processes%s, matrix %+v; want the tasks%s", mode, spec, code, stderr, describe(processRanks(evs)), m, describe(tasks))
		}
	}

	_, stderr, code := crashtuiJSON(t, nil, "matrix", "--json", "slurm:"+id+".7")
	for _, want := range []string{"no cgroup job_" + id + "/step_7", "no process with SLURM_JOB_ID=" + id + " and SLURM_STEP_ID=7", "scontrol listpids " + id + ".7"} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("matrix slurm:%s.7: exit %d, %q; want 2 and an error saying %q", id, code, stderr, want)
		}
	}
}

// A task that cleared its environment (env -i) is still the job's: under proctrack/cgroup its
// cgroup says so; under proctrack/linuxproc only Slurm's own tracking does, through scontrol
// listpids, so without scontrol on PATH it is not found, and the error says what was tried.
func TestUnderSlurmScrubbedEnvironment(t *testing.T) {
	mode := slurmStage(t)
	id := slurmAlloc(t, 1)
	tasks := startRanks(t, id, 1, filepath.Join(t.TempDir(), "never"), "env", "-i")
	for pid, rank := range tasks {
		if rank != -1 {
			t.Fatalf("task %d read SLURM_PROCID=%d through env -i", pid, rank)
		}
		if _, ok := slurmTasks(t, id)[pid]; !ok {
			t.Fatalf("scontrol listpids %s lacks task %d", id, pid)
		}
	}
	evs, stderr, code := crashtuiJSON(t, nil, "matrix", "--json", "--measure=false", "slurm:"+id)
	if got := processRanks(evs); code != 0 || !maps.Equal(got, tasks) {
		t.Errorf("proctrack/%s: matrix slurm:%s (exit %d, %s) took%s; want%s", mode, id, code, stderr, describe(got), describe(tasks))
	}

	evs, stderr, code = crashtuiJSON(t, []string{"PATH=" + t.TempDir()}, "matrix", "--json", "--measure=false", "slurm:"+id)
	switch mode {
	case "cgroup":
		if got := processRanks(evs); code != 0 || !maps.Equal(got, tasks) {
			t.Errorf("cgroup, no scontrol: matrix slurm:%s (exit %d, %s) took%s; want%s", id, code, stderr, describe(got), describe(tasks))
		}
	case "linuxproc":
		for _, want := range []string{"no cgroup job_" + id + " under /sys/fs/cgroup", "no process with SLURM_JOB_ID=" + id + " in its environment", "scontrol is not on PATH"} {
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("linuxproc, no scontrol: matrix slurm:%s: exit %d, %q; want 2 and %q", id, code, stderr, want)
			}
		}
	}
}

var mpiRankRE = regexp.MustCompile(`^rank (\d+) of (\d+) pid (\d+)$`)

// An Open MPI job, launched by Slurm's PMIx plugin (srun --mpi=pmix) and by mpirun inside an
// allocation (salloc mpirun: mpirun starts the ranks itself, outside any step): crashtui
// matrix slurm:ID sees each rank with the rank MPI_Comm_rank gave it, and the job ends
// normally after crashtui has let go.
func TestUnderSlurmOpenMPI(t *testing.T) {
	slurmStage(t)
	for _, tool := range []string{"mpicc", "mpirun"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (make deps installs Open MPI)", tool, err)
		}
	}
	prog := filepath.Join(t.TempDir(), "mpirank")
	if out, err := exec.Command("mpicc", "-O1", "-o", prog, filepath.Join("..", "..", "demo", "slurm", "mpirank.c")).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v: %s", err, out)
	}
	list, _ := exec.Command("srun", "--mpi=list").CombinedOutput()
	if !bytes.Contains(list, []byte("pmix")) {
		t.Logf("this Slurm has no pmix plugin (srun --mpi=list: %s): mpirun inside an allocation only", list)
	}
	for _, how := range []string{"srun --mpi=pmix", "salloc mpirun"} {
		t.Run(strings.ReplaceAll(how, " ", "_"), func(t *testing.T) {
			if how == "srun --mpi=pmix" && !bytes.Contains(list, []byte("pmix")) {
				t.Skip("no pmix plugin")
			}
			gofile := filepath.Join(t.TempDir(), "go")
			var job *slurmCmd
			var id string
			if how == "srun --mpi=pmix" {
				id = slurmAlloc(t, 4)
				job = startSlurm(t, "srun", "--jobid", id, "--mpi=pmix", "-N1", "-n4", "-O", prog, gofile)
			} else {
				job = startSlurm(t, "salloc", "-N1", "-n4", "-O", "-t", "10", "-J", "crashtui-"+t.Name(),
					"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", prog, gofile)
			}
			ranks := map[int]int{}
			for _, m := range job.waitLines(t, 4, mpiRankRE) {
				pid, _ := strconv.Atoi(m[3])
				ranks[pid], _ = strconv.Atoi(m[1])
			}
			if id == "" {
				m := grantedRE.FindStringSubmatch(job.output())
				if m == nil {
					t.Fatalf("salloc said no job id: %s", job.output())
				}
				id = m[1]
				t.Cleanup(func() { slurmEnd(t, id) })
			}
			evs, stderr, code := crashtuiJSON(t, nil, "matrix", "--json", "slurm:"+id)
			got := processRanks(evs)
			var extra []string
			for pid, rank := range got {
				if _, isRank := ranks[pid]; !isRank {
					comm := strings.TrimSpace(readFile("/proc/" + strconv.Itoa(pid) + "/comm"))
					if how != "salloc mpirun" || comm != "mpirun" || rank != -1 {
						extra = append(extra, fmt.Sprintf("%d %s rank %d", pid, comm, rank))
					}
				}
			}
			for pid, rank := range ranks {
				if r, ok := got[pid]; !ok || r != rank {
					t.Errorf("MPI rank %d (pid %d): crashtui says %v (seen %v)", rank, pid, r, ok)
				}
			}
			if code != 0 || len(extra) > 0 {
				t.Errorf("%s: matrix slurm:%s: exit %d (%s); processes beyond the ranks (mpirun is the job's under salloc): %v", how, id, code, stderr, extra)
			}
			if err := os.WriteFile(gofile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := job.wait(t, 60*time.Second); err != nil {
				t.Errorf("%s: the MPI job failed after crashtui detached: %v: %s", how, err, job.output())
			}
		})
	}
}

// `crashtui stacks slurm:ID` on a hung 4-task step (demo/c/hang, rank from SLURM_PROCID):
// rank 0 waits in a receive, ranks 1-3 in a barrier. The samples cover exactly the job's
// tasks (never slurmstepd), the classes are {1-3} and {0}, both stuck, and rank 0 is the
// lone culprit.
func TestUnderSlurmStacks(t *testing.T) {
	mode := slurmStage(t)
	id := slurmAlloc(t, 4)
	s := startSlurm(t, "srun", "--jobid", id, "-N1", "-n", "4", "-O", buildC(t, "hang"))
	s.waitLines(t, 4, regexp.MustCompile(`^ready`))
	tasks := slurmTasks(t, id)
	for pid, rank := range tasks {
		if rank >= 1 {
			waitState(t, pid, "S") // from "ready" into the barrier
		}
	}
	evs, stderr, code := crashtuiJSON(t, nil, "stacks", "--json", "--samples", "2", "--interval", "200ms", "slurm:"+id)
	var st *sessions.Stacks
	sampled := map[int]int{}
	for _, e := range evs {
		switch b := e.Body.(type) {
		case sessions.Stacks:
			st = &b
		case sessions.Sample:
			sampled[b.PID] = int(b.Rank)
		}
	}
	if code != 0 || st == nil {
		t.Fatalf("proctrack/%s: stacks slurm:%s: exit %d, %s", mode, id, code, stderr)
	}
	if !maps.Equal(sampled, tasks) {
		t.Errorf("proctrack/%s: sampled%s; the job's tasks are%s", mode, describe(sampled), describe(tasks))
	}
	c0, c13 := classWith(*st, "0"), classWith(*st, "1-3")
	if len(st.Classes) != 2 || c0 == nil || c13 == nil || c0.Progress != sessions.Stuck || c13.Progress != sessions.Stuck {
		t.Errorf("proctrack/%s: classes %+v, want {1-3} and {0}, stuck", mode, st.Classes)
	}
	if st.Culprit == nil || st.Culprit.Rank != 0 {
		t.Errorf("proctrack/%s: culprit %+v, want rank 0", mode, st.Culprit)
	}
}
