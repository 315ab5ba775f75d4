package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"golang.org/x/sys/unix"
)

// The tracer's reads of /proc, one function per file. The loop reads several files per
// process while it attaches and two per thread while it samples stacks, so each read is
// open, read into a reused buffer, close: os.ReadFile adds an fstat, reads that grow from
// 512 bytes (each one regenerates the file in the kernel) and allocations, which together
// cost as much as the kernel's side.

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

func itoa(n int) string { return strconv.Itoa(n) }

// readSmall reads a small /proc file into buf with three syscalls. What does not fit in buf
// is left out.
func readSmall(path string, buf []byte) ([]byte, error) { return readUpTo(path, buf, len(buf)) }

// maxProcFile bounds what readProc keeps of one file: cmdline and environ together are at
// most ARG_MAX (a quarter of the stack limit, 2 MiB by default) when a program starts, but a
// program can grow its own environment.
const maxProcFile = 4 << 20

// procBufs are readProc's buffers, reused from read to read; one that grew past 64 KiB for a
// large environment is not kept.
var procBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// readProc reads a /proc file whole (up to maxProcFile) and calls f with its contents, which
// are valid only during f.
func readProc(path string, f func([]byte)) error {
	bp := procBufs.Get().(*[]byte)
	buf, err := readGrow(path, *bp)
	if err == nil {
		f(buf)
	}
	if cap(buf) <= 64<<10 {
		*bp = buf[:cap(buf)]
		procBufs.Put(bp)
	}
	return err
}

// readGrow is readSmall into buf, doubling it until the file fits (up to maxProcFile).
func readGrow(path string, buf []byte) ([]byte, error) { return readUpTo(path, buf, maxProcFile) }

// readUpTo reads path into buf, growing it up to limit bytes; what is past limit is left out.
func readUpTo(path string, buf []byte, limit int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf[:0], err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			if n >= limit {
				return buf[:n], nil
			}
			buf = append(buf[:n], make([]byte, min(max(n, 512), limit-n))...)
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf[:0], err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}

// readDirNumbers calls f with every entry of dir whose name is a number (a /proc, task or fd
// directory), in the kernel's order, without sorting or a DirEntry per name.
func readDirNumbers(dir string, f func(int)) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var buf [8192]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
		for off := 0; off+19 < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				break
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if v, ok := atoiBytes(name); ok {
				f(v)
			}
			off += reclen
		}
	}
}

// atoiBytes parses a non-negative decimal number.
func atoiBytes(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// nextRecord returns b up to the first sep (or all of it) and what follows the sep.
func nextRecord(b []byte, sep byte) (rec, rest []byte) {
	if i := bytes.IndexByte(b, sep); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// nextField returns the first space-separated field of b and what follows it.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\n') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\n' {
		j++
	}
	return b[i:j], b[j:]
}

// procStat is the part of /proc/PID/stat (or task/TID/stat) the tracer uses.
type procStat struct {
	pid, ppid, pgrp, session int
	state                    byte
	flags                    uint64
	cpu                      uint64 // utime+stime, clock ticks
	comm                     string
}

const pfKthread = 0x00200000 // PF_KTHREAD, include/linux/sched.h

// kernelThread is PF_KTHREAD alone: in a pid namespace of its own, pid 2 and its children are
// ordinary processes.
func (s procStat) kernelThread() bool { return s.flags&pfKthread != 0 }

// parseStat parses /proc/PID/stat (fs/proc/array.c do_task_stat). comm may contain spaces
// and parentheses: it runs from the first '(' to the last ')'.
func parseStat(b []byte) (procStat, error) {
	var s procStat
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return s, fmt.Errorf("stat: no comm")
	}
	pid, ok := atoiBytes(bytes.TrimSpace(b[:open]))
	if !ok {
		return s, fmt.Errorf("stat: pid %q", bytes.TrimSpace(b[:open]))
	}
	s.pid, s.comm = pid, string(b[open+1:close])
	// The fields after comm, from 0: state, ppid, pgrp, session, tty_nr, tpgid, flags,
	// minflt, cminflt, majflt, cmajflt, utime, stime.
	rest := b[close+1:]
	var utime int
	for i := 0; i <= 12; i++ {
		var f []byte
		if f, rest = nextField(rest); len(f) == 0 {
			if i < 7 {
				return s, fmt.Errorf("stat: %d fields", i)
			}
			break
		}
		n, _ := atoiBytes(f)
		switch i {
		case 0:
			s.state = f[0]
		case 1:
			s.ppid = n
		case 2:
			s.pgrp = n
		case 3:
			s.session = n
		case 6:
			s.flags = uint64(n)
		case 11:
			utime = n
		case 12:
			s.cpu = uint64(utime + n)
		}
	}
	return s, nil
}

func readStat(pid int) (procStat, error) { return readStatPath("/proc/" + strconv.Itoa(pid) + "/stat") }

// readTaskStat is one thread's stat (its own state and CPU time).
func readTaskStat(pid, tid int) (procStat, error) {
	return readStatPath(procPath(pid, "task/"+strconv.Itoa(tid)+"/stat"))
}

func readStatPath(path string) (procStat, error) {
	var buf [1024]byte // 52 numbers of at most 20 digits and a 16-byte comm
	b, err := readSmall(path, buf[:])
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// scanStat returns the pids of all processes whose stat matches.
func scanStat(match func(procStat) bool) ([]int, error) { return scanStatExcept(nil, match) }

// scanStatExcept is scanStat without reading the stat of the pids skip names. The stat files
// are read in parallel; skip and match are called on the caller's goroutine.
func scanStatExcept(skip func(pid int) bool, match func(procStat) bool) ([]int, error) {
	var pids []int
	if err := readDirNumbers("/proc", func(pid int) {
		if skip == nil || !skip(pid) {
			pids = append(pids, pid)
		}
	}); err != nil {
		return nil, err
	}
	stats := make([]procStat, len(pids))
	inParallel(len(pids), func(i int) {
		if s, err := readStat(pids[i]); err == nil {
			stats[i] = s
		}
	})
	var out []int
	for i, s := range stats {
		if s.pid == pids[i] && match(s) {
			out = append(out, pids[i])
		}
	}
	return out, nil
}

// inParallel calls f(0), ..., f(n-1) from up to GOMAXPROCS goroutines, the caller's among
// them, and returns when every call has: the kernel serves reads of /proc on every CPU at
// once, and an attach reads several files of each of a job's processes. f must touch only
// what belongs to its own index.
func inParallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+31)/32)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			f(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

func listTasks(pid int) []int {
	var out []int
	readDirNumbers(procPath(pid, "task"), func(tid int) { out = append(out, tid) })
	return out
}

// isThreadOf says whether tid is a thread of process pid: one lookup in /proc, no file read.
func isThreadOf(pid, tid int) bool {
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid), &st) == nil
}

// rankVars are read in this order from a process's environment (README.md).
var rankVars = []string{"CRASHTUI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}

// rankFromEnviron parses a NUL-separated environment block: the first of rankVars it sets
// to a number. Of a variable set twice the first setting counts, as it does for the
// program's own getenv.
func rankFromEnviron(env []byte) sessions.Rank {
	best, rank := len(rankVars), sessions.NoRank
	for len(env) > 0 {
		var kv []byte
		kv, env = nextRecord(env, 0)
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		for i, name := range rankVars[:best] {
			if string(k) == name {
				if n, ok := atoiBytes(bytes.TrimSpace(v)); ok {
					best, rank = i, sessions.Rank(n)
				}
				break
			}
		}
	}
	return rank
}

func readRank(pid int) sessions.Rank {
	rank := sessions.NoRank
	readProc(procPath(pid, "environ"), func(b []byte) { rank = rankFromEnviron(b) })
	return rank
}

func readArgv(pid int) []string {
	var argv []string
	readProc(procPath(pid, "cmdline"), func(b []byte) {
		b = bytes.TrimSuffix(b, []byte{0})
		if len(b) == 0 {
			return
		}
		argv = make([]string, 0, bytes.Count(b, []byte{0})+1)
		for _, a := range bytes.Split(b, []byte{0}) {
			argv = append(argv, string(a))
		}
	})
	return argv
}

func readLink(path string) string {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(path, buf[:])
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

func readExe(pid int) string { return readLink(procPath(pid, "exe")) }

func readComm(pid int) string {
	var buf [64]byte
	b, _ := readSmall(procPath(pid, "comm"), buf[:])
	return string(bytes.TrimSuffix(b, []byte{'\n'}))
}

// statusFields reads a status file (/proc/PID/status or task/TID/status) once and returns the
// values of the named "Name:" lines, in order ("" for a missing one or a gone task).
func statusFields(path string, names ...string) []string {
	vals := make([]string, len(names))
	readProc(path, func(b []byte) {
		for len(b) > 0 {
			var line []byte
			line, b = nextRecord(b, '\n')
			k, v, ok := bytes.Cut(line, []byte{':'})
			if !ok {
				continue
			}
			for i, n := range names {
				if string(k) == n {
					vals[i] = string(bytes.TrimSpace(v))
				}
			}
		}
	})
	return vals
}

// statusField is one value of a status file.
func statusField(path, name string) string { return statusFields(path, name)[0] }

// readUID and readGID are pid's effective uid and gid, as ps shows them: the owner of its
// /proc/PID directory, one stat instead of a read of status (ten times the cost). The kernel
// owns a process's files by root when it is not dumpable, but never its directory
// (fs/proc/base.c task_dump_owner: procps has always read the euid that way). -1 if gone.
func readUID(pid int) int {
	uid, _ := procOwner(pid)
	return uid
}

func readGID(pid int) int {
	_, gid := procOwner(pid)
	return gid
}

func procOwner(pid int) (uid, gid int) {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid), &st) != nil {
		return -1, -1
	}
	return int(st.Uid), int(st.Gid)
}

// taskStatus reads a task's thread group and tracer (the tracing thread's tid) from one read
// of /proc/TID/status; zeros when the task is gone.
func taskStatus(tid int) (tgid, tracer int) {
	v := statusFields(procPath(tid, "status"), "Tgid", "TracerPid")
	tgid, _ = strconv.Atoi(v[0])
	tracer, _ = strconv.Atoi(v[1])
	return tgid, tracer
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

// taskSys is /proc/PID/task/TID/syscall (fs/proc/base.c proc_pid_syscall): "running", or
// "-1 sp pc" while blocked outside a syscall, or "nr a0..a5 sp pc" while blocked in one.
type taskSys struct {
	gone   bool // unreadable: the thread is gone
	nr     int  // -1: blocked outside a syscall; -2: running, gone or unparsable
	arg0   uint64
	sp, pc uint64
}

func (s taskSys) inSyscall() bool { return s.nr >= 0 }

func readTaskSyscall(pid, tid int) taskSys {
	var buf [256]byte
	b, err := readSmall(procPath(pid, "task/"+strconv.Itoa(tid)+"/syscall"), buf[:])
	if err != nil {
		return taskSys{gone: true, nr: -2}
	}
	return parseTaskSyscall(b)
}

func parseTaskSyscall(b []byte) taskSys {
	var f [9][]byte
	n := 0
	for rest := b; n < len(f); n++ {
		if f[n], rest = nextField(rest); len(f[n]) == 0 {
			break
		}
	}
	if n < 3 {
		return taskSys{nr: -2} // "running"
	}
	nr := -1
	if string(f[0]) != "-1" {
		v, ok := atoiBytes(f[0])
		if !ok {
			return taskSys{nr: -2}
		}
		nr = v
	}
	hex := func(b []byte) uint64 {
		v, _ := strconv.ParseUint(string(bytes.TrimPrefix(b, []byte("0x"))), 16, 64)
		return v
	}
	ts := taskSys{nr: nr, sp: hex(f[n-2]), pc: hex(f[n-1])}
	if nr >= 0 && n > 3 {
		ts.arg0 = hex(f[1])
	}
	return ts
}

// cloneVFork is CLONE_VFORK (include/uapi/linux/sched.h).
const cloneVFork = 0x4000

// inVfork says whether thread tid of pid is a vfork parent waiting for its child to exec or
// exit: in a vfork, or a clone/clone3 with CLONE_VFORK (posix_spawn), per /proc's syscall
// file. Such a thread cannot stop for ptrace until then, so nothing should wait for it.
func inVfork(pid, tid int) bool { return inVforkCall(arch.Host(), pid, readTaskSyscall(pid, tid)) }

// inVforkCall is inVfork for a thread of pid blocked in sys.
func inVforkCall(a arch.Arch, pid int, sys taskSys) bool {
	if n, ok := arch.SyscallNumber(a, "vfork"); ok && sys.nr == n {
		return true
	}
	if n, ok := arch.SyscallNumber(a, "clone"); ok && sys.nr == n {
		return sys.arg0&cloneVFork != 0 // the flags are the first argument on every supported arch
	}
	if n, ok := arch.SyscallNumber(a, "clone3"); ok && sys.nr == n {
		var flags [8]byte // struct clone_args starts with the flags
		if vmReader(pid)(sys.arg0, flags[:]) == nil {
			return binary.LittleEndian.Uint64(flags[:])&cloneVFork != 0
		}
	}
	return false
}
