package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tui/tuitest"
	"github.com/crashtui/crashtui/views"
	"golang.org/x/sys/unix"
)

// hungJob is n ranks of demo/c/hang in one process group (the test's own children).
type hungJob struct {
	pgid int
	pids []int
}

func startHung(t *testing.T, bin string, n int, env ...string) *hungJob {
	t.Helper()
	j := &hungJob{}
	for r := 0; r < n; r++ {
		cmd := exec.Command(bin)
		cmd.Env = append(append(os.Environ(), "CRASHTUI_RANK="+strconv.Itoa(r)), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: j.pgid}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() {
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGKILL)
			cmd.Wait()
		})
		if r == 0 {
			j.pgid = pid
		}
		j.pids = append(j.pids, pid)
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "ready") {
			t.Fatalf("rank %d: %q, %v", r, line, err)
		}
	}
	// "ready" comes just before each rank blocks: wait until the blocked ones sleep.
	for r, pid := range j.pids {
		if r > 4 {
			continue
		}
		waitState(t, pid, "S")
	}
	return j
}

// waitState waits until every thread of pid is in one of the states (ps letters).
func waitState(t *testing.T, pid int, states string) {
	t.Helper()
	deadline := patience.New(10 * time.Second)
	for {
		ok := true
		ents, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, e := range ents {
			if !strings.Contains(states, threadState(pid, e.Name())) {
				ok = false
			}
		}
		if ok && len(ents) > 0 {
			return
		}
		if deadline.Passed() {
			t.Fatalf("pid %d: threads not in state %s", pid, states)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func threadState(pid int, tid string) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/stat")
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return "?"
	}
	return string(b[i+2])
}

// stacksJSON runs crashtui stacks --json and returns its sample events and the merged result.
func stacksJSON(t *testing.T, args ...string) ([]sessions.Sample, sessions.Stacks) {
	t.Helper()
	cmd := exec.Command(crashtuiBin, append([]string{"stacks", "--json"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crashtui stacks %v: %v\n%s", args, err, stderr.String())
	}
	var samples []sessions.Sample
	var st *sessions.Stacks
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e sessions.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		switch b := e.Body.(type) {
		case sessions.Sample:
			samples = append(samples, b)
		case sessions.Stacks:
			st = &b
		}
	}
	if st == nil {
		t.Fatalf("no stacks event in:\n%s", out)
	}
	return samples, *st
}

// stacksWhen samples job once at a time (crashtui stacks --samples 1) until cond holds on what
// it shows: a test starts from the state of the job it needs instead of sleeping for it.
func stacksWhen(t *testing.T, job, what string, cond func(sessions.Stacks) bool) {
	t.Helper()
	for dl := patience.New(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, st := stacksJSON(t, "--samples", "1", job)
		if cond(st) {
			return
		}
		if dl.Passed() {
			t.Fatalf("%s never showed %s in %v: %+v", job, what, dl.Waited(), st.Classes)
		}
	}
}

func classWith(st sessions.Stacks, ranks string) *sessions.StackClass {
	for i := range st.Classes {
		if st.Classes[i].Ranks == ranks {
			return &st.Classes[i]
		}
	}
	return nil
}

func hasFunction(fs []sessions.StackFrame, names ...string) bool {
	i := 0
	for _, f := range fs {
		if i < len(names) && (f.Function == names[i] || strings.HasSuffix(f.Function, "_"+names[i])) {
			i++
		}
	}
	return i == len(names)
}

// checkDetached says every process is untraced and in one of the states given, per pid.
func checkDetached(t *testing.T, pids []int, states []string) {
	t.Helper()
	for i, pid := range pids {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil || len(ents) == 0 {
			t.Errorf("process %d is gone after crashtui let go of it: %v", pid, err)
			continue
		}
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			if tr := tracerPID(tid); tr != 0 {
				t.Errorf("thread %d of %d is still traced by %d", tid, pid, tr)
			}
		}
		if states != nil {
			waitState(t, pid, states[i])
		}
	}
}

// TestStacksHungJob is STAT's picture: rank 0 waits in a receive nobody sends, ranks 1-4 in
// a barrier that never completes, rank 5 computes. Three samples give exactly three classes,
// {0} and {1-4} stuck and {5} moving, with their call paths, and rank 0 is the lone culprit.
func TestStacksHungJob(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 6)
	samples, st := stacksJSON(t, "--samples", "3", "--interval", "200ms", "pgid:"+strconv.Itoa(j.pgid))
	if len(samples) != 18 {
		t.Errorf("%d sample events, want 6 processes x 3", len(samples))
	}
	// How long a sample held a process is a cost (make bench measures it), not a result:
	// on a loaded machine the tracer itself waits for a CPU while it holds one.
	var held sessions.Sample
	for _, s := range samples {
		if s.HeldUS > held.HeldUS {
			held = s
		}
	}
	t.Logf("the longest hold: pid %d, %d µs (load factor %.1f)", held.PID, held.HeldUS, patience.Factor())
	if len(st.Classes) != 3 {
		t.Fatalf("%d classes, want 3: %+v", len(st.Classes), st.Classes)
	}
	want := []struct {
		ranks, progress string
		path            []string
	}{
		{"1-4", sessions.Stuck, []string{"main", "barrier", "pthread_barrier_wait"}},
		{"0", sessions.Stuck, []string{"main", "recv_message"}},
		{"5", sessions.Moving, []string{"main", "compute"}},
	}
	// A computing rank moves (its recursion's depth changes), or stays on one path while it
	// uses CPU (spinning): never stuck.
	busy := func(p string) bool { return p == sessions.Moving || p == sessions.Spinning }
	for i, w := range want {
		c := classWith(st, w.ranks)
		if c == nil {
			t.Errorf("no class with ranks %s: %+v", w.ranks, st.Classes)
			continue
		}
		if c.Class != i+1 {
			t.Errorf("class of %s is #%d, want #%d (biggest first)", w.ranks, c.Class, i+1)
		}
		if c.Progress != w.progress && !(w.progress == sessions.Moving && busy(c.Progress)) {
			t.Errorf("class %s: %s, want %s", w.ranks, c.Progress, w.progress)
		}
		if !hasFunction(c.Frames, w.path...) {
			t.Errorf("class %s path %+v lacks %v", w.ranks, c.Frames, w.path)
		}
	}
	if c := classWith(st, "0"); c != nil && c.Syscall != "read" {
		t.Errorf("rank 0 blocked in %q, want read", c.Syscall)
	}
	if st.Culprit == nil || st.Culprit.Rank != 0 {
		t.Errorf("culprit %+v, want rank 0 (lone: %+v)", st.Culprit, st.Lone)
	}
	checkDetached(t, j.pids, []string{"S", "S", "S", "S", "S", "R"})

	// The text tree shows it at a glance.
	out, err := exec.Command(crashtuiBin, "stacks", "--samples", "2", "--interval", "100ms", "pgid:"+strconv.Itoa(j.pgid)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, s := range []string{"barrier", "recv_message", "compute", "rank 0 is the only one", "classic deadlock culprit"} {
		if !strings.Contains(string(out), s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}
	// Columns: threads, the rank set, the state, the CPU.
	if !regexp.MustCompile(`barrier +4  1-4 +stuck +0%`).Match(out) {
		t.Errorf("text output lacks barrier's row (4 threads of ranks 1-4, stuck, 0%% CPU):\n%s", out)
	}
	// --dot writes STAT's shape.
	dot := filepath.Join(t.TempDir(), "tree.dot")
	if out, err := exec.Command(crashtuiBin, "stacks", "--samples", "1", "--dot", dot, "pgid:"+strconv.Itoa(j.pgid)).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(dot)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"digraph G", `function="barrier"`, `label="4:[1-4]"`, "module="} {
		if !strings.Contains(string(b), s) {
			t.Errorf("dot lacks %q:\n%s", s, b)
		}
	}
}

// TestStacksThreadsStrippedStopped: multi-threaded ranks of a stripped binary (frames in it
// are module+offset only), one of them in a job-control stop, which stays stopped.
func TestStacksThreadsStrippedStopped(t *testing.T) {
	needRoot(t)
	bin := buildC(t, "hang", "-s")
	j := startHung(t, bin, 3, "THREADS=3")
	syscall.Kill(j.pids[1], syscall.SIGSTOP)
	waitState(t, j.pids[1], "T")
	samples, st := stacksJSON(t, "--samples", "2", "--interval", "100ms", "--frames", "offset", "pgid:"+strconv.Itoa(j.pgid))
	threads := 0
	for _, s := range samples {
		if s.Seq == 1 {
			threads += len(s.Threads)
		}
	}
	if threads != 9 {
		t.Errorf("%d threads in the first sample, want 3 processes x 3", threads)
	}
	// The helpers of the two blocked ranks share a path; the stopped rank's helpers too,
	// since a stopped thread is sampled where it stopped.
	var exeFrames, named int
	for _, c := range st.Classes {
		for _, f := range c.Frames {
			if f.Module == bin {
				exeFrames++
				if f.Function != "" {
					named++
				}
				if f.Offset == 0 {
					t.Errorf("frame in %s with offset 0", bin)
				}
			}
		}
	}
	if exeFrames == 0 || named != 0 {
		t.Errorf("stripped binary: %d frames in it, %d named (want some, none named): %+v", exeFrames, named, st.Classes)
	}
	// Their class is mixed: the blocked ranks' helpers are stuck, the stopped rank's are
	// stopped, and so is that rank (job control, not a hang).
	if c := classWith(st, "0-2"); c == nil || c.Count != 6 || c.Progress != sessions.Mixed {
		t.Errorf("want one mixed class of the 6 helper threads of ranks 0-2: %+v", st.Classes)
	}
	for _, r := range st.Ranks {
		want := sessions.Stuck
		if r.PID == j.pids[1] {
			want = sessions.Stopped
		}
		if r.Progress != want {
			t.Errorf("rank %d (pid %d): %s, want %s", r.Rank, r.PID, r.Progress, want)
		}
	}
	if text := strings.Join(views.StacksSummary(st), " "); !strings.Contains(text, "1 rank is stopped by job control") || strings.Contains(text, "No rank moved") {
		t.Errorf("the verdict: %s", text)
	}
	// --hide-unsymbolized drops the stripped binary's frames.
	_, hidden := stacksJSON(t, "--samples", "1", "--hide-unsymbolized", "pgid:"+strconv.Itoa(j.pgid))
	for _, c := range hidden.Classes {
		for _, f := range c.Frames {
			if f.Function == "" {
				t.Errorf("--hide-unsymbolized kept %s+%s", f.Module, f.Offset)
			}
		}
	}
	checkDetached(t, j.pids, []string{"S", "T", "S"})
	if threadState(j.pids[1], strconv.Itoa(j.pids[1])) != "T" {
		t.Errorf("the stopped rank was resumed")
	}
}

// TestStacksProcessesComingAndGoing samples a job that forks a child every 2 ms: children
// that end while their sample is taken are handled and nothing is left traced or stopped.
func TestStacksProcessesComingAndGoing(t *testing.T) {
	needRoot(t)
	bin := buildC(t, "forker")
	cmd := exec.Command(bin, filepath.Join(t.TempDir(), "n"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_, st := stacksJSON(t, "--samples", "5", "--interval", "20ms", "pid:"+strconv.Itoa(cmd.Process.Pid))
	if len(st.Ranks) == 0 {
		t.Fatalf("the forker itself was not sampled: %+v", st)
	}
	checkDetached(t, []int{cmd.Process.Pid}, nil)
	if st := threadState(cmd.Process.Pid, strconv.Itoa(cmd.Process.Pid)); st == "t" || st == "T" {
		t.Errorf("forker left in state %s", st)
	}
}

// TestStacksOpenMPI is a real Open MPI job deadlocked in MPI_Recv and MPI_Barrier, with one
// rank still computing: the classes of the ranks' main threads, the lone rank and the cut
// under MPI_ (Open MPI's own progress engine is not shown) are right.
func TestStacksOpenMPI(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"mpirun", "mpicc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: needs Debian's openmpi-bin and libopenmpi-dev (make test installs them)", tool)
		}
	}
	prog := filepath.Join(t.TempDir(), "mpihang")
	if out, err := exec.Command("mpicc", "-g", "-O1", "-o", prog, "../../demo/stacks/mpihang.c").CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	cmd := exec.Command("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ranks []int
	t.Cleanup(func() {
		for _, pid := range ranks { // started by the mpirun we started
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for len(ranks) < 4 && sc.Scan() {
		var r, pid, size int
		if n, _ := fmt.Sscanf(sc.Text(), "rank %d pid %d size %d", &r, &pid, &size); n == 3 {
			ranks = append(ranks, pid)
		}
	}
	if len(ranks) < 4 {
		t.Fatalf("only %d ranks started", len(ranks))
	}
	go io.Copy(io.Discard, out)
	job := "pid:" + strconv.Itoa(cmd.Process.Pid)
	stacksWhen(t, job, "rank 0 in MPI_Recv and ranks 1-2 in MPI_Barrier", func(st sessions.Stacks) bool {
		r, b := classWith(st, "0"), classWith(st, "1-2")
		return r != nil && b != nil && hasFunction(r.Frames, "MPI_Recv") && hasFunction(b.Frames, "MPI_Barrier")
	})
	_, st := stacksJSON(t, "--samples", "3", "--interval", "200ms", job)
	want := []struct {
		ranks, progress string
		path            []string
	}{
		{"1-2", sessions.Stuck, []string{"main", "sync_step", "MPI_Barrier"}},
		{"0", sessions.Stuck, []string{"main", "wait_for_halo", "MPI_Recv"}},
		{"3", sessions.Moving, []string{"main", "solve"}},
	}
	mpi := regexp.MustCompile(sessions.DefaultCut)
	// Open MPI's MPI_Recv and MPI_Barrier poll their progress engine at full CPU while they
	// wait (spinning), or sleep in it (stuck), by its settings: either way they are not
	// moving. The solver computes: moving, or spinning in one long loop.
	same := func(want, got string) bool {
		switch want {
		case sessions.Stuck:
			return got == sessions.Stuck || got == sessions.Spinning
		case sessions.Moving:
			return got == sessions.Moving || got == sessions.Spinning
		}
		return got == want
	}
	for _, w := range want {
		c := classWith(st, w.ranks)
		if c == nil {
			t.Errorf("no class with ranks %s: %+v", w.ranks, st.Classes)
			continue
		}
		if !same(w.progress, c.Progress) || !hasFunction(c.Frames, w.path...) {
			t.Errorf("class %s: %s %+v, want %s through %v", w.ranks, c.Progress, c.Frames, w.progress, w.path)
		}
		for i, f := range c.Frames {
			if mpi.MatchString(f.Function) && i != len(c.Frames)-1 {
				t.Errorf("class %s: frames below %s not cut: %+v", w.ranks, f.Function, c.Frames[i:])
			}
		}
	}
	if st.Culprit == nil || st.Culprit.Rank != 0 {
		t.Errorf("culprit %+v, want rank 0 (lone: %+v)", st.Culprit, st.Lone)
	}
	checkReadable(t, st, cmd.Process.Pid)
	// --cut '' keeps Open MPI's own frames under MPI_Recv.
	_, full := stacksJSON(t, "--samples", "1", "--cut", "", "pid:"+strconv.Itoa(cmd.Process.Pid))
	under := false
	for _, c := range full.Classes {
		for i, f := range c.Frames {
			under = under || (mpi.MatchString(f.Function) && i < len(c.Frames)-1)
		}
	}
	if !under {
		t.Errorf("--cut '': no frame below an MPI_ call: %+v", full.Classes)
	}
	checkDetached(t, append([]int{cmd.Process.Pid}, ranks...), nil)
}

// checkReadable is issue 24 item 8 on an Open MPI job launched by mpirun (pid launcher):
// the ranks' main threads come first, the MPI/PMIx helper threads (library code only) and
// the launcher's are put aside, with the rank set apart from the launcher's pid; the verdict
// is about the ranks' own threads; the text report folds the put-aside threads into one line
// after the main threads' tree, with a state and a CPU column.
func checkReadable(t *testing.T, st sessions.Stacks, launcher int) {
	t.Helper()
	own := true
	for i, c := range st.Classes {
		switch {
		case c.Role == "" && !own:
			t.Errorf("class %d of the ranks' own threads after classes put aside: %+v", c.Class, st.Classes)
		case c.Role == "" && i < 3 && c.Main != c.Count:
			t.Errorf("class %d: %d main threads of %d, want the ranks' main threads first", c.Class, c.Main, c.Count)
		case c.Role == sessions.RoleHelper && (c.Ranks == "" || c.Unranked != "" || hasFunction(c.Frames, "main")):
			t.Errorf("helper class %d: ranks %q, unranked %q: %+v", c.Class, c.Ranks, c.Unranked, c.Frames)
		case c.Role == sessions.RoleLauncher && (c.Ranks != "" || c.Unranked != strconv.Itoa(launcher)):
			t.Errorf("launcher class %d: ranks %q, unranked %q, want pid %d alone", c.Class, c.Ranks, c.Unranked, launcher)
		}
		own = own && c.Role == ""
	}
	if a := st.Aside; a == nil || a.Helpers < 4 || a.Launcher < 1 || a.Ranks != "0-3" || a.Unranked != strconv.Itoa(launcher) {
		t.Errorf("put aside: %+v, want the 4 ranks' helper threads and the launcher's", st.Aside)
	}
	for _, r := range st.Ranks {
		if r.Launcher != (r.PID == launcher) {
			t.Errorf("process %d (rank %d): launcher %v", r.PID, r.Rank, r.Launcher)
		}
	}
	verdict := strings.Join(views.StacksSummary(st), " ")
	// As call names, words of their own: the culprit's sentence says "a progress loop polls".
	for _, helperWait := range []string{"epoll_wait", "poll", "__GI___poll", "select"} {
		if regexp.MustCompile(`\b` + helperWait + `\b`).MatchString(verdict) {
			t.Errorf("the verdict names a helper's wait (%s): %s", helperWait, verdict)
		}
	}
	text := views.StacksText(st, 0)
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[2], "FRAME") || !strings.Contains(lines[2], "RANKS") || !strings.Contains(lines[2], "PIDS") ||
		!strings.Contains(lines[2], "STATE") || !strings.Contains(lines[2], "CPU") || !strings.HasPrefix(lines[3], "_start") {
		t.Errorf("the text report does not start with the main threads' tree under its columns:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^▸ \d+ helper threads \+ \d+ launcher threads? +\d+  0-3 +`+strconv.Itoa(launcher)+` +(stuck|spinning|moving|mixed) +\d+%`).MatchString(text) ||
		strings.Contains(text, "0-3 pid") {
		t.Errorf("the text report does not fold the helpers and the launcher into one line with ranks and pid apart:\n%s", text)
	}
}

const goHangSrc = `package main

import (
	"fmt"
	"os"
	"syscall"
)

var sink uint64

//go:noinline
func blockRead(fd int) {
	var b [1]byte
	syscall.Read(fd, b[:]) // a raw read: the goroutine keeps its thread, blocked in the kernel
}

//go:noinline
func spin() {
	for i := uint64(0); ; i++ {
		sink += i * i
	}
}

func main() {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		os.Exit(1)
	}
	go spin()
	fmt.Println("ready")
	blockRead(p[0])
}
`

// startGoHang builds goHangSrc and runs it until it is ready; the test reaps it.
func startGoHang(t *testing.T) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gohang.go"), []byte(goHangSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gohang")
	build := exec.Command("go", "build", "-o", bin, "gohang.go")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("%q %v", l, err)
	}
	return cmd
}

// TestStacksGoBinary: a Go program's threads unwind (Go's frame pointers and .debug_frame):
// the goroutine blocked in a raw read and the spinning one are on their threads' stacks.
func TestStacksGoBinary(t *testing.T) {
	needRoot(t)
	cmd := startGoHang(t)
	job := "pid:" + strconv.Itoa(cmd.Process.Pid)
	// "ready" comes just before the read: wait until a sample shows it blocked there.
	stacksWhen(t, job, "main.blockRead in syscall.Read", func(st sessions.Stacks) bool {
		for _, c := range st.Classes {
			if hasFunction(c.Frames, "main.main", "main.blockRead", "syscall.Read") {
				return true
			}
		}
		return false
	})
	_, st := stacksJSON(t, "--samples", "2", "--interval", "100ms", job)
	var read, spin bool
	for _, c := range st.Classes {
		if hasFunction(c.Frames, "main.main", "main.blockRead", "syscall.Read") && c.Progress == sessions.Stuck {
			read = true
		}
		if hasFunction(c.Frames, "main.spin") {
			spin = true
		}
	}
	if !read || !spin {
		t.Errorf("Go stacks: blocked read %v, spinning goroutine %v: %+v", read, spin, st.Classes)
	}
	checkDetached(t, []int{cmd.Process.Pid}, nil)
}

// TestStacksInTheTUI drives the Stacks tab on a pty as a user would: S samples, the tree
// shows the barrier and the receive, enter shows a frame's code, e explains its class, and
// after q every rank is untraced and still blocked where it was.
func TestStacksInTheTUI(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 6)
	scr := tuitest.Open(t, 100, 40)
	proc, _ := startTUI(t, scr, "attach", "--matrix", "off", "--sample-every", "0", "pgid:"+strconv.Itoa(j.pgid))
	scr.WaitFor(t, 20*time.Second, "procs 6/6")
	scr.Key(t, "5")
	scr.WaitFor(t, 5*time.Second, "no stack samples yet", "S samples")
	scr.Key(t, "S")
	scr.WaitFor(t, 10*time.Second, "1 sample", "barrier", "recv_message", "compute")
	scr.Key(t, "S")
	scr.WaitFor(t, 10*time.Second, "2 samples")
	scr.Key(t, "S") // a third: two samples of rank 5's short loop can land on the same pcs
	waitComputing(t, scr, "3 samples", "stuck", "rank 0 is the only one")
	// Down to barrier: _start, __libc_start_main_impl, __libc_start_call_main, main, barrier.
	scr.Type("jjjj") // the cursor is reverse video: the text does not change
	scr.Key(t, "\r")
	scr.WaitFor(t, 5*time.Second, "4 threads of ranks 1-4", "call")
	scr.Key(t, "e")
	scr.WaitFor(t, 5*time.Second, "Class 1: 4 threads on one path (ranks 1-4)", "STAT")
	scr.Key(t, "\x1b")
	quitTUI(t, scr, proc)
	checkDetached(t, j.pids, []string{"S", "S", "S", "S", "S", "R"})
}

// waitComputing waits for the Stacks tab to show every want, and hang's computing rank 5 as
// moving, or as spinning when every sample of its short loop landed on one path (a loaded
// machine's three samples did).
func waitComputing(t *testing.T, scr *tuitest.Screen, want ...string) {
	t.Helper()
	scr.WaitUntil(t, 10*time.Second, func(txt string) string {
		for _, w := range want {
			if !strings.Contains(txt, w) {
				return strconv.Quote(w)
			}
		}
		if !strings.Contains(txt, "moving") && !strings.Contains(txt, "spinning") {
			return `"moving" or "spinning"`
		}
		return ""
	})
}

// TestStacksMergedAcrossHosts: one node's samples from crashtui stacks, the other's streamed
// by an agent, merged by crashtui view into one tree whose rank sets span both hosts.
func TestStacksMergedAcrossHosts(t *testing.T) {
	needRoot(t)
	bin := buildC(t, "hang")
	a := startHung(t, bin, 3) // ranks 0-2 on "node a"
	// ranks 3-5 on "node b": 3 and 4 in the barrier, 5 computing
	b := &hungJob{}
	for r := 3; r < 6; r++ {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "CRASHTUI_RANK="+strconv.Itoa(r))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: b.pgid}
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); cmd.Wait() })
		if b.pgid == 0 {
			b.pgid = pid
		}
		b.pids = append(b.pids, pid)
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("rank %d never said it was ready: %v", pid, err)
		}
	}
	for _, pid := range b.pids[:2] {
		waitState(t, pid, "S")
	}
	dir := t.TempDir()
	fa, fb := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	out, err := exec.Command(crashtuiBin, "stacks", "--json", "--host", "a", "--samples", "2", "--interval", "200ms", "pgid:"+strconv.Itoa(a.pgid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fa, out, 0o644); err != nil {
		t.Fatal(err)
	}
	agentOut, err := os.Create(fb)
	if err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(crashtuiBin, "agent", "--host", "b", "--matrix", "off", "--sample-every", "200ms", "pgid:"+strconv.Itoa(b.pgid))
	agent.Stdout = agentOut
	w := startWaited(t, agent, syscall.SIGINT)
	for deadline := patience.New(15 * time.Second); ; time.Sleep(50 * time.Millisecond) { // until the agent has streamed three samples
		b, _ := os.ReadFile(fb)
		if strings.Count(string(b), `"event":"sample"`) >= 9 {
			break
		}
		if deadline.Passed() {
			t.Fatalf("the agent streamed %d sample events in 15 s, want 9", strings.Count(string(b), `"event":"sample"`))
		}
	}
	agent.Process.Signal(syscall.SIGINT)
	<-w.exited
	agentOut.Close()
	out, err = exec.Command(crashtuiBin, "view", "--json", fa, fb).Output()
	if err != nil {
		t.Fatal(err)
	}
	var merged *sessions.Stacks
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e sessions.Event
		if json.Unmarshal([]byte(line), &e) == nil {
			if s, ok := e.Body.(sessions.Stacks); ok {
				merged = &s
			}
		}
	}
	if merged == nil {
		t.Fatalf("view printed no merged stacks:\n%s", out)
	}
	c := classWith(*merged, "1-4")
	if c == nil || c.Count != 4 || len(c.Hosts) != 4 || c.Hosts[0] != "a" || c.Hosts[3] != "b" || c.Progress != sessions.Stuck {
		t.Errorf("want one stuck class of ranks 1-4 over hosts a and b: %+v", merged.Classes)
	}
	if classWith(*merged, "0") == nil || classWith(*merged, "5") == nil {
		t.Errorf("ranks 0 and 5 not in classes of their own: %+v", merged.Classes)
	}
	checkDetached(t, append(a.pids, b.pids...), nil)
}

// TestStacksDebuggerHandOff: D on a class asks, naming the process, then y lets go of it, runs
// gdb on it in the terminal (the rest of the job stays traced), and takes it back when gdb exits.
func TestStacksDebuggerHandOff(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb is not installed (make test installs it with apt-get)")
	}
	j := startHung(t, buildC(t, "hang"), 2) // rank 0 in a receive, rank 1 in a barrier
	scr := tuitest.Open(t, 100, 40)
	proc, cmd := startTUI(t, scr, "attach", "--matrix", "off", "--sample-every", "0", "pgid:"+strconv.Itoa(j.pgid))
	scr.WaitFor(t, 20*time.Second, "procs 2/2")
	scr.Key(t, "5")
	scr.Key(t, "S")
	scr.WaitFor(t, 10*time.Second, "recv_message", "barrier")
	scr.Type("jjjjj") // down to main's first branch
	// The cursor is only a colour, which the screen's text does not show: wait instead until
	// the TUI has read the keys, so that D does not arrive in the same read as them.
	for dl := patience.New(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, err := unix.IoctlGetInt(int(scr.TTY.Fd()), unix.TIOCINQ); err != nil || n == 0 {
			break
		}
		if dl.Passed() {
			t.Fatalf("the TUI did not read the keys typed in %v", dl.Waited())
		}
	}
	scr.Key(t, "D")
	scr.WaitFor(t, 5*time.Second, "to a debugger? y/n")
	scr.Key(t, "y")
	txt := scr.WaitFor(t, 20*time.Second, "Attaching to process", "(gdb)")
	var handed int
	fmt.Sscanf(txt[strings.Index(txt, "Attaching to process"):], "Attaching to process %d", &handed)
	other := j.pids[0]
	if handed == j.pids[0] {
		other = j.pids[1]
	} else if handed != j.pids[1] {
		t.Fatalf("gdb attached to %d, not a rank (%v)", handed, j.pids)
	}
	crashtuiTracer := func(pid int) bool {
		tp := tracerPID(pid)
		_, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(tp))
		return tp > 0 && err == nil
	}
	if tp := tracerPID(handed); tp == 0 || crashtuiTracer(handed) {
		t.Errorf("the handed process is traced by %d, want gdb", tp)
	}
	if !crashtuiTracer(other) {
		t.Errorf("the other rank is no longer traced by crashtui (TracerPid %d)", tracerPID(other))
	}
	scr.Type("bt\r")
	scr.WaitFor(t, 10*time.Second, "in main")
	scr.Type("quit\r")
	scr.WaitFor(t, 10*time.Second, "(y or n)")
	scr.Type("y\r")
	scr.WaitFor(t, 20*time.Second, "traced again")
	if !crashtuiTracer(handed) {
		t.Errorf("pid %d was not taken back (TracerPid %d)", handed, tracerPID(handed))
	}
	quitTUI(t, scr, proc)
	checkDetached(t, j.pids, []string{"S", "S"})
}

// TestStacksNeverInterruptsEpollWait: a thread in epoll_wait is sampled from /proc, never
// stopped (a PTRACE_INTERRUPT would make its call return EINTR): the program sees no return,
// and its frames still show where it waits. The matrix's injection and every detach leave
// it alone too (the detach leaves it to the kernel's exit_ptrace).
func TestStacksNeverInterruptsEpollWait(t *testing.T) {
	needRoot(t)
	cmd := exec.Command(buildC(t, "epollwait"))
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	rd := bufio.NewReader(out)
	if l, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(l, "ready") {
		t.Fatalf("%q %v", l, err)
	}
	waitState(t, cmd.Process.Pid, "S")
	samples, st := stacksJSON(t, "--samples", "3", "--interval", "100ms", "pid:"+strconv.Itoa(cmd.Process.Pid))
	var seen int
	for _, s := range samples {
		for _, th := range s.Threads {
			if th.Syscall != "epoll_wait" {
				continue
			}
			seen++
			// Read whole without stopping it (CFI from /proc's pc and sp), or else from /proc
			// with the reason it was not stopped.
			if th.Held || (!th.Unstopped && !strings.Contains(th.Note, "EINTR")) {
				t.Errorf("the epoll_wait thread was held (%v), or not read whole and not said why not: %q", th.Held, th.Note)
			}
			var names []string
			for _, f := range th.Frames {
				names = append(names, f.Function)
			}
			if !strings.Contains(strings.Join(names, " "), "epoll_wait") {
				t.Errorf("the epoll_wait thread's frames %v do not show where it waits", names)
			}
		}
	}
	if seen != 3 {
		t.Errorf("the epoll_wait thread was in %d of 3 samples: %+v", seen, st.Classes)
	}
	// Neither does a measured matrix (it injects into the thread in read) or a detach.
	if out, err := exec.Command(crashtuiBin, "matrix", "pid:"+strconv.Itoa(cmd.Process.Pid)).CombinedOutput(); err != nil {
		t.Fatalf("matrix: %v\n%s", err, out)
	}
	stdin.Close() // main returns; a returned epoll_wait would have printed first
	rest, _ := io.ReadAll(rd)
	if strings.Contains(string(rest), "epoll_wait returned") {
		t.Errorf("sampling made epoll_wait return: %s", rest)
	}
}

// TestStacksRecordedAndReplayed: samples recorded by crashtui stacks --record replay into the
// Stacks tab, where S says it needs a live session.
func TestStacksRecordedAndReplayed(t *testing.T) {
	needRoot(t)
	j := startHung(t, buildC(t, "hang"), 6)
	rec := filepath.Join(t.TempDir(), "stacks.jsonl")
	// Three samples: rank 5's computing stack is told moving by its pcs, and two samples of a
	// short loop land on the same pcs now and then (a CI run saw it).
	if out, err := exec.Command(crashtuiBin, "stacks", "--samples", "3", "--interval", "100ms", "--record", rec, "pgid:"+strconv.Itoa(j.pgid)).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	scr := tuitest.Open(t, 100, 40)
	proc, _ := startTUI(t, scr, "replay", rec)
	scr.WaitFor(t, 10*time.Second, "crashtui replay") // keys typed before the first frame are lost
	scr.Key(t, "}")                                   // to the end of the recording
	scr.Key(t, "5")
	waitComputing(t, scr, "3 samples", "recv_message", "barrier", "stuck")
	scr.Key(t, "S")
	scr.WaitFor(t, 5*time.Second, "sampling needs a live session")
	scr.Key(t, "q")
	select {
	case <-proc.exited:
	case <-patience.After(10 * time.Second):
		t.Fatal("replay did not quit")
	}
}

// TestStacksDlvHandOff: for a Go program, D, y runs dlv attach (when dlv is installed) and
// crashtui takes the process back when dlv exits without killing it.
func TestStacksDlvHandOff(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("dlv"); err != nil {
		t.Skip("dlv is not installed (make test installs it: go install github.com/go-delve/delve/cmd/dlv)")
	}
	prog := startGoHang(t)
	scr := tuitest.Open(t, 100, 40)
	proc, _ := startTUI(t, scr, "attach", "--matrix", "off", "--sample-every", "0", "pid:"+strconv.Itoa(prog.Process.Pid))
	scr.WaitFor(t, 20*time.Second, "procs 1/1")
	scr.Key(t, "5")
	scr.Key(t, "S")
	scr.WaitFor(t, 10*time.Second, "main.blockRead")
	scr.Key(t, "D")
	scr.WaitFor(t, 5*time.Second, "to a debugger? y/n")
	scr.Key(t, "y")
	scr.WaitFor(t, 30*time.Second, "(dlv)")
	if tp := tracerPID(prog.Process.Pid); tp == 0 {
		t.Errorf("the Go program is not traced by dlv")
	}
	scr.Type("exit\r")
	scr.WaitFor(t, 10*time.Second, "kill the process")
	scr.Type("n\r")
	scr.WaitFor(t, 20*time.Second, "traced again")
	quitTUI(t, scr, proc)
	checkDetached(t, []int{prog.Process.Pid}, nil)
}

// quitTUI quits a live crashtui as a user does (q, then y to detach) and waits for it.
func quitTUI(t *testing.T, scr *tuitest.Screen, proc *waitedProc) {
	t.Helper()
	scr.Key(t, "q")
	// With nothing left live (every rank crashed) q quits at once, with no question: the
	// screen then shows what was under the TUI, which may itself say "quit" (gdb's).
	deadline := patience.New(10 * time.Second)
	for !strings.Contains(scr.Text(), "and quit?") {
		select {
		case <-proc.exited:
			return
		case <-time.After(20 * time.Millisecond):
		}
		if deadline.Passed() {
			t.Fatalf("after q, neither the question nor an exit:\n%s", scr.Text())
		}
	}
	scr.Key(t, "y")
	select {
	case <-proc.exited:
	case <-patience.After(20 * time.Second):
		t.Fatal("crashtui did not quit after q, y")
	}
}

// TestStacksSpinningNeverStuck is issue 24's second item: a thread in a tight loop (no
// syscalls: state R, its CPU time rising) is spinning or moving, never stuck, in 10 of 10
// runs of 3 samples, while a rank blocked in read beside it is stuck, and the verdict says
// which spins and which blocks.
func TestStacksSpinningNeverStuck(t *testing.T) {
	needRoot(t)
	spin := exec.Command(buildC(t, "spin"), "1000000000000")
	spin.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	blocked := exec.Command("sleep", "1000")
	blocked.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: spin.Process.Pid}
	blocked.Stdin, _ = os.Open("/dev/null")
	if err := blocked.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range []*exec.Cmd{spin, blocked} {
			c.Process.Kill()
			c.Wait()
		}
	})
	waitState(t, blocked.Process.Pid, "S")
	for run := 0; run < 10; run++ {
		_, st := stacksJSON(t, "--samples", "3", "--interval", "100ms", "pgid:"+strconv.Itoa(spin.Process.Pid))
		for _, r := range st.Ranks {
			switch {
			// Spinning or moving; on a loaded machine its stop may come too late to read it
			// twice (unknown, which is not a verdict): never stuck.
			case r.PID == spin.Process.Pid && r.Progress != sessions.Spinning && r.Progress != sessions.Moving && r.Progress != sessions.Unknown:
				t.Errorf("run %d: the spinning process is %s", run, r.Progress)
			case r.PID == blocked.Process.Pid && r.Progress != sessions.Stuck:
				t.Errorf("run %d: the sleeping process is %s, want stuck", run, r.Progress)
			}
		}
		text := strings.Join(views.StacksSummary(st), " ")
		if strings.Contains(text, "a hang") {
			t.Errorf("run %d: a busy process makes no hang: %s", run, text)
		}
	}
}

// TestStacksReadsBlockedWithoutStopping is issue 24's third item: every thread of a hung job
// built -O2 -fomit-frame-pointer (ranks blocked in read and in a barrier, helpers in a
// condition variable) is blocked in a syscall, and CFI from the pc and sp /proc gives reaches
// each stack's end: all are read without being stopped (the sample counts none stopped, each
// thread is "unstopped"), no thread ran at all meanwhile (its schedstat count of times on a
// CPU is unchanged, so its state never left S), and the frames are gdb's.
func TestStacksReadsBlockedWithoutStopping(t *testing.T) {
	needRoot(t)
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		t.Skip("gdb is not installed (make test installs it with apt-get)")
	}
	j := startHung(t, buildC(t, "hang", "-O2", "-fomit-frame-pointer"), 3, "THREADS=2")
	for _, pid := range j.pids {
		waitState(t, pid, "S")
	}
	slices := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, pid := range j.pids {
			for _, tid := range procfs.Tasks(pid) {
				s, _ := procfs.ReadTaskSchedstat(pid, tid)
				m[fmt.Sprintf("%d/%d", pid, tid)] = s.Slices
			}
		}
		return m
	}
	before := slices()
	samples, _ := stacksJSON(t, "--samples", "3", "--interval", "100ms", "pgid:"+strconv.Itoa(j.pgid))
	after := slices()
	for k, n := range before {
		if after[k] != n {
			t.Errorf("thread %s ran while it was sampled (%d times on a CPU before, %d after)", k, n, after[k])
		}
	}
	if len(samples) != 9 {
		t.Fatalf("%d samples, want 3 processes x 3", len(samples))
	}
	for _, s := range samples {
		if s.Stopped != 0 || s.Unstopped != 2 {
			t.Errorf("sample %d of %d: %d stopped, %d unstopped; want 0 and 2", s.Seq, s.PID, s.Stopped, s.Unstopped)
		}
		for _, th := range s.Threads {
			if !th.Unstopped || th.Held {
				t.Errorf("thread %d of %d: unstopped %v held %v (%s)", th.TID, s.PID, th.Unstopped, th.Held, th.Note)
			}
		}
	}
	// The main threads' frames, named as gdb names them.
	for _, s := range samples[len(samples)-3:] {
		out, err := exec.Command(gdb, "-nx", "-batch", "-p", strconv.Itoa(s.PID), "-ex", "bt").CombinedOutput()
		if err != nil {
			t.Fatalf("gdb: %v\n%s", err, out)
		}
		var want []string
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[0], "#") {
				name := f[1]
				if len(f) > 3 && f[2] == "in" {
					name = f[3]
				}
				want = append(want, name)
			}
		}
		var got []string
		for _, th := range s.Threads {
			if th.TID == s.PID {
				for _, f := range th.Frames {
					got = append(got, f.Function)
				}
			}
		}
		if len(got) < len(want) || strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
			t.Errorf("pid %d: frames %v, gdb's %v", s.PID, got, want)
		}
	}
	checkDetached(t, j.pids, []string{"S", "S", "S"})
}

// TestStacksShowTheCallNotRestartSyscall is issue 24's fourth item: a measured matrix stops
// a sleeper in clock_nanosleep to run its calls inside it, so the kernel resumes its sleep as
// restart_syscall, which /proc shows from then on; crashtui's own samples still name the call
// the thread is in.
func TestStacksShowTheCallNotRestartSyscall(t *testing.T) {
	needRoot(t)
	var sleeps []*exec.Cmd
	for i := 0; i < 2; i++ {
		c := exec.Command("sleep", "1000")
		pgid := 0
		if i > 0 {
			pgid = sleeps[0].Process.Pid
		}
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		sleeps = append(sleeps, c)
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		waitState(t, c.Process.Pid, "S")
	}
	a := sleeps[0].Process.Pid
	c := startCrashtui(t, "attach", "--json", "--matrix", "measure", "--sample-every", "200ms", "pgid:"+strconv.Itoa(a))
	c.waitFor(t, "a measured matrix", 60*time.Second, func(evs []event) bool {
		for _, e := range evs {
			if e.kind() == "matrix" && e["measured"] == true {
				return true
			}
		}
		return false
	})
	proc := procfs.ReadTaskSyscall(a, a)
	if name := arch.SyscallName(arch.Host(), proc.Nr); name != "restart_syscall" {
		t.Fatalf("/proc shows %q for the sleeper after the measurement, not restart_syscall: the test proves nothing", name)
	}
	evs := c.waitFor(t, "two samples after the matrix", 60*time.Second, func(evs []event) bool {
		n, after := 0, false
		for _, e := range evs {
			after = after || (e.kind() == "matrix" && e["measured"] == true)
			if after && e.kind() == "sample" && e.int("pid") == a {
				n++
			}
		}
		return n >= 2
	})
	for _, e := range evs {
		if e.kind() != "sample" || e.int("pid") != a {
			continue
		}
		ths, _ := e["threads"].([]any)
		for _, x := range ths {
			th, _ := x.(map[string]any)
			if sc, _ := th["syscall"].(string); sc != "clock_nanosleep" {
				t.Errorf("the sleeper's sample says it is in %q, want clock_nanosleep", sc)
			}
		}
	}
}
