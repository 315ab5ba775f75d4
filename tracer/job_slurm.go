package tracer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/tracer/procfs"
	"golang.org/x/sys/unix"
)

// A Slurm job's processes on this node (slurm:ID, slurm:ID.STEP) are found by the first of:
//
//  1. the cgroup directories job_ID (their step_STEP) of Slurm's cgroup plugin
//     (proctrack/cgroup, task/cgroup), in any hierarchy, v1 or v2;
//  2. without one (proctrack/linuxproc or pgid): the processes whose environment has
//     SLURM_JOB_ID=ID (and SLURM_STEP_ID=STEP). When some of them run under a slurmstepd, only
//     those: the others are the allocation's own shell (salloc's) and what it started outside
//     any step, such as the `crashtui view` an agent's output goes to;
//  3. `scontrol listpids ID[.STEP]` when scontrol is on PATH: tasks that cleared their
//     environment, as Slurm's own process tracking sees them.
//
// Slurm's own processes are never the job's, although slurmstepd sits in the job's cgroup and
// srun inherits its environment: slurmstepd, slurmd, slurmctld, munged and srun are left out by
// comm and by executable name. So is every process running crashtui's own executable (an
// agent's view, another agent).

// slurmOwn are the programs of Slurm (and munge) that are never a job's tasks.
var slurmOwn = map[string]bool{"slurmstepd": true, "slurmd": true, "slurmctld": true, "munged": true, "srun": true}

// slurmPIDs resolves a Slurm job; the error says everything it tried. Pids for which known
// is true were found in an earlier round and are not looked at again.
func slurmPIDs(id int, step string, known func(int) bool) ([]int, error) {
	name := strconv.Itoa(id)
	if step != "" {
		name += "." + step
	}
	keep := slurmFilter(known)
	var tried []string

	dirs, err := slurmCgroups(id, step)
	if err != nil {
		return nil, err
	}
	if len(dirs) > 0 {
		var pids []int
		for _, d := range dirs {
			p, err := cgroupDirPIDs(d, true)
			if err != nil {
				return nil, err
			}
			pids = append(pids, p...)
		}
		if pids = keep(pids); len(pids) > 0 {
			return pids, nil
		}
		tried = append(tried, fmt.Sprintf("its cgroup %s holds none of its tasks", dirs[0]))
	} else {
		what := "job_" + strconv.Itoa(id)
		if step != "" {
			what += "/step_" + step
		}
		tried = append(tried, "no cgroup "+what+" under "+cgroupRoot)
	}

	pids, err := slurmEnvPIDs(id, step, known)
	if err != nil {
		return nil, err
	}
	if pids = keep(pids); len(pids) > 0 {
		return pids, nil
	}
	env := "SLURM_JOB_ID=" + strconv.Itoa(id)
	if step != "" {
		env += " and SLURM_STEP_ID=" + step
	}
	tried = append(tried, "no process with "+env+" in its environment")

	pids, err = scontrolPIDs(name)
	if err == nil {
		if pids = keep(pids); len(pids) > 0 {
			return pids, nil
		}
		err = fmt.Errorf("scontrol listpids %s: none of its tasks on this node", name)
	}
	tried = append(tried, err.Error())
	return nil, errors.New(strings.Join(tried, "; "))
}

// slurmFilter returns a filter that drops Slurm's own processes and crashtui's executable.
func slurmFilter(known func(int) bool) func([]int) []int {
	var self unix.Stat_t
	haveSelf := unix.Stat("/proc/self/exe", &self) == nil
	return func(pids []int) []int {
		out := pids[:0]
		for _, p := range pids {
			if known != nil && known(p) {
				out = append(out, p) // kept in an earlier round
				continue
			}
			if slurmOwn[procfs.Comm(p)] || slurmOwn[filepath.Base(strings.TrimSuffix(procfs.Exe(p), " (deleted)"))] {
				continue
			}
			var st unix.Stat_t
			if haveSelf && unix.Stat(procfs.Path(p, "exe"), &st) == nil && st.Dev == self.Dev && st.Ino == self.Ino {
				continue
			}
			out = append(out, p)
		}
		return out
	}
}

// slurmCgroups finds directories named job_ID under any hierarchy (Slurm's cgroup plugin:
// .../slurm/uid_U/job_ID on v1, .../system.slice/slurmstepd.scope/job_ID on v2), or their
// step_STEP when step is given.
func slurmCgroups(id int, step string) ([]string, error) {
	name := "job_" + strconv.Itoa(id)
	var dirs []string
	err := filepath.WalkDir(cgroupRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == name {
			if step == "" {
				dirs = append(dirs, p)
			} else if st, err := os.Stat(filepath.Join(p, "step_"+step)); err == nil && st.IsDir() {
				dirs = append(dirs, filepath.Join(p, "step_"+step))
			}
			return filepath.SkipDir
		}
		return nil
	})
	return dirs, err
}

// slurmEnvMatch says whether a NUL-separated environment block names the job (and step).
func slurmEnvMatch(env []byte, id int, step string) bool {
	want := "SLURM_JOB_ID=" + strconv.Itoa(id)
	if !bytes.Contains(env, []byte(want)) {
		return false // the common case: not a Slurm process, or another job
	}
	job, stp := false, step == ""
	for _, kv := range bytes.Split(env, []byte{0}) {
		switch k, v, _ := bytes.Cut(kv, []byte{'='}); string(k) {
		case "SLURM_JOB_ID":
			job = string(kv) == want
		case "SLURM_STEP_ID":
			if step != "" {
				stp = string(v) == step
			}
		}
	}
	return job && stp
}

// slurmEnvPIDs returns the processes whose environment names the job: those under a
// slurmstepd when there are any, else all of them.
func slurmEnvPIDs(id int, step string, known func(int) bool) ([]int, error) {
	all := map[int]procfs.Stat{}
	if _, err := procfs.ScanStat(func(s procfs.Stat) bool { all[s.PID] = s; return false }); err != nil {
		return nil, err
	}
	underStepd := func(pid int) bool {
		for i := 0; i < len(all); i++ { // bounded: a ppid loop would be a /proc race
			s, ok := all[pid]
			if !ok || s.PPID <= 1 {
				return false
			}
			if all[s.PPID].Comm == "slurmstepd" {
				return true
			}
			pid = s.PPID
		}
		return false
	}
	var stepd, other []int
	for pid, s := range all {
		if s.KernelThread() {
			continue
		}
		if known == nil || !known(pid) {
			// A zombie's environment is gone (it reads empty, as one inside its exec does):
			// it names no job, and is not read again.
			if s.State == 'Z' || s.State == 'X' || !slurmEnvOf(pid, id, step) {
				continue
			}
		}
		if underStepd(pid) {
			stepd = append(stepd, pid)
		} else {
			other = append(other, pid)
		}
	}
	if len(stepd) > 0 {
		return stepd, nil
	}
	return other, nil
}

// slurmEnvOf says whether pid's environment names the job (and step). A task caught inside
// its exec reads an empty environment: /proc names it after its new program before the exec
// has set its environment up (one in seven of a loop of execs read so, the first time the
// new name showed). While procfs.EnvNotSet says so, the environment is read again for up to
// execSettle; an empty one whose bounds are set (the exec fills them in a loop, and a program
// started with no environment at all reads so for good) for up to emptySettle.
func slurmEnvOf(pid, id int, step string) bool {
	start := time.Now()
	for {
		n, match := -1, false
		procfs.ReadFile(procfs.Path(pid, "environ"), func(env []byte) { n, match = len(env), slurmEnvMatch(env, id, step) })
		if n != 0 {
			return match
		}
		wait := emptySettle
		if procfs.EnvNotSet(pid) {
			wait = execSettle
		}
		if time.Since(start) > wait {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// execSettle bounds the wait for a task inside its exec to have an environment: an exec
// takes a millisecond or so, a loaded machine's many more. emptySettle bounds it once the
// environment's bounds are set, which takes microseconds, but a task preempted there waits
// for the others' turns (a loaded make test read one empty with its bounds set).
const (
	execSettle  = 200 * time.Millisecond
	emptySettle = 20 * time.Millisecond
)

// scontrolTimeout bounds `scontrol listpids` (it asks this node's slurmstepds).
const scontrolTimeout = 10 * time.Second

// scontrolPIDs runs `scontrol listpids JOB[.STEP]` and returns the pids it lists. It runs
// scontrol from another goroutine than the caller's: the tracer's loop thread waits for
// every child of its own (wait4 -1), and would reap scontrol.
func scontrolPIDs(name string) ([]int, error) {
	path, err := exec.LookPath("scontrol")
	if err != nil {
		return nil, errors.New("scontrol is not on PATH")
	}
	type result struct {
		out, stderr []byte
		err         error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), scontrolTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, "listpids", name)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer in %s", scontrolTimeout)
		}
		done <- result{out, stderr.Bytes(), err}
	}()
	r := <-done
	if r.err != nil {
		msg := r.err.Error()
		if lines := strings.Split(strings.TrimSpace(string(r.stderr)), "\n"); lines[len(lines)-1] != "" {
			msg = lines[len(lines)-1]
		}
		return nil, fmt.Errorf("scontrol listpids %s: %s", name, msg)
	}
	return parseListPIDs(r.out), nil
}

// parseListPIDs parses the table of `scontrol listpids`: a header line, then
// "PID JOBID STEPID LOCALID GLOBALID" rows.
func parseListPIDs(out []byte) []int {
	var pids []int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil && n > 0 {
			pids = append(pids, n)
		}
	}
	return pids
}
