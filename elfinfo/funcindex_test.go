package elfinfo

import (
	"debug/elf"
	"fmt"
	"os"
	"testing"
)

func TestCommonEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths [][]uint64
		want  []uint64
	}{
		{"one path", [][]uint64{{1, 2, 3}}, []uint64{1, 2, 3}},
		{"the same twice", [][]uint64{{1, 2}, {1, 2}}, []uint64{1, 2}},
		// gdb keeps the callers all chains share and the callees all chains share.
		{"differ in the middle", [][]uint64{{1, 2, 3}, {1, 4, 3}}, []uint64{1, 3}},
		{"differ in length", [][]uint64{{1, 2, 3}, {1, 3}}, []uint64{1, 3}},
		{"nothing shared", [][]uint64{{1}, {2}}, []uint64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commonEnds(tc.paths); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("commonEnds(%v) = %v, want %v", tc.paths, got, tc.want)
			}
		})
	}
}

// debugFileOf is the file with the DWARF of the ELF file at path, or a skip.
func debugFileOf(b testing.TB, path, pkg string) (string, *elfData) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Skipf("%s: %v (%s)", path, err, pkg)
	}
	defer f.Close()
	d, err := parseELF(f)
	if err != nil {
		b.Fatal(err)
	}
	dbg := d.debugFile(path)
	if dbg == "" {
		b.Skipf("%s has no debug info: install %s", path, pkg)
	}
	return dbg, d
}

// funcStarts are link-time addresses inside up to n of the file's functions.
func funcStarts(b testing.TB, path string, n int) []uint64 {
	f, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	var pcs []uint64
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 8 && len(pcs) < n {
			pcs = append(pcs, s.Value+s.Size/2)
		}
	}
	return pcs
}

var indexed = []struct{ name, path, pkg string }{
	{"libc", "/lib/x86_64-linux-gnu/libc.so.6", "libc6-dbg"},
	{"libpython", "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0", "pyenv's python 3.11.7"},
}

// BenchmarkFuncIndex: what inlined frames cost. "open" indexes a file's DWARF (once per
// build-id, off the sampling loop: LinesJob.Load); "first" is 1000 lookups in a fresh index
// (each unit's functions are read on its first lookup); "warm" is a lookup once they are.
func BenchmarkFuncIndex(b *testing.B) {
	for _, f := range indexed {
		b.Run(f.name, func(b *testing.B) {
			dbg, d := debugFileOf(b, f.path, f.pkg)
			pcs := funcStarts(b, f.path, 1000)
			b.Run("open", func(b *testing.B) {
				for b.Loop() {
					if _, err := openFuncIndex(dbg, d.syms); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("first", func(b *testing.B) {
				for b.Loop() {
					x, _ := openFuncIndex(dbg, d.syms)
					for _, pc := range pcs {
						x.lookup(pc)
					}
				}
				b.ReportMetric(float64(len(pcs)), "lookups/op")
			})
			b.Run("warm", func(b *testing.B) {
				x, _ := openFuncIndex(dbg, d.syms)
				for _, pc := range pcs {
					x.lookup(pc)
				}
				i := 0
				for b.Loop() {
					x.lookup(pcs[i%len(pcs)])
					i++
				}
			})
		})
	}
}

// BenchmarkLoadLines: loading a C library's DWARF and 100 lookups (a LinesJob), through
// elfinfo's index (what non-Go modules use) and through delve's BinaryInfo (Go's).
func BenchmarkLoadLines(b *testing.B) {
	for _, f := range indexed {
		b.Run(f.name, func(b *testing.B) {
			_, d := debugFileOf(b, f.path, f.pkg)
			pcs := funcStarts(b, f.path, 100)
			for _, l := range []struct {
				name string
				load func(string, *elfData) (Symbolizer, error)
			}{{"elfinfo", newSymbolizer}, {"delve", newDelveSymbolizer}} {
				b.Run(l.name, func(b *testing.B) {
					for b.Loop() {
						s, err := l.load(f.path, d)
						if err != nil {
							b.Fatal(err)
						}
						for _, pc := range pcs {
							s.PCToLine(pc)
						}
						s.Close()
					}
				})
			}
		})
	}
}
