package tracer

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"golang.org/x/sys/unix"
)

// rankVars are read in this order from a process's environment (README.md).
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

// statusFields reads a status file (/proc/PID/status or task/TID/status) once and returns the
// values of the named "Name:" lines, in order ("" for a missing one or a gone task).
func statusFields(path string, names ...string) []string {
	vals := make([]string, len(names))
	b, err := os.ReadFile(path)
	if err != nil {
		return vals
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for i, n := range names {
			if k == n {
				vals[i] = strings.TrimSpace(v)
			}
		}
	}
	return vals
}

// statusField is one value of a status file.
func statusField(path, name string) string { return statusFields(path, name)[0] }

func readUID(pid int) int {
	f := strings.Fields(statusField(procPath(pid, "status"), "Uid"))
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1]) // effective uid, as ps shows
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

// sigMasks reads a thread's blocked, ignored and caught signal masks in one read of its
// task status (SigIgn and SigCgt are the process's, shown there too).
func sigMasks(pid, tid int) (blocked, ignored, caught uint64) {
	v := statusFields(procPath(pid, "task/"+itoa(tid)+"/status"), "SigBlk", "SigIgn", "SigCgt")
	blocked, _ = strconv.ParseUint(v[0], 16, 64)
	ignored, _ = strconv.ParseUint(v[1], 16, 64)
	caught, _ = strconv.ParseUint(v[2], 16, 64)
	return
}

func itoa(n int) string { return strconv.Itoa(n) }

// taskStatus reads a task's thread group and tracer (the tracing thread's tid) from one read
// of /proc/TID/status; zeros when the task is gone.
func taskStatus(tid int) (tgid, tracer int) {
	v := statusFields(procPath(tid, "status"), "Tgid", "TracerPid")
	tgid, _ = strconv.Atoi(v[0])
	tracer, _ = strconv.Atoi(v[1])
	return tgid, tracer
}

// isThreadOf says whether tid is a thread of process pid: one lookup in /proc, no file read.
func isThreadOf(pid, tid int) bool {
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid), &st) == nil
}

// cloneVFork is CLONE_VFORK (include/uapi/linux/sched.h).
const cloneVFork = 0x4000

// inVfork says whether thread tid of pid is a vfork parent waiting for its child to exec or
// exit: in a vfork, or a clone/clone3 with CLONE_VFORK (posix_spawn), per /proc's syscall
// file. Such a thread cannot stop for ptrace until then, so nothing should wait for it.
func inVfork(pid, tid int) bool {
	b, err := os.ReadFile(procPath(pid, "task/"+strconv.Itoa(tid)+"/syscall"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return false // "running", or "-1 sp pc" (not in a syscall)
	}
	nr, err1 := strconv.Atoi(f[0])
	arg, err2 := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	a := arch.Host()
	if n, ok := arch.SyscallNumber(a, "vfork"); ok && nr == n {
		return true
	}
	if n, ok := arch.SyscallNumber(a, "clone"); ok && nr == n {
		return arg&cloneVFork != 0 // the flags are the first argument on every supported arch
	}
	if n, ok := arch.SyscallNumber(a, "clone3"); ok && nr == n {
		var flags [8]byte // struct clone_args starts with the flags
		if vmReader(pid)(arg, flags[:]) == nil {
			return binary.LittleEndian.Uint64(flags[:])&cloneVFork != 0
		}
	}
	return false
}
