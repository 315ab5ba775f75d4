package elfinfo

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"testing"
)

// notes splits a PT_NOTE segment into (type, desc) pairs.
func notes(t *testing.T, b []byte) map[uint32][][]byte {
	t.Helper()
	out := map[uint32][][]byte{}
	for len(b) >= 12 {
		namesz, descsz, typ := le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
		nameEnd := 12 + align4(uint64(namesz))
		if string(b[12:12+namesz]) != "CORE\x00" || nameEnd+uint64(descsz) > uint64(len(b)) {
			t.Fatalf("bad note header %d %d %#x", namesz, descsz, typ)
		}
		out[typ] = append(out[typ], b[nameEnd:nameEnd+uint64(descsz)])
		b = b[nameEnd+align4(uint64(descsz)):]
	}
	return out
}

// TestWriteCoreLayout checks the core's structure for every arch on any host: the kernel's
// sizeof(struct elf_prstatus) per arch (pr_reg at 112, ELF_NGREG words), notes, and that
// memory lands at the right file offsets with unreadable pages zeroed.
func TestWriteCoreLayout(t *testing.T) {
	maps, err := ParseMaps([]byte(`400000-402000 r-xp 00000000 fd:01 7 /bin/prog
7f0000000000-7f0000003000 rw-p 00000000 00:00 0
7f0000010000-7f0000011000 ---p 00000000 00:00 0
7ffd00000000-7ffd00001000 r--p 00000000 00:00 0 [vvar]
7ffd00001000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
`))
	if err != nil {
		t.Fatal(err)
	}
	const badPage = 0x7f0000001000
	errFault := errors.New("EIO")
	mem := func(addr uint64, buf []byte) error {
		if addr <= badPage && badPage < addr+uint64(len(buf)) {
			return errFault
		}
		for i := range buf {
			buf[i] = byte((addr + uint64(i)) >> 12) // the page number, so misplacement shows
		}
		return nil
	}
	for _, tc := range []struct {
		arch    string
		machine elf.Machine
		size    int // sizeof(struct elf_prstatus)
		ngreg   int
	}{
		{"amd64", elf.EM_X86_64, 336, 27},
		{"arm64", elf.EM_AARCH64, 392, 34},
		{"ppc64le", elf.EM_PPC64, 504, 48},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			regs := make([]uint64, tc.ngreg)
			for i := range regs {
				regs[i] = 0x1000 + uint64(i)
			}
			in := CoreInput{Arch: tc.arch, PID: 42, PPID: 1, Comm: "prog", Args: "prog -x",
				Signal: 11, SigCode: 1, SigAddr: 0xdead,
				Threads: []CoreThread{{TID: 42, Regs: regs, Signal: 11}, {TID: 43, Regs: regs}},
				Maps:    maps, Auxv: []byte{6, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0}, Mem: mem}
			var buf bytes.Buffer
			if err := WriteCore(&buf, in); err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if f.Type != elf.ET_CORE || f.Machine != tc.machine {
				t.Fatalf("type %v machine %v", f.Type, f.Machine)
			}
			var loads []*elf.Prog
			var ns map[uint32][][]byte
			for _, p := range f.Progs {
				switch p.Type {
				case elf.PT_NOTE:
					b := make([]byte, p.Filesz)
					p.ReadAt(b, 0)
					ns = notes(t, b)
				case elf.PT_LOAD:
					loads = append(loads, p)
				}
			}
			st := ns[ntPRSTATUS]
			if len(st) != 2 || len(st[0]) != tc.size {
				t.Fatalf("%d NT_PRSTATUS, first %d bytes; want 2 of %d", len(st), len(st[0]), tc.size)
			}
			if le.Uint32(st[0][32:]) != 42 || le.Uint32(st[1][32:]) != 43 || le.Uint16(st[0][12:]) != 11 {
				t.Errorf("pr_pid/pr_cursig wrong: %x", st[0][:48])
			}
			for i := range regs {
				if got := le.Uint64(st[0][112+8*i:]); got != regs[i] {
					t.Fatalf("pr_reg[%d] = %#x want %#x", i, got, regs[i])
				}
			}
			if si := ns[ntSIGINFO]; len(si) != 1 || le.Uint32(si[0]) != 11 || le.Uint64(si[0][16:]) != 0xdead {
				t.Errorf("NT_SIGINFO %x", si)
			}
			if ps := ns[ntPRPSINFO]; len(ps) != 1 || len(ps[0]) != 136 || string(ps[0][40:44]) != "prog" || string(ps[0][56:63]) != "prog -x" {
				t.Errorf("NT_PRPSINFO %q", ps)
			}
			if fl := ns[ntFILE]; len(fl) != 1 || binary.LittleEndian.Uint64(fl[0]) != 1 || !bytes.HasSuffix(fl[0], []byte("/bin/prog\x00")) {
				t.Errorf("NT_FILE %q", fl)
			}
			if len(ns[ntAUXV]) != 1 {
				t.Errorf("no NT_AUXV")
			}
			// The exe, the anonymous data and [vdso]; not the PROT_NONE guard nor [vvar].
			want := []uint64{0x400000, 0x7f0000000000, 0x7ffd00001000}
			if len(loads) != len(want) {
				t.Fatalf("%d PT_LOADs, want %d", len(loads), len(want))
			}
			for i, p := range loads {
				if p.Vaddr != want[i] || p.Off%corePageSize != 0 {
					t.Errorf("load %d at %#x off %#x", i, p.Vaddr, p.Off)
				}
				data := make([]byte, p.Filesz)
				if _, err := p.ReadAt(data, 0); err != nil {
					t.Fatal(err)
				}
				for off := uint64(0); off < p.Filesz; off += corePageSize {
					page := p.Vaddr + off
					w := byte(page >> 12)
					if page == badPage {
						w = 0
					}
					if data[off] != w || data[off+corePageSize-1] != w {
						t.Errorf("page %#x holds %#x, want %#x", page, data[off], w)
					}
				}
			}
		})
	}
}

// TestDumpSizeFollowsVmaDumpSize: fs/coredump.c vma_dump_size, rule by rule, under the
// kernel's default coredump_filter (0x33: anonymous private and shared, ELF headers, private
// hugetlb).
func TestDumpSizeFollowsVmaDumpSize(t *testing.T) {
	const page = corePageSize
	anon := Mapping{Start: 0x10000, End: 0x10000 + 4*page, Perms: "rw-p"}
	shm := Mapping{Start: 0x10000, End: 0x10000 + 4*page, Perms: "rw-s", Path: "/dev/zero", Inode: 5}
	file := Mapping{Start: 0x10000, End: 0x10000 + 4*page, Perms: "r--p", Path: "/usr/lib/libc.so.6", Inode: 9}
	vdso := Mapping{Start: 0x10000, End: 0x10000 + 2*page, Perms: "r-xp", Path: "[vdso]"}
	for _, tc := range []struct {
		name string
		m    Mapping
		smap *Smap // nil: not in smaps
		elf  bool  // the mapping starts with an ELF header
		want uint64
	}{
		{"anonymous, written", anon, &Smap{Anon: true, Flags: "rd wr mr mw me ac"}, false, 4 * page},
		{"anonymous, never written", anon, &Smap{Flags: "rd wr mr mw me ac"}, false, 0},
		{"MADV_DONTDUMP", anon, &Smap{Anon: true, Flags: "rd wr mr mw me ac dd"}, false, 0},
		{"VM_IO", anon, &Smap{Anon: true, Flags: "rd wr io pf dd"}, false, 0},
		{"VM_PFNMAP", anon, &Smap{Anon: true, Flags: "rd wr pf"}, false, 0},
		{"hugetlb private", anon, &Smap{Flags: "rd wr ht"}, false, 4 * page},
		{"hugetlb shared", Mapping{Start: 0x10000, End: 0x20000, Perms: "rw-s", Path: "/anon_hugepage (deleted)"}, &Smap{Flags: "rd wr sh ht"}, false, 0},
		{"shared anonymous", shm, &Smap{Flags: "rd wr sh"}, false, 4 * page},
		{"shared anonymous, DONTDUMP", shm, &Smap{Flags: "rd wr sh dd"}, false, 0},
		{"file, ELF header", file, &Smap{Flags: "rd mr"}, true, page},
		{"file, no ELF header", file, &Smap{Flags: "rd mr"}, false, 0},
		{"file, written (relro)", file, &Smap{Anon: true, Flags: "rd mr ac"}, false, 4 * page},
		{"vdso, always", vdso, &Smap{Flags: "rd ex dd"}, false, 2 * page},
		{"not in smaps (appeared later)", anon, nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := CoreInput{Filter: DefaultCoreFilter, Smaps: map[uint64]Smap{}}
			if tc.smap != nil {
				in.Smaps[tc.m.Start] = *tc.smap
			}
			if got := dumpSize(tc.m, in, func() bool { return tc.elf }); got != tc.want {
				t.Errorf("dumpSize = %#x, want %#x", got, tc.want)
			}
		})
	}
}
