package access

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// System is what the machine as a whole contributes to the rules: Yama, the LSM stack and
// whether the two syscalls exist at all.
type System struct {
	Arch string // GOARCH name of the job's processes ("amd64"); the host's by default
	// Yama is kernel.yama.ptrace_scope (0-3), or -1 when Yama is absent (no sysctl file).
	Yama int
	// KcmpBuilt and CMABuilt say whether kcmp (CONFIG_KCMP) and process_vm_readv
	// (CONFIG_CROSS_MEMORY_ATTACH) exist; nil when a self-probe could not tell.
	KcmpBuilt, CMABuilt *bool
	// LSMs is /sys/kernel/security/lsm split at commas; nil when securityfs is not mounted.
	LSMs []string
	// SuidDumpable is fs.suid_dumpable (0, 1, 2), -1 unknown: the dumpability a uid change or
	// setuid exec leaves behind.
	SuidDumpable int
	// ObserverNestedNS is true when crashtui itself runs in a child user namespace: then the
	// ids in /proc are mapped into it and unmapped ones read as 65534 (kernel.md A.3), so id
	// equality is no longer exact.
	ObserverNestedNS bool
}

// ReadSystem reads the sysctls and probes kcmp and process_vm_readv on crashtui itself:
// kcmp(self, self) and a 1-byte process_vm_readv of our own memory pass every permission
// check (same_thread_group, mm == current->mm), so only ENOSYS can fail them.
func ReadSystem() System {
	s := System{Arch: runtime.GOARCH, Yama: -1, SuidDumpable: -1}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			s.Yama = n
		}
	}
	if b, err := os.ReadFile("/proc/sys/fs/suid_dumpable"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			s.SuidDumpable = n
		}
	}
	if b, err := os.ReadFile("/sys/kernel/security/lsm"); err == nil {
		s.LSMs = ParseLSMs(b)
	}
	s.KcmpBuilt = probeBuilt(probeKcmp())
	s.CMABuilt = probeBuilt(probeVMReadv())
	// In the initial user namespace NS_GET_PARENT fails with EPERM (no parent).
	if fd, err := unix.Open("/proc/self/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		p, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		s.ObserverNestedNS = err == nil
		if err == nil {
			unix.Close(p)
		}
		unix.Close(fd)
	}
	return s
}

// ParseLSMs splits the comma-separated LSM list.
func ParseLSMs(b []byte) []string {
	out := []string{}
	for _, f := range strings.Split(strings.TrimSpace(string(b)), ",") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func probeBuilt(err error) *bool {
	var b bool
	switch err {
	case nil:
		b = true
	case unix.ENOSYS:
		b = false
	default:
		return nil // e.g. crashtui's own seccomp filter refused: cannot tell
	}
	return &b
}

// KCMPVM is KCMP_VM in include/uapi/linux/kcmp.h (enum kcmp_type: KCMP_FILE is 0).
const KCMPVM = 1

func probeKcmp() error {
	pid := uintptr(os.Getpid())
	_, _, e := unix.Syscall6(unix.SYS_KCMP, pid, pid, KCMPVM, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func probeVMReadv() error {
	var src, dst [1]byte
	src[0] = 1
	local := []unix.Iovec{{Base: &dst[0]}}
	local[0].SetLen(1)
	remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}
	_, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0)
	runtime.KeepAlive(&src)
	return err
}

func (s System) hasLSM(name string) bool {
	for _, l := range s.LSMs {
		if l == name {
			return true
		}
	}
	return false
}
