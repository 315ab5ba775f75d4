package elfinfo

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// elfData is what elfinfo keeps of one ELF file after closing it: enough for link-time offsets,
// symbol fallback, symbol addresses and CFI unwinding.
type elfData struct {
	buildID string
	typ     elf.Type
	machine elf.Machine
	order   binary.ByteOrder
	ptrSize int
	entry   uint64
	loads   []elf.ProgHeader // PT_LOAD, in file order
	funcs   []symbol         // STT_FUNC/STT_GNU_IFUNC from .symtab and .dynsym, sorted by value
	syms    map[string]uint64

	ehFrame, debugFrame []byte
	ehFrameAddr         uint64
	debugLink           string // .gnu_debuglink file name
	hasDWARF            bool   // .debug_info in the file itself
}

type symbol struct {
	name       string
	value, end uint64
}

// parseELF reads an ELF file from r. It must not panic on any input (FuzzParseELF).
func parseELF(r io.ReaderAt) (d *elfData, err error) {
	// debug/elf guards most malformed input, but a panic in a parser of files from a crashed
	// job must not take the debugger down with it.
	defer func() {
		if p := recover(); p != nil {
			d, err = nil, fmt.Errorf("parse elf: panic: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("parse elf: %w", err)
	}
	d = &elfData{typ: f.Type, machine: f.Machine, order: f.ByteOrder, entry: f.Entry, syms: map[string]uint64{}}
	d.ptrSize = 8
	if f.Class == elf.ELFCLASS32 {
		d.ptrSize = 4
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			d.loads = append(d.loads, p.ProgHeader)
		}
	}
	d.buildID = readBuildID(f)
	for _, s := range f.Sections {
		switch s.Name {
		case ".debug_info", ".zdebug_info":
			d.hasDWARF = s.Type != elf.SHT_NOBITS
		case ".gnu_debuglink":
			if b, err := sectionData(s); err == nil {
				if i := bytes.IndexByte(b, 0); i > 0 {
					d.debugLink = string(b[:i])
				}
			}
		case ".eh_frame":
			if b, err := sectionData(s); err == nil {
				d.ehFrame, d.ehFrameAddr = b, s.Addr
			}
		case ".debug_frame":
			if b, err := sectionData(s); err == nil {
				d.debugFrame = b
			}
		}
	}
	seen := map[uint64]bool{}
	addSyms := func(syms []elf.Symbol, err error) {
		if err != nil {
			return
		}
		for _, s := range syms {
			if s.Section == elf.SHN_UNDEF || s.Name == "" {
				continue
			}
			if _, ok := d.syms[s.Name]; !ok {
				d.syms[s.Name] = s.Value
			}
			t := elf.ST_TYPE(s.Info)
			if (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && s.Value != 0 && !seen[s.Value] {
				seen[s.Value] = true
				d.funcs = append(d.funcs, symbol{name: s.Name, value: s.Value, end: s.Value + s.Size})
			}
		}
	}
	addSyms(f.Symbols())
	addSyms(f.DynamicSymbols())
	sort.Slice(d.funcs, func(i, j int) bool { return d.funcs[i].value < d.funcs[j].value })
	return d, nil
}

// sectionData reads a section, refusing absurd sizes from corrupt headers.
func sectionData(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, errors.New("no bits")
	}
	if s.Size > 1<<30 {
		return nil, fmt.Errorf("section %s: size %d too large", s.Name, s.Size)
	}
	return s.Data()
}

// readBuildID returns the hex NT_GNU_BUILD_ID from the notes (PT_NOTE or SHT_NOTE).
func readBuildID(f *elf.File) string {
	var blobs [][]byte
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE {
			if b, err := sectionData(s); err == nil {
				blobs = append(blobs, b)
			}
		}
	}
	if len(blobs) == 0 {
		for _, p := range f.Progs {
			if p.Type == elf.PT_NOTE && p.Filesz < 1<<20 {
				b := make([]byte, p.Filesz)
				if _, err := p.ReadAt(b, 0); err == nil {
					blobs = append(blobs, b)
				}
			}
		}
	}
	for _, b := range blobs {
		for len(b) >= 12 {
			namesz := uint64(f.ByteOrder.Uint32(b[0:]))
			descsz := uint64(f.ByteOrder.Uint32(b[4:]))
			typ := f.ByteOrder.Uint32(b[8:])
			nameEnd := 12 + align4(namesz)
			descEnd := nameEnd + align4(descsz)
			if nameEnd > uint64(len(b)) || 12+namesz > uint64(len(b)) || nameEnd+descsz > uint64(len(b)) {
				break
			}
			if typ == ntGNUBuildID && string(b[12:12+namesz]) == "GNU\x00" {
				return hex.EncodeToString(b[nameEnd : nameEnd+descsz])
			}
			if descEnd > uint64(len(b)) {
				break
			}
			b = b[descEnd:]
		}
	}
	return ""
}

// ntGNUBuildID is NT_GNU_BUILD_ID (elf.h); debug/elf has no constant for it.
const ntGNUBuildID = 3

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// fileOffToVaddr converts a file offset to the link-time virtual address through the PT_LOAD
// that holds it: vaddr = p_vaddr + (fileoff - p_offset) (dependencies.md, kernel.md §C.3).
func (d *elfData) fileOffToVaddr(off uint64) (uint64, bool) {
	for _, p := range d.loads {
		if p.Off <= off && off-p.Off < max(p.Filesz, p.Memsz) {
			return p.Vaddr + (off - p.Off), true
		}
	}
	return 0, false
}

// funcForVaddr finds the symbol-table function containing a link-time address.
func (d *elfData) funcForVaddr(v uint64) (symbol, bool) {
	i := sort.Search(len(d.funcs), func(i int) bool { return d.funcs[i].value > v }) - 1
	if i < 0 {
		return symbol{}, false
	}
	s := d.funcs[i]
	// Size 0 symbols (hand-written assembly) cover up to the next symbol.
	if s.end > s.value && v >= s.end {
		return symbol{}, false
	}
	return s, true
}

// debugInfoDirs are searched for separate debug files; delve appends .build-id/xx/… itself.
var debugInfoDirs = []string{"/usr/lib/debug"}

// dwarfAvailable reports whether delve will find DWARF for the file at path. Delve prints
// "no debug info found" straight to os.Stderr when it finds none, so it is only asked about
// files for which this returns true.
func (d *elfData) dwarfAvailable(path string) bool { return d.debugFile(path) != "" }

// debugFile is the file that holds the DWARF of the file at path, in delve's
// openSeparateDebugInfo order: the file itself, by build-id under the debug directories, or by
// .gnu_debuglink; "" when there is none.
func (d *elfData) debugFile(path string) string {
	if d.hasDWARF {
		return path
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if len(d.buildID) > 2 {
		for _, dir := range debugInfoDirs {
			if p := filepath.Join(dir, ".build-id", d.buildID[:2], d.buildID[2:]+".debug"); exists(p) {
				return p
			}
		}
	}
	if d.debugLink != "" {
		dir := filepath.Dir(path)
		cands := []string{filepath.Join(dir, d.debugLink), filepath.Join(dir, ".debug", d.debugLink)}
		for _, dd := range debugInfoDirs {
			cands = append(cands, filepath.Join(dd, strings.TrimPrefix(dir, "/"), d.debugLink))
		}
		for _, p := range cands {
			if exists(p) {
				return p
			}
		}
	}
	return ""
}

// ReadCode reads n bytes of the file at path at link-time address vaddr (from the PT_LOAD
// segment that holds it) and returns them with the file's architecture ("amd64", "arm64",
// "ppc64le"): the code of a frame, for disassembly, without touching any process.
func ReadCode(path string, vaddr uint64, n int) ([]byte, string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	arch := goarchOf[f.Machine]
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || vaddr < p.Vaddr || vaddr >= p.Vaddr+p.Filesz {
			continue
		}
		n = int(min(uint64(n), p.Vaddr+p.Filesz-vaddr))
		buf := make([]byte, n)
		if _, err := p.ReadAt(buf, int64(vaddr-p.Vaddr)); err != nil {
			return nil, arch, err
		}
		return buf, arch, nil
	}
	return nil, arch, fmt.Errorf("%s: no loaded segment holds %#x", path, vaddr)
}
