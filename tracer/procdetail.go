package tracer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

// ReadProcDetail reads what /proc says about process pid for the TUI's process detail: its
// command line, cwd, limits, open fds, a summary of its mappings, its threads with their
// state and syscall, its cgroups and its seccomp mode. It reads files only: no ptrace
// request, no stop, so it works while the tracer holds the process or not, and from any
// goroutine. /proc/PID/syscall and the fd links need ptrace access to the process (the
// kernel's PTRACE_MODE_ATTACH check), which crashtui has as its tracer; what cannot be read
// is said in Unread and the rest is returned. Only a process that is gone is an error.
//
// It is self-contained on purpose (its own small parsers over os.ReadFile): the loop's /proc
// readers are tuned for the tracer's hot paths, this is read once per keypress.
func ReadProcDetail(pid int) (sessions.ProcDetail, error) {
	d := sessions.ProcDetail{PID: pid}
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return d, fmt.Errorf("process detail of %d: %w", pid, err)
	}
	parseDetailStatus(status, &d)
	unread := func(what string, err error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.Unread = append(d.Unread, what+": "+errText(err))
		}
	}
	if b, err := os.ReadFile(dir + "/cmdline"); err == nil {
		d.Cmdline = splitCmdline(b)
	} else {
		unread("cmdline", err)
	}
	d.Exe, err = os.Readlink(dir + "/exe")
	unread("exe", err)
	d.Cwd, err = os.Readlink(dir + "/cwd")
	unread("cwd", err)
	if b, err := os.ReadFile(dir + "/limits"); err == nil {
		d.Limits = parseLimits(b)
	} else {
		unread("limits", err)
	}
	d.FDs, d.NFDs, err = readFDs(dir + "/fd")
	unread("fd", err)
	if b, err := os.ReadFile(dir + "/maps"); err == nil {
		d.Maps = parseMapsSummary(b)
	} else {
		unread("maps", err)
	}
	if b, err := os.ReadFile(dir + "/cgroup"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				d.Cgroups = append(d.Cgroups, l)
			}
		}
	} else {
		unread("cgroup", err)
	}
	d.Threads, err = readThreadDetails(dir)
	unread("task", err)
	return d, nil
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// parseDetailStatus reads the fields of /proc/PID/status the detail shows.
func parseDetailStatus(b []byte, d *sessions.ProcDetail) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			d.State = v
		case "PPid":
			d.PPID, _ = strconv.Atoi(v)
		case "Uid":
			d.UIDs = fourInts(v)
		case "Gid":
			d.GIDs = fourInts(v)
		case "Seccomp":
			d.Seccomp, _ = strconv.Atoi(v)
		case "Seccomp_filters":
			d.SeccompFilters, _ = strconv.Atoi(v)
		case "NoNewPrivs":
			d.NoNewPrivs = v == "1"
		case "CapEff":
			d.CapEff = v
		case "VmRSS":
			d.VmRSSKB = kB(v)
		case "VmSize":
			d.VmSizeKB = kB(v)
		}
	}
}

func fourInts(v string) [4]int {
	var out [4]int
	for i, f := range strings.Fields(v) {
		if i < 4 {
			out[i], _ = strconv.Atoi(f)
		}
	}
	return out
}

// kB reads "1234 kB".
func kB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	return n
}

// splitCmdline splits /proc/PID/cmdline at its NULs (a process that rewrote its argv area
// may leave no NUL at all: then it is one argument).
func splitCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	var out []string
	for _, a := range bytes.Split(b, []byte{0}) {
		out = append(out, string(a))
	}
	return out
}

// parseLimits reads /proc/PID/limits: a header, then "Max cpu time  unlimited  unlimited
// seconds" with the columns at fixed offsets (fs/proc/base.c proc_pid_limits: %-25s %-20s
// %-20s %-10s).
func parseLimits(b []byte) []sessions.Limit {
	var out []sessions.Limit
	for i, line := range strings.Split(string(b), "\n") {
		if i == 0 || strings.TrimSpace(line) == "" {
			continue // the header
		}
		field := func(from, to int) string {
			if from >= len(line) {
				return ""
			}
			return strings.TrimSpace(line[from:min(to, len(line))])
		}
		out = append(out, sessions.Limit{Name: field(0, 26), Soft: field(26, 47), Hard: field(47, 68), Units: field(68, len(line))})
	}
	return out
}

// readFDs lists the process's open fds by number with their targets, the first
// sessions.MaxDetailFDs of them, and how many there are.
func readFDs(dir string) ([]sessions.FD, int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	var nums []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	var out []sessions.FD
	for _, n := range nums {
		if len(out) == sessions.MaxDetailFDs {
			break
		}
		t, err := os.Readlink(dir + "/" + strconv.Itoa(n))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // closed since the listing
			}
			t = "(" + errText(err) + ")"
		}
		out = append(out, sessions.FD{FD: n, Target: t})
	}
	return out, len(nums), nil
}

// parseMapsSummary sums /proc/PID/maps lines ("start-end perms offset dev inode path").
func parseMapsSummary(b []byte) sessions.MapsSummary {
	var s sessions.MapsSummary
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end < start {
			continue
		}
		size := int64((end - start) / 1024)
		s.Mappings++
		s.TotalKB += size
		if strings.Contains(f[1], "x") {
			s.ExecKB += size
		}
		path := ""
		if len(f) >= 6 {
			path = strings.Join(f[5:], " ")
		}
		switch {
		case path == "[stack]":
			s.StackKB += size
		case path == "[heap]":
			s.HeapKB += size
		case strings.HasPrefix(path, "/"):
			s.FileKB += size
			if !seen[path] {
				seen[path] = true
				s.Files = append(s.Files, path)
			}
		case path == "":
			s.AnonKB += size
		}
	}
	return s
}

// readThreadDetails lists the threads of the process at dir with their name, state letter
// and syscall (/proc/PID/task/TID/{comm,stat,syscall}).
func readThreadDetails(dir string) ([]sessions.ThreadDetail, error) {
	ents, err := os.ReadDir(dir + "/task")
	if err != nil {
		return nil, err
	}
	var out []sessions.ThreadDetail
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t := sessions.ThreadDetail{TID: tid}
		td := dir + "/task/" + e.Name()
		if b, err := os.ReadFile(td + "/comm"); err == nil {
			t.Comm = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(td + "/stat"); err == nil {
			t.State = statState(b)
		}
		if b, err := os.ReadFile(td + "/syscall"); err == nil {
			t.Syscall, t.Running = syscallOf(b)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TID < out[j].TID })
	return out, nil
}

// statState is the state letter of a stat line: the field after the comm, which is in
// parentheses and may hold anything, so the last ") " ends it (fs/proc/array.c do_task_stat).
func statState(b []byte) string {
	i := bytes.LastIndex(b, []byte(") "))
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}

// syscallOf reads /proc/TID/syscall (fs/proc/base.c proc_pid_syscall): "running" for a
// thread on a CPU, "-1 sp pc" for one blocked outside a syscall (a page fault, a stop), or
// "NR args… sp pc" inside one.
func syscallOf(b []byte) (name string, running bool) {
	f := strings.Fields(string(b))
	switch {
	case len(f) == 0:
		return "", false
	case f[0] == "running":
		return "", true
	case f[0] == "-1":
		return "", false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < 0 {
		return "", false
	}
	if n := arch.SyscallName(arch.Host(), nr); n != "" {
		return n, false
	}
	return "syscall " + strconv.Itoa(nr), false
}
