package elfinfo

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// SourceFrame is one frame as gdb shows it: a function at a source line. Where code was
// inlined one pc has several: the inlined function at the pc's line, then each function it
// was inlined into, at the line of the inlined call it makes (the inlined subroutine's
// DW_AT_call_file and DW_AT_call_line).
type SourceFrame struct {
	Function string
	File     string
	Line     int
}

// funcIndex answers which functions' code is at a link-time address of one module, through
// which inlined calls, and with which names, as gdb's frames show them. It reads the DWARF
// itself with debug/dwarf because delve's BinaryInfo keeps only the first address range of
// each inlined call (gcc 12 describes most of them with DW_AT_ranges, several pieces) and
// skips those nested in lexical blocks; and because gdb names a C function by its
// DW_AT_linkage_name (glibc's __GI___libc_read), which delve drops.
//
// Compile units are indexed by address range when the index is built; a unit's functions
// are read on the first lookup that lands in it, so a lookup costs one unit's DIEs at most.
type funcIndex struct {
	mu    sync.Mutex // lookups come from the resolver's goroutine, loading from a LinesJob's
	d     *dwarf.Data
	cus   []cuRange                   // by lo
	units map[dwarf.Offset]*unitFuncs // parsed units, by offset
	names map[dwarf.Offset]entryNames // origins' names, by offset
	syms  map[string]uint64           // ELF symbols by name: where a declared callee is
}

type cuRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

// unitFuncs are one compile unit's concrete functions and, once asked, its line table.
type unitFuncs struct {
	cu       *dwarf.Entry
	rows     []lineRow // by address, read on the first line lookup in the unit
	rowsRead bool
	subs     []subRange              // every address range of every concrete subprogram, by lo
	byOff    map[dwarf.Offset]*scope // concrete subprograms by their entry's offset and origin's
	files    []*dwarf.LineFile
	cLang    bool // a C unit: gdb names functions by DW_AT_linkage_name when there is one
}

type subRange struct {
	lo, hi uint64
	s      *scope
}

// scope is a concrete subprogram or an inlined subroutine: the code of one function.
type scope struct {
	ranges   [][2]uint64
	entry    uint64     // DW_AT_entry_pc, or the start of the first range (gcc lists the entry's first)
	own      entryNames // what its own entry says
	callFile int64      // inlined subroutines: where their caller calls them
	callLine int64
	inlined  []*scope   // inlined subroutines directly inside (lexical blocks are transparent)
	calls    []callSite // concrete subprograms: the calls they make, inlined code's included
}

// callSite is a DW_TAG_call_site (DW_TAG_GNU_call_site before DWARF 5): a call or, with
// tail set, a jump to another function that does not come back.
type callSite struct {
	ret    uint64       // the return address: for a jump, the address after it
	target dwarf.Offset // the called function's entry (its declaration, maybe)
	tail   bool
}

// DWARF 4 GNU extensions gcc emitted before DWARF 5 standardised call sites.
const (
	tagGNUCallSite  dwarf.Tag  = 0x4109
	attrGNUTailCall dwarf.Attr = 0x2115
)

// callSiteOf reads a direct call's site; calls through a pointer (DW_AT_call_target, an
// expression of the caller's registers) are not followed.
func callSiteOf(e *dwarf.Entry) (callSite, bool) {
	var cs callSite
	var ok bool
	if cs.ret, ok = e.Val(dwarf.AttrCallReturnPC).(uint64); !ok {
		if cs.ret, ok = e.Val(dwarf.AttrLowpc).(uint64); !ok {
			return cs, false
		}
	}
	if cs.target, ok = e.Val(dwarf.AttrCallOrigin).(dwarf.Offset); !ok {
		if cs.target, ok = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); !ok {
			return cs, false
		}
	}
	t1, _ := e.Val(dwarf.AttrCallTailCall).(bool)
	t2, _ := e.Val(attrGNUTailCall).(bool)
	cs.tail = t1 || t2
	return cs, true
}

func (s *scope) contains(pc uint64) bool {
	for _, r := range s.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// openFuncIndex indexes the DWARF of the ELF file at path (the module itself or its
// separate debug file).
// syms are the module's own symbols, by name; the debug file's (a stripped library's
// separate debug file keeps the full .symtab) are added.
func openFuncIndex(path string, syms map[string]uint64) (*funcIndex, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := dwarfOf(f)
	if err != nil {
		return nil, fmt.Errorf("read dwarf of %s: %w", path, err)
	}
	x := &funcIndex{d: d, units: map[dwarf.Offset]*unitFuncs{}, names: map[dwarf.Offset]entryNames{},
		syms: syms}
	if fs, err := f.Symbols(); err == nil && len(fs) > 0 {
		x.syms = make(map[string]uint64, len(syms)+len(fs))
		for _, s := range fs {
			if t := elf.ST_TYPE(s.Info); (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && s.Value != 0 {
				x.syms[s.Name] = s.Value
			}
		}
		for n, v := range syms {
			x.syms[n] = v
		}
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read dwarf of %s: %w", path, err)
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			if rs, err := d.Ranges(e); err == nil {
				for _, rg := range rs {
					if rg[1] > rg[0] {
						x.cus = append(x.cus, cuRange{rg[0], rg[1], e.Offset})
					}
				}
			}
		}
		r.SkipChildren()
	}
	sort.Slice(x.cus, func(i, j int) bool { return x.cus[i].lo < x.cus[j].lo })
	return x, nil
}

// dwarfOf is f.DWARF() made safe: debug/dwarf guards most malformed input, but a panic in a
// parser of files from a crashed job must not take the debugger down with it.
func dwarfOf(f *elf.File) (d *dwarf.Data, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return f.DWARF()
}

// frameNames are the functions at one pc as gdb shows them, innermost first: the innermost
// (an inlined function's, or the concrete function's when nothing was inlined there) with
// the link-time start of its code, then the callers it was inlined into, the last being the
// concrete function.
type frameNames struct {
	name    string
	entry   uint64
	callers []SourceFrame
}

// lookup returns the functions at link-time address pc; ok is false when no concrete
// subprogram of the DWARF holds it (assembly, or no DWARF for that code).
func (x *funcIndex) lookup(pc uint64) (fn frameNames, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer func() {
		if p := recover(); p != nil { // corrupt DWARF: no inlined frames, delve's names stay
			fn, ok = frameNames{}, false
		}
	}()
	if u, s := x.concrete(pc); s != nil {
		return x.chain(u, s, pc), true
	}
	return frameNames{}, false
}

// lineAt returns the file and line of link-time address pc from the line table of the unit
// that holds it; ok is false when none does.
func (x *funcIndex) lineAt(pc uint64) (file string, line int, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			file, line, ok = "", 0, false
		}
	}()
	i := sort.Search(len(x.cus), func(i int) bool { return x.cus[i].lo > pc })
	for j := i - 1; j >= 0 && j >= i-64; j-- {
		if c := x.cus[j]; pc < c.hi {
			if file, line, ok = x.unit(c.off).lineAt(x.d, pc); ok {
				return file, line, true
			}
		}
	}
	return "", 0, false
}

// lineRow is one row of a line table: from addr on, the code is file:line, until the next
// row (or, end set, no code of the unit is there).
type lineRow struct {
	addr uint64
	file *dwarf.LineFile
	line int
	end  bool
}

// lineAt looks pc up in the unit's line table, as delve's PCToLine does: the last row at or
// before pc, unless it ends a sequence.
func (u *unitFuncs) lineAt(d *dwarf.Data, pc uint64) (string, int, bool) {
	if !u.rowsRead {
		u.rowsRead = true
		u.rows = readLineRows(d, u.cu)
	}
	i := sort.Search(len(u.rows), func(i int) bool { return u.rows[i].addr > pc }) - 1
	if i < 0 || u.rows[i].end || u.rows[i].file == nil {
		return "", 0, false
	}
	return u.rows[i].file.Name, u.rows[i].line, true
}

// readLineRows reads a unit's line program into rows by address. Where one sequence ends at
// the address another starts, the end comes first, so that the address is the new one's.
func readLineRows(d *dwarf.Data, cu *dwarf.Entry) []lineRow {
	if cu == nil {
		return nil
	}
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return nil
	}
	var rows []lineRow
	var e dwarf.LineEntry
	for lr.Next(&e) == nil {
		rows = append(rows, lineRow{addr: e.Address, file: e.File, line: e.Line, end: e.EndSequence})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].addr != rows[j].addr {
			return rows[i].addr < rows[j].addr
		}
		return rows[i].end && !rows[j].end
	})
	return rows
}

// concrete returns the concrete subprogram holding pc and its unit.
func (x *funcIndex) concrete(pc uint64) (*unitFuncs, *scope) {
	i := sort.Search(len(x.cus), func(i int) bool { return x.cus[i].lo > pc })
	// Units' ranges may overlap (a unit's range list spanning another's code); try each
	// one that holds pc, nearest first.
	for j := i - 1; j >= 0 && j >= i-64; j-- {
		c := x.cus[j]
		if pc >= c.hi {
			continue
		}
		u := x.unit(c.off)
		if s := u.subprogram(pc); s != nil {
			return u, s
		}
	}
	return nil, nil
}

// callTarget returns what the call returning to ra calls: the function's entry when this
// module's DWARF or symbols place it here (local), otherwise the names to find it by in the
// module that defines it (a call through the PLT: gdb finds it by its physname in every
// objfile). ok is false when there is no direct call site at ra.
func (x *funcIndex) callTarget(ra uint64) (entry uint64, local bool, names []string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			ok = false
		}
	}()
	u, caller := x.concrete(ra - 1)
	if caller == nil {
		return 0, false, nil, false
	}
	for _, c := range caller.calls {
		if c.ret == ra {
			entry, local, names = x.entryOf(u, c.target)
			return entry, local, names, true
		}
	}
	return 0, false, nil, false
}

// tailChain returns the functions that, entered at start, left by a jump (a tail call) on
// towards the function holding calleeAt, as gdb reconstructs them from DWARF call sites
// (dwarf2/frame-tailcall.c, call_site_find_chain): they have no frame on the stack. The
// result is, innermost first, the address after each one's jump (gdb's pc for the frame);
// none when start is the callee's own entry (a plain call) or no chain of jumps leads
// there. Where several do, only what they all share is kept, as gdb keeps their common
// callers and callees.
func (x *funcIndex) tailChain(start, calleeAt uint64) (pcs []uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			pcs = nil
		}
	}()
	_, callee := x.concrete(calleeAt)
	if callee == nil || start == callee.entry {
		return nil
	}
	return x.jumps(start, func(fn uint64) bool { return fn == callee.entry }, nil)
}

// tailChainOut is tailChain for a callee in another module: the jumps that, entered at
// start, lead (in this module) to a tail call through the PLT into a function named as
// reaches accepts, as barrier's `jmp pthread_barrier_wait@plt` at -O2. The last jump's frame
// is included: it is this module's function that left.
func (x *funcIndex) tailChainOut(start uint64, reaches func(names []string) bool) (pcs []uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			pcs = nil
		}
	}()
	return x.jumps(start, func(uint64) bool { return false }, reaches)
}

// jumps searches, depth first, the chains of tail calls from the function entered at start
// that end at a local function arrived (arrived) or at a jump out of the module to a function
// out accepts (nil: none), and returns what they all share (tailChain).
func (x *funcIndex) jumps(start uint64, arrived func(fn uint64) bool, out func(names []string) bool) []uint64 {
	var paths [][]uint64
	var path []uint64 // the jumps taken, outermost first
	onPath := map[uint64]bool{}
	var walk func(fn uint64)
	walk = func(fn uint64) {
		if arrived(fn) {
			paths = append(paths, slices.Clone(path))
			return
		}
		if onPath[fn] || len(path) >= maxTailCalls || len(paths) >= maxTailPaths {
			return
		}
		u, s := x.concrete(fn)
		if s == nil || s.entry != fn {
			return
		}
		onPath[fn] = true
		for _, c := range s.calls {
			if !c.tail {
				continue
			}
			to, local, names := x.entryOf(u, c.target)
			path = append(path, c.ret)
			switch {
			case local:
				walk(to)
			case out != nil && out(names):
				paths = append(paths, slices.Clone(path))
			}
			path = path[:len(path)-1]
		}
		onPath[fn] = false
	}
	walk(start)
	if len(paths) == 0 {
		return nil
	}
	chain := commonEnds(paths)
	slices.Reverse(chain)
	return chain
}

// Bounds of the search for tail-call chains (gdb bounds it only by not entering a function
// twice; these keep a pathological binary from costing a sample much).
const (
	maxTailCalls = 16
	maxTailPaths = 64
)

// commonEnds is what every path shares at its start and at its end (all of it when the
// paths are one).
func commonEnds(paths [][]uint64) []uint64 {
	short := paths[0]
	for _, p := range paths[1:] {
		if len(p) < len(short) {
			short = p
		}
	}
	same := func(at func(p []uint64) uint64) bool {
		for _, p := range paths {
			if at(p) != at(short) {
				return false
			}
		}
		return true
	}
	pre := 0
	for pre < len(short) && same(func(p []uint64) uint64 { return p[pre] }) {
		pre++
	}
	suf := 0
	for pre+suf < len(short) && same(func(p []uint64) uint64 { return p[len(p)-1-suf] }) {
		suf++
	}
	return append(slices.Clone(short[:pre]), short[len(short)-suf:]...)
}

// entryOf is the entry of the function a call site's DW_AT_call_origin names: a concrete
// subprogram of the same unit, or (a declaration of a function defined elsewhere) the ELF
// symbol of its linkage name or name, as gdb finds it by its physname. A function this
// module does not define comes back as its names, to look up where it is defined.
func (x *funcIndex) entryOf(u *unitFuncs, off dwarf.Offset) (entry uint64, local bool, names []string) {
	if s := u.byOff[off]; s != nil {
		return s.entry, true, nil
	}
	n := x.readNames(off)
	for hops := 0; n.origin != 0 && hops < 8 && (n.name == "" || n.linkage == ""); hops++ {
		o := x.readNames(n.origin)
		n.name, n.linkage, n.origin = cmp.Or(n.name, o.name), cmp.Or(n.linkage, o.linkage), o.origin
	}
	for _, name := range []string{n.linkage, n.name} {
		if name == "" {
			continue
		}
		if v, ok := x.syms[name]; ok {
			return v, true, nil
		}
		names = append(names, name)
	}
	return 0, false, names
}

// subprogram is the concrete subprogram of the unit whose code holds pc.
func (u *unitFuncs) subprogram(pc uint64) *scope {
	i := sort.Search(len(u.subs), func(i int) bool { return u.subs[i].lo > pc })
	// The nearest range that holds pc: a nested (GNU C) function's range lies inside its
	// parent's.
	for j := i - 1; j >= 0 && j >= i-16; j-- {
		if r := u.subs[j]; pc < r.hi {
			return r.s
		}
	}
	return nil
}

// chain walks from the concrete subprogram s down the inlined calls that hold pc.
func (x *funcIndex) chain(u *unitFuncs, s *scope, pc uint64) frameNames {
	path := []*scope{s}
	for cur := s; ; {
		var next *scope
		for _, c := range cur.inlined {
			if c.contains(pc) {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		path = append(path, next)
		cur = next
	}
	inner := path[len(path)-1]
	fn := frameNames{name: x.nameOf(u, inner), entry: inner.entry}
	// Each scope's caller is the one above it, at the scope's call site.
	for k := len(path) - 1; k > 0; k-- {
		callee, caller := path[k], path[k-1]
		c := SourceFrame{Function: x.nameOf(u, caller), Line: int(callee.callLine)}
		if callee.callFile >= 0 && callee.callFile < int64(len(u.files)) && u.files[callee.callFile] != nil {
			c.File = u.files[callee.callFile].Name
		}
		fn.callers = append(fn.callers, c)
	}
	return fn
}

// nameOf names a scope as gdb does: a C function by its linkage name when it has one (glibc's
// hidden aliases: __GI___libc_read), otherwise by DW_AT_name; what the scope's own entry lacks
// comes from its abstract origin (an inlined or out-of-line instance of an inline function)
// or its specification (a definition of a declared function).
func (x *funcIndex) nameOf(u *unitFuncs, s *scope) string {
	n := s.own
	for off, hops := s.own.origin, 0; off != 0 && hops < 8 && (n.name == "" || u.cLang && n.linkage == ""); hops++ {
		o, ok := x.names[off]
		if !ok {
			o = x.readNames(off)
			x.names[off] = o
		}
		n.name = cmp.Or(n.name, o.name)
		n.linkage = cmp.Or(n.linkage, o.linkage)
		off = o.origin
	}
	if u.cLang && n.linkage != "" {
		return n.linkage
	}
	return n.name
}

func (x *funcIndex) readNames(off dwarf.Offset) entryNames {
	r := x.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return entryNames{}
	}
	return namesOf(e)
}

// entryNames are the names of a DIE and the DIE its names may come from.
type entryNames struct {
	name, linkage string
	origin        dwarf.Offset // DW_AT_abstract_origin or DW_AT_specification, 0 if none
}

func namesOf(e *dwarf.Entry) entryNames {
	var n entryNames
	n.name, _ = e.Val(dwarf.AttrName).(string)
	n.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
	if n.linkage == "" {
		n.linkage, _ = e.Val(attrMIPSLinkageName).(string)
	}
	var ok bool
	if n.origin, ok = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); !ok {
		n.origin, _ = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
	}
	return n
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, which gcc before DWARF 4 used.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// cLanguages are the DW_LANG values of C (C89, C, C99, C11, C17).
var cLanguages = map[int64]bool{0x1: true, 0x2: true, 0xc: true, 0x1d: true, 0x2c: true}

// unit parses the concrete functions of the compile unit at off, once.
func (x *funcIndex) unit(off dwarf.Offset) *unitFuncs {
	if u := x.units[off]; u != nil {
		return u
	}
	u := &unitFuncs{byOff: map[dwarf.Offset]*scope{}}
	x.units[off] = u
	r := x.d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return u
	}
	u.cu = cu
	lang, _ := cu.Val(dwarf.AttrLanguage).(int64)
	u.cLang = cLanguages[lang]
	if lr, err := x.d.LineReader(cu); err == nil && lr != nil {
		u.files = lr.Files()
	}
	if !cu.Children {
		return u
	}
	// level is one open list of children: the scope inlined calls there go in and the
	// concrete function their call sites are in (nil outside every function).
	type level struct{ in, fn *scope }
	stack := []level{{}}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		next, open := parent, false
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			s := x.newScope(e)
			if s == nil {
				break // a declaration or an abstract instance: no code of its own
			}
			if e.Tag == dwarf.TagSubprogram {
				for _, rg := range s.ranges {
					u.subs = append(u.subs, subRange{rg[0], rg[1], s})
				}
				u.byOff[e.Offset] = s
				if s.own.origin != 0 {
					u.byOff[s.own.origin] = s
				}
				next, open = level{s, s}, true
			} else if parent.in != nil {
				s.callFile, _ = e.Val(dwarf.AttrCallFile).(int64)
				s.callLine, _ = e.Val(dwarf.AttrCallLine).(int64)
				parent.in.inlined = append(parent.in.inlined, s)
				next, open = level{s, parent.fn}, true
			}
		case dwarf.TagLexDwarfBlock:
			open = parent.in != nil // transparent: what it holds is its function's
		case dwarf.TagNamespace, dwarf.TagModule:
			open = true // C++ namespaces hold functions
		case dwarf.TagCallSite, tagGNUCallSite:
			if parent.fn != nil {
				if cs, ok := callSiteOf(e); ok {
					parent.fn.calls = append(parent.fn.calls, cs)
				}
			}
		}
		if e.Children {
			if open {
				stack = append(stack, next)
			} else {
				r.SkipChildren() // types, variables, parameters, declarations: nothing that runs
			}
		}
	}
	sort.SliceStable(u.subs, func(i, j int) bool { return u.subs[i].lo < u.subs[j].lo })
	return u
}

// newScope is the code of a subprogram or inlined subroutine entry, nil when it has none.
func (x *funcIndex) newScope(e *dwarf.Entry) *scope {
	rs, _ := x.d.Ranges(e)
	rs = nonEmpty(rs)
	if len(rs) == 0 {
		return nil
	}
	s := &scope{ranges: rs, entry: rs[0][0], own: namesOf(e)}
	if f := e.AttrField(dwarf.AttrEntrypc); f != nil && f.Class == dwarf.ClassAddress {
		if pc, ok := f.Val.(uint64); ok {
			s.entry = pc
		}
	}
	return s
}

func nonEmpty(rs [][2]uint64) [][2]uint64 {
	out := rs[:0]
	for _, r := range rs {
		if r[1] > r[0] {
			out = append(out, r)
		}
	}
	return out
}
