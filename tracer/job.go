package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/tracer/procfs"
	"golang.org/x/sys/unix"
)

// JobKind is how a JOB names its processes.
type JobKind string

// The JOB forms (README.md).
const (
	JobPGID   JobKind = "pgid"
	JobSID    JobKind = "sid"
	JobPID    JobKind = "pid" // the process and all its descendants
	JobCgroup JobKind = "cgroup"
	JobSlurm  JobKind = "slurm"
)

// Job is a parsed JOB argument.
type Job struct {
	Kind JobKind
	ID   int    // pgid, sid, pid or Slurm job id
	Step string // Slurm step of slurm:ID.STEP (a number); "" for every step of the job
	Path string // cgroup path
	Spec string // as the user wrote it
	// WholeNamespace lets the job contain init (pid 1 of crashtui's pid namespace): every
	// process of the machine or container. Without it such a job is refused.
	WholeNamespace bool
	// Filter, when not nil, keeps only the processes it is true for (of those the job names
	// that are not traced yet): several agents on one node each take their share of its
	// tasks (crashtui agent --share). What a kept process forks is traced with it.
	Filter func(pid int) bool
	// Skip are processes the caller knows must not be traced, each with why (another
	// crashtui: cmd/crashtui tells it by its control socket). They are left out as crashtui's
	// own pipeline is, and the log says why.
	Skip map[int]string
}

// ErrWholeNamespace means the job contains init and WholeNamespace was not given.
var ErrWholeNamespace = errors.New("contains init")

func (j Job) String() string { return j.Spec }

// ErrNoJob means a JOB names no process (or nothing at all): exit status 2.
var ErrNoJob = errors.New("names no process")

// ParseJob parses pgid:N, sid:N, pid:N, cgroup:PATH, slurm:ID, slurm:ID.STEP or a bare number (a
// process group if one has that id, else pid:N).
func ParseJob(spec string) (Job, error) {
	j := Job{Spec: spec}
	kind, val, ok := strings.Cut(spec, ":")
	if !ok {
		n, err := strconv.Atoi(spec)
		if err != nil || n <= 0 {
			return j, fmt.Errorf("job %q: want pgid:N, sid:N, pid:N, cgroup:PATH, slurm:ID or a number", spec)
		}
		j.ID = n
		if pids, _ := procfs.ScanStat(func(s procfs.Stat) bool { return s.Pgrp == n }); len(pids) > 0 {
			j.Kind = JobPGID
		} else {
			j.Kind = JobPID
		}
		return j, nil
	}
	j.Kind = JobKind(kind)
	switch j.Kind {
	case JobPGID, JobSID, JobPID, JobSlurm:
		if j.Kind == JobSlurm {
			if id, step, ok := strings.Cut(val, "."); ok {
				n, err := strconv.Atoi(step)
				if err != nil || n < 0 || strconv.Itoa(n) != step {
					return j, fmt.Errorf("job %q: slurm:ID.STEP needs a step number", spec)
				}
				val, j.Step = id, step
			}
		}
		n, err := strconv.Atoi(val)
		if err != nil || n <= 0 {
			return j, fmt.Errorf("job %q: %s needs a positive number", spec, kind)
		}
		j.ID = n
	case JobCgroup:
		if val == "" {
			return j, fmt.Errorf("job %q: cgroup needs a path", spec)
		}
		j.Path = val
	default:
		return j, fmt.Errorf("job %q: unknown kind %q (want pgid, sid, pid, cgroup or slurm)", spec, kind)
	}
	return j, nil
}

// excluded are crashtui itself and its ancestors: attaching to them would deadlock or stop the
// terminal crashtui runs in.
func excluded() map[int]bool {
	ex := map[int]bool{}
	for pid := os.Getpid(); pid > 1; {
		ex[pid] = true
		s, err := procfs.ReadStat(pid)
		if err != nil {
			break
		}
		pid = s.PPID
	}
	ex[1] = true
	return ex
}

// Resolve returns the pids the job names now, without kernel threads, crashtui and its
// ancestors, and the processes of crashtui's own pipeline, sorted.
func (j Job) Resolve() ([]int, error) {
	pids, _, _, err := j.resolve(nil)
	return pids, err
}

// resolve is Resolve that also returns the processes it left out, with why: those that hold
// the other end of one of crashtui's standard streams (crashtui attach --json JOB | tail, with
// tail in the job: tracing it would stop the reader crashtui writes to), and j.Skip. Pids for
// which known is true (already traced, or refused) are not looked at again.
func (j Job) resolve(known func(pid int) bool) (pids []int, pipeline map[int]string, stats map[int]procfs.Stat, err error) {
	ex := excluded()
	// The stat lines a scan of /proc read already: each process's is read once per round.
	stats = map[int]procfs.Stat{}
	keep := func(ok bool, s procfs.Stat) bool {
		if ok {
			stats[s.PID] = s
		}
		return ok
	}
	// A process seen in an earlier round is not read again: its threads were all seized, and
	// what it forks or clones since is attached by the kernel (TRACEFORK, TRACECLONE).
	switch j.Kind {
	case JobPGID:
		pids, err = procfs.ScanStatExcept(known, func(s procfs.Stat) bool { return keep(s.Pgrp == j.ID && !s.KernelThread(), s) })
	case JobSID:
		pids, err = procfs.ScanStatExcept(known, func(s procfs.Stat) bool { return keep(s.Session == j.ID && !s.KernelThread(), s) })
	case JobPID:
		pids, err = descendants(j.ID)
	case JobCgroup:
		pids, err = cgroupPIDs(j.Path)
	case JobSlurm:
		pids, err = slurmPIDs(j.ID, j.Step, known)
	default:
		return nil, nil, nil, fmt.Errorf("job %q: unknown kind", j.Spec)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("job %s: %w", j.Spec, err)
	}
	if !j.WholeNamespace && slices.Contains(pids, 1) {
		return nil, nil, nil, wholeNamespaceErr(j, pids)
	}
	pipes := ownPipes()
	var cand []int
	seen := map[int]bool{}
	old := map[int]bool{} // looked at in an earlier round: no more /proc reads
	for _, p := range pids {
		if ex[p] || seen[p] {
			continue
		}
		seen[p] = true
		if known != nil && known(p) {
			old[p] = true
		} else if j.Filter != nil && !j.Filter(p) {
			continue
		} else if _, ok := stats[p]; !ok {
			s, err := procfs.ReadStat(p)
			if err != nil {
				continue
			}
			stats[p] = s
		}
		cand = append(cand, p)
	}
	// The checks below read /proc/PID/task and fd of each new process: in parallel, each
	// answer in its own slot.
	why := make([]string, len(cand))
	procfs.InParallel(len(cand), func(i int) {
		p := cand[i]
		if old[p] {
			return
		}
		s := stats[p]
		switch {
		case j.Skip[p] != "":
			why[i] = j.Skip[p]
		case s.KernelThread():
			why[i] = "-"
		case (s.State == 'Z' || s.State == 'X') && len(procfs.Tasks(p)) <= 1:
			// A zombie leader is a dead process, unless it called pthread_exit and other
			// threads of it still run.
			why[i] = "-"
		default:
			if w := holdsPipe(p, pipes); w != "" {
				why[i] = w + " (crashtui's own pipeline)"
			}
		}
	})
	out := pids[:0]
	for i, p := range cand {
		switch why[i] {
		case "":
			out = append(out, p)
		case "-":
		default:
			if pipeline == nil {
				pipeline = map[int]string{}
			}
			pipeline[p] = why[i]
		}
	}
	sort.Ints(out)
	return out, pipeline, stats, nil
}

// wholeNamespaceErr says what a job that contains init would have attached.
func wholeNamespaceErr(j Job, pids []int) error {
	var names []string
	n := 0
	for _, p := range pids {
		s, err := procfs.ReadStat(p)
		if err != nil || s.KernelThread() {
			continue
		}
		n++
		if len(names) < 5 && !slices.Contains(names, s.Comm) {
			names = append(names, s.Comm)
		}
	}
	return fmt.Errorf("job %s %w (pid 1 of crashtui's pid namespace): it would attach all %d processes of this machine or container (%s, ...); name the job's own process group, session or cgroup, or pass --whole-namespace to take them all on purpose",
		j.Spec, ErrWholeNamespace, n, strings.Join(names, ", "))
}

// streamPipe is one of crashtui's standard streams that is a pipe or a FIFO, and the access
// mode (O_RDONLY or O_WRONLY) with which a process holds its other end.
type streamPipe struct {
	name  string
	other int
}

// fileID is a file by its device and inode: a pipe's (pipefs) or a named FIFO's.
type fileID struct{ dev, ino uint64 }

// ownPipes returns the pipes and FIFOs of crashtui's standard streams.
func ownPipes() map[fileID]streamPipe {
	var out map[fileID]streamPipe
	for fd, name := range []string{"stdin", "stdout", "stderr"} {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			if out == nil {
				out = map[fileID]streamPipe{}
			}
			other := unix.O_RDONLY // who reads what crashtui writes
			if fd == 0 {
				other = unix.O_WRONLY // who writes what crashtui reads
			}
			out[fileID{st.Dev, st.Ino}] = streamPipe{name, other}
		}
	}
	return out
}

// holdsPipe says which of crashtui's stream pipes pid holds the other end of ("" if none):
// a writer that shares crashtui's stderr is not its reader. Each descriptor is one stat
// through its /proc link (the file it names: a pipe's or FIFO's device and inode), not a
// readlink whose "pipe:[N]" is parsed, which a named FIFO never matched (BenchmarkHoldsPipe:
// 80 -> 70 µs a process).
func holdsPipe(pid int, pipes map[fileID]streamPipe) string {
	if len(pipes) == 0 {
		return ""
	}
	why := ""
	procfs.ReadDirNumbersAt("/proc/"+strconv.Itoa(pid)+"/fd", func(dir, fd int) {
		if why != "" {
			return
		}
		name := strconv.Itoa(fd)
		var target unix.Stat_t
		if unix.Fstatat(dir, name, &target, 0) != nil || target.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		sp, ok := pipes[fileID{target.Dev, target.Ino}]
		if !ok {
			return
		}
		// The link's own mode is how the fd was opened (S_IRUSR: for reading, S_IWUSR: for
		// writing; fs/proc/fd.c): one lstat, not the fdinfo file's open, read and close.
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return
		}
		mode := unix.O_RDWR
		switch st.Mode & (unix.S_IRUSR | unix.S_IWUSR) {
		case unix.S_IRUSR:
			mode = unix.O_RDONLY
		case unix.S_IWUSR:
			mode = unix.O_WRONLY
		}
		if mode == sp.other {
			why = "holds the other end of crashtui's " + sp.name + " pipe"
		}
	})
	return why
}

func descendants(root int) ([]int, error) {
	if _, err := procfs.ReadStat(root); err != nil {
		return nil, fmt.Errorf("pid %d: no such process", root)
	}
	children := map[int][]int{}
	if _, err := procfs.ScanStat(func(s procfs.Stat) bool {
		children[s.PPID] = append(children[s.PPID], s.PID)
		return false
	}); err != nil {
		return nil, err
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out, nil
}

const cgroupRoot = "/sys/fs/cgroup"

// cgroupPIDs accepts a filesystem path under /sys/fs/cgroup, or a cgroup path as
// /proc/PID/cgroup shows it ("/slurm/uid_0/job_7"), looked up in every hierarchy (v1 and v2).
func cgroupPIDs(path string) ([]int, error) {
	if strings.HasPrefix(path, cgroupRoot+"/") {
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("cgroup %s: no such cgroup directory", path)
		}
		return cgroupDirPIDs(path, true)
	}
	var dirs []string
	roots, _ := filepath.Glob(cgroupRoot + "/*")
	roots = append(roots, cgroupRoot)
	for _, r := range roots {
		d := filepath.Join(r, path)
		if st, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil && !st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("cgroup %s: not found under %s", path, cgroupRoot)
	}
	var pids []int
	for _, d := range dirs {
		p, err := cgroupDirPIDs(d, true)
		if err != nil {
			return nil, err
		}
		pids = append(pids, p...)
	}
	return pids, nil
}

// cgroupDirPIDs reads cgroup.procs of dir and, when recursive, of every cgroup below it.
func cgroupDirPIDs(dir string, recursive bool) ([]int, error) {
	var pids []int
	walk := func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		f, err := os.Open(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
				pids = append(pids, n)
			}
		}
		if !recursive && p != dir {
			return filepath.SkipDir
		}
		return nil
	}
	if err := filepath.WalkDir(dir, walk); err != nil {
		return nil, err
	}
	return pids, nil
}
