package tracer

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

func TestParseJob(t *testing.T) {
	for _, tc := range []struct {
		spec string
		kind JobKind
		id   int
		path string
		bad  bool
	}{
		{spec: "pgid:12", kind: JobPGID, id: 12},
		{spec: "sid:7", kind: JobSID, id: 7},
		{spec: "pid:99", kind: JobPID, id: 99},
		{spec: "cgroup:/slurm/job_3", kind: JobCgroup, path: "/slurm/job_3"},
		{spec: "slurm:3", kind: JobSlurm, id: 3},
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
		if err != nil || j.Kind != tc.kind || j.ID != tc.id || j.Path != tc.path {
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

func TestParseStat(t *testing.T) {
	s, err := parseStat([]byte("42 (we(i)rd ) name) S 1 42 42 0 -1 4194560 0 0"))
	if err != nil || s.pid != 42 || s.comm != "we(i)rd ) name" || s.state != 'S' || s.ppid != 1 || s.pgrp != 42 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := parseStat([]byte("garbage")); err == nil {
		t.Error("garbage parsed")
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0"))
	f.Add([]byte("1 ()) S"))
	f.Fuzz(func(t *testing.T, b []byte) { parseStat(b) })
}

func TestRankFromEnviron(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want sessions.Rank
	}{
		{"A=1\x00CRASHTUI_RANK=3\x00", 3},
		{"OMPI_COMM_WORLD_RANK=5\x00SLURM_PROCID=9\x00", 5},
		{"PMIX_RANK=2\x00", 2},
		{"SLURM_PROCID=7", 7},
		{"PMI_RANK=x\x00", sessions.NoRank},
		{"", sessions.NoRank},
	} {
		if got := rankFromEnviron([]byte(tc.env)); got != tc.want {
			t.Errorf("%q: rank %d, want %d", tc.env, got, tc.want)
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
