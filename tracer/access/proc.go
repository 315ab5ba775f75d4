package access

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CapSysPtrace is CAP_SYS_PTRACE's bit in the Cap* masks of /proc/PID/status.
const CapSysPtrace = 1 << 19

// Dumpable is what /proc says about get_dumpable(B->mm).
type Dumpable int8

const (
	// DumpableUnknown: the stat trick cannot tell (B's euid already is the root of its
	// mm->user_ns, so task_dump_owner gives the same owner either way).
	DumpableUnknown Dumpable = iota
	DumpableYes              // SUID_DUMP_USER
	DumpableNo               // SUID_DUMP_DISABLE or SUID_DUMP_ROOT: non-dumpable for ptrace
)

func (d Dumpable) String() string {
	switch d {
	case DumpableYes:
		return "dumpable"
	case DumpableNo:
		return "non-dumpable"
	}
	return "dumpable?"
}

// UserNS is one user namespace on a process's ancestry chain.
type UserNS struct {
	Inode    uint64
	OwnerUID uint32 // NS_GET_OWNER_UID: the euid of the namespace's creator, as the observer sees it
}

// Proc is what /proc says about one process, read once per refresh by ReadProc. Ids are as
// the observer's user namespace maps them: exact from the initial namespace (kernel.md A.3).
type Proc struct {
	PID       int
	Comm      string
	State     byte // first letter of State: R S D T t Z X I
	Tgid      int
	PPid      int
	TracerPid int
	// UID and GID are real, effective, saved and filesystem ids (the 4 fields of Uid:/Gid:).
	UID, GID       [4]uint32
	Groups         []uint32
	CapPrm, CapEff uint64
	// Seccomp is 0 (off), 1 (strict) or 2 (filter); -1 when the line is missing
	// (CONFIG_SECCOMP off). SeccompFilters counts the attached filters.
	Seccomp, SeccompFilters int
	// SeccompTID is the thread whose seccomp state Seccomp, SeccompFilters and Filters are
	// (the measured thread's, once the matrix is measured; 0: the main thread's status).
	SeccompTID int
	// NSpid lists the pid in each PID namespace, the observer's first and B's own last.
	NSpid []int
	// HasMM is true when the process has an address space (VmSize: present); kernel threads
	// and zombies have none.
	HasMM bool

	// UserNS is the user namespace chain: the process's own first, then its parents as far as
	// NS_GET_PARENT reaches (the observer's namespace). PidNS is the same for PID namespaces.
	UserNS []UserNS
	PidNS  []uint64
	MntNS  uint64
	// RootUID is the id uid 0 of the process's own user namespace maps to (from uid_map), or
	// -1 when unmapped or unknown.
	RootUID int64

	// Dumpable comes from the stat trick (A.3 row 6): a non-dumpable process's files in
	// /proc/PID are owned by the root of mm->user_ns (DumpOwnerUID/GID) while the 0555
	// directory keeps its euid/egid (fs/proc/base.c task_dump_owner).
	Dumpable                   Dumpable
	DumpOwnerUID, DumpOwnerGID uint32

	// ReadableAddr is the start of a readable mapping from /proc/PID/maps, the address a
	// 1-byte process_vm_readv probe uses; 0 when none was found.
	ReadableAddr uint64
	// Ancestors are the tgids up the PPid (real_parent) chain, nearest first, ending at 1 or
	// at a process whose parent is outside the observer's view. Yama scope 1 walks this.
	Ancestors []int

	// Ptracer is B's PR_SET_PTRACER value, which /proc does not show: 0 none or unknown, -1
	// PR_SET_PTRACER_ANY, otherwise a pid. Set it from outside knowledge (Open MPI's smsc/cma
	// sets ANY whenever ptrace_scope is not 0).
	Ptracer int
	// Filters are the process's seccomp filters as raw sock_filter arrays, newest first
	// (PTRACE_SECCOMP_GET_FILTER index order); nil when not read. The tracer fills this.
	Filters [][]byte
}

// Exited says whether B has no mm because it is a zombie or dead.
func (p Proc) Exited() bool { return p.State == 'Z' || p.State == 'X' }

// ReadProc reads /proc/PID. Only the status file is required (its absence means the process
// is gone: the error wraps ENOENT or ESRCH); the other facts are best effort and stay zero
// when unreadable (a zombie has no namespaces or maps).
func ReadProc(pid int) (Proc, error) {
	var r Reader
	return r.Read(pid)
}

// Reader reads many processes in one refresh, sharing the walk up the process tree (the
// ancestors of a job's ranks are mostly the same launcher, shell and init). Use a new
// Reader per refresh: its cache would go stale as processes exit and pids are reused.
type Reader struct {
	ppid map[int]int // pid -> ppid, from status or stat files read during this refresh
}

// ReadProcs reads every pid with one Reader. A process that has exited is left out, its
// error (wrapping ENOENT or ESRCH) collected in errs.
func ReadProcs(pids []int) (procs []Proc, errs []error) {
	var r Reader
	procs = make([]Proc, 0, len(pids))
	for _, pid := range pids {
		p, err := r.Read(pid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		procs = append(procs, p)
	}
	return procs, errs
}

// Read reads /proc/PID like ReadProc.
func (r *Reader) Read(pid int) (Proc, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Proc{}, fmt.Errorf("read proc %d: %w", pid, err)
	}
	p, err := ParseStatus(b)
	if err != nil {
		return Proc{}, fmt.Errorf("read proc %d: %w", pid, err)
	}
	p.PID = pid
	p.RootUID = -1

	p.UserNS = userNSChain(dir + "/ns/user")
	p.PidNS = nsChain(dir + "/ns/pid")
	if st, err := statIno(dir + "/ns/mnt"); err == nil {
		p.MntNS = st
	}
	if m, err := os.ReadFile(dir + "/uid_map"); err == nil {
		p.RootUID = ParseIDMapRoot(m)
	}
	p.readDumpable(dir)
	p.ReadableAddr = readableAddr(dir + "/maps")
	if r.ppid == nil {
		r.ppid = map[int]int{}
	}
	r.ppid[pid] = p.PPid
	p.Ancestors = r.ancestors(p.PPid)
	return p, nil
}

// readDumpable applies the stat trick of kernel.md A.3 row 6.
func (p *Proc) readDumpable(dir string) {
	var d, f unix.Stat_t
	if unix.Stat(dir, &d) != nil || unix.Stat(dir+"/status", &f) != nil {
		return
	}
	p.DumpOwnerUID, p.DumpOwnerGID = f.Uid, f.Gid
	switch {
	case !p.HasMM:
		p.Dumpable = DumpableUnknown // no mm: files are root's, nothing to learn
	case f.Uid != d.Uid || f.Gid != d.Gid:
		p.Dumpable = DumpableNo
	case p.RootUID >= 0 && int64(d.Uid) == p.RootUID, d.Uid == 0:
		// The euid already is (probably) the root of mm->user_ns: both cases look the same.
		p.Dumpable = DumpableUnknown
	default:
		p.Dumpable = DumpableYes
	}
}

// ParseStatus parses /proc/PID/status. Uid, Gid and Tgid are required; everything else is
// optional (older kernels lack NSpid and Seccomp_filters).
func ParseStatus(b []byte) (Proc, error) {
	p := Proc{Seccomp: -1, RootUID: -1}
	var haveUID, haveGID, haveTgid bool
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		key := string(line[:colon]) // the compiler does not allocate for the switch
		val := bytes.TrimSpace(line[colon+1:])
		var err error
		switch key {
		case "Name":
			p.Comm = string(val)
		case "State":
			if len(val) == 0 {
				return p, fmt.Errorf("parse status: empty State")
			}
			p.State = val[0]
		case "Tgid":
			p.Tgid, err = atoi(val)
			haveTgid = err == nil
		case "PPid":
			p.PPid, err = atoi(val)
		case "TracerPid":
			p.TracerPid, err = atoi(val)
		case "Uid":
			err = ids4(val, &p.UID)
			haveUID = err == nil
		case "Gid":
			err = ids4(val, &p.GID)
			haveGID = err == nil
		case "Groups":
			p.Groups = p.Groups[:0]
			for _, f := range bytes.Fields(val) {
				var g uint64
				if g, err = strconv.ParseUint(string(f), 10, 32); err != nil {
					break
				}
				p.Groups = append(p.Groups, uint32(g))
			}
		case "CapPrm":
			p.CapPrm, err = strconv.ParseUint(string(val), 16, 64)
		case "CapEff":
			p.CapEff, err = strconv.ParseUint(string(val), 16, 64)
		case "Seccomp":
			p.Seccomp, err = atoi(val)
			if err == nil && (p.Seccomp < 0 || p.Seccomp > 2) {
				err = fmt.Errorf("mode %d", p.Seccomp)
			}
		case "Seccomp_filters":
			p.SeccompFilters, err = atoi(val)
		case "NSpid":
			p.NSpid = p.NSpid[:0]
			for _, f := range bytes.Fields(val) {
				var n int
				if n, err = atoi(f); err != nil {
					break
				}
				p.NSpid = append(p.NSpid, n)
			}
		case "VmSize":
			p.HasMM = true
		}
		if err != nil {
			return p, fmt.Errorf("parse status %s: %w", key, err)
		}
	}
	if !haveUID || !haveGID || !haveTgid {
		return p, fmt.Errorf("parse status: missing Uid, Gid or Tgid")
	}
	if len(p.NSpid) == 0 {
		p.NSpid = []int{p.Tgid} // pre-4.1 kernel: one namespace as far as we can tell
	}
	return p, nil
}

func atoi(b []byte) (int, error) {
	n, err := strconv.ParseInt(string(b), 10, 32)
	return int(n), err
}

func ids4(val []byte, out *[4]uint32) error {
	f := bytes.Fields(val)
	if len(f) != 4 {
		return fmt.Errorf("%d fields, want 4", len(f))
	}
	for i := range out {
		n, err := strconv.ParseUint(string(f[i]), 10, 32)
		if err != nil {
			return err
		}
		out[i] = uint32(n)
	}
	return nil
}

// ParseIDMapRoot returns the outside id that inside id 0 maps to in a uid_map/gid_map file,
// or -1 when 0 is unmapped.
func ParseIDMapRoot(b []byte) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		out, err2 := strconv.ParseUint(f[1], 10, 32)
		n, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || n == 0 {
			continue
		}
		if in == 0 {
			return int64(out)
		}
	}
	return -1
}

// ParseMapsReadable returns the start of the first readable mapping in /proc/PID/maps text
// that a process_vm_readv can read ([vvar] and [vsyscall] cannot be read remotely).
func ParseMapsReadable(b []byte) uint64 {
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		if a := readableLine(line); a != 0 {
			return a
		}
	}
	return 0
}

func readableLine(line []byte) uint64 {
	f := bytes.Fields(line)
	if len(f) < 5 || len(f[1]) < 1 || f[1][0] != 'r' {
		return 0
	}
	if len(f) >= 6 {
		switch string(f[5]) {
		case "[vvar]", "[vvar_vclock]", "[vsyscall]":
			return 0
		}
	}
	dash := bytes.IndexByte(f[0], '-')
	if dash <= 0 {
		return 0
	}
	a, err := strconv.ParseUint(string(f[0][:dash]), 16, 64)
	if err != nil {
		return 0
	}
	return a
}

// readableAddr scans maps line by line and stops at the first readable mapping, so a process
// with thousands of mappings costs one read.
func readableAddr(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if a := readableLine(sc.Bytes()); a != 0 {
			return a
		}
	}
	return 0
}

// ParseStatPPid returns the ppid field of /proc/PID/stat (the 4th field; comm may contain
// spaces and parentheses, so parse after the last ')').
func ParseStatPPid(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse stat: no comm")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("parse stat: short")
	}
	return atoi(f[1])
}

// ancestors walks PPid from ppid upwards. A subreaper or an exited parent ends the chain
// where the kernel's real_parent chain ends too (yama task_is_descendant walks real_parent).
func (r *Reader) ancestors(ppid int) []int {
	var out []int
	for ppid > 0 && len(out) < 256 {
		out = append(out, ppid)
		if ppid == 1 {
			break
		}
		next, ok := r.ppid[ppid]
		if !ok {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/stat")
			if err != nil {
				break
			}
			if next, err = ParseStatPPid(b); err != nil {
				break
			}
			r.ppid[ppid] = next
		}
		ppid = next
	}
	return out
}

func statIno(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// nsChain follows NS_GET_PARENT from a namespace file until the kernel refuses (EPERM: the
// parent is outside the observer's namespace, or this is the initial one).
func nsChain(path string) []uint64 {
	var out []uint64
	walkNS(path, func(fd int, ino uint64) { out = append(out, ino) })
	return out
}

func userNSChain(path string) []UserNS {
	var out []UserNS
	walkNS(path, func(fd int, ino uint64) {
		uid, err := unix.IoctlGetUint32(fd, unix.NS_GET_OWNER_UID)
		if err != nil {
			uid = ^uint32(0)
		}
		out = append(out, UserNS{Inode: ino, OwnerUID: uid})
	})
	return out
}

func walkNS(path string, visit func(fd int, ino uint64)) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	for depth := 0; depth < 40; depth++ { // MAX_USER_NS_LEVEL is 32, pid ns 32
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		visit(fd, st.Ino)
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		unix.Close(fd)
		fd = -1
		if err != nil {
			break
		}
		fd = parent
	}
	if fd >= 0 {
		unix.Close(fd)
	}
}
