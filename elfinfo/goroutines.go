package elfinfo

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/goversion"
	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"
	"github.com/go-delve/delve/service/api"
)

// ThreadRegs is one thread's registers, as the raw words of the arch's user_regs_struct
// (PTRACE_GETREGS / NT_PRSTATUS order, as CoreThread.Regs).
type ThreadRegs struct {
	TID  int
	Regs []uint64
}

// Goroutine is one goroutine of a Go process, as the runtime's list of them (runtime.allgs)
// says.
type Goroutine struct {
	ID int64
	// Status is the runtime's _G state without the prefix: "runnable", "running",
	// "syscall", "waiting", "preempted", "copystack", "idle"; "status N" for one this
	// version of elfinfo does not know.
	Status string
	// WaitReason is why a waiting goroutine waits, in the runtime's own words (its
	// waitReasonStrings, as a goroutine dump prints them): "chan receive", "select",
	// "sync.Mutex.Lock", "semacquire", "sleep", "IO wait", ...; "" when not waiting.
	WaitReason string
	// TID is the thread running the goroutine, 0 when none (or when the caller passed no
	// registers for that thread).
	TID int
	// System marks the runtime's own goroutines (GC workers, the finalizer...), as the
	// runtime's isSystemGoroutine does: started in package runtime, other than runtime.main.
	System bool
	// Frames are the goroutine's stack, innermost first, symbolized like Unwind's frames
	// (inlined calls in InlinedInto), down to runtime.goexit, where every goroutine starts,
	// as delve shows it. A running goroutine whose thread's registers were not passed has
	// none: where it last stopped tells nothing. Frames outside the executable (C code of
	// a cgo program) have their ELF symbol and LinesPending: Resolver.Relocate gives lines.
	Frames []Frame
	// CreatedBy is the go statement that started the goroutine, at the statement's line;
	// empty for the main goroutine and the runtime's first ones.
	CreatedBy Location
	// Err says why Frames stop early or are empty, "" when the stack was read to its end.
	Err string
}

// ErrNotGo is returned by GoReader.Goroutines for a program without a Go runtime.
var ErrNotGo = errors.New("not a Go program")

// GoReader reads the goroutines of Go processes from outside: the runtime's goroutine list
// and each parked goroutine's saved pc and sp (g.sched) are in its memory, read through the
// caller's MemReader, so nothing needs to be stopped for them. It uses delve's pkg/proc the
// way pkg/proc/core reads a core file: a Process whose memory is the MemReader and whose
// threads are the registers the caller passes, never writable.
//
// Delve's BinaryInfo of each program (the slow part: its DWARF) is loaded once per binary
// and load address and shared by every process running it, with one delve Target. The g
// structs are decoded directly with the offsets of runtime.g's DWARF type (delve's own
// reading of them, as variables, was most of a call); a parked goroutine's unwind is kept
// with the memory it read and reused while that memory is unchanged. GoReader is safe for
// concurrent use; calls for processes of the same binary take turns (delve fills caches).
type GoReader struct {
	mu   sync.Mutex
	bins map[goKey]*goBinary
	// res locates frames outside the executable (C code of a cgo program) from the ELF
	// symbol tables; its Deferred lines are left to the caller's Resolver.Relocate.
	resMu sync.Mutex
	res   *Resolver
}

// goKey identifies a binary by the file (as stat sees it) and where it is loaded.
type goKey struct {
	dev, ino uint64
	size     int64
	mtime    int64
	bias     uint64
}

// goBinary is one Go program's delve BinaryInfo and what else is read once.
type goBinary struct {
	mu    sync.Mutex
	err   error // ErrNotGo, or why delve could not load it
	path  string
	d     *elfData
	bias  uint64 // runtime address - link-time address
	entry uint64 // runtime entry point
	arch  string
	bi    *proc.BinaryInfo
	ver   goversion.GoVersion
	ino   uint64 // the file's inode, as maps shows it
	// waits is the runtime's own waitReasonStrings, read from the first process's memory;
	// nil until then (delve's tables by Go version stand in). waitsSym is where it is.
	waits    []string
	waitsSym symbol
	// proc and tgt are delve's view of whichever process of the binary is being read.
	proc *goProcess
	tgt  *proc.Target
	// stacks are the unwinds of parked goroutines, kept with the memory they read.
	stacks map[stackKey]stackMemo
	// layout is where runtime.g's fields are (layoutErr: not understood, delve reads them).
	layout    gLayout
	layoutErr error
}

// NewGoReader returns a reader with an empty cache.
func NewGoReader() *GoReader {
	return &GoReader{bins: map[goKey]*goBinary{}, res: NewResolver().Deferred()}
}

// Close releases every cached BinaryInfo.
func (g *GoReader) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, b := range g.bins {
		b.mu.Lock()
		if b.bi != nil {
			b.bi.Close()
			b.bi = nil
		}
		b.mu.Unlock()
		delete(g.bins, k)
	}
	g.resMu.Lock()
	g.res.Close()
	g.resMu.Unlock()
	return nil
}

// Goroutines returns every live goroutine of process pid, whose executable is exe (a path
// this process can open: /proc/PID/exe will do) and whose memory map is maps. threads are
// the registers of whichever of its threads the caller stopped: a goroutine running on one of
// them gets its frames from them; parked goroutines need none. maxFrames bounds each stack.
// The process need not be stopped: what a goroutine that runs meanwhile shows is as stale as
// the moment it was read.
func (g *GoReader) Goroutines(pid int, exe string, maps []Mapping, mem MemReader, threads []ThreadRegs, maxFrames int) ([]Goroutine, error) {
	b, err := g.binary(exe, maps)
	if err != nil {
		return nil, err
	}
	exeMaps := exeMappings(exe, b.ino, maps)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bi == nil {
		return nil, fmt.Errorf("goroutines of %d: reader closed", pid)
	}
	tgt, err := b.target(pid)
	if err != nil {
		return nil, fmt.Errorf("goroutines of %d: %w", pid, err)
	}
	// One Target serves every process of the binary (making one reads the DWARF for the
	// runtime's variables): what it reads is this process's, its caches are emptied.
	p := b.proc
	p.pid, p.mem = pid, &pageCache{read: mem, pages: map[uint64][]byte{}}
	clear(p.threads)
	for _, t := range threads {
		regs, err := delveRegs(b.arch, t.Regs)
		if err != nil {
			return nil, fmt.Errorf("goroutines of %d: thread %d: %w", pid, t.TID, err)
		}
		p.threads[t.TID] = &goThread{p: p, tid: t.TID, regs: regs}
	}
	defer func() {
		// Keep nothing of this process (its MemReader, its pages) past the call.
		p.mem = &pageCache{}
		clear(p.threads)
	}()
	tgt.ClearCaches()
	b.readWaitReasons(p.mem)
	items, err := g.readGs(b, tgt)
	if err != nil {
		return nil, fmt.Errorf("goroutines of %d: %w", pid, err)
	}
	out := make([]Goroutine, 0, len(items))
	for _, it := range items {
		rg := it.raw
		st := rg.status &^ gScan
		if st == proc.Gdead || st == gDeadExtra {
			continue
		}
		gr := Goroutine{ID: rg.id, Status: goStatus(rg.status), System: b.system(rg.startPC)}
		if st == proc.Gwaiting {
			gr.WaitReason = b.waitReason(rg.waitReason)
		}
		if rg.goPC != 0 {
			gr.CreatedBy = g.locate(b, pid, maps, exeMaps, rg.goPC, true, true)
		}
		// Only a running goroutine, or one in a syscall, may be on one of the threads given.
		onThread := (st == proc.Grunning || st == proc.Gsyscall) && len(threads) > 0
		key := stackKey{pid: pid, id: rg.id, pc: rg.pc, sp: rg.sp, bp: rg.bp, lr: rg.lr, status: rg.status, max: maxFrames}
		switch {
		case maxFrames <= 0:
		case st == proc.Grunning && !onThread:
			gr.Err = errNoThread
		default:
			if m, ok := b.stacks[key]; ok && !onThread && p.mem.holds(m.reads) {
				gr.Frames, gr.Err = slices.Clone(m.frames), m.err
				break
			}
			dg := it.dg
			if dg == nil {
				dg = delveG(tgt, rg)
			}
			if dg == nil {
				gr.Err = "it changed while it was read"
				break
			}
			if dg.Thread != nil {
				gr.TID = dg.Thread.ThreadID()
			} else if st == proc.Grunning {
				gr.Err = errNoThread
				break
			}
			gr.Frames, gr.Err = g.stack(b, tgt, pid, maps, exeMaps, dg, key)
		}
		out = append(out, gr)
	}
	return out, nil
}

const errNoThread = "running on a thread whose registers were not given"

// gItem is one goroutine as read: decoded from its g, and delve's G when delve read it.
type gItem struct {
	raw rawG
	dg  *proc.G
}

// readGs reads runtime.allgs: directly with the layout of runtime.g when it is understood,
// through delve (slower: it loads each g as a variable) otherwise.
func (g *GoReader) readGs(b *goBinary, tgt *proc.Target) ([]gItem, error) {
	if b.layoutErr == nil {
		if raws, err := b.readAllgs(b.proc.mem); err == nil {
			items := make([]gItem, len(raws))
			for i, r := range raws {
				items[i] = gItem{raw: r}
			}
			return items, nil
		}
	}
	gs, _, err := proc.GoroutinesInfo(tgt, 0, 0)
	if err != nil {
		return nil, err
	}
	items := make([]gItem, 0, len(gs))
	for _, dg := range gs {
		if dg.Unreadable != nil {
			continue // an allgs slot being reused as it was read
		}
		items = append(items, gItem{dg: dg, raw: rawG{id: dg.ID, status: dg.Status, waitReason: dg.WaitReason,
			pc: dg.PC, sp: dg.SP, bp: dg.BP, lr: dg.LR, goPC: dg.GoPC, startPC: dg.StartPC}})
	}
	return items, nil
}

// delveG has delve read the g at allgs[rg.index] (and match it to the threads given); nil
// when it is another goroutine by then.
func delveG(tgt *proc.Target, rg rawG) *proc.G {
	gs, _, err := proc.GoroutinesInfo(tgt, rg.index, 1)
	if err != nil || len(gs) == 0 || gs[0].Unreadable != nil || gs[0].ID != rg.id {
		return nil
	}
	return gs[0]
}

// stack unwinds a goroutine with delve. A parked goroutine's stack is usually the same from
// one sample to the next: its unwind is kept with the memory it read, and a later one from
// the same registers (key) whose memory still holds the same bytes is that one again
// (delve's unwind is a function of the registers and of what it reads).
func (g *GoReader) stack(b *goBinary, tgt *proc.Target, pid int, maps, exeMaps []Mapping, dg *proc.G, key stackKey) ([]Frame, string) {
	var reads []memRead
	b.proc.mem.log = &reads
	sf, err := proc.GoroutineStacktrace(tgt, dg, key.max-1, 0)
	b.proc.mem.log = nil
	frames := g.frames(b, pid, maps, exeMaps, sf, key.max)
	var msg string
	if err != nil {
		msg = err.Error()
	} else if len(sf) > 0 && sf[len(sf)-1].Err != nil {
		msg = sf[len(sf)-1].Err.Error()
	}
	if dg.Thread == nil {
		if b.stacks == nil || len(b.stacks) >= maxStackMemo {
			b.stacks = map[stackKey]stackMemo{}
		}
		b.stacks[key] = stackMemo{frames: frames, err: msg, reads: reads}
	}
	return slices.Clone(frames), msg
}

// stackKey is what a parked goroutine's unwind starts from.
type stackKey struct {
	pid            int
	id             int64
	pc, sp, bp, lr uint64
	status         uint64
	max            int
}

type stackMemo struct {
	frames []Frame
	err    string
	reads  []memRead
}

// maxStackMemo bounds the kept unwinds of one binary (1000 processes of 16 goroutines).
const maxStackMemo = 1 << 14

// memRead is one read of the process's memory and what it returned.
type memRead struct {
	addr uint64
	data []byte
}

// system is the runtime's isSystemGoroutine for a goroutine started at startPC: its first
// function is in package runtime and is not runtime.main (nor the signal-event handler).
// Delve's G.System disassembles the start function to see through wrappers; a go
// statement's wrapper (main.main.gowrap1) is named after its caller, so the name suffices.
func (b *goBinary) system(startPC uint64) bool {
	fn := b.bi.PCToFunc(startPC)
	if fn == nil {
		return false
	}
	switch fn.Name {
	case "runtime.main", "runtime.handleAsyncEvent":
		return false
	}
	return strings.HasPrefix(fn.Name, "runtime.")
}

// Statuses of runtime2.go that delve has no name for: _Gscan is set in a status while the GC
// scans the stack; _Gdeadextra (Go 1.26) is a dead g kept for cgo callbacks on extra Ms.
const (
	gScan      = 0x1000
	gDeadExtra = 11
)

var goStatusNames = map[uint64]string{
	proc.Gidle: "idle", proc.Grunnable: "runnable", proc.Grunning: "running", proc.Gsyscall: "syscall",
	proc.Gwaiting: "waiting", proc.Gdead: "dead", proc.Gcopystack: "copystack", 9: "preempted", 10: "leaked",
}

func goStatus(s uint64) string {
	if n, ok := goStatusNames[s&^gScan]; ok {
		return n
	}
	return "status " + strconv.FormatUint(s, 10)
}

// waitReason names a wait reason by the program's own table, or by delve's for its Go
// version.
func (b *goBinary) waitReason(r int64) string {
	if r > 0 && r < int64(len(b.waits)) && b.waits[r] != "" {
		return b.waits[r]
	}
	return api.WaitReasonString(&b.ver, r)
}

// readWaitReasons reads runtime.waitReasonStrings ([...]string, the runtime's names of its
// wait reasons) from the process once: it is right for every Go version, including those
// newer than delve's tables.
func (b *goBinary) readWaitReasons(mem *pageCache) {
	if b.waits != nil {
		return
	}
	b.waits = []string{}
	s := b.waitsSym
	ptr := uint64(b.d.ptrSize)
	if s.value == 0 || ptr != 8 || s.end <= s.value || s.end-s.value > 1<<16 {
		return
	}
	arr := make([]byte, s.end-s.value)
	if _, err := mem.ReadMemory(arr, s.value+b.bias); err != nil {
		return
	}
	var waits []string
	for off := uint64(0); off+2*ptr <= uint64(len(arr)); off += 2 * ptr {
		p, n := b.d.order.Uint64(arr[off:]), b.d.order.Uint64(arr[off+ptr:])
		if n > 256 {
			return // not a string header: leave it to delve's tables
		}
		str := make([]byte, n)
		if n > 0 {
			if _, err := mem.ReadMemory(str, p); err != nil {
				return
			}
		}
		waits = append(waits, string(str))
	}
	b.waits = waits
}

// frames turns delve's frames (inlined calls as frames of their own) into elfinfo's.
func (g *GoReader) frames(b *goBinary, pid int, maps, exeMaps []Mapping, sf []proc.Stackframe, maxFrames int) []Frame {
	var out []Frame
	for i := 0; i < len(sf) && len(out) < maxFrames; i++ {
		first := i
		for i < len(sf)-1 && sf[i].Inlined {
			i++ // sf[first..i-1] are inlined into sf[i]
		}
		f := sf[i]
		if f.Err != nil && f.Current.PC == 0 {
			break
		}
		caller := len(out) > 0
		fr := Frame{PC: f.Current.PC, Location: g.locate(b, pid, maps, exeMaps, f.Current.PC, caller, false)}
		if f.Call.Fn != nil {
			in := sf[first]
			fr.Function, fr.File, fr.Line = in.Call.Fn.Name, in.Call.File, in.Call.Line
			fr.FuncOff = f.Current.PC - f.Call.Fn.Entry
			fr.InlinedInto = nil
			for _, c := range sf[first+1 : i+1] {
				fr.InlinedInto = append(fr.InlinedInto, SourceFrame{Function: c.Call.Fn.Name, File: c.Call.File, Line: c.Call.Line})
			}
		}
		out = append(out, fr)
		if f.Err != nil {
			break
		}
	}
	return out
}

// locate gives module, link-time offset, build-id and ELF symbol of a pc (of the call
// before it, for a return address) as Unwind does, and, with lines, delve's function and
// line; code outside the executable gets its function from the symbol tables.
func (g *GoReader) locate(b *goBinary, pid int, maps, exeMaps []Mapping, pc uint64, caller, lines bool) Location {
	at := pc
	if caller {
		at--
	}
	if m, ok := FindMapping(exeMaps, at); ok && pc >= b.bias {
		if v := at - b.bias; b.d.inLoad(v) {
			loc := Location{Module: m.Path, Offset: pc - b.bias, BuildID: b.d.buildID}
			if s, ok := b.d.funcForVaddr(v); ok {
				loc.Symbol = s.name
				loc.Function, loc.FuncOff = s.name, pc-b.bias-s.value
			}
			if lines {
				if file, line, fn := b.bi.PCToLine(at); fn != nil {
					loc.Function, loc.FuncOff, loc.File, loc.Line = fn.Name, pc-fn.Entry, file, line
				}
			}
			return loc
		}
	}
	g.resMu.Lock()
	defer g.resMu.Unlock()
	if caller {
		return g.res.callerLocation(pid, maps, pc)
	}
	return g.res.Locate(pid, maps, pc)
}

// exeMappings are the mappings of the executable: of its inode, or of the path exe names
// (through /proc/PID/exe's link; overlayfs may show another inode in maps than stat does).
func exeMappings(exe string, ino uint64, maps []Mapping) []Mapping {
	target, err := os.Readlink(exe)
	if err != nil {
		target = exe
	}
	var out []Mapping
	for _, m := range maps {
		if m.IsFile() && (m.Inode == ino || m.Path == target) {
			out = append(out, m)
		}
	}
	return out
}

// binary returns the cached goBinary of exe as loaded in maps, loading it on first use.
func (g *GoReader) binary(exe string, maps []Mapping) (*goBinary, error) {
	fi, err := os.Stat(exe)
	if err != nil {
		return nil, fmt.Errorf("goroutines: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return nil, fmt.Errorf("goroutines: stat %s: no inode", exe)
	}
	k := goKey{dev: st.Dev, ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	bias := uint64(0)
	if em := exeMappings(exe, st.Ino, maps); len(em) > 0 && em[0].Offset == 0 {
		bias = em[0].Start // adjusted by the first PT_LOAD's vaddr once the ELF is read
	}
	k.bias = bias
	g.mu.Lock()
	b := g.bins[k]
	if b == nil {
		b = &goBinary{path: exe, ino: st.Ino}
		g.bins[k] = b
		b.mu.Lock() // loaded below, outside g.mu: other binaries need not wait for it
		g.mu.Unlock()
		b.err = b.load(bias)
		b.mu.Unlock()
	} else {
		g.mu.Unlock()
	}
	b.mu.Lock()
	err = b.err
	b.mu.Unlock()
	return b, err
}

// load reads the ELF and delve's BinaryInfo; mapStart is where the file's offset 0 is mapped.
func (b *goBinary) load(mapStart uint64) error {
	f, err := os.Open(b.path)
	if err != nil {
		return fmt.Errorf("goroutines: %w", err)
	}
	defer f.Close()
	d, err := parseELF(f)
	if err != nil {
		return fmt.Errorf("goroutines: %s: %w", b.path, err)
	}
	b.d = d
	if ef, err := elf.NewFile(f); err == nil {
		syms, _ := ef.Symbols()
		for _, s := range syms {
			if s.Name == "runtime.waitReasonStrings" {
				b.waitsSym = symbol{name: s.Name, value: s.Value, end: s.Value + s.Size}
			}
		}
	}
	if _, ok := d.syms["runtime.allgs"]; !ok {
		if _, ok := d.syms["runtime.main"]; !ok {
			return ErrNotGo
		}
	}
	arch, ok := goarchOf[d.machine]
	if !ok {
		return fmt.Errorf("goroutines: %s: unsupported machine %v", b.path, d.machine)
	}
	b.arch = arch
	if d.typ == elf.ET_DYN && len(d.loads) > 0 {
		b.bias = mapStart - (d.loads[0].Vaddr - d.loads[0].Off) // a PIE: where it was loaded
	}
	b.entry = d.entry + b.bias
	if !d.dwarfAvailable(b.path) {
		return fmt.Errorf("goroutines: %s has no DWARF (built with -ldflags=-w?)", b.path)
	}
	silence()
	bi := proc.NewBinaryInfo("linux", arch, true) // attaching=true: never calls debuginfod
	if err := bi.LoadBinaryInfo(b.path, b.entry, debugInfoDirs); err != nil {
		bi.Close()
		return fmt.Errorf("goroutines: load debug info of %s: %w", b.path, err)
	}
	b.bi = bi
	b.ver = goversion.ParseProducer(bi.Producer())
	b.layoutErr = errors.New("no runtime.g type")
	if typ, err := bi.FindType("runtime.g"); err == nil {
		b.layout, b.layoutErr = layoutOf(typ, d.syms)
	}
	return nil
}

// inLoad says whether link-time address v is in one of the file's PT_LOAD segments.
func (d *elfData) inLoad(v uint64) bool {
	for _, p := range d.loads {
		if v >= p.Vaddr && v-p.Vaddr < p.Memsz {
			return true
		}
	}
	return false
}

// delveRegs decodes raw user_regs_struct words for delve.
func delveRegs(arch string, words []uint64) (proc.Registers, error) {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, words)
	// Pad short register sets (the kernel's and delve's sizes may differ by trailing words).
	b.Write(make([]byte, 64*8))
	r := bytes.NewReader(b.Bytes())
	switch arch {
	case "amd64":
		var regs linutil.AMD64PtraceRegs
		if len(words) < 27 {
			return nil, fmt.Errorf("%d register words, want 27", len(words))
		}
		binary.Read(r, binary.LittleEndian, &regs)
		return linutil.NewAMD64Registers(&regs, nil), nil
	case "arm64":
		var regs linutil.ARM64PtraceRegs
		if len(words) < 34 {
			return nil, fmt.Errorf("%d register words, want 34", len(words))
		}
		binary.Read(r, binary.LittleEndian, &regs)
		return linutil.NewARM64Registers(&regs, false, 0, nil), nil
	case "ppc64le":
		var regs linutil.PPC64LEPtraceRegs
		if len(words) < 44 {
			return nil, fmt.Errorf("%d register words, want 44", len(words))
		}
		binary.Read(r, binary.LittleEndian, &regs)
		return linutil.NewPPC64LERegisters(&regs, nil), nil
	}
	return nil, fmt.Errorf("unsupported arch %s", arch)
}

// pageCache reads a running process's memory a page at a time, once per Goroutines call:
// delve reads a goroutine's fields and stack words one by one, and each read of the
// caller's MemReader is a process_vm_readv.
type pageCache struct {
	read  MemReader
	pages map[uint64][]byte // nil: that page could not be read whole
	log   *[]memRead        // when set, every read is recorded there
}

// holds says whether memory still holds what reads read.
func (c *pageCache) holds(reads []memRead) bool {
	var buf []byte
	for _, r := range reads {
		buf = append(buf[:0], make([]byte, len(r.data))...)
		if _, err := c.ReadMemory(buf, r.addr); err != nil || !bytes.Equal(buf, r.data) {
			return false
		}
	}
	return true
}

const cachePage = 4096

func (c *pageCache) ReadMemory(buf []byte, addr uint64) (int, error) {
	n := 0
	for n < len(buf) {
		a := addr + uint64(n)
		base := a &^ (cachePage - 1)
		page, ok := c.pages[base]
		if !ok {
			page = make([]byte, cachePage)
			if err := c.read(base, page); err != nil {
				page = nil
			}
			c.pages[base] = page
		}
		want := min(len(buf)-n, int(base+cachePage-a))
		if page == nil {
			// Part of the page is unmapped (a guard page beside it, say): read just this.
			if err := c.read(a, buf[n:n+want]); err != nil {
				return n, err
			}
		} else {
			copy(buf[n:n+want], page[a-base:])
		}
		n += want
	}
	if c.log != nil {
		*c.log = append(*c.log, memRead{addr: addr, data: bytes.Clone(buf)})
	}
	return n, nil
}

func (c *pageCache) WriteMemory(addr uint64, data []byte) (int, error) {
	return 0, errReadOnly
}

var errReadOnly = errors.New("goroutines: the process is only read, never written")

// goProcess is the process as delve's pkg/proc sees it: memory and threads, nothing it can
// change. Embedding the interface provides the eBPF methods, whose types are internal to
// delve; SupportsBPF is false, so they are never called.
type goProcess struct {
	proc.ProcessInternal
	bin     *goBinary
	pid     int
	mem     *pageCache
	threads map[int]*goThread
	bps     proc.BreakpointMap
}

// target returns the binary's delve Target, made on first use.
func (b *goBinary) target(pid int) (*proc.Target, error) {
	if b.tgt != nil {
		return b.tgt, nil
	}
	p := &goProcess{bin: b, pid: pid, mem: &pageCache{}, threads: map[int]*goThread{}, bps: proc.NewBreakpointMap()}
	// Delve wants a current thread; this one has no registers (GoroutinesInfo asks the
	// threads the caller passed, by ThreadList).
	current := &goThread{p: p, tid: pid}
	// DisableAsyncPreempt stays false: setting it writes the tracee's memory.
	_, add := proc.NewGroup(p, proc.NewTargetGroupConfig{DebugInfoDirs: debugInfoDirs})
	// The BinaryInfo is loaded already: delve's AddImage finds the same path and entry and
	// returns at once.
	tgt, err := add(p, pid, current, b.path, proc.StopAttached, "")
	if err != nil {
		return nil, err
	}
	b.proc, b.tgt = p, tgt
	return tgt, nil
}

func (p *goProcess) BinInfo() *proc.BinaryInfo        { return p.bin.bi }
func (p *goProcess) EntryPoint() (uint64, error)      { return p.bin.entry, nil }
func (p *goProcess) Breakpoints() *proc.BreakpointMap { return &p.bps }
func (p *goProcess) Memory() proc.MemoryReadWriter    { return p.mem }
func (p *goProcess) Valid() (bool, error)             { return true, nil }
func (p *goProcess) SupportsBPF() bool                { return false }
func (p *goProcess) FollowExec(bool) error            { return nil }

func (p *goProcess) FindThread(tid int) (proc.Thread, bool) {
	t, ok := p.threads[tid]
	return t, ok
}

func (p *goProcess) ThreadList() []proc.Thread {
	out := make([]proc.Thread, 0, len(p.threads))
	for _, t := range p.threads {
		out = append(out, t)
	}
	return out
}

func (p *goProcess) RequestManualStop(*proc.ContinueOnceContext) error { return nil }
func (p *goProcess) WriteBreakpoint(*proc.Breakpoint) error            { return errReadOnly }
func (p *goProcess) EraseBreakpoint(*proc.Breakpoint) error            { return errReadOnly }
func (p *goProcess) MemoryMap() ([]proc.MemoryMapEntry, error) {
	return nil, proc.ErrMemoryMapNotSupported
}
func (p *goProcess) StartCallInjection() (func(), error) { return nil, errReadOnly }

// ProcessGroup, for proc.NewGroup: nothing ever runs or stops through it.
func (p *goProcess) ContinueOnce(*proc.ContinueOnceContext) (proc.Thread, proc.StopReason, error) {
	return nil, proc.StopUnknown, errReadOnly
}
func (p *goProcess) StepInstruction(int) error { return errReadOnly }
func (p *goProcess) Detach(int, bool) error    { return nil }
func (p *goProcess) Close() error              { return nil }

// goThread is a thread whose registers the caller read (regs nil: none were given).
type goThread struct {
	p      *goProcess
	tid    int
	regs   proc.Registers
	common proc.CommonThread
}

var errNoRegs = errors.New("goroutines: no registers for this thread")

func (t *goThread) Breakpoint() *proc.BreakpointState { return &proc.BreakpointState{} }
func (t *goThread) ThreadID() int                     { return t.tid }
func (t *goThread) Registers() (proc.Registers, error) {
	if t.regs == nil {
		return nil, errNoRegs
	}
	return t.regs, nil
}
func (t *goThread) RestoreRegisters(proc.Registers) error  { return errReadOnly }
func (t *goThread) BinInfo() *proc.BinaryInfo              { return t.p.bin.bi }
func (t *goThread) ProcessMemory() proc.MemoryReadWriter   { return t.p.mem }
func (t *goThread) SetCurrentBreakpoint(bool) error        { return nil }
func (t *goThread) SoftExc() bool                          { return false }
func (t *goThread) Common() *proc.CommonThread             { return &t.common }
func (t *goThread) SetReg(uint64, *op.DwarfRegister) error { return errReadOnly }
