package elfinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// Location is where a PC is: module + link-time offset (the crash-site key, identical under
// any ASLR layout), plus symbol and line when known.
type Location struct {
	Module   string // path of the mapping ("[vdso]", "[anon]" etc. for non-files)
	Offset   uint64 // link-time vaddr within Module
	BuildID  string // hex, "" if none
	Function string // symbol name without delve's "C." prefix, "" if unknown
	FuncOff  uint64 // pc - function start
	File     string
	Line     int
	// InlinedInto are the functions Function's code was inlined into, innermost first, each
	// at the line of its inlined call (DW_AT_call_file/DW_AT_call_line), the last being the
	// function the pc is really in; empty when it was not inlined. gdb shows each as a frame
	// of its own with the same pc (SourceFrames).
	InlinedInto []SourceFrame
	// Symbol is the ELF symbol that contains the pc, from the symbol tables alone (the same
	// with or without DWARF: a stable name for keys), "" if none.
	Symbol string
	// LinesPending: the module has DWARF that a Deferred resolver did not load; Function is
	// the ELF symbol, File and Line are empty until Resolver.LoadLines installs it.
	LinesPending bool
}

// SourceFrames are the frames gdb shows for the location, innermost first: Function at
// File:Line (all empty when unknown: gdb's "??"), then InlinedInto.
func (l Location) SourceFrames() []SourceFrame {
	return append([]SourceFrame{{Function: l.Function, File: l.File, Line: l.Line}}, l.InlinedInto...)
}

// String formats the location as gdb and glibc backtraces do: "libc.so.6+0x156219".
func (l Location) String() string {
	s := filepath.Base(l.Module) + "+0x" + strconv.FormatUint(l.Offset, 16)
	if l.Function != "" {
		s += " " + l.Function + "+0x" + strconv.FormatUint(l.FuncOff, 16)
	}
	if l.File != "" {
		s += " " + l.File + ":" + strconv.Itoa(l.Line)
	}
	return s
}

// fileKey identifies a mapped file as the kernel reports it, without touching the filesystem.
type fileKey struct {
	path  string
	dev   string
	inode uint64
}

// module is one parsed file, shared by every mapping (and process) of the same build-id.
type module struct {
	path string // a path that opened the file (maybe under /proc/PID/root or map_files)
	d    *elfData

	sym       Symbolizer
	symLoaded bool
	// linesAvail caches dwarfAvailable (0 unknown, 1 yes, 2 no); linesLoading is set while a
	// LinesJob for the module is out.
	linesAvail   int8
	linesLoading bool

	fdes       frame.FrameDescriptionEntries
	fdesLoaded bool
	cfi        map[uint64]*frame.FrameContext // frameContext's memo
	tramps     map[uint64]bool                // trampAt's memo

	lines map[uint64]funcLine       // memo of symbolize, by link-time address
	tails map[tailKey][]SourceFrame // memo of Resolver.tailCalls with this module as the caller
}

type funcLine struct {
	symbol  string // the ELF symbol containing the address
	name    string
	off     uint64
	file    string
	line    int
	known   bool
	inlined []SourceFrame
}

// Resolver caches parsed files by build-id. It is safe for use from one goroutine.
type Resolver struct {
	byFile map[fileKey]*module
	byID   map[string]*module
	failed map[fileKey]failure
	// pending are modules whose DWARF a Deferred resolver skipped (shared by its copies).
	pending map[*module]bool
	// deferLines: symbolize from ELF symbols only, leaving DWARF for LoadLines.
	deferLines bool
}

// Deferred returns a resolver sharing r's caches that never loads DWARF: functions come from
// the ELF symbol tables (and DWARF already loaded), and a location whose module has lines not
// yet loaded says LinesPending. PendingLines hands out the loading, to be done off the
// caller's goroutine, and Install puts it in place. A crash is described this way on the
// tracer's loop, so the first crash does not wait for libc's DWARF.
func (r *Resolver) Deferred() *Resolver {
	d := *r
	d.deferLines = true
	return &d
}

// LinesJob loads one module's DWARF. Load is safe on any goroutine; its result goes back to
// the resolver's own goroutine through Install.
type LinesJob struct {
	mod *module
	sym Symbolizer
	err error
}

// Path is the file whose DWARF the job loads.
func (j *LinesJob) Path() string { return j.mod.path }

// Load reads the module's DWARF (the slow part: hundreds of milliseconds for a libc).
func (j *LinesJob) Load() { j.sym, j.err = newSymbolizer(j.mod.path, j.mod.d) }

// WantLines marks for PendingLines the modules mapped executable in maps whose DWARF is not
// loaded yet, so that it can be loaded off the caller's goroutine before they are looked up.
func (r *Resolver) WantLines(pid int, maps []Mapping) {
	for _, m := range maps {
		if !m.IsFile() || len(m.Perms) < 3 || m.Perms[2] != 'x' {
			continue
		}
		mod, err := r.module(pid, m)
		if err != nil || mod.symLoaded || mod.linesLoading {
			continue
		}
		if mod.hasLines() {
			r.pending[mod] = true
		}
	}
}

// PendingLines returns a job for every module a Deferred resolver left without lines, once.
func (r *Resolver) PendingLines() []*LinesJob {
	var jobs []*LinesJob
	for mod := range r.pending {
		delete(r.pending, mod)
		if mod.symLoaded || mod.linesLoading {
			continue
		}
		mod.linesLoading = true
		jobs = append(jobs, &LinesJob{mod: mod})
	}
	return jobs
}

// Close releases what a job loaded that was never installed (its resolver is gone).
func (j *LinesJob) Close() {
	if j.sym != nil {
		j.sym.Close()
		j.sym = nil
	}
}

// Install puts a loaded job's lines in place (on the resolver's goroutine) and says whether
// they changed anything: locations of the module are then worth asking again.
func (r *Resolver) Install(j *LinesJob) bool {
	mod := j.mod
	mod.linesLoading = false
	if mod.symLoaded {
		if j.sym != nil {
			j.sym.Close() // loaded meanwhile by a resolver that does not defer
		}
		return false
	}
	mod.symLoaded, mod.sym = true, j.sym // nothing was memoized while lines were pending
	return j.sym != nil
}

// failure remembers a file that could not be opened through one process, so a dead or
// unreachable process costs one attempt, while another process mapping the same file (its
// own /proc/PID/root or map_files) still gets one.
type failure struct {
	pid int
	err error
}

// NewResolver returns an empty cache.
func NewResolver() *Resolver {
	return &Resolver{byFile: map[fileKey]*module{}, byID: map[string]*module{}, failed: map[fileKey]failure{},
		pending: map[*module]bool{}}
}

// Close releases delve's open files.
func (r *Resolver) Close() error {
	for _, m := range r.byID {
		if m.sym != nil {
			m.sym.Close()
			m.sym = nil
		}
	}
	return nil
}

// openMapped opens the file behind a mapping. The path in maps is relative to the tracee's
// root and mount namespace and may be deleted, so besides the plain path try
// /proc/PID/root/PATH and /proc/PID/map_files/START-END (which reaches deleted files; needs
// CAP_SYS_ADMIN). A candidate whose inode matches the mapping wins; otherwise the first that
// opened (overlayfs may report another inode).
func openMapped(pid int, m Mapping) (*os.File, string, error) {
	var cands []string
	if !m.Deleted {
		cands = append(cands, m.Path)
	}
	if pid > 0 {
		p := strconv.Itoa(pid)
		cands = append(cands, "/proc/"+p+"/root"+m.Path,
			fmt.Sprintf("/proc/%s/map_files/%x-%x", p, m.Start, m.End))
	}
	var first *os.File
	var firstPath string
	var lastErr error = os.ErrNotExist
	for _, c := range cands {
		f, err := os.Open(c)
		if err != nil {
			lastErr = err
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err == nil && st.Ino == m.Inode {
			if first != nil {
				first.Close()
			}
			return f, c, nil
		}
		if first == nil {
			first, firstPath = f, c
		} else {
			f.Close()
		}
	}
	if first != nil {
		return first, firstPath, nil
	}
	return nil, "", fmt.Errorf("open %s of pid %d: %w", m.Path, pid, lastErr)
}

// module returns the parsed file behind a file mapping, parsing it on first use.
func (r *Resolver) module(pid int, m Mapping) (*module, error) {
	k := fileKey{m.Path, m.Dev, m.Inode}
	if mod := r.byFile[k]; mod != nil {
		return mod, nil
	}
	if f, ok := r.failed[k]; ok && f.pid == pid {
		return nil, f.err
	}
	mod, err := r.load(pid, m)
	if err != nil {
		r.failed[k] = failure{pid, err}
		return nil, err
	}
	delete(r.failed, k)
	r.byFile[k] = mod
	return mod, nil
}

func (r *Resolver) load(pid int, m Mapping) (*module, error) {
	f, path, err := openMapped(pid, m)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	d, err := parseELF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	id := d.buildID
	if id == "" {
		id = fmt.Sprintf("%s|%s|%d|%d", m.Path, m.Dev, m.Inode, st.ModTime().UnixNano())
	}
	if mod := r.byID[id]; mod != nil {
		return mod, nil
	}
	mod := &module{path: path, d: d, lines: map[uint64]funcLine{}}
	r.byID[id] = mod
	return mod, nil
}

// hasLines says whether the module has DWARF (in the file or a debug file), asked once.
func (mod *module) hasLines() bool {
	if mod.linesAvail == 0 {
		mod.linesAvail = 2
		if mod.d.dwarfAvailable(mod.path) {
			mod.linesAvail = 1
		}
	}
	return mod.linesAvail == 1
}

// symbolize returns function and line of a link-time address, memoized per module. With
// deferLines it does not load DWARF: it answers from the symbol table, unmemoized, and says
// whether lines are pending.
func (mod *module) symbolize(v uint64, deferLines bool) (funcLine, bool) {
	if fl, ok := mod.lines[v]; ok {
		return fl, false
	}
	if !mod.symLoaded {
		if mod.hasLines() && deferLines {
			var fl funcLine
			if s, ok := mod.d.funcForVaddr(v); ok {
				fl = funcLine{symbol: s.name, name: s.name, off: v - s.value, known: true}
			}
			return fl, true
		}
		mod.symLoaded = true
		if mod.hasLines() {
			mod.sym, _ = newSymbolizer(mod.path, mod.d)
		}
	}
	var fl funcLine
	var file string
	var line int
	if mod.sym != nil {
		var name string
		var entry uint64
		if name, entry, file, line = mod.sym.PCToLine(v); name != "" {
			fl = funcLine{name: name, off: v - entry, file: file, line: line, known: true, inlined: mod.sym.InlinedInto(v)}
		}
	}
	if s, ok := mod.d.funcForVaddr(v); ok {
		fl.symbol = s.name
		if !fl.known {
			// No DWARF function (assembly): the symbol, at the line table's line if any.
			fl = funcLine{symbol: s.name, name: s.name, off: v - s.value, file: file, line: line, known: true}
		}
	}
	if len(mod.lines) > 1<<16 {
		clear(mod.lines) // bound the memo; a crash-site workload revisits few PCs
	}
	mod.lines[v] = fl
	return fl, false
}

// nonFileName names a mapping without a file, as gdb would.
func nonFileName(m Mapping) string {
	if m.Path == "" {
		return "[anon]"
	}
	return m.Path
}

// Locate maps a runtime PC to module + link-time offset and symbolizes it. A PC outside every
// mapping gets Module "" and Offset pc (Spindle's "0x<pc>" site).
func (r *Resolver) Locate(pid int, maps []Mapping, pc uint64) Location {
	m, ok := FindMapping(maps, pc)
	if !ok {
		return Location{Offset: pc}
	}
	if !m.IsFile() {
		// [vdso] is linked at 0 and mapped from its start, so pc-start is its link-time address.
		return Location{Module: nonFileName(m), Offset: pc - m.Start}
	}
	fileOff := pc - m.Start + m.Offset
	loc := Location{Module: m.Path, Offset: fileOff}
	mod, err := r.module(pid, m)
	if err != nil {
		return loc
	}
	loc.BuildID = mod.d.buildID
	v, ok := mod.d.fileOffToVaddr(fileOff)
	if !ok {
		return loc
	}
	loc.Offset = v
	r.symbolizeInto(&loc, mod, v)
	return loc
}

// symbolizeInto fills loc's names and line from link-time address v of mod.
func (r *Resolver) symbolizeInto(loc *Location, mod *module, v uint64) {
	fl, pending := mod.symbolize(v, r.deferLines)
	if pending {
		r.pending[mod] = true
		loc.LinesPending = true
	}
	loc.Symbol = fl.symbol
	if fl.known {
		loc.Function, loc.FuncOff, loc.File, loc.Line = fl.name, fl.off, fl.file, fl.line
		loc.InlinedInto = fl.inlined
	}
}

// matchModule reports whether a mapping's path names module: the exact path, or its base name
// ("libc.so.6").
func matchModule(path, module string) bool {
	if path == module {
		return true
	}
	return !strings.Contains(module, "/") && filepath.Base(path) == module
}

// LoadBias returns runtime address - link-time vaddr for the first file mapping of module (l_addr
// in the dynamic linker's terms; 0 for non-PIE executables and fixed-address libraries). With
// dlmopen the same file can be mapped more than once; the lowest mapping wins.
func (r *Resolver) LoadBias(pid int, maps []Mapping, module string) (uint64, bool) {
	mod, m, ok := r.findModule(pid, maps, module)
	if !ok {
		return 0, false
	}
	v, ok := mod.d.fileOffToVaddr(m.Offset)
	if !ok {
		return 0, false
	}
	return m.Start - v, true
}

func (r *Resolver) findModule(pid int, maps []Mapping, module string) (*module, Mapping, bool) {
	for _, m := range maps {
		if !m.IsFile() || !matchModule(m.Path, module) {
			continue
		}
		mod, err := r.module(pid, m)
		if err != nil {
			continue
		}
		if _, ok := mod.d.fileOffToVaddr(m.Offset); ok {
			return mod, m, true
		}
	}
	return nil, Mapping{}, false
}

// Symbol returns the runtime address of a .symtab/.dynsym symbol of module, e.g. libc's
// GLIBC_PRIVATE "__abort_msg" (kernel.md §C, SIGABRT keys).
func (r *Resolver) Symbol(pid int, maps []Mapping, module, name string) (uint64, bool) {
	mod, _, ok := r.findModule(pid, maps, module)
	if !ok {
		return 0, false
	}
	v, ok := mod.d.syms[name]
	if !ok {
		return 0, false
	}
	bias, ok := r.LoadBias(pid, maps, module)
	if !ok {
		return 0, false
	}
	return v + bias, true
}
