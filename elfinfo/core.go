package elfinfo

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// CoreThread is one thread of a core: its TID, its registers as the raw words of the arch's
// user_regs_struct (PTRACE_GETREGS / NT_PRSTATUS regset order) and its pending signal.
type CoreThread struct {
	TID    int
	Regs   []uint64
	Signal int
}

// CoreInput is everything WriteCore needs; the caller (the tracer) gathers it while the
// process sits in a signal-delivery-stop.
type CoreInput struct {
	Arch       string // "amd64", "arm64", "ppc64le"
	PID, PPID  int
	UID, GID   int
	Comm, Args string
	Signal     int
	SigCode    int
	SigAddr    uint64
	SigErrno   int
	Threads    []CoreThread // the first is the crashing thread
	Maps       []Mapping
	Auxv       []byte
	Mem        MemReader // reads each dumped mapping
	// Filter is the process's /proc/PID/coredump_filter (DefaultCoreFilter when unknown), and
	// Smaps its /proc/PID/smaps by start address (ReadSmaps). Together they decide, as
	// fs/coredump.c vma_dump_size does, how much of each mapping is written. With Smaps, a
	// mapping it does not list (one that appeared after it was read) is not written; without
	// it (nil), nothing is known to be MADV_DONTDUMP and every writable private mapping is
	// taken to hold anonymous pages: callers that dump a real process always give it.
	Filter uint32
	Smaps  map[uint64]Smap
}

// DefaultCoreFilter is the kernel's default coredump_filter: anonymous private and shared
// memory, ELF headers, private huge pages.
const DefaultCoreFilter = 0x33

// coredump_filter bits (core(5)).
const (
	filterAnonPrivate = 1 << iota
	filterAnonShared
	filterMappedPrivate
	filterMappedShared
	filterELFHeaders
	filterHugetlbPrivate
	filterHugetlbShared
)

// dumpSize is how many bytes of m, from its start, go into the core: the whole mapping, its
// first page (an ELF header under filterELFHeaders), or none (its PT_LOAD then only says
// where it was), following fs/coredump.c vma_dump_size in its order: the special mappings
// always; never VM_DONTDUMP; hugetlb by its filter bits; never VM_IO (nor VM_PFNMAP, whose
// pages the kernel cannot read either: get_dump_page fails and it writes a hole); then
// shared, anonymous and file-backed private memory by the filter.
func dumpSize(m Mapping, in CoreInput, head func() bool) uint64 {
	size := m.End - m.Start
	filter := in.Filter
	switch m.Path {
	case "[vdso]", "[vsyscall]", "[sigpage]":
		return size // always_dump_vma: special mappings the debugger needs
	}
	sm, known := in.Smaps[m.Start]
	if in.Smaps != nil && !known {
		return 0
	}
	shared := len(m.Perms) >= 4 && m.Perms[3] == 's'
	switch {
	case sm.Flags.Has("dd"):
		return 0 // MADV_DONTDUMP: where OpenSSL's secure heap, gpg and ssh-agent keep keys
	case sm.Flags.Has("ht"):
		if (shared && filter&filterHugetlbShared != 0) || (!shared && filter&filterHugetlbPrivate != 0) {
			return size
		}
		return 0
	case sm.Flags.Has("io"), sm.Flags.Has("pf"):
		return 0
	}
	if shared {
		anonShared := !m.IsFile() || m.Deleted || strings.HasPrefix(m.Path, "/SYSV") || m.Path == "/dev/zero"
		if (anonShared && filter&filterAnonShared != 0) || (!anonShared && filter&filterMappedShared != 0) {
			return size
		}
		return 0
	}
	anon := sm.Anon || (in.Smaps == nil && len(m.Perms) > 1 && m.Perms[1] == 'w')
	if anon && filter&filterAnonPrivate != 0 {
		return size
	}
	if !m.IsFile() {
		return 0 // private anonymous memory never written holds only zeros
	}
	if filter&filterMappedPrivate != 0 {
		return size
	}
	if filter&filterELFHeaders != 0 && m.Offset == 0 && head() {
		return min(size, corePageSize)
	}
	return 0
}

// coreArch is the per-arch shape of a core (include/uapi/linux/elfcore.h, asm/elf.h ELF_NGREG).
type coreArch struct {
	machine elf.Machine
	flags   uint32
	ngreg   int // words of elf_gregset_t
}

var coreArches = map[string]coreArch{
	"amd64":   {machine: elf.EM_X86_64, ngreg: 27},
	"arm64":   {machine: elf.EM_AARCH64, ngreg: 34},
	"ppc64le": {machine: elf.EM_PPC64, flags: 2 /* ELFv2, ELF_CORE_EFLAGS */, ngreg: 48},
}

const (
	corePageSize = 4096
	ntPRSTATUS   = 1
	ntPRPSINFO   = 3
	ntAUXV       = 6
	ntSIGINFO    = 0x53494749
	ntFILE       = 0x46494c45
)

var le = binary.LittleEndian

// prstatus lays out struct elf_prstatus for a 64-bit little-endian arch: elf_siginfo (12),
// pr_cursig (2+2 pad), sigpend, sighold, pid, ppid, pgrp, sid, four timevals (64), pr_reg,
// pr_fpvalid, padded to 8.
// The crashing (first) thread also carries si_code and si_errno.
func prstatus(a coreArch, t CoreThread, crashing bool, in CoreInput) []byte {
	size := 112 + a.ngreg*8 + 4
	size = (size + 7) &^ 7
	b := make([]byte, size)
	le.PutUint32(b[0:], uint32(t.Signal))
	if crashing {
		le.PutUint32(b[4:], uint32(in.SigCode))
		le.PutUint32(b[8:], uint32(in.SigErrno))
	}
	le.PutUint16(b[12:], uint16(t.Signal))
	le.PutUint32(b[32:], uint32(t.TID))
	le.PutUint32(b[36:], uint32(in.PPID))
	le.PutUint32(b[40:], uint32(in.PID)) // pgrp and sid are not in CoreInput; the pid stands in
	le.PutUint32(b[44:], uint32(in.PID))
	for i := 0; i < a.ngreg && i < len(t.Regs); i++ {
		le.PutUint64(b[112+8*i:], t.Regs[i])
	}
	return b
}

// prpsinfo lays out struct elf_prpsinfo (136 bytes on 64-bit arches).
func prpsinfo(in CoreInput) []byte {
	b := make([]byte, 136)
	b[0] = 0   // pr_state: running
	b[1] = 'R' // pr_sname
	le.PutUint32(b[16:], uint32(in.UID))
	le.PutUint32(b[20:], uint32(in.GID))
	le.PutUint32(b[24:], uint32(in.PID))
	le.PutUint32(b[28:], uint32(in.PPID))
	le.PutUint32(b[32:], uint32(in.PID))
	le.PutUint32(b[36:], uint32(in.PID))
	copy(b[40:55], in.Comm)
	copy(b[56:135], in.Args)
	return b
}

// siginfo lays out the 128-byte siginfo_t of the crash (si_addr at 16 for faults).
func siginfo(in CoreInput) []byte {
	b := make([]byte, 128)
	le.PutUint32(b[0:], uint32(in.Signal))
	le.PutUint32(b[4:], uint32(in.SigErrno))
	le.PutUint32(b[8:], uint32(in.SigCode))
	le.PutUint64(b[16:], in.SigAddr)
	return b
}

// ntFile lays out NT_FILE as fs/binfmt_elf.c:fill_files_note does: count, page size, then
// (start, end, file offset in pages) per file mapping, then the NUL-terminated names.
func ntFile(ms []Mapping) []byte {
	var files []Mapping
	for _, m := range ms {
		if m.IsFile() {
			files = append(files, m)
		}
	}
	var b bytes.Buffer
	w := func(v uint64) { binary.Write(&b, le, v) }
	w(uint64(len(files)))
	w(corePageSize)
	for _, m := range files {
		w(m.Start)
		w(m.End)
		w(m.Offset / corePageSize)
	}
	for _, m := range files {
		b.WriteString(m.Path)
		b.WriteByte(0)
	}
	return b.Bytes()
}

func appendNote(b *bytes.Buffer, typ uint32, desc []byte) {
	binary.Write(b, le, [3]uint32{5, uint32(len(desc)), typ})
	b.WriteString("CORE\x00\x00\x00\x00")
	b.Write(desc)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
}

// dumped reports whether WriteCore writes a mapping's memory: readable, and not [vvar] (whose
// pages fault for some clocks) or a device mapping (VM_IO in the kernel's vma_dump_size).
func dumped(m Mapping) bool {
	if !m.Readable() || m.End <= m.Start {
		return false
	}
	switch m.Path {
	case "[vvar]", "[vvar_vclock]", "[vsyscall]":
		return false
	}
	if len(m.Path) > 5 && m.Path[:5] == "/dev/" && m.Path != "/dev/zero" && (len(m.Path) < 9 || m.Path[:9] != "/dev/shm/") {
		return false
	}
	return true
}

// WriteCore writes an ELF core file of the process described by in: one PT_NOTE (NT_PRSTATUS
// per thread followed by the process notes, as the kernel orders them for the first thread)
// and one PT_LOAD per dumped mapping. Pages the MemReader cannot read are written as zeros so
// offsets stay right. `gdb EXE CORE` shows the first thread's PC as frame #0.
func WriteCore(w io.Writer, in CoreInput) error {
	a, ok := coreArches[in.Arch]
	if !ok {
		return fmt.Errorf("write core of %d: unsupported arch %q", in.PID, in.Arch)
	}
	if len(in.Threads) == 0 {
		return fmt.Errorf("write core of %d: no threads", in.PID)
	}
	var notes bytes.Buffer
	for i, t := range in.Threads {
		appendNote(&notes, ntPRSTATUS, prstatus(a, t, i == 0, in))
		if i == 0 {
			appendNote(&notes, ntPRPSINFO, prpsinfo(in))
			appendNote(&notes, ntSIGINFO, siginfo(in))
			if len(in.Auxv) > 0 {
				appendNote(&notes, ntAUXV, in.Auxv)
			}
			appendNote(&notes, ntFILE, ntFile(in.Maps))
		}
	}
	if in.Filter == 0 && in.Smaps == nil {
		in.Filter = 0x7f // no filter given: every readable mapping whole
	}
	var loads []Mapping
	var filesz []uint64
	for _, m := range in.Maps {
		if dumped(m) {
			loads = append(loads, m)
			filesz = append(filesz, dumpSize(m, in, func() bool {
				var magic [4]byte
				return in.Mem != nil && in.Mem(m.Start, magic[:]) == nil && string(magic[:]) == elf.ELFMAG
			}))
		}
	}
	const ehsize, phentsize = 64, 56
	phnum := 1 + len(loads)
	noteOff := uint64(ehsize + phentsize*phnum)
	dataOff := (noteOff + uint64(notes.Len()) + corePageSize - 1) &^ (corePageSize - 1)

	bw := bufio.NewWriterSize(w, 1<<16)
	hdr := elf.Header64{
		Ident:     [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)},
		Type:      uint16(elf.ET_CORE),
		Machine:   uint16(a.machine),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     ehsize,
		Flags:     a.flags,
		Ehsize:    ehsize,
		Phentsize: phentsize,
		Phnum:     uint16(phnum),
	}
	if phnum >= 0xffff {
		return fmt.Errorf("write core of %d: %d segments need PN_XNUM", in.PID, phnum)
	}
	binary.Write(bw, le, hdr)
	binary.Write(bw, le, elf.Prog64{Type: uint32(elf.PT_NOTE), Off: noteOff, Filesz: uint64(notes.Len())})
	off := dataOff
	for i, m := range loads {
		var flags elf.ProgFlag
		if m.Perms[0] == 'r' {
			flags |= elf.PF_R
		}
		if m.Perms[1] == 'w' {
			flags |= elf.PF_W
		}
		if m.Perms[2] == 'x' {
			flags |= elf.PF_X
		}
		binary.Write(bw, le, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(flags), Off: off,
			Vaddr: m.Start, Filesz: filesz[i], Memsz: m.End - m.Start, Align: corePageSize})
		off += filesz[i]
	}
	bw.Write(notes.Bytes())
	bw.Write(make([]byte, dataOff-noteOff-uint64(notes.Len())))
	buf := make([]byte, 256<<10)
	for i, m := range loads {
		end := m.Start + filesz[i]
		for addr := m.Start; addr < end; {
			n := min(uint64(len(buf)), end-addr)
			chunk := buf[:n]
			if in.Mem == nil || in.Mem(addr, chunk) != nil {
				// Read page by page; holes (e.g. past the end of a mapped file) become zeros.
				for p := uint64(0); p < n; p += corePageSize {
					page := chunk[p:min(p+corePageSize, n)]
					if in.Mem == nil || in.Mem(addr+p, page) != nil {
						clear(page)
					}
				}
			}
			if _, err := bw.Write(chunk); err != nil {
				return fmt.Errorf("write core of %d: %w", in.PID, err)
			}
			addr += n
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write core of %d: %w", in.PID, err)
	}
	return nil
}
