package tracer

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
)

// Where an injection's guard (arch.Guard) is written: bytes of an executable mapping that no
// code of the process uses, the tail of the mapping's last page past the end of every ELF
// segment (and, for the vDSO, past its section headers, which gdb reads from memory). The
// loader maps whole pages, so that tail is there in almost every module; the first write gives
// the process a private copy of the page (FOLL_FORCE), whose bytes are put back after each
// injection.

// cave is one such tail.
type cave struct {
	start, end uint64
	module     string
}

// findCaves lists the unused tails of pid's executable mappings, the vDSO first. Memory is
// read with PTRACE_PEEKDATA through tid, a held thread of pid: under Yama's ptrace_scope 3
// even the tracer may not open /proc/PID/mem or use process_vm_readv.
func findCaves(pid, tid int) ([]cave, error) {
	maps, err := elfinfo.ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	var out []cave
	for _, m := range maps {
		if len(m.Perms) < 3 || m.Perms[0] != 'r' || m.Perms[2] != 'x' {
			continue
		}
		head, ok := moduleHead(maps, m)
		if !ok {
			continue
		}
		if used, ok := elfUsedEnd(tid, head, m); ok && used < m.End && m.End-used >= arch.GuardSize+64 {
			out = append(out, cave{start: (used + 63) &^ 63, end: m.End, module: m.Path})
		}
		if lo, hi, ok := headerGap(pid, head, m); ok {
			out = append(out, cave{start: lo, end: hi, module: m.Path})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].module == "[vdso]" && out[j].module != "[vdso]" })
	return out, nil
}

// moduleHead is the mapping of m's module that holds its ELF header (file offset 0).
func moduleHead(maps []elfinfo.Mapping, m elfinfo.Mapping) (elfinfo.Mapping, bool) {
	if m.Path == "[vdso]" {
		return m, true
	}
	if !m.IsFile() {
		return elfinfo.Mapping{}, false
	}
	for _, h := range maps {
		if h.Path == m.Path && h.Inode == m.Inode && h.Offset == 0 && h.Start <= m.Start {
			return h, true
		}
	}
	return elfinfo.Mapping{}, false
}

// elfUsedEnd reads the module's ELF header and program headers from memory and returns the
// highest address inside m that any segment (or the in-memory section headers) covers. It
// refuses anything it cannot read or that does not look like a 64-bit little-endian ELF.
func elfUsedEnd(tid int, head, m elfinfo.Mapping) (uint64, bool) {
	var eh [64]byte
	if err := peekBytes(tid, head.Start, eh[:]); err != nil || string(eh[:4]) != elf.ELFMAG ||
		eh[elf.EI_CLASS] != byte(elf.ELFCLASS64) || eh[elf.EI_DATA] != byte(elf.ELFDATA2LSB) {
		return 0, false
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := le.Uint64(eh[0x20:]), uint64(le.Uint16(eh[0x36:])), uint64(le.Uint16(eh[0x38:]))
	shoff, shentsize, shnum := le.Uint64(eh[0x28:]), uint64(le.Uint16(eh[0x3a:])), uint64(le.Uint16(eh[0x3c:]))
	if phentsize < 56 || phnum == 0 || phnum > 256 || phoff > head.End-head.Start {
		return 0, false
	}
	ph := make([]byte, phentsize*phnum)
	if err := peekBytes(tid, head.Start+phoff, ph); err != nil {
		return 0, false
	}
	// The load bias: the segment at file offset 0 starts at head.Start.
	bias, haveBias := uint64(0), false
	type seg struct{ lo, hi uint64 }
	var segs []seg
	for i := uint64(0); i < phnum; i++ {
		p := ph[i*phentsize:]
		if elf.ProgType(le.Uint32(p)) != elf.PT_LOAD {
			continue
		}
		off, vaddr, memsz := le.Uint64(p[8:]), le.Uint64(p[16:]), le.Uint64(p[40:])
		if off == 0 && !haveBias {
			bias, haveBias = head.Start-vaddr, true
		}
		segs = append(segs, seg{vaddr, vaddr + memsz})
	}
	if !haveBias {
		return 0, false
	}
	used := m.Start
	for _, s := range segs {
		lo, hi := s.lo+bias, s.hi+bias
		if hi <= m.Start || lo >= m.End {
			continue
		}
		used = max(used, hi) // only the space past the last segment in m counts
	}
	if head.Start == m.Start && shoff != 0 && shnum > 0 {
		used = max(used, head.Start+shoff+shentsize*shnum)
	}
	return used, true
}

// guardSite returns where to write a guard whose final jump goes to pc: a cave of pid within
// the branch's reach, the one holding pc's module first. Caves are cached until exec or exit.
func (t *Tracer) guardSite(pid, tid int, a arch.Arch, pc uint64) (uint64, error) {
	cs, ok := t.caves[pid]
	if !ok {
		var err error
		if cs, err = findCaves(pid, tid); err != nil {
			return 0, fmt.Errorf("guard site in %d: %w", pid, err)
		}
		if t.caves == nil {
			t.caves = map[int][]cave{}
		}
		t.caves[pid] = cs
	}
	// The vDSO first (listed first) where any distance is in reach; else the nearest cave.
	best, found := uint64(0), false
	dist := func(x uint64) uint64 {
		if x > pc {
			return x - pc
		}
		return pc - x
	}
	for _, c := range cs {
		if arch.GuardReaches(a, c.start, pc) && (!found || (a != arch.AMD64 && dist(c.start) < dist(best))) {
			best, found = c.start, true
		}
	}
	if !found {
		return 0, fmt.Errorf("guard site in %d: no unused executable bytes within reach of pc %#x (%d caves)", pid, pc, len(cs))
	}
	return best, nil
}

// headerGap is the unused space at the start of an executable mapping that also holds the
// module's ELF and program headers (a static Go binary, or one linked without separate-code):
// from the end of the program headers to the first section the segment loads, padding that
// nothing reads. The sections come from the module's file, read through /proc/PID/map_files
// (the very file mapped, whatever its name now).
func headerGap(pid int, head, m elfinfo.Mapping) (lo, hi uint64, ok bool) {
	if head.Start != m.Start || m.Offset != 0 || !m.IsFile() {
		return 0, 0, false
	}
	f, err := elf.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End))
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var first uint64
	for _, sec := range f.Sections {
		if sec.Flags&elf.SHF_ALLOC != 0 && sec.Addr != 0 && sec.Type != elf.SHT_NOBITS && (first == 0 || sec.Addr < first) {
			first = sec.Addr
		}
	}
	var base uint64 // link-time address of file offset 0
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 {
			base = p.Vaddr
			break
		}
	}
	phEnd := uint64(64) + uint64(len(f.Progs))*56 // headers at e_phoff 64, unless PT_PHDR says
	for _, p := range f.Progs {
		if p.Type == elf.PT_PHDR {
			phEnd = p.Off + p.Filesz
		}
	}
	if first <= base+phEnd {
		return 0, 0, false
	}
	lo = (m.Start + phEnd + 63) &^ 63
	hi = m.Start + (first - base)
	if hi > m.End || hi < lo+arch.GuardSize {
		return 0, 0, false
	}
	return lo, hi, true
}
