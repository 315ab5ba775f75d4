package sessions

// ProcDetail is what /proc says about one live process, read on request (the Processes tab's
// enter): not an event, nothing of it is recorded. Every string in it comes from the process
// (its command line, its file names) and is sanitised by whoever shows it.
type ProcDetail struct {
	PID     int
	Cmdline []string // /proc/PID/cmdline, NUL-separated arguments
	Exe     string   // the readlink of /proc/PID/exe
	Cwd     string   // the readlink of /proc/PID/cwd
	State   string   // "S (sleeping)", from status
	PPID    int
	UIDs    [4]int // real, effective, saved, filesystem (status Uid:)
	GIDs    [4]int
	// Seccomp is the mode (status Seccomp: 0 disabled, 1 strict, 2 filter), SeccompFilters
	// how many filters are installed, NoNewPrivs the no_new_privs bit.
	Seccomp        int
	SeccompFilters int
	NoNewPrivs     bool
	CapEff         string // the effective capabilities, hex (status CapEff:)
	VmRSSKB        int64  // resident set size, kB (status VmRSS:)
	VmSizeKB       int64
	Limits         []Limit
	FDs            []FD // the first MaxDetailFDs, by number
	NFDs           int  // how many fds it has in all
	Maps           MapsSummary
	Threads        []ThreadDetail
	Cgroups        []string // /proc/PID/cgroup, one line each ("0::/user.slice/…")
	// Unread says what could not be read and why ("fd: permission denied"): the rest is
	// still shown.
	Unread []string
}

// MaxDetailFDs bounds the fds a ProcDetail lists (a server may hold a hundred thousand).
const MaxDetailFDs = 256

// Limit is one line of /proc/PID/limits: "Max open files  1024  1048576  files".
type Limit struct {
	Name, Soft, Hard, Units string
}

// FD is one open file descriptor and what it refers to (a path, "socket:[123]",
// "pipe:[456]", "anon_inode:[eventpoll]").
type FD struct {
	FD     int
	Target string
}

// MapsSummary sums /proc/PID/maps: how many mappings, how much of the address space they
// take by kind, and the files mapped (the program and its libraries) in the order first seen.
type MapsSummary struct {
	Mappings                int
	TotalKB, FileKB, AnonKB int64
	StackKB, HeapKB, ExecKB int64
	Files                   []string
}

// ThreadDetail is one thread: its name, its state letter as ps shows it, and the syscall it
// is in ("" when running in user space).
type ThreadDetail struct {
	TID     int
	Comm    string
	State   string // R, S, D, T, t, Z
	Syscall string // the name, "syscall 451" for one without, "" when not in a syscall
	Running bool   // /proc/TID/syscall said "running": on a CPU, no syscall to read
}
