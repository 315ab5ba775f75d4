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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// CacheDir is where compiled programs live: $XDG_CACHE_HOME/crashtui/demo (or ~/.cache).
func CacheDir() string {
	if d := os.Getenv("CRASHTUI_DEMO_DIR"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "crashtui", "demo")
}

// Program returns the path of the compiled program name, compiling it with gcc (or cc) when
// the cache lacks this exact source. The directory name is a hash of the source and flags,
// so an edited program is rebuilt and concurrent test binaries never see a half-written one.
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
	dir := CacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		// No usable home (a service account, HOME=/nonexistent): a per-user temporary cache.
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("crashtui-demo-%d", os.Getuid()))
	}
	out := filepath.Join(dir, sum, name) // the program keeps its own name in /proc and in keys
	mu.Lock()
	defer mu.Unlock()
	if st, err := os.Stat(out); err == nil && st.Mode()&0o111 != 0 {
		return out, nil
	}
	cc, err := compiler()
	if err != nil {
		return "", fmt.Errorf("demo program %q: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
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
	if err := os.MkdirAll(final, 0o755); err != nil {
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
