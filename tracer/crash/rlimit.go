package crash

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/access"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// limitCore sets RLIMIT_CORE of process pid to {0,0} before its fatal signal proceeds
// (Spindle's loser rule, kernel.md §C step 5), with prlimit from outside, which
// kernel/sys.c:check_prlimit_permission allows for the same real/effective/saved ids or with
// CAP_SYS_RESOURCE. Where it does not (a setuid rank, crashtui without CAP_SYS_RESOURCE), the
// process keeps its limit and the kernel may write its core: nothing is run inside a thread
// at a signal-delivery-stop (tracer/inject.go).
func limitCore(pid int) error {
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil {
		return fmt.Errorf("prlimit %d RLIMIT_CORE 0: %w (its own limit stays, so the kernel may write its core)", pid, err)
	}
	return nil
}

// coreAllowed says whether the process's own RLIMIT_CORE lets the kernel write a core (a
// soft limit above 0), read from outside with prlimit; true when it cannot be read.
func coreAllowed(pid int) bool {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, nil, &old); err != nil {
		return true
	}
	return old.Cur > 0
}

// coreBlocked says why pid's process may not have a core (or "" when it may), checked before
// it is made a group's representative. ours is true when crashtui writes the core (--cores)
// and false when the kernel does (--dedup-kernel-cores): the kernel then reads the process's
// dumpability itself, so only what is known to stop it counts.
func coreBlocked(pid int, ours bool) sessions.NoCore {
	if !coreAllowed(pid) {
		return sessions.NoCoreRlimit
	}
	switch d := readDumpable(pid); {
	case d == dumpNone, d == dumpRoot && ours && os.Geteuid() != 0:
		// SUID_DUMP_ROOT: the kernel writes such a core as root; crashtui's is the same
		// only when crashtui is root (a 0600 file of root's in a directory outfile checked).
		return sessions.NoCoreNonDumpable
	case d == dumpUnknown && ours:
		return sessions.NoCoreDumpableUnknown
	}
	return ""
}

// dumpState is get_dumpable(mm) as crashtui can read it from outside (include/linux/sched/
// coredump.h SUID_DUMP_*).
type dumpState int

const (
	dumpUser    dumpState = iota // SUID_DUMP_USER: the kernel dumps as usual
	dumpNone                     // SUID_DUMP_DISABLE: do_coredump writes nothing
	dumpRoot                     // SUID_DUMP_ROOT: do_coredump writes it owned by root
	dumpUnknown                  // cannot be told from outside
)

// readDumpable reads pid's dumpability without running anything inside it.
//
// Non-dumpable or not: kernel.md A.3 row 6. fs/proc/base.c task_dump_owner gives a
// non-dumpable process's /proc/PID files the uid and gid of the root of mm->user_ns, while
// the directory keeps its euid and egid (access.ReadProc's stat trick). Files and directory
// owned alike prove it dumpable unless its euid and egid already are that root's.
//
// For that case (a root process), kernel/ptrace.c __ptrace_may_access is asked instead: it
// refuses a non-dumpable task to a caller without CAP_SYS_PTRACE in mm->user_ns even when
// the ids match. A thread of crashtui's own drops CAP_SYS_PTRACE from its effective set and
// calls kcmp(self, pid, KCMP_VM) (kernel/kcmp.c: PTRACE_MODE_READ_REALCREDS); the answer is
// the kernel's own, given that crashtui's real uid and gid match all of the process's ids
// (step 3), that they share a user namespace and the process's permitted capabilities are
// within crashtui's permitted ones (commoncap, step 5, which under REALCREDS compares the
// permitted sets: under FSCREDS, as a read of /proc/PID/exe is checked, it would compare
// the effective set that was just dropped). Yama only checks ATTACH. Where those do not hold
// (a process whose ids are mixed with euid and egid 0, one that is the root of another user
// namespace: a fakeroot container's) no way is left that runs nothing inside it, and the
// answer is dumpUnknown.
//
// SUID_DUMP_DISABLE or SUID_DUMP_ROOT: both own the files by root. Under fs.suid_dumpable 0
// or 1 only SUID_DUMP_DISABLE exists for a process that is not dumpable. Under 2 a setuid,
// setgid or file-capability exec (begin_new_exec, commit_creds) gives SUID_DUMP_ROOT and
// prctl(PR_SET_DUMPABLE, 0) gives SUID_DUMP_DISABLE: a process whose ids are mixed, or whose
// executable has such bits, is taken to be the former, any other the latter. (A privileged
// program that also calls PR_SET_DUMPABLE 0 cannot be told apart from outside; it gets a
// core of root's only, as the kernel gives its privileged siblings.)
func readDumpable(pid int) dumpState {
	p, err := access.ReadProc(pid)
	if err != nil || !p.HasMM {
		return dumpUnknown
	}
	switch p.Dumpable {
	case access.DumpableYes:
		return dumpUser
	case access.DumpableNo:
		return notDumpable(pid, p)
	}
	self, err := os.Readlink("/proc/self/ns/user")
	theirs, err2 := os.Readlink(procfs.Path(pid, "ns/user"))
	if err != nil || err2 != nil || self != theirs {
		return dumpUnknown
	}
	if p.GID[1] != 0 {
		// The euid is root's but the egid is not: the files' gid, equal to the directory's,
		// would be 0 were it not dumpable.
		return dumpUser
	}
	me, my := uint32(os.Getuid()), uint32(os.Getgid())
	for i := range 3 {
		if p.UID[i] != me || p.GID[i] != my {
			return dumpUnknown
		}
	}
	if self, err := access.ReadProc(os.Getpid()); err != nil || p.CapPrm&^self.CapPrm != 0 {
		return dumpUnknown
	}
	switch may, err := kcmpWithoutPtraceCap(pid); {
	case err != nil:
		return dumpUnknown
	case may:
		return dumpUser
	}
	return notDumpable(pid, p)
}

// notDumpable tells SUID_DUMP_DISABLE from SUID_DUMP_ROOT for a process known not to be
// dumpable (readDumpable says how).
func notDumpable(pid int, p access.Proc) dumpState {
	b, err := os.ReadFile("/proc/sys/fs/suid_dumpable")
	if err != nil || strings.TrimSpace(string(b)) != "2" {
		return dumpNone
	}
	if p.UID[0] != p.UID[1] || p.GID[0] != p.GID[1] {
		return dumpRoot
	}
	var st unix.Stat_t
	exe := procfs.Path(pid, "exe")
	if unix.Stat(exe, &st) == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return dumpRoot
	}
	if _, err := unix.Getxattr(exe, "security.capability", nil); err == nil {
		return dumpRoot
	}
	return dumpNone
}

// kcmpWithoutPtraceCap asks kcmp(self, pid, KCMP_VM) from a thread of crashtui's that has
// CAP_SYS_PTRACE in its permitted set but not in its effective one (credentials are per
// thread: capset changes the calling thread's only). The thread asks first with the
// capability, so that a refusal can only be __ptrace_may_access's dumpability check. It
// never unlocks its OS thread: when the goroutine ends, the Go runtime ends that thread
// instead of letting another goroutine run with its credentials.
func kcmpWithoutPtraceCap(pid int) (bool, error) {
	type answer struct {
		ok  bool
		err error
	}
	kcmp := func() error {
		_, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(os.Getpid()), uintptr(pid), kcmpVM, 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	}
	c := make(chan answer, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := kcmp(); err != nil {
			c <- answer{err: fmt.Errorf("kcmp %d with CAP_SYS_PTRACE: %w", pid, err)}
			return
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			c <- answer{err: fmt.Errorf("capget: %w", err)}
			return
		}
		data[unix.CAP_SYS_PTRACE/32].Effective &^= 1 << (unix.CAP_SYS_PTRACE % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			c <- answer{err: fmt.Errorf("capset: %w", err)}
			return
		}
		switch err := kcmp(); {
		case err == nil:
			c <- answer{ok: true}
		case errors.Is(err, unix.EPERM):
			c <- answer{ok: false}
		default:
			c <- answer{err: fmt.Errorf("kcmp %d without CAP_SYS_PTRACE: %w", pid, err)}
		}
	}()
	a := <-c
	return a.ok, a.err
}

// kcmpVM is KCMP_VM (include/uapi/linux/kcmp.h).
const kcmpVM = 1
