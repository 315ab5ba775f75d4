package elfinfo

import (
	"debug/elf"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/go-delve/delve/pkg/logflags"
	"github.com/go-delve/delve/pkg/proc"
)

// Symbolizer maps a link-time address of one module to function and source line. It keeps
// delve behind a small interface (dependencies.md) so callers never import it.
type Symbolizer interface {
	// PCToLine returns the function containing the link-time address vaddr, its link-time
	// entry, and the file:line; name is "" when unknown.
	PCToLine(vaddr uint64) (name string, entry uint64, file string, line int)
	// InlinedInto returns, when the code at vaddr was inlined, the functions it was inlined
	// into, innermost first, the last being the function the code really is in.
	InlinedInto(vaddr uint64) []string
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
// link-time addresses, the same for every process that maps the file.
type delveSymbolizer struct {
	bi   *proc.BinaryInfo
	bias uint64 // added to link-time addresses before asking delve
	// inlined are the address ranges of code inlined into its callers (DWARF
	// DW_TAG_inlined_subroutine), by start, built on the first lookup.
	inlined     []inlinedRange
	inlinedDone bool
}

// inlinedRange is one inlined call: [lo, hi) (delve addresses) runs the code of name.
type inlinedRange struct {
	lo, hi uint64
	name   string
}

// inlinedAt returns the inlined calls whose code holds pc, innermost (smallest) first.
func (s *delveSymbolizer) inlinedAt(pc uint64) []inlinedRange {
	if !s.inlinedDone {
		s.inlinedDone = true
		for i := range s.bi.Functions {
			fn := &s.bi.Functions[i]
			for _, c := range fn.InlinedCalls {
				if c.HighPC > c.LowPC {
					s.inlined = append(s.inlined, inlinedRange{c.LowPC, c.HighPC, fn.Name})
				}
			}
		}
		sort.Slice(s.inlined, func(i, j int) bool { return s.inlined[i].lo < s.inlined[j].lo })
	}
	// Ranges that start at or before pc and still hold it.
	n := sort.Search(len(s.inlined), func(i int) bool { return s.inlined[i].lo > pc })
	var out []inlinedRange
	for i := n - 1; i >= 0 && i >= n-4096; i-- {
		if r := s.inlined[i]; pc < r.hi {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].hi-out[i].lo < out[j].hi-out[j].lo })
	return out
}

// innermostInlined is the function whose code, inlined into its caller, is at pc: the
// smallest inlined range that holds it (nested inlining), or "".
func (s *delveSymbolizer) innermostInlined(pc uint64) (name string, lo uint64) {
	if in := s.inlinedAt(pc); len(in) > 0 {
		return in[0].name, in[0].lo
	}
	return "", 0
}

// InlinedInto implements Symbolizer.
func (s *delveSymbolizer) InlinedInto(vaddr uint64) []string {
	in := s.inlinedAt(vaddr + s.bias)
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, len(in))
	for _, r := range in[1:] {
		out = append(out, strings.TrimPrefix(r.name, "C."))
	}
	if fn := s.bi.PCToFunc(vaddr + s.bias); fn != nil {
		out = append(out, strings.TrimPrefix(fn.Name, "C."))
	}
	return out
}

var goarchOf = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_PPC64:   "ppc64le",
}

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
	return &delveSymbolizer{bi: bi, bias: bias}, nil
}

func (s *delveSymbolizer) PCToLine(vaddr uint64) (string, uint64, string, int) {
	file, line, fn := s.bi.PCToLine(vaddr + s.bias)
	if fn == nil {
		return "", 0, "", 0
	}
	name, entry := fn.Name, fn.Entry
	// Code inlined into fn is named after the inlined function, as gdb's innermost frame is;
	// the line table already gives its own file:line.
	if in, lo := s.innermostInlined(vaddr + s.bias); in != "" {
		name, entry = in, lo
	}
	// Delve names C functions "C.name".
	return strings.TrimPrefix(name, "C."), entry - s.bias, file, line
}

func (s *delveSymbolizer) Close() error { return s.bi.Close() }
