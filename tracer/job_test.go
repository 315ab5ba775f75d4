package tracer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tracer/procfs"
)

func TestParseJob(t *testing.T) {
	for _, tc := range []struct {
		spec string
		kind JobKind
		id   int
		step string
		path string
		bad  bool
	}{
		{spec: "pgid:12", kind: JobPGID, id: 12},
		{spec: "sid:7", kind: JobSID, id: 7},
		{spec: "pid:99", kind: JobPID, id: 99},
		{spec: "cgroup:/slurm/job_3", kind: JobCgroup, path: "/slurm/job_3"},
		{spec: "slurm:3", kind: JobSlurm, id: 3},
		{spec: "slurm:3.0", kind: JobSlurm, id: 3, step: "0"},
		{spec: "slurm:3.12", kind: JobSlurm, id: 3, step: "12"},
		{spec: "slurm:3.", bad: true},
		{spec: "slurm:3.x", bad: true},
		{spec: "slurm:3.-1", bad: true},
		{spec: "slurm:3.01", bad: true},
		{spec: "slurm:.1", bad: true},
		{spec: "pid:3.1", bad: true},
		{spec: "pgid:-1", bad: true},
		{spec: "pgid:", bad: true},
		{spec: "cgroup:", bad: true},
		{spec: "docker:abc", bad: true},
		{spec: "abc", bad: true},
		{spec: "0", bad: true},
	} {
		j, err := ParseJob(tc.spec)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseJob(%q) = %+v, want an error", tc.spec, j)
			}
			continue
		}
		if err != nil || j.Kind != tc.kind || j.ID != tc.id || j.Step != tc.step || j.Path != tc.path {
			t.Errorf("ParseJob(%q) = %+v, %v", tc.spec, j, err)
		}
	}
}

// A bare number is a process group when one has that id, else a pid tree.
func TestBareNumberAndResolve(t *testing.T) {
	leader := exec.Command("sleep", "60")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	member := exec.Command("sleep", "60")
	member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: leader.Process.Pid}
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		leader.Process.Kill()
		member.Process.Kill()
		leader.Wait()
		member.Wait()
	})
	pg := leader.Process.Pid
	j, err := ParseJob(strconv.Itoa(pg))
	if err != nil || j.Kind != JobPGID {
		t.Fatalf("bare %d: %+v %v, want a process group", pg, j, err)
	}
	pids, err := j.Resolve()
	if err != nil || len(pids) != 2 {
		t.Fatalf("resolve pgid %d: %v %v", pg, pids, err)
	}
	j, _ = ParseJob(strconv.Itoa(member.Process.Pid))
	if j.Kind != JobPID {
		t.Errorf("bare member pid: kind %s, want pid", j.Kind)
	}
	// pid:N includes descendants: this test process's tree contains both sleeps.
	tree, err := Job{Kind: JobPID, ID: os.Getpid(), Spec: "self"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range tree {
		if p == os.Getpid() {
			t.Errorf("crashtui itself is in its own job")
		}
		if p == pg || p == member.Process.Pid {
			found++
		}
	}
	if found != 2 {
		t.Errorf("pid tree %v lacks the two children", tree)
	}
}

func TestCgroupJob(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a cgroup")
	}
	// Make a cgroup in whichever hierarchy is writable (v2 unified, or v1 pids/freezer).
	var dir string
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/freezer"} {
		d := root + "/crashtui-test-" + strconv.Itoa(os.Getpid())
		if err := os.Mkdir(d, 0o755); err == nil {
			if _, err := os.Stat(d + "/cgroup.procs"); err == nil {
				dir = d
				break
			}
			os.Remove(d)
		}
	}
	if dir == "" {
		t.Skip("no writable cgroup hierarchy on this machine")
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		child.Process.Kill()
		child.Wait()
		os.Remove(dir)
	})
	if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
		t.Skipf("cannot move a process into %s: %v", dir, err)
	}
	for _, spec := range []string{"cgroup:" + dir, "cgroup:/crashtui-test-" + strconv.Itoa(os.Getpid())} {
		j, err := ParseJob(spec)
		if err != nil {
			t.Fatal(err)
		}
		pids, err := j.Resolve()
		if err != nil || len(pids) != 1 || pids[0] != child.Process.Pid {
			t.Errorf("%s resolves to %v %v, want [%d]", spec, pids, err, child.Process.Pid)
		}
	}
	// slurm:ID finds a directory named job_ID anywhere in the hierarchy.
	sl := dir + "/job_424242"
	if err := os.Mkdir(sl, 0o755); err == nil {
		defer os.Remove(sl)
		if err := os.WriteFile(sl+"/cgroup.procs", []byte(strconv.Itoa(child.Process.Pid)), 0o644); err == nil {
			pids, err := Job{Kind: JobSlurm, ID: 424242, Spec: "slurm:424242"}.Resolve()
			if err != nil || len(pids) != 1 {
				t.Errorf("slurm:424242 resolves to %v %v", pids, err)
			}
			os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(child.Process.Pid)), 0o644)
		}
	}
}

func TestAttachNothing(t *testing.T) {
	tr := New(Options{})
	defer tr.Close()
	_, err := tr.Attach(Job{Kind: JobPGID, ID: 1 << 30, Spec: "pgid:1073741824"})
	if !errors.Is(err, ErrNoJob) {
		t.Fatalf("attach to an empty process group: %v, want ErrNoJob", err)
	}
}

// slurmTestJob is a Slurm job id no real job of this machine has: it is far above the ids
// slurmctld hands out, and unique to this test process.
func slurmTestJob() int { return 1_500_000_000 + os.Getpid() }

// startEnv starts argv with extra environment variables and waits until it has exec'd (its
// environment has them: before the exec /proc shows the test's own). It is killed and reaped
// at the end of the test.
func startEnv(t *testing.T, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for dl := patience.New(5 * time.Second); ; {
		b, _ := os.ReadFile(procfs.Path(cmd.Process.Pid, "environ"))
		if strings.Contains("\x00"+string(b), "\x00"+env[0]+"\x00") {
			return cmd
		}
		if dl.Passed() {
			t.Fatalf("%v: not exec'd after %v", argv, dl.Waited())
		}
		time.Sleep(time.Millisecond) // exec has no event to wait on from here
	}
}

// TestSlurmHelper is not a test: run by TestSlurmJobFromEnviron as a process of this very
// executable, it sleeps until killed.
func TestSlurmHelper(t *testing.T) {
	if os.Getenv("CRASHTUI_SLURM_HELPER") == "" {
		t.Skip("a helper process of TestSlurmJobFromEnviron")
	}
	time.Sleep(time.Minute)
}

// slurm:ID without a job cgroup: real processes, started outside Slurm, whose environment
// says SLURM_JOB_ID=ID are the job; SLURM_STEP_ID picks slurm:ID.STEP. Slurm's own programs
// (sleep here, under the name of each) and crashtui's own executable (this test binary) are
// never the job's, whatever their environment says.
func TestSlurmJobFromEnviron(t *testing.T) {
	id := slurmTestJob()
	jobEnv := "SLURM_JOB_ID=" + strconv.Itoa(id)
	step0 := startEnv(t, []string{jobEnv, "SLURM_STEP_ID=0", "SLURM_PROCID=0"}, "sleep", "60")
	step1 := startEnv(t, []string{jobEnv, "SLURM_STEP_ID=1", "SLURM_PROCID=0"}, "sleep", "60")
	startEnv(t, []string{"SLURM_JOB_ID=" + strconv.Itoa(id+1), "SLURM_STEP_ID=0"}, "sleep", "60") // another job
	startEnv(t, []string{"SLURM_JOB_ID=" + strconv.Itoa(id) + "0"}, "sleep", "60")                // a longer id
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slurmstepd", "slurmd", "slurmctld", "munged", "srun"} {
		daemon := filepath.Join(t.TempDir(), name) // sleep, under the name of one of Slurm's own
		if err := os.WriteFile(daemon, b, 0o755); err != nil {
			t.Fatal(err)
		}
		startEnv(t, []string{jobEnv, "SLURM_STEP_ID=0"}, daemon, "60")
	}
	startEnv(t, []string{jobEnv, "SLURM_STEP_ID=0", "CRASHTUI_SLURM_HELPER=1"},
		os.Args[0], "-test.run=^TestSlurmHelper$")

	for spec, want := range map[string][]int{
		"slurm:" + strconv.Itoa(id):        {step0.Process.Pid, step1.Process.Pid},
		"slurm:" + strconv.Itoa(id) + ".0": {step0.Process.Pid},
		"slurm:" + strconv.Itoa(id) + ".1": {step1.Process.Pid},
	} {
		j, err := ParseJob(spec)
		if err != nil {
			t.Fatal(err)
		}
		pids, err := j.Resolve()
		slices.Sort(want)
		if err != nil || !slices.Equal(pids, want) {
			t.Errorf("%s resolves to %v %v, want %v", spec, pids, err, want)
		}
	}
}

// Among processes with the job's environment, those under a slurmstepd are its tasks on this
// node: the others are the allocation's own shell (salloc's) and what it ran outside any step.
// The slurmstepd here is a shell under slurmstepd's name; the shell itself is left out.
func TestSlurmJobUnderStepd(t *testing.T) {
	id := slurmTestJob()
	jobEnv := "SLURM_JOB_ID=" + strconv.Itoa(id)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	stepd := filepath.Join(t.TempDir(), "slurmstepd")
	if err := os.WriteFile(stepd, b, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := startEnv(t, []string{jobEnv}, "sleep", "60")
	if j, _ := ParseJob("slurm:" + strconv.Itoa(id)); true {
		pids, err := j.Resolve()
		if err != nil || !slices.Equal(pids, []int{outside.Process.Pid}) {
			t.Fatalf("with no slurmstepd: %v %v, want [%d]", pids, err, outside.Process.Pid)
		}
	}
	// The shell forks the sleep and waits: the sleep's parent is "slurmstepd".
	parent := startEnv(t, []string{jobEnv}, stepd, "-c", "sleep 60 & wait")
	var task int
	for dl := patience.New(5 * time.Second); task == 0; {
		if dl.Passed() {
			t.Fatalf("the shell under slurmstepd's name started no sleep in %v", dl.Waited())
		}
		time.Sleep(time.Millisecond)
		procfs.ScanStat(func(s procfs.Stat) bool {
			if s.PPID == parent.Process.Pid && s.Comm == "sleep" {
				task = s.PID
			}
			return false
		})
	}
	t.Cleanup(func() { syscall.Kill(task, syscall.SIGKILL) }) // reaped by the shell, then by us
	j, _ := ParseJob("slurm:" + strconv.Itoa(id))
	pids, err := j.Resolve()
	if err != nil || !slices.Equal(pids, []int{task}) {
		t.Errorf("slurm:%d resolves to %v %v, want the task under slurmstepd only [%d] (outside: %d, slurmstepd: %d)",
			id, pids, err, task, outside.Process.Pid, parent.Process.Pid)
	}
}

// A Slurm job that names nothing says what was tried: the cgroup, the environment, scontrol.
func TestSlurmJobNothing(t *testing.T) {
	id := slurmTestJob()
	for _, path := range []string{os.Getenv("PATH"), t.TempDir()} {
		t.Setenv("PATH", path)
		j, _ := ParseJob("slurm:" + strconv.Itoa(id) + ".3")
		_, err := j.Resolve()
		if err == nil {
			t.Fatalf("slurm:%d.3 resolves", id)
		}
		msg := err.Error()
		for _, want := range []string{
			"no cgroup job_" + strconv.Itoa(id) + "/step_3 under /sys/fs/cgroup",
			"no process with SLURM_JOB_ID=" + strconv.Itoa(id) + " and SLURM_STEP_ID=3 in its environment",
			"scontrol",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("PATH=%s: error %q lacks %q", path, msg, want)
			}
		}
		if _, lookErr := exec.LookPath("scontrol"); lookErr != nil && !strings.Contains(msg, "scontrol is not on PATH") {
			t.Errorf("PATH=%s: error %q does not say scontrol is missing", path, msg)
		}
		tr := New(Options{})
		_, err = tr.Attach(j)
		tr.Close()
		if !errors.Is(err, ErrNoJob) {
			t.Errorf("attach: %v, want ErrNoJob", err)
		}
	}
}

func TestParseListPIDs(t *testing.T) {
	out := "PID      JOBID    STEPID   LOCALID GLOBALID\n" +
		"15035    4202     0        0       0       \n" +
		"15030    4202     0        -       -       \n\n"
	if got := parseListPIDs([]byte(out)); !slices.Equal(got, []int{15035, 15030}) {
		t.Errorf("parsed %v", got)
	}
}

// TestJobFilter: a Filter keeps its share of what the job names (crashtui agent --share):
// here the process group's members whose environment says SHARE=1.
func TestJobFilter(t *testing.T) {
	var cmds []*exec.Cmd
	pg := 0
	for i := 0; i < 4; i++ {
		c := exec.Command("sleep", "60")
		c.Env = append(os.Environ(), "SHARE="+strconv.Itoa(i%2))
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pg}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		if pg == 0 {
			pg = c.Process.Pid
		}
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	want := []int{cmds[1].Process.Pid, cmds[3].Process.Pid}
	j := Job{Kind: JobPGID, ID: pg, Spec: "pgid", Filter: func(pid int) bool {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		return slices.Contains(strings.Split(string(b), "\x00"), "SHARE=1")
	}}
	for dl := patience.New(10 * time.Second); ; {
		pids, err := j.Resolve()
		if err == nil && slices.Equal(pids, want) {
			break
		}
		if dl.Passed() {
			t.Fatalf("resolve with a filter: %v %v, want %v", pids, err, want)
		}
		time.Sleep(10 * time.Millisecond) // the sleeps' exec (their environ) has no event to wait on
	}
}

// TestResolveSkip: a process the caller names in Job.Skip is left out of the job, with the
// caller's reason beside the pipeline's, and the rest of the job is kept.
func TestResolveSkip(t *testing.T) {
	leader := exec.Command("sleep", "60")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	member := exec.Command("sleep", "60")
	member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: leader.Process.Pid}
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		leader.Process.Kill()
		member.Process.Kill()
		leader.Wait()
		member.Wait()
	})
	pg, skip := leader.Process.Pid, member.Process.Pid
	j := Job{Kind: JobPGID, ID: pg, Spec: "pgid", Skip: map[int]string{skip: "is another crashtui"}}
	pids, left, _, err := j.resolve(nil)
	if err != nil || len(pids) != 1 || pids[0] != pg {
		t.Fatalf("resolve with %d skipped: %v %v, want [%d]", skip, pids, err, pg)
	}
	if left[skip] != "is another crashtui" {
		t.Errorf("left out: %v, want %d with the caller's reason", left, skip)
	}
}

// A task resolved while it is inside its exec: /proc names it after its new program before
// the program's environment is set up, and its environ reads empty there (one in seven of a
// loop of execs, read as soon as the name changed). Its environment must still be read as the
// job's: each of 100 sleeps, looked at the moment os/exec says it started (its exec well
// under way; 5 to 32 of them were still inside it in runs here), is in the job.
func TestSlurmEnvMidExec(t *testing.T) {
	id := slurmTestJob() + 1 // not TestSlurmJobUnderStepd's
	jobEnv := "SLURM_JOB_ID=" + strconv.Itoa(id)
	caught := 0
	for i := 0; i < 100; i++ {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), jobEnv)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		if procfs.EnvNotSet(pid) {
			caught++
		}
		in := slurmEnvOf(pid, id, "")
		cmd.Process.Kill()
		cmd.Wait()
		if !in {
			t.Fatalf("sleep %d of 100 (pid %d, started with %s) is not in slurm:%d", i+1, pid, jobEnv, id)
		}
	}
	t.Logf("%d of 100 sleeps were seen inside their exec, before their environment", caught)
	// Nor is a process with no environment at all taken for one inside its exec.
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for dl := patience.New(5 * time.Second); procfs.EnvNotSet(cmd.Process.Pid); time.Sleep(time.Millisecond) {
		if dl.Passed() {
			t.Fatalf("a sleep with no environment still looks inside its exec after %v", dl.Waited())
		}
	}
	if env, err := os.ReadFile(procfs.Path(cmd.Process.Pid, "environ")); err != nil || len(env) != 0 {
		t.Fatalf("a sleep started with no environment has %q %v", env, err)
	}
}
