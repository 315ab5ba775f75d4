package crashes

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

//go:embed src/*.c
var sources embed.FS

// FixedBase is where libcrashfixed.so is linked (far from the exe, heap and mmap areas).
const FixedBase = 0x30000000

// Suite is a built crash suite. PIE and NoPIE are the same crash.c, one position-independent
// and one linked at its fixed address; both link libcrashfuncs.so and libcrashfixed.so with an
// rpath, and take the dlmopen library as their second argument in mode "dlmopen".
type Suite struct {
	Dir      string
	PIE      string
	NoPIE    string
	LibFuncs string
	LibFixed string
	LibDL    string
}

// Build writes the sources into dir and compiles them with gcc (-g -O0, so every crash is at
// a predictable instruction of a named function). dir should be an absolute path without
// symlinks: /proc/PID/maps shows resolved paths, and keys contain them.
func Build(dir string) (Suite, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return Suite{}, fmt.Errorf("build crash suite: gcc not installed: %w", err)
	}
	ents, err := sources.ReadDir("src")
	if err != nil {
		return Suite{}, err
	}
	for _, e := range ents {
		b, err := sources.ReadFile("src/" + e.Name())
		if err != nil {
			return Suite{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return Suite{}, fmt.Errorf("build crash suite: %w", err)
		}
	}
	run := func(args ...string) error {
		cmd := exec.Command(gcc, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	lib := []string{"-g", "-O0", "-shared", "-fPIC"}
	steps := [][]string{
		append(lib, "-o", "libcrashfuncs.so", "crashfuncs.c"),
		append(lib, "-Wl,-Ttext-segment=0x"+strconv.FormatUint(FixedBase, 16), "-o", "libcrashfixed.so", "crashfixed.c"),
		append(lib, "-o", "libcrashdl.so", "crashdl.c"),
	}
	link := []string{"-L.", "-lcrashfuncs", "-lcrashfixed", "-ldl", "-lpthread", "-Wl,-rpath," + dir}
	steps = append(steps,
		append([]string{"-g", "-O0", "-fPIE", "-pie", "-o", "crash_pie", "crash.c"}, link...),
		append([]string{"-g", "-O0", "-fno-pie", "-no-pie", "-o", "crash_nopie", "crash.c"}, link...))
	for _, s := range steps {
		if err := run(s...); err != nil {
			return Suite{}, fmt.Errorf("build crash suite: %w", err)
		}
	}
	j := func(n string) string { return filepath.Join(dir, n) }
	return Suite{Dir: dir, PIE: j("crash_pie"), NoPIE: j("crash_nopie"), LibFuncs: j("libcrashfuncs.so"),
		LibFixed: j("libcrashfixed.so"), LibDL: j("libcrashdl.so")}, nil
}
