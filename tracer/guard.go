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
		used, ok := elfUsedEnd(tid, head, m)
		if !ok || used >= m.End || m.End-used < arch.GuardSize {
			continue
		}
		out = append(out, cave{start: (used + 63) &^ 63, end: m.End, module: m.Path})
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
