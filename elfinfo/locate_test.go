package elfinfo

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	p := buildProgs(t)
	type want struct {
		module, fn, src string
		line            int
		off             uint64
	}
	funcs := func(exe string) []want {
		return []want{
			{exe, "exe_func", "main.c", defLine(t, "main.c", "int exe_func("), symValue(t, exe, "exe_func")},
			{p.libFuncs, "lib_func", "lib.c", defLine(t, "lib.c", "int lib_func("), symValue(t, p.libFuncs, "lib_func")},
			{p.libFixed, "fixed_func", "fixed.c", defLine(t, "fixed.c", "int fixed_func("), symValue(t, p.libFixed, "fixed_func")},
			{p.libDL, "dl_func", "dl.c", defLine(t, "dl.c", "int dl_func("), symValue(t, p.libDL, "dl_func")},
		}
	}
	for _, exe := range []string{p.pie, p.nopie} {
		t.Run(filepath.Base(exe), func(t *testing.T) {
			r := NewResolver()
			defer r.Close()
			ws := funcs(exe)
			var firstRun []Location
			for run := 0; run < 2; run++ { // a second process: a different ASLR layout
				s := startMain(t, p, exe)
				maps, err := ReadMaps(s.pid)
				if err != nil {
					t.Fatal(err)
				}
				for i, w := range ws {
					pc := s.addrs[i]
					loc := r.Locate(s.pid, maps, pc)
					if loc.Module != w.module || loc.Offset != w.off || loc.Function != w.fn || loc.FuncOff != 0 ||
						!strings.HasSuffix(loc.File, "/"+w.src) || loc.Line != w.line || len(loc.BuildID) != 40 {
						t.Errorf("run %d: Locate(%#x) = %+v; want %s+%#x %s+0 %s:%d with a build-id", run, pc, loc, w.module, w.off, w.fn, w.src, w.line)
					}
					// A PC inside the function keeps the module offset arithmetic and FuncOff.
					if in := r.Locate(s.pid, maps, pc+2); in.Offset != w.off+2 || in.Function != w.fn || in.FuncOff != 2 {
						t.Errorf("run %d: Locate(%#x+2) = %+v", run, pc, in)
					}
					bias, ok := r.LoadBias(s.pid, maps, w.module)
					if !ok || bias+w.off != pc {
						t.Errorf("run %d: LoadBias(%s) = %#x,%v; runtime %#x - link %#x = %#x", run, w.module, bias, ok, pc, w.off, pc-w.off)
					}
					if a, ok := r.Symbol(s.pid, maps, filepath.Base(w.module), w.fn); !ok || a != pc {
						t.Errorf("run %d: Symbol(%s, %s) = %#x,%v want %#x", run, filepath.Base(w.module), w.fn, a, ok, pc)
					}
					if run == 0 {
						firstRun = append(firstRun, loc)
					} else if !reflect.DeepEqual(firstRun[i], loc) {
						t.Errorf("Location differs between runs: %+v vs %+v", firstRun[i], loc)
					}
				}
				// The fixed-address library is mapped where it was linked: l_addr == 0.
				if bias, ok := r.LoadBias(s.pid, maps, p.libFixed); !ok || bias != 0 {
					t.Errorf("run %d: LoadBias(libfixed.so) = %#x,%v want 0", run, bias, ok)
				}
				if exe == p.nopie {
					if bias, ok := r.LoadBias(s.pid, maps, exe); !ok || bias != 0 {
						t.Errorf("run %d: LoadBias(non-PIE exe) = %#x,%v want 0", run, bias, ok)
					}
				}
				// glibc's GLIBC_PRIVATE __abort_msg (kernel.md §C SIGABRT keys) is in libc's data.
				a, ok := r.Symbol(s.pid, maps, "libc.so.6", "__abort_msg")
				if m, in := FindMapping(maps, a); !ok || !in || filepath.Base(m.Path) != "libc.so.6" || m.Perms[1] != 'w' {
					t.Errorf("run %d: __abort_msg at %#x,%v in %+v; want a writable libc.so.6 mapping", run, a, ok, m)
				}
			}
		})
	}
}

func TestLocateNonFile(t *testing.T) {
	ms, err := ParseMaps([]byte(sampleMaps))
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver()
	for _, tc := range []struct {
		pc   uint64
		want Location
	}{
		{0x7ffd1e7fc010, Location{Module: "[vdso]", Offset: 0x10}},
		{0x55d0c9f3b008, Location{Module: "[heap]", Offset: 8}},
		{0x10, Location{Offset: 0x10}},
	} {
		if got := r.Locate(0, ms, tc.pc); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Locate(%#x) = %+v want %+v", tc.pc, got, tc.want)
		}
	}
}

func BenchmarkLocate(b *testing.B) {
	p := buildProgs(b)
	s := startMain(b, p, p.pie)
	maps, err := ReadMaps(s.pid)
	if err != nil {
		b.Fatal(err)
	}
	r := NewResolver()
	defer r.Close()
	for _, pc := range s.addrs {
		r.Locate(s.pid, maps, pc) // warm the caches
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Locate(s.pid, maps, s.addrs[i%len(s.addrs)])
	}
}

// TestLocateDeleted: a library removed after it was mapped (maps says "(deleted)") is still
// read, through /proc/PID/map_files.
func TestLocateDeleted(t *testing.T) {
	p := buildProgs(t)
	s := startMain(t, p, p.pie)
	want := symValue(t, p.libDL, "dl_func")
	if err := os.Remove(p.libDL); err != nil {
		t.Fatal(err)
	}
	maps, err := ReadMaps(s.pid)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := FindMapping(maps, s.addrs[3])
	if !ok || !m.Deleted || m.Path != p.libDL {
		t.Fatalf("mapping of dl_func = %+v, want %s marked deleted", m, p.libDL)
	}
	r := NewResolver()
	defer r.Close()
	loc := r.Locate(s.pid, maps, s.addrs[3])
	if loc.Module != p.libDL || loc.Offset != want || loc.Function != "dl_func" || !strings.HasSuffix(loc.File, "dl.c") {
		t.Errorf("Locate(dl_func) = %+v, want %s+%#x dl_func dl.c", loc, p.libDL, want)
	}
}

// TestDeferredLines: a Deferred resolver answers from the symbol table without loading DWARF
// and says so; the pending DWARF is loaded on another goroutine and installed, after which the
// same pc has its line, for deferred and plain resolvers alike. A file without DWARF is never
// pending.
func TestDeferredLines(t *testing.T) {
	p := buildProgs(t)
	s := startMain(t, p, p.pie)
	maps, err := ReadMaps(s.pid)
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver()
	defer r.Close()
	d := r.Deferred()
	pc := s.addrs[0] // exe_func
	loc := d.Locate(s.pid, maps, pc)
	if loc.Function != "exe_func" || loc.File != "" || !loc.LinesPending {
		t.Fatalf("deferred Locate = %+v; want exe_func from the symbol table, lines pending", loc)
	}
	jobs := d.PendingLines()
	var job *LinesJob
	for _, j := range jobs {
		if j.Path() == p.pie {
			job = j
		}
	}
	if job == nil {
		t.Fatalf("pending jobs %v lack %s", jobs, p.pie)
	}
	if again := d.PendingLines(); len(again) != 0 {
		t.Errorf("the same modules handed out twice: %d jobs", len(again))
	}
	done := make(chan struct{})
	go func() { job.Load(); close(done) }()
	<-done
	if !r.Install(job) {
		t.Fatal("Install: no lines")
	}
	want := defLine(t, "main.c", "int exe_func(")
	for _, res := range []*Resolver{d, r} {
		if loc := res.Locate(s.pid, maps, pc); !strings.HasSuffix(loc.File, "/main.c") || loc.Line != want || loc.LinesPending {
			t.Errorf("after Install: %+v; want main.c:%d", loc, want)
		}
	}
	// A stripped library has nothing to defer.
	stripped := buildLib(t, true)
	base := uint64(0x7f0000000000)
	if loc := d.Locate(0, []Mapping{mappingOf(t, stripped, base)}, base+symValue(t, buildLib(t, false), "lib_func")); loc.LinesPending || loc.Function != "lib_func" {
		t.Errorf("stripped: %+v; want lib_func, nothing pending", loc)
	}
}
