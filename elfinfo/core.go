package elfinfo

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
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
	var loads []Mapping
	for _, m := range in.Maps {
		if dumped(m) {
			loads = append(loads, m)
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
	for _, m := range loads {
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
		size := m.End - m.Start
		binary.Write(bw, le, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(flags), Off: off,
			Vaddr: m.Start, Filesz: size, Memsz: size, Align: corePageSize})
		off += size
	}
	bw.Write(notes.Bytes())
	bw.Write(make([]byte, dataOff-noteOff-uint64(notes.Len())))
	buf := make([]byte, 256<<10)
	for _, m := range loads {
		for addr := m.Start; addr < m.End; {
			n := min(uint64(len(buf)), m.End-addr)
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
