package demo

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/crashtui/crashtui/demo/testuser"
)

// TestProgramKeepsItsSource: a compiled demo program's debug info names a source file that
// exists, beside the program, so that the Stacks and Crashes tabs can show its lines.
func TestProgramKeepsItsSource(t *testing.T) {
	bin, err := Program("rank")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(bin), "rank.c")
	r := d.Reader()
	found := false
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			r.SkipChildren()
			continue
		}
		for _, file := range lr.Files() {
			if file != nil && file.Name == want {
				found = true
			}
		}
		r.SkipChildren()
	}
	if !found {
		t.Fatalf("the debug info of %s does not name %s", bin, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("the source is not beside the program: %v", err)
	}
}

// plantedCache makes TMPDIR a sticky directory of root's (as /tmp is) and unsets HOME and
// XDG_CACHE_HOME, so Program's only cache is $TMPDIR/crashtui-demo-UID. It returns that
// path and the sum directory Program would use for rank.
func plantedCache(t *testing.T) (cache, sumDir string) {
	t.Helper()
	real, err := Program("rank") // the usual cache: only to learn the sum
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(testuser.PublicDir(t), "tmp")
	os.Mkdir(tmp, 0o755)
	syscall.Chmod(tmp, 0o1777)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("CRASHTUI_DEMO_DIR", "")
	os.Unsetenv("CRASHTUI_DEMO_DIR")
	t.Setenv("XDG_CACHE_HOME", "")
	os.Unsetenv("XDG_CACHE_HOME")
	t.Setenv("HOME", "")
	os.Unsetenv("HOME")
	cache = filepath.Join(tmp, "crashtui-demo-"+strconv.Itoa(os.Geteuid()))
	return cache, filepath.Join(cache, filepath.Base(filepath.Dir(real)))
}

// TestProgramRefusesAPlantedCache is issue 21's fourth attack: with HOME and XDG_CACHE_HOME
// unset the cache is under $TMPDIR, where a second user can make the directory first and
// put a program in it, or put one into a cache directory others can write. Program builds
// and returns nothing there and says why; the planted program never runs.
func TestProgramRefusesAPlantedCache(t *testing.T) {
	u := testuser.New(t)
	marker := filepath.Join(u.Home, "ran-as-root")
	plant := func(t *testing.T, sumDir string) {
		t.Helper()
		script := "mkdir -p " + sumDir + " && printf '#!/bin/sh\\ntouch " + marker + "\\n' > " + sumDir + "/rank && chmod 755 " + sumDir + "/rank"
		if out, err := u.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("planting as %s: %v\n%s", u.Name, err, out)
		}
	}
	t.Run("directory made by the user", func(t *testing.T) {
		_, sumDir := plantedCache(t)
		plant(t, sumDir)
		p, err := Program("rank")
		if err == nil || !strings.Contains(err.Error(), "belongs to uid "+strconv.Itoa(u.UID)) {
			t.Fatalf("Program = %q, %v; want refused, naming uid %d", p, err, u.UID)
		}
		t.Log(err)
	})
	t.Run("cache others can write", func(t *testing.T) {
		cache, sumDir := plantedCache(t)
		if err := os.Mkdir(cache, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(cache, 0o777)
		plant(t, sumDir)
		p, err := Program("rank")
		if err == nil || !strings.Contains(err.Error(), "writable by group or others") {
			t.Fatalf("Program = %q, %v; want refused", p, err)
		}
	})
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the planted program ran")
	}
	t.Run("a cache of our own", func(t *testing.T) {
		cache, _ := plantedCache(t)
		p, err := Program("rank")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, cache+"/") {
			t.Errorf("Program = %s, want under %s", p, cache)
		}
		if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("cache %s: %v, mode %v; want created 0700", cache, err, fi.Mode())
		}
	})
}
