package elfinfo

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// buildLib compiles testdata/lib.c to a shared library, stripped or not.
func buildLib(tb testing.TB, strip bool) string {
	tb.Helper()
	dir := tb.TempDir()
	src, _ := filepath.Abs("testdata/lib.c")
	args := []string{"-g", "-O0", "-shared", "-fPIC", "-o", "lib.so", src}
	if strip {
		args = append(args, "-s")
	}
	gccIn(tb, dir, args...)
	return filepath.Join(dir, "lib.so")
}

func TestParseELF(t *testing.T) {
	for _, strip := range []bool{false, true} {
		path := buildLib(t, strip)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		d, err := parseELF(f)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer ef.Close()
		// The build-id is the last 20 bytes of the .note.gnu.build-id section (16-byte header).
		note, err := ef.Section(".note.gnu.build-id").Data()
		if err != nil {
			t.Fatal(err)
		}
		if want := hex.EncodeToString(note[16:]); d.buildID != want {
			t.Errorf("strip=%v: build-id %q want %q", strip, d.buildID, want)
		}
		if d.hasDWARF == strip {
			t.Errorf("strip=%v: hasDWARF=%v", strip, d.hasDWARF)
		}
		// lib_func is found through .symtab, or .dynsym once stripped.
		dyn, _ := ef.DynamicSymbols()
		var v uint64
		for _, s := range dyn {
			if s.Name == "lib_func" {
				v = s.Value
			}
		}
		if s, ok := d.funcForVaddr(v + 3); !ok || s.name != "lib_func" || s.value != v {
			t.Errorf("strip=%v: funcForVaddr(lib_func+3) = %+v,%v", strip, s, ok)
		}
		mod := &module{d: d}
		if fde, err := mod.frames().FDEForPC(v); err != nil || fde.Begin() != v {
			t.Errorf("strip=%v: FDE for lib_func at %#x: %v %v", strip, v, fde, err)
		}
	}
}

func FuzzParseELF(f *testing.F) {
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		b, err := os.ReadFile(buildLib(f, true))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseELF(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, p := range d.loads {
			d.fileOffToVaddr(p.Off)
			if s, ok := d.funcForVaddr(p.Vaddr); ok && s.value > p.Vaddr {
				t.Fatalf("symbol %+v starts after %#x", s, p.Vaddr)
			}
		}
		(&module{d: d}).frames()
	})
}
