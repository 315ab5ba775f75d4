//go:build linux

package elfinfo

// Stacks compared frame by frame with gdb's on the same stopped threads. Like
// live_amd64_test.go these tests take registers with ptrace (the exception the brief allows),
// in the amd64 PtraceRegs layout.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// gdbFrame is one line of gdb's backtrace: "#3  0x... in f (args) at file.c:12".
type gdbFrame struct {
	fn   string // "" for gdb's "??"
	file string // "" when gdb gives no line
	line int
}

func (f gdbFrame) String() string {
	s := cmpOr(f.fn, "??")
	if f.file != "" {
		s += " at " + f.file + ":" + strconv.Itoa(f.line)
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var (
	gdbThreadRe = regexp.MustCompile(`^Thread \d+ \(.*\bLWP (\d+)\)`)
	gdbFrameRe  = regexp.MustCompile(`^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(|^#(\d+)\s+(<signal handler called>)`)
	gdbAtRe     = regexp.MustCompile(` at (\S+):(\d+)$`)
)

// parseGDBBacktraces reads `thread apply all bt` output into each thread's frames, by TID.
func parseGDBBacktraces(out string) map[int][]gdbFrame {
	res := map[int][]gdbFrame{}
	tid := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := gdbThreadRe.FindStringSubmatch(l); m != nil {
			tid, _ = strconv.Atoi(m[1])
			res[tid] = nil
			continue
		}
		m := gdbFrameRe.FindStringSubmatch(l)
		if m == nil || tid == 0 {
			continue
		}
		f := gdbFrame{fn: m[2] + m[4]}
		if f.fn == "??" {
			f.fn = ""
		}
		if at := gdbAtRe.FindStringSubmatch(l); at != nil {
			f.file = at[1]
			f.line, _ = strconv.Atoi(at[2])
		}
		res[tid] = append(res[tid], f)
	}
	return res
}

// runGDB prints every thread's backtrace of the (group-stopped) process pid. gdb leaves a
// process it found stopped stopped when it detaches (the kernel keeps a group stop across
// ptrace attach and detach), so what it shows and what the test unwinds are the same pcs.
func runGDB(t *testing.T, pid int) map[int][]gdbFrame {
	t.Helper()
	gdb := needTool(t, "gdb")
	// past-main: gdb hides what is above main by default; elfinfo unwinds to _start.
	cmd := exec.Command(gdb, "-nx", "-batch", "-iex", "set auto-load python-scripts off",
		"-ex", "set backtrace past-main on", "-p", strconv.Itoa(pid), "-ex", "thread apply all bt")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb -p %d: %v\n%s", pid, err, out)
	}
	bts := parseGDBBacktraces(string(out))
	if len(bts) == 0 {
		t.Fatalf("gdb -p %d printed no thread:\n%s", pid, out)
	}
	return bts
}

// elfFrames unwinds each thread with elfinfo and lists its frames as gdb would, inlined
// calls expanded.
func elfFrames(t *testing.T, pid int, r *Resolver, regs map[int]syscall.PtraceRegs) map[int][]gdbFrame {
	t.Helper()
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem := procMem(t, pid)
	out := map[int][]gdbFrame{}
	for tid, rg := range regs {
		var fs []gdbFrame
		for _, f := range r.Unwind(pid, maps, rg.Rip, rg.Rsp, rg.Rbp, 0, "amd64", mem, 128) {
			for _, s := range f.SourceFrames() {
				fs = append(fs, gdbFrame{fn: s.Function, file: s.File, line: s.Line})
			}
		}
		out[tid] = fs
	}
	return out
}

// sameFile: gdb prints a line table's name as the compiler wrote it ("./nptl/futex-internal.c",
// "../sysdeps/unix/sysv/linux/read.c"); elfinfo joins it with the unit's directory.
func sameFile(gdb, elf string) bool {
	g, e := filepath.Clean(gdb), filepath.Clean(elf)
	for strings.HasPrefix(g, "../") {
		g = g[3:]
	}
	return g == e || strings.HasSuffix(e, "/"+g)
}

// frameCounts is how one stack compares: frames gdb shows (named), frames elfinfo names
// the same way, and the first difference.
type frameCounts struct {
	gdb, gdbNamed, matched int
	diff                   string
}

// compareFrames compares elfinfo's frames with gdb's, frame by frame: the function, and the
// file:line wherever gdb gives one.
func compareFrames(gdb, elf []gdbFrame) frameCounts {
	c := frameCounts{gdb: len(gdb)}
	for i, g := range gdb {
		if g.fn != "" {
			c.gdbNamed++
		}
		if i >= len(elf) {
			if c.diff == "" {
				c.diff = fmt.Sprintf("#%d: gdb %s, elfinfo has no frame", i, g)
			}
			continue
		}
		e := elf[i]
		ok := g.fn == e.fn && (g.file == "" || sameFile(g.file, e.file) && g.line == e.line)
		if ok && g.fn != "" {
			c.matched++
		}
		if !ok && c.diff == "" {
			c.diff = fmt.Sprintf("#%d: gdb %s, elfinfo %s", i, g, e)
		}
	}
	if len(elf) > len(gdb) && c.diff == "" {
		c.diff = fmt.Sprintf("#%d: elfinfo has %s past gdb's last frame", len(gdb), elf[len(gdb)])
	}
	return c
}

func names(fs []gdbFrame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.fn)
	}
	return out
}

// needLibcDebug skips unless Debian's detached debug info of the libc a program maps is
// installed: without it gdb (and elfinfo) have no DWARF for libc, so no futex frames.
func needLibcDebug(t *testing.T, pid int) {
	t.Helper()
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver()
	defer r.Close()
	for _, m := range maps {
		if m.IsFile() && filepath.Base(m.Path) == "libc.so.6" {
			mod, err := r.module(pid, m)
			if err != nil {
				t.Fatal(err)
			}
			if !mod.hasLines() {
				t.Skipf("libc %s has no debug info: install libc6-dbg", m.Path)
			}
			return
		}
	}
	t.Fatalf("pid %d maps no libc.so.6", pid)
}

const (
	nrRead           = 0
	nrFutex          = 202
	nrClockNanosleep = 230
)

// compareWithGDB unwinds every thread of the group-stopped process pid with elfinfo and with
// gdb and compares them frame by frame; it returns gdb's frames by TID.
func compareWithGDB(t *testing.T, pid int) map[int][]gdbFrame {
	t.Helper()
	runtime.LockOSThread() // every ptrace request must come from the thread that seized
	defer runtime.UnlockOSThread()
	r := NewResolver()
	defer r.Close()
	elf := elfFrames(t, pid, r, threadRegs(t, pid))
	gdb := runGDB(t, pid)
	var total frameCounts
	for tid, g := range gdb {
		e, ok := elf[tid]
		if !ok {
			t.Errorf("thread %d: gdb shows it, elfinfo did not unwind it", tid)
			continue
		}
		c := compareFrames(g, e)
		total.gdb += c.gdb
		total.gdbNamed += c.gdbNamed
		total.matched += c.matched
		t.Logf("thread %d: gdb %d frames (%d named), elfinfo names %d the same", tid, c.gdb, c.gdbNamed, c.matched)
		if c.diff != "" {
			t.Errorf("thread %d differs from gdb at %s\ngdb:     %v\nelfinfo: %v", tid, c.diff, g, e)
		}
	}
	t.Logf("all threads: gdb names %d of %d frames, elfinfo names %d of them the same", total.gdbNamed, total.gdb, total.matched)
	return gdb
}

// TestInlinedFramesMatchGDB: a -O2 -fomit-frame-pointer program with always_inline helpers,
// stopped, unwound by elfinfo and by gdb: the same frames, inlined calls included, each with
// gdb's function and file:line, in the program and in Debian's libc (its futex waits).
func TestInlinedFramesMatchGDB(t *testing.T) {
	dir := t.TempDir()
	src, _ := filepath.Abs(filepath.Join("testdata", "inline.c"))
	gccIn(t, dir, "-g", "-O2", "-fomit-frame-pointer", "-pthread", "-o", "inline", src)
	exe := filepath.Join(dir, "inline")
	pid, _ := startStopped(t, exec.Command(exe), func(pid int) bool {
		nr := taskSyscalls(pid)
		// main and the waiter in futex, the blocker in read, the spinner running.
		return len(nr) == 4 && countNr(nr, nrFutex) == 2 && countNr(nr, nrRead) == 1
	})
	needLibcDebug(t, pid)

	// What the comparison must have covered, in gdb's own frames: the program's inlined
	// helpers (the spinner's innermost frame one of them) and libc's inlined futex wait
	// under pthread_cond_wait and pthread_join (Debian 12's glibc 2.36 names).
	covered := func(fs []gdbFrame) string {
		ns := names(fs)
		has := func(seq ...string) bool {
			for i := range ns {
				if len(ns)-i >= len(seq) && slices.Equal(ns[i:i+len(seq)], seq) {
					return true
				}
			}
			return false
		}
		switch {
		case has("inl_read", "inl_mid", "inl_wait", "block_read"):
			return "blocker"
		case len(ns) > 1 && ns[0] == "inl_step" && ns[1] == "spin_loop":
			return "spinner"
		case has("__futex_abstimed_wait_common"):
			if has("cond_wait") {
				return "waiter"
			}
			if has("main") {
				return "main"
			}
		}
		return ""
	}
	// The spinner may be stopped on its loop's jump, outside inl_step; stop it again until
	// gdb shows it inside (each sample lands there with a probability near 6/7).
	for try := 0; ; try++ {
		found := map[string]bool{}
		for _, fs := range compareWithGDB(t, pid) {
			found[covered(fs)] = true
		}
		if t.Failed() {
			return
		}
		if found["blocker"] && found["waiter"] && found["main"] && found["spinner"] {
			return
		}
		if try == 20 || !found["blocker"] || !found["waiter"] || !found["main"] {
			t.Fatalf("gdb's stacks lack some of the blocker, waiter, main and spinner's inlined frames: found %v", found)
		}
		groupCont(t, pid)
		groupStop(t, pid)
	}
}

// TestSignalFrameMatchesGDB: a thread blocked in a signal handler (a -O2 program, libc's
// read): the handler's frames, the signal frame, then the interrupted function at the
// instruction the signal hit and its callers, as gdb shows them.
func TestSignalFrameMatchesGDB(t *testing.T) {
	dir := t.TempDir()
	src, _ := filepath.Abs(filepath.Join("testdata", "sighandler.c"))
	gccIn(t, dir, "-g", "-O2", "-fomit-frame-pointer", "-o", "sighandler", src)
	pid, _ := startStopped(t, exec.Command(filepath.Join(dir, "sighandler")), func(pid int) bool {
		return countNr(taskSyscalls(pid), nrRead) == 1
	})
	needLibcDebug(t, pid)
	gdb := compareWithGDB(t, pid)
	want := []string{"in_handler", SignalFrameName, "interrupted_work", "main"}
	if ns := names(gdb[pid]); !slices.Equal(ns[len(ns)-len(want)-3:len(ns)-3], want) {
		t.Errorf("gdb's frames %v lack %v before libc's start", ns, want)
	}
}

// TestPythonFramesMatchGDB: pyenv's CPython 3.11 (built -O3 with DWARF) with a thread blocked
// on a lock and the main thread in time.sleep: elfinfo names every frame gdb names, the
// interpreter's inlined calls (_PyEval_EvalFrame, do_call_core, ...) included.
func TestPythonFramesMatchGDB(t *testing.T) {
	py := "/root/.pyenv/versions/3.11.7/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("pyenv's python 3.11.7 is not installed (%v): it is the CPython with DWARF this test compares", err)
	}
	script := `import threading, time
lock = threading.Lock()
lock.acquire()
def blocked():
    lock.acquire()
t = threading.Thread(target=blocked)
t.start()
def nest(n):
    if n == 0:
        print("ready", flush=True)
        time.sleep(100000)
    nest(n - 1)
nest(3)
`
	pid, _ := startStopped(t, exec.Command(py, "-c", script), func(pid int) bool {
		nr := taskSyscalls(pid)
		return len(nr) == 2 && countNr(nr, nrFutex) == 1 && countNr(nr, nrClockNanosleep) == 1
	})
	needLibcDebug(t, pid)
	gdb := compareWithGDB(t, pid)
	var all []string
	for _, fs := range gdb {
		all = append(all, names(fs)...)
	}
	for _, fn := range []string{"_PyEval_EvalFrame", "_PyEval_Vector", "do_call_core", "__futex_abstimed_wait_common"} {
		if !slices.Contains(all, fn) {
			t.Errorf("gdb's stacks lack the inlined %s: %v", fn, all)
		}
	}
}
