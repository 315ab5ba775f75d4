package tracer

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// rankVars are read in this order from a process's environment (design.md).
var rankVars = []string{"CRASHTUI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// rankFromEnviron parses a NUL-separated environment block.
func rankFromEnviron(env []byte) sessions.Rank {
	vals := map[string]string{}
	for _, kv := range bytes.Split(env, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if ok {
			vals[string(k)] = string(v)
		}
	}
	for _, name := range rankVars {
		if v, ok := vals[name]; ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				return sessions.Rank(n)
			}
		}
	}
	return sessions.NoRank
}

func readRank(pid int) sessions.Rank {
	b, err := os.ReadFile(procPath(pid, "environ"))
	if err != nil {
		return sessions.NoRank
	}
	return rankFromEnviron(b)
}

func readArgv(pid int) []string {
	b, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	b = bytes.TrimSuffix(b, []byte{0})
	return strings.Split(string(b), "\x00")
}

func readExe(pid int) string {
	s, err := os.Readlink(procPath(pid, "exe"))
	if err != nil {
		return ""
	}
	return s
}

func readComm(pid int) string {
	b, _ := os.ReadFile(procPath(pid, "comm"))
	return strings.TrimSuffix(string(b), "\n")
}

// statusField returns the value of "Name:" in /proc/PID/status (or task/TID/status).
func statusField(path, name string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readUID(pid int) int {
	f := strings.Fields(statusField(procPath(pid, "status"), "Uid"))
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1]) // effective uid, as ps shows
	return n
}

func readTGID(tid int) int {
	n, err := strconv.Atoi(statusField(procPath(tid, "status"), "Tgid"))
	if err != nil {
		return 0
	}
	return n
}

func listTasks(pid int) []int {
	ents, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// sigMask reads a hex signal mask field (SigCgt, SigIgn, SigBlk) from a status file.
func sigMask(path, field string) uint64 {
	n, _ := strconv.ParseUint(statusField(path, field), 16, 64)
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }

// taskStatus reads a task's thread group and tracer (the tracing thread's tid) from one read
// of /proc/TID/status; zeros when the task is gone.
func taskStatus(tid int) (tgid, tracer int) {
	b, err := os.ReadFile(procPath(tid, "status"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "Tgid":
			tgid, _ = strconv.Atoi(strings.TrimSpace(v))
		case "TracerPid":
			tracer, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return tgid, tracer
}
