//go:build ppc64le || arm64

package crash

import (
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestGuestCrashSuite: the C crash suite (demo/crashes' crash.c, cross-compiled and dynamically
// linked against its libcrashfuncs.so and the cross glibc, which the QEMU guests carry at the
// paths the program asks for) under a tracer.Tracer with CrashOptions, on a real ppc64le or arm64
// kernel: assert-aborts grouped by their message, SIGSEGVs at one site of the program, a
// crash inside a shared library keyed by library + link-time offset, and a SIGBUS repaired by
// a handler that extends the file and a safepoint whose SIGSEGV handler unprotects the page,
// both handled and never crashes. One core per group, for this architecture.
func TestGuestCrashSuite(t *testing.T) {
	bin := os.Getenv("CRASHTUI_CRASHSUITE")
	if bin == "" {
		t.Skip("no CRASHTUI_CRASHSUITE: the QEMU guests carry demo/crashes' crash.c, built with the cross gcc (tracer/qemu)")
	}
	lib := filepath.Join(filepath.Dir(bin), "libcrashfuncs.so")
	tracertest.AllowCores(t)
	machine := map[string]elf.Machine{"arm64": elf.EM_AARCH64, "ppc64le": elf.EM_PPC64}[runtime.GOARCH]

	t.Run("abort-segv", func(t *testing.T) {
		r := runCrashSuite(t, bin, 4, "abort-segv")
		r.groups(t, 2, 2)
		lo, hi := elfSymRange(t, bin, "crash_same")
		for _, c := range r.crashes {
			switch c.Signal {
			case "SIGABRT":
				if c.Rank%2 != 0 || !strings.Contains(c.AbortMessage, "Assertion") || !strings.Contains(c.AbortMessage, "rank must be negative") ||
					c.Key != c.Exe+"|abort:"+c.AbortMessage {
					t.Errorf("abort of rank %d: message %q key %q; want even ranks' assertion, keyed by its message", c.Rank, c.AbortMessage, c.Key)
				}
			case "SIGSEGV":
				if c.Rank%2 != 1 || c.Code != "SEGV_MAPERR" || c.Addr != 0 || c.Module != bin || c.Function != "crash_same" ||
					uint64(c.Offset) < lo || uint64(c.Offset) >= hi || c.Key != c.Exe+"|"+bin+"+"+c.Offset.String() {
					t.Errorf("segv of rank %d: %s at %s+%s (%s) key %q; want odd ranks' SEGV_MAPERR at 0 in crash_same [%#x,%#x)",
						c.Rank, c.Code, c.Module, c.Offset, c.Function, c.Key, lo, hi)
				}
			default:
				t.Errorf("rank %d: %s", c.Rank, c.Signal)
			}
		}
		r.cores(t, machine)
	})

	t.Run("lib", func(t *testing.T) {
		r := runCrashSuite(t, bin, 2, "lib")
		r.groups(t, 2)
		lo, hi := elfSymRange(t, lib, "crash_in_lib")
		for _, c := range r.crashes {
			if c.Signal != "SIGSEGV" || c.Module != lib || c.Function != "crash_in_lib" || uint64(c.Offset) < lo || uint64(c.Offset) >= hi ||
				c.Key != c.Exe+"|"+lib+"+"+c.Offset.String() {
				t.Errorf("rank %d: %s at %s+%s (%s) key %q; want SIGSEGV in %s's crash_in_lib [%#x,%#x), keyed by library + offset",
					c.Rank, c.Signal, c.Module, c.Offset, c.Function, c.Key, lib, lo, hi)
			}
			if len(c.Stack) < 2 || c.Stack[0].Function != "crash_in_lib" || c.Stack[1].Function != "main" {
				t.Errorf("rank %d: stack %+v, want crash_in_lib called by main", c.Rank, c.Stack)
			}
		}
		r.cores(t, machine)
	})

	for _, c := range []struct{ mode, signal, code, function string }{
		{"sigbus-fixed", "SIGBUS", "BUS_ADRERR", "read_page2"},
		{"safepoint", "SIGSEGV", "SEGV_ACCERR", "poll_safepoint"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := runCrashSuite(t, bin, 1, c.mode)
			r.groups(t)
			lo, hi := elfSymRange(t, bin, c.function)
			if len(r.handled) != 1 {
				t.Fatalf("%d handled faults, want 1", len(r.handled))
			}
			h := r.handled[0]
			if h.Signal != c.signal || h.Code != c.code || h.Function != c.function || h.Module != bin ||
				uint64(h.Offset) < lo || uint64(h.Offset) >= hi {
				t.Errorf("handled %s %s in %s at %s+%s; want %s %s in %s [%#x,%#x)", h.Signal, h.Code, h.Function, h.Module, h.Offset,
					c.signal, c.code, c.function, lo, hi)
			}
			if len(r.exits) != 1 || r.exits[0].Code == nil || *r.exits[0].Code != 0 {
				t.Errorf("exits %+v, want one exit 0: the handler repaired the fault", r.exits)
			}
		})
	}
}

// crashSuiteRun is what a tracer.Tracer reported about one launch of the suite.
type crashSuiteRun struct {
	crashes  []sessions.Crash
	handled  []sessions.Handled
	exits    []sessions.Exit
	coresDir string
}

// runCrashSuite launches n ranks of the suite's mode under a tracer.Tracer with CrashOptions writing
// cores, and waits for the job to end.
func runCrashSuite(t *testing.T, bin string, n int, mode string) crashSuiteRun {
	t.Helper()
	t.Chdir(t.TempDir()) // the kernel's cores are suppressed; should one slip, not here
	r := crashSuiteRun{coresDir: t.TempDir()}
	log := &tracertest.EventLog{}
	tr := tracer.New(tracer.Options{Emit: log.Emit, Watcher: New(Options{CoresDir: r.coresDir})})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Launch(tracer.LaunchSpec{N: n, Argv: []string{bin, mode}}); err != nil {
		t.Fatalf("launch %d x %s %s: %v", n, bin, mode, err)
	}
	select {
	case <-tr.JobDone():
	case <-patience.After(60 * time.Second):
		t.Fatalf("%s: the job did not end", mode)
	}
	for _, e := range log.Events() {
		switch b := e.Body.(type) {
		case sessions.Crash:
			r.crashes = append(r.crashes, b)
		case sessions.Handled:
			r.handled = append(r.handled, b)
		case sessions.Exit:
			r.exits = append(r.exits, b)
		case sessions.Error:
			t.Errorf("tracer error: %+v", b)
		}
	}
	for _, c := range r.crashes {
		t.Logf("rank %d pid %d: %s %s at %s+%s (%s) key %q group %d representative %v", c.Rank, c.PID, c.Signal, c.Code,
			c.Module, c.Offset, c.Function, c.Key, c.Group, c.Representative)
	}
	for _, h := range r.handled {
		t.Logf("handled pid %d: %s %s at %s+%s (%s)", h.PID, h.Signal, h.Code, h.Module, h.Offset, h.Function)
	}
	return r
}

// groups asserts the crash groups' sizes, in order of their first crash, each with one key
// and one representative.
func (r crashSuiteRun) groups(t *testing.T, sizes ...int) {
	t.Helper()
	count := map[int]int{}
	key := map[int]string{}
	reps := map[int]int{}
	var order []int
	for _, c := range r.crashes {
		if _, ok := key[c.Group]; !ok {
			key[c.Group] = c.Key
			order = append(order, c.Group)
		}
		if key[c.Group] != c.Key {
			t.Errorf("group %d has keys %q and %q", c.Group, key[c.Group], c.Key)
		}
		count[c.Group]++
		if c.Representative {
			reps[c.Group]++
		}
	}
	var got []int
	for _, g := range order {
		got = append(got, count[g])
		if reps[g] != 1 {
			t.Errorf("group %d (%s): %d representatives, want 1", g, key[g], reps[g])
		}
	}
	if len(got) != len(sizes) {
		t.Fatalf("groups of sizes %v, want %v", got, sizes)
	}
	for i := range sizes {
		if got[i] != sizes[i] {
			t.Errorf("groups of sizes %v, want %v", got, sizes)
			break
		}
	}
}

// cores asserts one core per group, written for its representative, an ELF core of machine.
func (r crashSuiteRun) cores(t *testing.T, machine elf.Machine) {
	t.Helper()
	groups := map[int]bool{}
	for _, c := range r.crashes {
		groups[c.Group] = true
		if !c.Representative {
			continue
		}
		if c.Core == nil {
			t.Errorf("representative %d has no core", c.PID)
			continue
		}
		f, err := elf.Open(*c.Core)
		if err != nil {
			t.Errorf("core of %d: %v", c.PID, err)
			continue
		}
		if f.Type != elf.ET_CORE || f.Machine != machine {
			t.Errorf("core of %d: %v %v, want an %v core", c.PID, f.Type, f.Machine, machine)
		}
		f.Close()
	}
	if ents, _ := os.ReadDir(r.coresDir); len(ents) != len(groups) {
		t.Errorf("%d cores, want one per group (%d)", len(ents), len(groups))
	}
}

// elfSymRange is [value, value+size) of the function symbol name in the ELF file at path.
func elfSymRange(t *testing.T, path, name string) (uint64, uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return s.Value, s.Value + s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0, 0
}
