// Package demo holds crashtui's demo job: small C programs (embedded, so the binary carries
// them) and the code that compiles them with the system C compiler into a cache, for
// `crashtui demo`, `make demo` and the tests of every package. It never traces anything.
//
// Sub-packages: crashes (the crash-pattern suite), access (the access-matrix peer), restart
// (threads blocked in syscalls), patience (how long the tests and the QEMU stages wait on a
// loaded machine).
package demo

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/crashtui/crashtui/sessions/outfile"
)

//go:embed c/*.c
var sources embed.FS

// Names lists the embedded programs.
func Names() []string {
	ents, _ := sources.ReadDir("c")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".c"))
	}
	return out
}

// Source returns the C source of a program.
func Source(name string) ([]byte, error) { return sources.ReadFile("c/" + name + ".c") }

var mu sync.Mutex

// recipe names how Program compiles; change it when the compile command changes, so cached
// programs built the old way are not reused.
const recipe = "gcc -g -O1 -pthread -fdebug-prefix-map=BUILD=DIR NAME.c -ldl, in the build dir, source kept beside (v3)"

// CacheDir is where compiled programs live: $CRASHTUI_DEMO_DIR, else
// $XDG_CACHE_HOME/crashtui/demo (or ~/.cache/crashtui/demo).
func CacheDir() string {
	if dirs := cacheDirs(); len(dirs) > 0 {
		return dirs[0]
	}
	return tempCache()
}

// cacheDirs are the caches Program may use, in order: $CRASHTUI_DEMO_DIR alone when set; else
// the user's cache and then a per-user temporary one (no usable home: a service account,
// HOME unset or /nonexistent).
func cacheDirs() []string {
	if d := os.Getenv("CRASHTUI_DEMO_DIR"); d != "" {
		return []string{d}
	}
	var dirs []string
	if base, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(base, "crashtui", "demo"))
	}
	return append(dirs, tempCache())
}

func tempCache() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("crashtui-demo-%d", os.Geteuid()))
}

// Program returns the path of the compiled program name, compiling it with gcc (or cc) when
// the cache lacks this exact source. The directory name is a hash of the source and flags,
// so an edited program is rebuilt and concurrent test binaries never see a half-written one.
//
// What it returns is run, often as root (crashtui demo, the tests), so the cache must be its
// user's alone: each directory from / to the program and the program itself belong to root
// or to that user and no one else can write them (sessions/outfile.CheckTree, as ssh checks
// authorized_keys), checked before the path is returned. A cache that fails (a user who
// made /tmp/crashtui-demo-0 first and put a program there) is not used: the next one is
// tried, and when none passes Program says why and builds nothing.
func Program(name string, flags ...string) (string, error) {
	src, err := Source(name)
	if err != nil {
		return "", fmt.Errorf("demo program %q: %w", name, err)
	}
	h := sha256.New()
	h.Write([]byte(recipe))
	h.Write(src)
	h.Write([]byte(strings.Join(flags, "\x00")))
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	mu.Lock()
	defer mu.Unlock()
	var refused []string
	for _, dir := range cacheDirs() {
		// outfile.Dir creates what is missing 0700, after checking what is above it.
		if err := outfile.Dir(dir); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		out, err := build(dir, sum, name, src, flags)
		if err != nil {
			return "", err
		}
		if err := outfile.CheckTree(out); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		return out, nil
	}
	return "", fmt.Errorf("demo program %q: no cache only this user can write, so nothing is built or run (set XDG_CACHE_HOME or CRASHTUI_DEMO_DIR to a directory of your own): %s",
		name, strings.Join(refused, "; "))
}

// build compiles name into dir/sum/name unless it is there already, and returns its path.
func build(dir, sum, name string, src []byte, flags []string) (string, error) {
	out := filepath.Join(dir, sum, name) // the program keeps its own name in /proc and in keys
	if st, err := os.Lstat(out); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return out, nil
	}
	cc, err := compiler()
	if err != nil {
		return "", fmt.Errorf("demo program %q: %w", name, err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	srcPath := filepath.Join(tmp, name+".c")
	if err := os.WriteFile(srcPath, src, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, name)
	// Compile in the build directory with a relative source name, so __FILE__ (in assert
	// messages, which are crash keys) is "rank.c" and not a temporary path; the debug info
	// names the program's own directory, where its source is kept, so that a frame's source
	// line can be shown.
	final := filepath.Dir(out)
	args := append([]string{"-g", "-O1", "-pthread", "-fdebug-prefix-map=" + tmp + "=" + final, "-o", name, name + ".c"}, flags...)
	args = append(args, "-ldl")
	cmd := exec.Command(cc, args...)
	cmd.Dir = tmp
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compile demo program %q: %v\n%s", name, err, b)
	}
	if err := os.Mkdir(final, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	// The source first: a program in the cache always has its source beside it.
	if err := os.WriteFile(filepath.Join(final, name+".c"), src, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(bin, out); err != nil {
		return "", err
	}
	return out, nil
}

func compiler() (string, error) {
	for _, c := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no C compiler (gcc or cc) is installed: `make test` or `apt-get install gcc` provides one")
}
