package elfinfo

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needTool skips the test when a program it needs is not installed.
func needTool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Skipf("%s not installed: %v", name, err)
	}
	return p
}

// gccIn runs gcc in dir with testdata sources.
func gccIn(tb testing.TB, dir string, args ...string) {
	tb.Helper()
	cmd := exec.Command(needTool(tb, "gcc"), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// testProgs are the binaries built from testdata/main.c and its libraries.
type testProgs struct {
	dir                       string
	pie, nopie                string
	libFuncs, libFixed, libDL string
}

// fixedBase is where libfixed.so is linked; far from the PIE/non-PIE exe, heap and mmap areas.
const fixedBase = 0x20000000

func buildProgs(tb testing.TB) testProgs {
	tb.Helper()
	dir := tb.TempDir()
	dir, err := filepath.EvalSymlinks(dir) // maps shows resolved paths
	if err != nil {
		tb.Fatal(err)
	}
	src, err := filepath.Abs("testdata")
	if err != nil {
		tb.Fatal(err)
	}
	s := func(n string) string { return filepath.Join(src, n) }
	gccIn(tb, dir, "-g", "-O0", "-shared", "-fPIC", "-o", "libfuncs.so", s("lib.c"))
	gccIn(tb, dir, "-g", "-O0", "-shared", "-fPIC", "-Wl,-Ttext-segment=0x"+strconv.FormatUint(fixedBase, 16), "-o", "libfixed.so", s("fixed.c"))
	gccIn(tb, dir, "-g", "-O0", "-shared", "-fPIC", "-o", "libdl.so", s("dl.c"))
	link := []string{"-L.", "-lfuncs", "-lfixed", "-ldl", "-Wl,-rpath," + dir}
	gccIn(tb, dir, append([]string{"-g", "-O0", "-fPIE", "-pie", "-o", "main_pie", s("main.c")}, link...)...)
	gccIn(tb, dir, append([]string{"-g", "-O0", "-fno-pie", "-no-pie", "-o", "main_nopie", s("main.c")}, link...)...)
	j := func(n string) string { return filepath.Join(dir, n) }
	return testProgs{dir: dir, pie: j("main_pie"), nopie: j("main_nopie"),
		libFuncs: j("libfuncs.so"), libFixed: j("libfixed.so"), libDL: j("libdl.so")}
}

// started is a running test program that printed its function addresses.
type started struct {
	pid   int
	addrs []uint64 // exe_func, lib_func, fixed_func, dl_func
}

// startMain runs a main.c build; it blocks in read(0) until killed in Cleanup.
func startMain(tb testing.TB, p testProgs, exe string) started {
	tb.Helper()
	cmd := exec.Command(exe, p.libDL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		stdin.Close()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("%s: reading addresses: %v", exe, err)
	}
	var s started
	s.pid = cmd.Process.Pid
	for _, f := range strings.Fields(line) {
		v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
		if err != nil {
			tb.Fatalf("%s printed %q: %v", exe, line, err)
		}
		s.addrs = append(s.addrs, v)
	}
	if len(s.addrs) != 4 {
		tb.Fatalf("%s printed %q, want 4 addresses", exe, line)
	}
	return s
}

// symValue returns st_value of a symbol in an ELF file.
func symValue(tb testing.TB, path, name string) uint64 {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return s.Value
		}
	}
	tb.Fatalf("%s: no symbol %s", path, name)
	return 0
}

// defLine returns the 1-based line of testdata/file holding "needle".
func defLine(tb testing.TB, file, needle string) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		tb.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, needle) {
			return i + 1
		}
	}
	tb.Fatalf("%s has no %q", file, needle)
	return 0
}
