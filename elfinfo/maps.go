package elfinfo

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps (fs/proc/task_mmu.c:show_map_vma).
type Mapping struct {
	Start, End, Offset uint64
	Perms              string // "r-xp"
	Dev                string // "fd:01" (major:minor, hex)
	Inode              uint64
	Path               string // file path, "[stack]", "[vdso]", or "" for anonymous memory
	// Deleted is set when the kernel appended " (deleted)" to the path (the file was unlinked
	// or replaced after mapping); Path has the suffix removed so keys stay stable.
	Deleted bool
}

// Readable reports whether the mapping has read permission.
func (m Mapping) Readable() bool { return len(m.Perms) > 0 && m.Perms[0] == 'r' }

// IsFile reports whether the mapping is backed by a file (an inode), not [heap], [vdso] etc.
func (m Mapping) IsFile() bool { return m.Inode != 0 && strings.HasPrefix(m.Path, "/") }

const deletedSuffix = " (deleted)"

// ParseMaps parses the text of /proc/PID/maps. Lines come sorted by address from the kernel;
// the result is sorted again so FindMapping's binary search holds for any input.
func ParseMaps(data []byte) ([]Mapping, error) {
	var ms []Mapping
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := parseMapsLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("parse maps line %d: %w", n, err)
		}
		ms = append(ms, m)
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Start < ms[j].Start })
	// The kernel never reports overlapping VMAs; refusing them keeps FindMapping's binary
	// search right for whatever is accepted.
	for i := 1; i < len(ms); i++ {
		if ms[i].Start < ms[i-1].End {
			return nil, fmt.Errorf("parse maps: %x-%x overlaps %x-%x", ms[i].Start, ms[i].End, ms[i-1].Start, ms[i-1].End)
		}
	}
	return ms, nil
}

// field cuts the next space-separated field off s.
func field(s string) (string, string) {
	s = strings.TrimLeft(s, " ")
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func parseMapsLine(line string) (Mapping, error) {
	var m Mapping
	rng, rest := field(line)
	perms, rest := field(rest)
	off, rest := field(rest)
	dev, rest := field(rest)
	ino, rest := field(rest)
	lo, hi, ok := strings.Cut(rng, "-")
	if !ok {
		return m, fmt.Errorf("address range %q", rng)
	}
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return m, fmt.Errorf("start %q: %w", lo, err)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return m, fmt.Errorf("end %q: %w", hi, err)
	}
	if m.End <= m.Start {
		return m, fmt.Errorf("range %q is empty or ends before it starts", rng)
	}
	if len(perms) != 4 {
		return m, fmt.Errorf("perms %q", perms)
	}
	m.Perms = perms
	if m.Offset, err = strconv.ParseUint(off, 16, 64); err != nil {
		return m, fmt.Errorf("offset %q: %w", off, err)
	}
	if !strings.Contains(dev, ":") {
		return m, fmt.Errorf("dev %q", dev)
	}
	m.Dev = dev
	if m.Inode, err = strconv.ParseUint(ino, 10, 64); err != nil {
		return m, fmt.Errorf("inode %q: %w", ino, err)
	}
	// The path is the rest of the line after padding; it may itself contain spaces.
	m.Path = strings.TrimLeft(rest, " ")
	if m.Inode != 0 && strings.HasSuffix(m.Path, deletedSuffix) {
		m.Path = strings.TrimSuffix(m.Path, deletedSuffix)
		m.Deleted = true
	}
	return m, nil
}

// ReadMaps reads and parses /proc/PID/maps.
func ReadMaps(pid int) ([]Mapping, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil, fmt.Errorf("read maps of %d: %w", pid, err)
	}
	ms, err := ParseMaps(data)
	if err != nil {
		return nil, fmt.Errorf("maps of %d: %w", pid, err)
	}
	return ms, nil
}

// FindMapping returns the mapping containing addr; ms must be sorted by Start (as ParseMaps
// returns it).
func FindMapping(ms []Mapping, addr uint64) (Mapping, bool) {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].End > addr })
	if i < len(ms) && ms[i].Start <= addr && addr < ms[i].End {
		return ms[i], true
	}
	return Mapping{}, false
}

// ReadCoreFilter returns pid's /proc/PID/coredump_filter (DefaultCoreFilter if unreadable).
func ReadCoreFilter(pid int) uint32 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/coredump_filter")
	if err != nil {
		return DefaultCoreFilter
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 32)
	if err != nil {
		return DefaultCoreFilter
	}
	return uint32(v)
}

// Smap is what /proc/PID/smaps says of one mapping that decides its part of a core, as
// fs/coredump.c vma_dump_size reads the VMA.
type Smap struct {
	// Anon: the mapping holds anonymous pages, resident or swapped out (smaps Anonymous or
	// Swap above 0): private memory written at least once, the kernel's vma->anon_vma.
	Anon bool
	// Flags are the VmFlags mnemonics (fs/proc/task_mmu.c show_smap_vma_flags).
	Flags VmFlags
}

// VmFlags is the VmFlags line of one smaps entry: "rd wr mr mw me ac dd".
type VmFlags string

// Has reports whether the two-letter flag is set: "dd" VM_DONTDUMP (madvise MADV_DONTDUMP,
// device and [vvar] mappings), "io" VM_IO, "pf" VM_PFNMAP, "ht" hugetlb.
func (v VmFlags) Has(flag string) bool {
	for _, f := range strings.Fields(string(v)) {
		if f == flag {
			return true
		}
	}
	return false
}

// ReadSmaps reads pid's /proc/PID/smaps, keyed by each mapping's start address.
func ReadSmaps(pid int) (map[uint64]Smap, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return nil, err
	}
	return ParseSmaps(b), nil
}

// ParseSmaps parses the text of /proc/PID/smaps: a maps line opens each entry, "Key: value"
// lines follow. Lines it does not know are ignored.
func ParseSmaps(data []byte) map[uint64]Smap {
	out := map[uint64]Smap{}
	var start uint64
	open := false
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		if c := line[0]; (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') {
			lo, _, ok := strings.Cut(strings.Fields(line)[0], "-")
			v, err := strconv.ParseUint(lo, 16, 64)
			open = ok && err == nil
			if open {
				start = v
				out[start] = Smap{}
			}
			continue
		}
		if !open {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		sm := out[start]
		switch key {
		case "Anonymous", "Swap":
			if f := strings.Fields(val); len(f) > 0 && f[0] != "0" {
				sm.Anon = true
			}
		case "VmFlags":
			sm.Flags = VmFlags(strings.TrimSpace(val))
		}
		out[start] = sm
	}
	return out
}
