package elfinfo

import (
	"debug/elf"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-delve/delve/pkg/logflags"
	"github.com/go-delve/delve/pkg/proc"
)

// Symbolizer maps a link-time address of one module to function and source line. It keeps
// delve behind a small interface (dependencies.md) so callers never import it.
type Symbolizer interface {
	// PCToLine returns the function containing the link-time address vaddr (the innermost
	// inlined one when code was inlined there, as gdb's innermost frame), its link-time
	// entry, and vaddr's file:line; name is "" when unknown (file and line may still be
	// known: assembly has lines and no DWARF function).
	PCToLine(vaddr uint64) (name string, entry uint64, file string, line int)
	// InlinedInto returns, when the code at vaddr was inlined, the functions it was inlined
	// into, innermost first, each at the line of its inlined call, the last being the
	// function the code really is in.
	InlinedInto(vaddr uint64) []SourceFrame
	// CallTarget says what the call returning to link-time address ra calls: its entry when
	// the function is in this module (local), or the names to find it by in another (a call
	// through the PLT); ok is false when DWARF describes no direct call there.
	CallTarget(ra uint64) (entry uint64, local bool, names []string, ok bool)
	// TailChain returns the link-time pcs of the functions that, entered at start, jumped on
	// (tail calls) towards the function holding calleeAt, innermost first: frames gdb shows
	// that are not on the stack. It is empty when start is that function's own entry.
	TailChain(start, calleeAt uint64) []uint64
	// TailChainOut is TailChain towards a function of another module: the chain ends in a
	// tail call through the PLT to a function whose names reaches accepts.
	TailChainOut(start uint64, reaches func(names []string) bool) []uint64
	Close() error
}

var silenceDelve sync.Once

// quietLogger drops everything: delve logs warnings about debug info it cannot parse, and
// in a TUI any write to stderr corrupts the screen.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...interface{}) {}
func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Warnf(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Debug(...interface{})          {}
func (quietLogger) Info(...interface{})           {}
func (quietLogger) Warn(...interface{})           {}
func (quietLogger) Error(...interface{})          {}

func silence() {
	silenceDelve.Do(func() {
		logflags.SetLoggerFactory(func(bool, logflags.Fields, io.Writer) logflags.Logger { return quietLogger{} })
	})
}

// delveSymbolizer is one delve BinaryInfo for one file, loaded module-relative: the file's own
// entry point is passed as the runtime entry, so delve's StaticBase is 0 and lookups use
// link-time addresses, the same for every process that maps the file. Delve gives the line
// of a pc; funcs (when the DWARF could be indexed) gives the functions and inlined calls.
type delveSymbolizer struct {
	bi    *proc.BinaryInfo
	bias  uint64 // added to link-time addresses before asking delve
	funcs *funcIndex
}

// InlinedInto implements Symbolizer.
func (s *delveSymbolizer) InlinedInto(vaddr uint64) []SourceFrame {
	if s.funcs == nil {
		return nil
	}
	fn, ok := s.funcs.lookup(vaddr)
	if !ok {
		return nil
	}
	return fn.callers
}

// CallTarget implements Symbolizer.
func (s *delveSymbolizer) CallTarget(ra uint64) (uint64, bool, []string, bool) {
	if s.funcs == nil {
		return 0, false, nil, false
	}
	return s.funcs.callTarget(ra)
}

// TailChain implements Symbolizer.
func (s *delveSymbolizer) TailChain(start, calleeAt uint64) []uint64 {
	if s.funcs == nil {
		return nil
	}
	return s.funcs.tailChain(start, calleeAt)
}

// TailChainOut implements Symbolizer.
func (s *delveSymbolizer) TailChainOut(start uint64, reaches func([]string) bool) []uint64 {
	if s.funcs == nil {
		return nil
	}
	return s.funcs.tailChainOut(start, reaches)
}

var goarchOf = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_PPC64:   "ppc64le",
}

// newSymbolizer loads the DWARF of the file at path: a Go program or library through delve
// (its names and lines are the Go toolchain's own), anything else with elfinfo's own index
// of functions and line tables, which reads each compile unit on its first lookup instead of
// every one up front (libc's DWARF: a fifth of delve's time) and holds one copy of it.
func newSymbolizer(path string, d *elfData) (Symbolizer, error) {
	if d.isGo() {
		return newDelveSymbolizer(path, d)
	}
	dbg := d.debugFile(path)
	if dbg == "" {
		return nil, fmt.Errorf("load debug info of %s: none found", path)
	}
	x, err := openFuncIndex(dbg, d.syms)
	if err != nil {
		return nil, fmt.Errorf("load debug info of %s: %w", path, err)
	}
	return dwarfSymbolizer{x}, nil
}

// isGo says whether the file holds Go code (a Go program, or a Go c-shared library).
func (d *elfData) isGo() bool {
	_, ok := d.syms["runtime.goexit"]
	return ok
}

// dwarfSymbolizer is elfinfo's own DWARF index of one file, addressed by link-time addresses.
type dwarfSymbolizer struct{ x *funcIndex }

func (s dwarfSymbolizer) PCToLine(vaddr uint64) (string, uint64, string, int) {
	file, line, _ := s.x.lineAt(vaddr)
	fn, ok := s.x.lookup(vaddr)
	if !ok {
		return "", 0, file, line
	}
	return fn.name, fn.entry, file, line
}

func (s dwarfSymbolizer) InlinedInto(vaddr uint64) []SourceFrame {
	fn, _ := s.x.lookup(vaddr)
	return fn.callers
}

func (s dwarfSymbolizer) CallTarget(ra uint64) (uint64, bool, []string, bool) {
	return s.x.callTarget(ra)
}

func (s dwarfSymbolizer) TailChain(start, calleeAt uint64) []uint64 {
	return s.x.tailChain(start, calleeAt)
}

func (s dwarfSymbolizer) TailChainOut(start uint64, reaches func([]string) bool) []uint64 {
	return s.x.tailChainOut(start, reaches)
}

func (s dwarfSymbolizer) Close() error { return nil }

func newDelveSymbolizer(path string, d *elfData) (Symbolizer, error) {
	silence()
	arch, ok := goarchOf[d.machine]
	if !ok {
		return nil, fmt.Errorf("load debug info of %s: unsupported machine %v", path, d.machine)
	}
	bi := proc.NewBinaryInfo("linux", arch, true) // attaching=true: never calls debuginfod
	entry, bias := d.entry, uint64(0)
	if entry == 0 && d.typ == elf.ET_DYN {
		// Delve refuses a position-independent image with runtime entry 0
		// (ErrCouldNotDetermineRelocation); shift it by a constant and undo that on lookup.
		bias = 1 << 32
		entry = bias
	}
	if err := bi.LoadBinaryInfo(path, entry, debugInfoDirs); err != nil {
		bi.Close()
		return nil, fmt.Errorf("load debug info of %s: %w", path, err)
	}
	s := &delveSymbolizer{bi: bi, bias: bias}
	if dbg := d.debugFile(path); dbg != "" {
		s.funcs, _ = openFuncIndex(dbg, d.syms) // without it, delve's names and no inlined frames
	}
	return s, nil
}

func (s *delveSymbolizer) PCToLine(vaddr uint64) (string, uint64, string, int) {
	file, line, fn := s.bi.PCToLine(vaddr + s.bias)
	if fn == nil {
		return "", 0, "", 0
	}
	// Delve names C functions "C.name".
	name, entry := strings.TrimPrefix(fn.Name, "C."), fn.Entry-s.bias
	// Code inlined into fn is named after the inlined function, as gdb's innermost frame is;
	// the line table already gives its own file:line.
	if s.funcs != nil {
		if in, ok := s.funcs.lookup(vaddr); ok && in.name != "" {
			name, entry = in.name, in.entry
		}
	}
	return name, entry, file, line
}

func (s *delveSymbolizer) Close() error { return s.bi.Close() }
