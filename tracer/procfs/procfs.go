package procfs

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

// Path is /proc/PID/NAME.
func Path(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// ReadSmall reads a small /proc file into buf with three syscalls. What does not fit in buf
// is left out.
func ReadSmall(path string, buf []byte) ([]byte, error) { return readUpTo(path, buf, len(buf)) }

// MaxFile bounds what ReadFile keeps of one file: cmdline and environ together are at
// most ARG_MAX (a quarter of the stack limit, 2 MiB by default) when a program starts, but a
// program can grow its own environment.
const MaxFile = 4 << 20

// bufs are ReadFile's buffers, reused from read to read; one that grew past 64 KiB for a
// large environment is not kept.
var bufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// ReadFile reads a /proc file whole (up to MaxFile) and calls f with its contents, which
// are valid only during f.
func ReadFile(path string, f func([]byte)) error {
	bp := bufs.Get().(*[]byte)
	buf, err := readGrow(path, *bp)
	if err == nil {
		f(buf)
	}
	if cap(buf) <= 64<<10 {
		*bp = buf[:cap(buf)]
		bufs.Put(bp)
	}
	return err
}

// readGrow is ReadSmall into buf, doubling it until the file fits (up to MaxFile).
func readGrow(path string, buf []byte) ([]byte, error) { return readUpTo(path, buf, MaxFile) }

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

// ReadDirNumbers calls f with every entry of dir whose name is a number (a /proc, task or fd
// directory), in the kernel's order, without sorting or a DirEntry per name. It reads until
// getdents says 0: a short read is not the end, since getdents stops early when a signal is
// pending for the reader (fs/readdir.c filldir64), and the loop's thread is signalled at any
// moment (Go's preemption, crashtui's kick).
func ReadDirNumbers(dir string, f func(int)) error {
	return ReadDirNumbersAt(dir, func(_, n int) { f(n) })
}

// ReadDirNumbersAt is ReadDirNumbers that also gives f the directory's descriptor, open
// while f runs: an entry is then looked at by its name alone (readlinkat, fstatat), without
// a walk of the whole path from / for each.
func ReadDirNumbersAt(dir string, f func(dirfd, n int)) error {
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
			if v, ok := Atoi(name); ok {
				f(fd, v)
			}
			off += reclen
		}
	}
}

// Atoi parses a non-negative decimal number.
func Atoi(b []byte) (int, bool) {
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

// NextRecord returns b up to the first sep (or all of it) and what follows the sep.
func NextRecord(b []byte, sep byte) (rec, rest []byte) {
	if i := bytes.IndexByte(b, sep); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// NextField returns the first space-separated field of b and what follows it.
func NextField(b []byte) (field, rest []byte) {
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

// Stat is the part of /proc/PID/stat (or task/TID/stat) the tracer uses.
type Stat struct {
	PID, PPID, Pgrp, Session int
	State                    byte
	Flags                    uint64
	CPU                      uint64 // utime+stime, clock ticks
	Comm                     string
}

const PFKthread = 0x00200000 // PF_KTHREAD, include/linux/sched.h

// KernelThread is PF_KTHREAD alone: in a pid namespace of its own, pid 2 and its children are
// ordinary processes.
func (s Stat) KernelThread() bool { return s.Flags&PFKthread != 0 }

// ParseStat parses /proc/PID/stat (fs/proc/array.c do_task_stat). comm may contain spaces
// and parentheses: it runs from the first '(' to the last ')'.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return s, fmt.Errorf("stat: no comm")
	}
	pid, ok := Atoi(bytes.TrimSpace(b[:open]))
	if !ok {
		return s, fmt.Errorf("stat: pid %q", bytes.TrimSpace(b[:open]))
	}
	s.PID, s.Comm = pid, string(b[open+1:close])
	// The fields after comm, from 0: state, ppid, pgrp, session, tty_nr, tpgid, flags,
	// minflt, cminflt, majflt, cmajflt, utime, stime.
	rest := b[close+1:]
	var utime int
	for i := 0; i <= 12; i++ {
		var f []byte
		if f, rest = NextField(rest); len(f) == 0 {
			if i < 7 {
				return s, fmt.Errorf("stat: %d fields", i)
			}
			break
		}
		n, _ := Atoi(f)
		switch i {
		case 0:
			s.State = f[0]
		case 1:
			s.PPID = n
		case 2:
			s.Pgrp = n
		case 3:
			s.Session = n
		case 6:
			s.Flags = uint64(n)
		case 11:
			utime = n
		case 12:
			s.CPU = uint64(utime + n)
		}
	}
	return s, nil
}

func ReadStat(pid int) (Stat, error) { return ReadStatPath("/proc/" + strconv.Itoa(pid) + "/stat") }

// Schedstat is /proc/PID/task/TID/schedstat (kernel/sched/stats.c; CONFIG_SCHED_INFO): the
// time the thread has run and waited to run, and how many times it was put on a CPU.
type Schedstat struct {
	RunNS, WaitNS, Slices uint64
}

// ReadTaskSchedstat reads thread tid's schedstat; ok is false where the file is absent.
// Slices tells whether a thread ran at all between two reads: a blocked thread that is not
// woken keeps its count.
func ReadTaskSchedstat(pid, tid int) (s Schedstat, ok bool) {
	var buf [128]byte
	b, err := ReadSmall(Path(pid, "task/"+strconv.Itoa(tid)+"/schedstat"), buf[:])
	if err != nil {
		return s, false
	}
	var f [3][]byte
	for i := range f {
		if f[i], b = NextField(b); len(f[i]) == 0 {
			return s, false
		}
	}
	var e1, e2, e3 error
	s.RunNS, e1 = strconv.ParseUint(string(f[0]), 10, 64)
	s.WaitNS, e2 = strconv.ParseUint(string(f[1]), 10, 64)
	s.Slices, e3 = strconv.ParseUint(string(f[2]), 10, 64)
	return s, e1 == nil && e2 == nil && e3 == nil
}

// ReadTaskStat is one thread's stat (its own state and CPU time).
func ReadTaskStat(pid, tid int) (Stat, error) {
	return ReadStatPath(Path(pid, "task/"+strconv.Itoa(tid)+"/stat"))
}

func ReadStatPath(path string) (Stat, error) {
	var buf [1024]byte // 52 numbers of at most 20 digits and a 16-byte comm
	b, err := ReadSmall(path, buf[:])
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// EnvNotSet says whether pid is inside an exec, named as its new program but without its
// new program's arguments and environment yet (fs/exec.c begin_new_exec names it;
// fs/binfmt_elf.c create_elf_tables then sets them up): its environ reads empty there.
// /proc/PID/stat's env_start (field 50) is 0 then (and in a task leaving, whose memory is
// gone: a zombie at once). A program started with no environment at all has env_start ==
// env_end, not 0; one the reader may not look into has environ unreadable, not empty.
func EnvNotSet(pid int) bool {
	var buf [1024]byte
	b, err := ReadSmall(Path(pid, "stat"), buf[:])
	if err != nil {
		return false
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return false
	}
	f := bytes.Fields(b[end+1:]) // f[0] is field 3, the state; env_start is field 50
	if len(f) < 48 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return false
	}
	return string(f[47]) == "0"
}

// ScanStat returns the pids of all processes whose stat matches.
func ScanStat(match func(Stat) bool) ([]int, error) { return ScanStatExcept(nil, match) }

// ScanStatExcept is ScanStat without reading the stat of the pids skip names. The stat files
// are read in parallel; skip and match are called on the caller's goroutine.
func ScanStatExcept(skip func(pid int) bool, match func(Stat) bool) ([]int, error) {
	var pids []int
	if err := ReadDirNumbers("/proc", func(pid int) {
		if skip == nil || !skip(pid) {
			pids = append(pids, pid)
		}
	}); err != nil {
		return nil, err
	}
	stats := make([]Stat, len(pids))
	InParallel(len(pids), func(i int) {
		if s, err := ReadStat(pids[i]); err == nil {
			stats[i] = s
		}
	})
	var out []int
	for i, s := range stats {
		if s.PID == pids[i] && match(s) {
			out = append(out, pids[i])
		}
	}
	return out, nil
}

// InParallel calls f(0), ..., f(n-1) from up to GOMAXPROCS goroutines, the caller's among
// them, and returns when every call has: the kernel serves reads of /proc on every CPU at
// once, and an attach reads several files of each of a job's processes. f must touch only
// what belongs to its own index.
func InParallel(n int, f func(i int)) {
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

func Tasks(pid int) []int {
	var out []int
	ReadDirNumbers(Path(pid, "task"), func(tid int) { out = append(out, tid) })
	return out
}

// IsThreadOf says whether tid is a thread of process pid: one lookup in /proc, no file read.
func IsThreadOf(pid, tid int) bool {
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid), &st) == nil
}

// IsLeader says whether task tid leads its thread group (is a process, not another's
// thread), and whether that could be told, without /proc: pidfd_open without PIDFD_THREAD
// opens only a leader (since 5.3; a thread is EINVAL, ENOENT since 6.9's pidfd_prepare, and
// a task that is gone ESRCH). The first look at a new task's /proc entry costs the kernel
// several microseconds (IsThreadOf: 7 µs inside a loop of thread creations), this about one.
func IsLeader(tid int) (leader, known bool) {
	fd, err := unix.PidfdOpen(tid, 0)
	switch err {
	case nil:
		unix.Close(fd)
		return true, true
	case unix.EINVAL, unix.ENOENT:
		return false, true
	}
	return false, false // ENOSYS (before 5.3), ESRCH, EMFILE: ask /proc
}

// RankVars are read in this order from a process's environment (README.md).
var RankVars = []string{"CRASHTUI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}

// RankFromEnviron parses a NUL-separated environment block: the first of RankVars it sets
// to a number. Of a variable set twice the first setting counts, as it does for the
// program's own getenv.
func RankFromEnviron(env []byte) sessions.Rank {
	best, rank := len(RankVars), sessions.NoRank
	for len(env) > 0 {
		var kv []byte
		kv, env = NextRecord(env, 0)
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		for i, name := range RankVars[:best] {
			if string(k) == name {
				if n, ok := Atoi(bytes.TrimSpace(v)); ok {
					best, rank = i, sessions.Rank(n)
				}
				break
			}
		}
	}
	return rank
}

func Rank(pid int) sessions.Rank {
	rank := sessions.NoRank
	ReadFile(Path(pid, "environ"), func(b []byte) { rank = RankFromEnviron(b) })
	return rank
}

func Argv(pid int) []string {
	var argv []string
	ReadFile(Path(pid, "cmdline"), func(b []byte) {
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

func Readlink(path string) string {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(path, buf[:])
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

func Exe(pid int) string { return Readlink(Path(pid, "exe")) }

func Comm(pid int) string {
	var buf [64]byte
	b, _ := ReadSmall(Path(pid, "comm"), buf[:])
	return string(bytes.TrimSuffix(b, []byte{'\n'}))
}

// StatusFields reads a status file (/proc/PID/status or task/TID/status) once and returns the
// values of the named "Name:" lines, in order ("" for a missing one or a gone task).
func StatusFields(path string, names ...string) []string {
	vals := make([]string, len(names))
	ReadFile(path, func(b []byte) {
		for len(b) > 0 {
			var line []byte
			line, b = NextRecord(b, '\n')
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

// StatusField is one value of a status file.
func StatusField(path, name string) string { return StatusFields(path, name)[0] }

// UID and GID are pid's effective uid and gid, as ps shows them: the owner of its
// /proc/PID directory, one stat instead of a read of status (ten times the cost). The kernel
// owns a process's files by root when it is not dumpable, but never its directory
// (fs/proc/base.c task_dump_owner: procps has always read the euid that way). -1 if gone.
func UID(pid int) int {
	uid, _ := Owner(pid)
	return uid
}

func GID(pid int) int {
	_, gid := Owner(pid)
	return gid
}

func Owner(pid int) (uid, gid int) {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid), &st) != nil {
		return -1, -1
	}
	return int(st.Uid), int(st.Gid)
}

// TaskStatus reads a task's thread group and tracer (the tracing thread's tid) from one read
// of /proc/TID/status; zeros when the task is gone.
func TaskStatus(tid int) (tgid, tracer int) {
	v := StatusFields(Path(tid, "status"), "Tgid", "TracerPid")
	tgid, _ = strconv.Atoi(v[0])
	tracer, _ = strconv.Atoi(v[1])
	return tgid, tracer
}

// SigMasks reads a thread's blocked, ignored and caught signal masks in one read of its
// task status (SigIgn and SigCgt are the process's, shown there too).
func SigMasks(pid, tid int) (blocked, ignored, caught uint64) {
	v := StatusFields(Path(pid, "task/"+strconv.Itoa(tid)+"/status"), "SigBlk", "SigIgn", "SigCgt")
	blocked, _ = strconv.ParseUint(v[0], 16, 64)
	ignored, _ = strconv.ParseUint(v[1], 16, 64)
	caught, _ = strconv.ParseUint(v[2], 16, 64)
	return
}

// Syscall is /proc/PID/task/TID/syscall (fs/proc/base.c proc_pid_syscall): "running", or
// "-1 sp pc" while blocked outside a syscall, or "nr a0..a5 sp pc" while blocked in one.
type Syscall struct {
	Gone   bool // unreadable: the thread is gone
	Nr     int  // -1: blocked outside a syscall; -2: running, gone or unparsable
	Args   [6]uint64
	SP, PC uint64
}

// InSyscall says the thread is blocked inside system call Nr.
func (s Syscall) InSyscall() bool { return s.Nr >= 0 }

// Running says the thread is on a CPU or runnable ("running"): /proc knows no pc or sp.
func (s Syscall) Running() bool { return s.Nr == -2 && !s.Gone }

func ReadTaskSyscall(pid, tid int) Syscall {
	var buf [256]byte
	b, err := ReadSmall(Path(pid, "task/"+strconv.Itoa(tid)+"/syscall"), buf[:])
	if err != nil {
		return Syscall{Gone: true, Nr: -2}
	}
	return ParseTaskSyscall(b)
}

func ParseTaskSyscall(b []byte) Syscall {
	var f [9][]byte
	n := 0
	for rest := b; n < len(f); n++ {
		if f[n], rest = NextField(rest); len(f[n]) == 0 {
			break
		}
	}
	if n < 3 {
		return Syscall{Nr: -2} // "running"
	}
	nr := -1
	if string(f[0]) != "-1" {
		v, ok := Atoi(f[0])
		if !ok {
			return Syscall{Nr: -2}
		}
		nr = v
	}
	hex := func(b []byte) uint64 {
		v, _ := strconv.ParseUint(string(bytes.TrimPrefix(b, []byte("0x"))), 16, 64)
		return v
	}
	ts := Syscall{Nr: nr, SP: hex(f[n-2]), PC: hex(f[n-1])}
	if nr >= 0 {
		for i := 1; i < n-2 && i <= 6; i++ {
			ts.Args[i-1] = hex(f[i])
		}
	}
	return ts
}

// CloneVFork is CLONE_VFORK (include/uapi/linux/sched.h).
const CloneVFork = 0x4000

// InVfork says whether thread tid of pid is a vfork parent waiting for its child to exec or
// exit: in a vfork, or a clone/clone3 with CLONE_VFORK (posix_spawn), per /proc's syscall
// file. Such a thread cannot stop for ptrace until then, so nothing should wait for it.
func InVfork(pid, tid int) bool { return InVforkCall(arch.Host(), pid, ReadTaskSyscall(pid, tid)) }

// InVforkCall is InVfork for a thread of pid blocked in sys.
func InVforkCall(a arch.Arch, pid int, sys Syscall) bool {
	if n, ok := arch.SyscallNumber(a, "vfork"); ok && sys.Nr == n {
		return true
	}
	if n, ok := arch.SyscallNumber(a, "clone"); ok && sys.Nr == n {
		return sys.Args[0]&CloneVFork != 0 // the flags are the first argument on every supported arch
	}
	if n, ok := arch.SyscallNumber(a, "clone3"); ok && sys.Nr == n {
		var flags [8]byte // struct clone_args starts with the flags
		if ReadMem(pid, sys.Args[0], flags[:]) == nil {
			return binary.LittleEndian.Uint64(flags[:])&CloneVFork != 0
		}
	}
	return false
}
