package elfinfo

import (
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

// captureStderr returns what fn writes to file descriptor 2 (delve writes to os.Stderr
// directly, below any logger).
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(w.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	fn()
	syscall.Dup3(saved, 2, 0)
	syscall.Close(saved)
	w.Close()
	b, _ := io.ReadAll(r)
	r.Close()
	return string(b)
}

// mappingOf makes the maps entry the kernel would show for a file's text mapped at base.
func mappingOf(t *testing.T, path string, base uint64) Mapping {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return Mapping{Start: base, End: base + 0x100000, Perms: "r-xp", Dev: "fe:00", Inode: st.Ino, Path: path}
}

// TestDelveQuiet: symbolizing files with and without DWARF writes nothing to stderr, which in
// the TUI would corrupt the screen. Delve itself does write there for a file without DWARF,
// which the last step shows, so the capture is known to work.
func TestDelveQuiet(t *testing.T) {
	stripped, full := buildLib(t, true), buildLib(t, false)
	var locs [2]Location
	out := captureStderr(t, func() {
		r := NewResolver()
		defer r.Close()
		for i, p := range []string{stripped, full} {
			base := uint64(0x7f0000000000)
			locs[i] = r.Locate(0, []Mapping{mappingOf(t, p, base)}, base+symValue(t, full, "lib_func"))
		}
	})
	if out != "" {
		t.Errorf("symbolization wrote to stderr: %q", out)
	}
	if locs[0].Function != "lib_func" || locs[0].File != "" {
		t.Errorf("stripped: %+v, want lib_func from .dynsym without a line", locs[0])
	}
	if locs[1].Function != "lib_func" || !strings.HasSuffix(locs[1].File, "lib.c") {
		t.Errorf("with DWARF: %+v, want lib_func at lib.c", locs[1])
	}

	f, err := os.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := parseELF(f)
	if err != nil {
		t.Fatal(err)
	}
	out = captureStderr(t, func() {
		if s, err := newDelveSymbolizer(stripped, d); err == nil {
			s.Close()
		}
	})
	if !strings.Contains(out, "no debug info") {
		t.Logf("delve no longer warns on stripped files (output %q); the guard may be removable", out)
	}
}
