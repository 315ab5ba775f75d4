package arch

//go:generate go run ./internal/gensysnames -o zsysnames.go

import "sync"

func sysnames(a Arch) []string {
	switch a {
	case AMD64:
		return sysnamesAMD64[:]
	case ARM64:
		return sysnamesARM64[:]
	case PPC64LE:
		return sysnamesPPC64LE[:]
	}
	return nil
}

// SyscallName returns the kernel's name for syscall nr on a ("read", "restart_syscall"), or ""
// when a has no such number.
func SyscallName(a Arch, nr int) string {
	t := sysnames(a)
	if nr < 0 || nr >= len(t) {
		return ""
	}
	return t[nr]
}

var (
	sysnumOnce sync.Once
	sysnums    map[Arch]map[string]int
)

// SyscallNumber returns the number of the syscall called name on a.
func SyscallNumber(a Arch, name string) (int, bool) {
	sysnumOnce.Do(func() {
		sysnums = map[Arch]map[string]int{}
		for _, x := range []Arch{AMD64, ARM64, PPC64LE} {
			m := map[string]int{}
			for nr, n := range sysnames(x) {
				if n != "" {
					m[n] = nr
				}
			}
			sysnums[x] = m
		}
	})
	nr, ok := sysnums[a][name]
	return nr, ok
}
