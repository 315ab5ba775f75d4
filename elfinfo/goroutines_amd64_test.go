//go:build linux

package elfinfo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildGowait builds testdata/gowait with the toolchain toolchain names ("" for the one
// running the test; "go1.22.12" and such are fetched by the go command from the module
// proxy, GOTOOLCHAIN's way), with cgo or without, position-independent or not.
func buildGowait(t testing.TB, toolchain string, cgo, pie bool) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "gowait")
	src, _ := filepath.Abs(filepath.Join("testdata", "gowait"))
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	if cgo {
		needTool(t, "gcc")
		cmd.Args = []string{"go", "build", "-tags", "gowaitcgo", "-o", exe, "."}
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	if pie {
		cmd.Args = slices.Insert(cmd.Args, 2, "-buildmode=pie")
	}
	if toolchain != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+toolchain)
	} else {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN=local")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		if toolchain != "" {
			t.Skipf("cannot build with %s (the go command fetches it from the module proxy): %v\n%s", toolchain, err, out)
		}
		t.Fatalf("go build gowait: %v\n%s", err, out)
	}
	return exe
}

// startGowait runs it and returns once it printed "ready"; t.Cleanup kills and reaps it.
func startGowait(t testing.TB, exe string) int {
	t.Helper()
	pid, _ := startReady(t, exec.Command(exe))
	return pid
}

// gowaitCase is what one goroutine of gowait must look like.
type gowaitCase struct {
	fn      string   // its function in main.go
	line    string   // the statement it is on, as written in main.go
	reasons []string // wait reasons accepted (Go versions word some differently)
	goStmt  string   // the go statement that started it ("" for main)
}

var gowaitCases = []gowaitCase{
	{"main.waitRecv", "func waitRecv(ch chan int) { <-ch }", []string{"chan receive"}, "go waitRecv(ch)"},
	{"main.waitSelect", "select {", []string{"select"}, "go waitSelect(a, b)"},
	// Go 1.20 gave sync.Mutex its own wait reason; before, a mutex waited in "semacquire".
	{"main.waitMutex", "func waitMutex() { mu.Lock() }", []string{"sync.Mutex.Lock", "semacquire"}, "go waitMutex()"},
	{"main.waitSleep", "func waitSleep() { time.Sleep(time.Hour) }", []string{"sleep"}, "go waitSleep()"},
	{"main.main", "<-make(chan struct{})", []string{"chan receive"}, ""},
}

// findFrame returns the goroutine of gs with a frame in fn, and that frame.
func findFrame(gs []Goroutine, fn string) (Goroutine, Frame, bool) {
	for _, g := range gs {
		for _, f := range g.Frames {
			for _, s := range f.SourceFrames() {
				if s.Function == fn {
					return g, Frame{PC: f.PC, Location: Location{Function: s.Function, File: s.File, Line: s.Line}}, true
				}
			}
		}
	}
	return Goroutine{}, Frame{}, false
}

// parkedAsWanted reports, for each case, what is wrong with gs ("" when right).
func parkedAsWanted(t *testing.T, gs []Goroutine) map[string]string {
	wrong := map[string]string{}
	for _, c := range gowaitCases {
		g, f, ok := findFrame(gs, c.fn)
		switch {
		case !ok:
			wrong[c.fn] = "no goroutine has a frame in it"
		case g.Status != "waiting" || !contains(c.reasons, g.WaitReason):
			wrong[c.fn] = "goroutine " + strconv.FormatInt(g.ID, 10) + " is " + g.Status + " (" + g.WaitReason + ")"
		case filepath.Base(f.File) != "main.go" || f.Line != defLine(t, "gowait/main.go", c.line):
			wrong[c.fn] = "at " + f.File + ":" + strconv.Itoa(f.Line)
		case !endsAtGoexit(g):
			wrong[c.fn] = "stack does not end at runtime.goexit: " + stackNames(g.Frames)
		case c.goStmt != "" && (g.CreatedBy.Function != "main.main" || g.CreatedBy.Line != defLine(t, "gowait/main.go", c.goStmt)):
			wrong[c.fn] = "created by " + g.CreatedBy.String()
		default:
			// Module and link-time offset are right when the ELF symbol there is the function
			// delve names (the one the code is in, for inlined code; assembly's symbols carry
			// their ABI).
			for _, f := range g.Frames {
				sf := f.SourceFrames()
				if filepath.Base(f.Module) != "gowait" || strings.TrimSuffix(f.Symbol, ".abi0") != sf[len(sf)-1].Function {
					wrong[c.fn] = fmt.Sprintf("frame %#x at %s+%#x: symbol %q, delve says %s", f.PC, f.Module, f.Offset, f.Symbol, sf[len(sf)-1].Function)
				}
			}
		}
	}
	return wrong
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// endsAtGoexit: a goroutine's stack ends at runtime.goexit, its first frame, with nothing
// read past it.
func endsAtGoexit(g Goroutine) bool {
	return len(g.Frames) > 0 && g.Frames[len(g.Frames)-1].Function == "runtime.goexit" && g.Err == ""
}

func logGoroutines(t *testing.T, gs []Goroutine) {
	for _, g := range gs {
		t.Logf("goroutine %d %s %q tid %d system %v: %s %s", g.ID, g.Status, g.WaitReason, g.TID, g.System, stackNames(g.Frames), g.Err)
	}
}

// TestGoroutines: a Go program's goroutines, read from outside. Parked ones come with their
// wait reason and a frame at the right line of the test program's own function without any
// thread being stopped; the spinning one is running and, given its thread's registers, has
// its frames too. Every stack ends at runtime.goexit. The threads' own stacks (Unwind) end
// at runtime.mcall, runtime.mstart and the like, with no junk frame read above them. Built
// with the toolchain running the test, with cgo, as a PIE, and with an older Go from the
// module proxy.
func TestGoroutines(t *testing.T) {
	for _, tc := range []struct {
		name, toolchain string
		cgo, pie        bool
	}{
		{"local", "", false, false},
		{"cgo", "", true, false},
		{"pie", "", false, true},
		{"go1.22", "go1.22.12", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe := buildGowait(t, tc.toolchain, tc.cgo, tc.pie)
			pid := startGowait(t, exe)
			g := NewGoReader()
			defer g.Close()
			mem := procMem(t, pid)
			read := func(threads []ThreadRegs) []Goroutine {
				maps, err := ReadMaps(pid)
				if err != nil {
					t.Fatal(err)
				}
				gs, err := g.Goroutines(pid, "/proc/"+strconv.Itoa(pid)+"/exe", maps, mem, threads, 64)
				if err != nil {
					t.Fatalf("Goroutines: %v", err)
				}
				return gs
			}

			// The goroutines park a moment after main printed "ready": wait for that.
			var gs []Goroutine
			var wrong map[string]string
			waitFor(t, func() bool {
				gs = read(nil)
				wrong = parkedAsWanted(t, gs)
				// The spinner running, not runnable the moment sysmon preempted it (a
				// runnable goroutine has its frames in g.sched, a running one has not).
				if !slices.ContainsFunc(gs, func(g Goroutine) bool { return g.Status == "running" && !g.System }) {
					wrong["main.spin"] = "no goroutine running"
				}
				return len(wrong) == 0
			}, "gowait's goroutines to park", func() string { return fmt.Sprint(wrong) })
			logGoroutines(t, gs)
			// The same read through delve alone (its own reading of each g, no unwind kept
			// from an earlier read) says the same about every goroutine but the spinner.
			slow := NewGoReader()
			defer slow.Close()
			slowMaps, _ := ReadMaps(pid)
			slow.Goroutines(pid, exe, slowMaps, mem, nil, 64)
			for _, b := range slow.bins {
				b.layoutErr = errors.New("test: delve reads the gs")
			}
			sgs, err := slow.Goroutines(pid, exe, slowMaps, mem, nil, 64)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := summary(gs), summary(sgs); a != b {
				t.Errorf("read directly:\n%s\nread by delve:\n%s", a, b)
			}
			spinner, _, ok := findFrame(gs, "main.spin")
			if ok {
				t.Errorf("the spinning goroutine has frames without its thread's registers: %+v", spinner)
			}
			running := 0
			for _, gr := range gs {
				if gr.Status == "running" && !gr.System {
					running++
					if gr.TID != 0 || len(gr.Frames) != 0 || gr.Err == "" {
						t.Errorf("running goroutine %d without registers: tid %d, %d frames, err %q", gr.ID, gr.TID, len(gr.Frames), gr.Err)
					}
				}
			}
			if running == 0 {
				t.Errorf("no goroutine is running (the spinner should be)")
			}

			// Stopped, with every thread's registers: the spinner runs on one of them. A
			// thread may be stopped inside a signal handler (sysmon preempts the spinner with
			// SIGURG every 10ms), whose frame delve's goroutine unwinder does not cross
			// (elfinfo's does: TestGoSignalFrames): stop it again until no thread is in one.
			r := NewResolver()
			defer r.Close()
			var regs map[int]syscall.PtraceRegs
			stacks := map[int][]Frame{}
			for try := 0; ; try++ {
				groupStop(t, pid)
				runtime.LockOSThread()
				regs = threadRegs(t, pid)
				runtime.UnlockOSThread()
				maps, err := ReadMaps(pid)
				if err != nil {
					t.Fatal(err)
				}
				inHandler := false
				for tid, rg := range regs {
					stacks[tid] = r.Unwind(pid, maps, rg.Rip, rg.Rsp, rg.Rbp, 0, "amd64", mem, 64)
					for _, f := range stacks[tid] {
						inHandler = inHandler || strings.Contains(strings.ToLower(f.Function), "sigtramp")
					}
				}
				if !inHandler {
					break
				}
				if try == 20 {
					t.Fatalf("a thread was in a signal handler in each of %d stops", try+1)
				}
				groupCont(t, pid)
			}
			var threads []ThreadRegs
			for tid, r := range regs {
				var b bytes.Buffer
				binary.Write(&b, binary.LittleEndian, r)
				words := make([]uint64, b.Len()/8)
				binary.Read(&b, binary.LittleEndian, words)
				threads = append(threads, ThreadRegs{TID: tid, Regs: words})
			}
			gs = read(threads)
			logGoroutines(t, gs)
			for _, b := range g.bins {
				if len(b.waits) == 0 {
					t.Errorf("runtime.waitReasonStrings was not read from the process: delve's tables named the waits")
				}
			}
			for tid, fs := range stacks {
				t.Logf("thread %d: %s", tid, stackNames(fs))
				if last := fs[len(fs)-1]; !outermost[last.Function] {
					t.Errorf("thread %d's stack ends in %s, not a thread's or goroutine's first function: %s", tid, last.Location, stackNames(fs))
				}
			}
			if wrong := parkedAsWanted(t, gs); len(wrong) > 0 {
				t.Errorf("with registers, parked goroutines are wrong: %v", wrong)
			}
			spinner, f, ok := findFrame(gs, "main.spin")
			switch {
			case !ok:
				t.Errorf("no goroutine is in main.spin")
			case spinner.Status != "running" || regs[spinner.TID] == (syscall.PtraceRegs{}):
				t.Errorf("the spinner is %s on thread %d, want running on one of %v", spinner.Status, spinner.TID, keys(regs))
			case filepath.Base(f.File) != "main.go" || f.Line < defLine(t, "gowait/main.go", "func spin() {"):
				t.Errorf("the spinner is at %s:%d (pc %#x)", f.File, f.Line, f.PC)
			case !endsAtGoexit(spinner):
				t.Errorf("the spinner's stack does not end at runtime.goexit: %s", stackNames(spinner.Frames))
			}
			groupCont(t, pid)
		})
	}
}

// summary is everything Goroutines said but of running goroutines (they move), in ID order.
func summary(gs []Goroutine) string {
	var lines []string
	for _, g := range gs {
		if g.Status == "running" || g.Status == "runnable" {
			continue // the spinner: running, or runnable a moment when sysmon preempts it
		}
		l := fmt.Sprintf("%d %s %q tid %d system %v created by %s err %q:", g.ID, g.Status, g.WaitReason, g.TID, g.System, g.CreatedBy, g.Err)
		for _, f := range g.Frames {
			l += fmt.Sprintf(" %#x %s %v", f.PC, f.Location, f.InlinedInto)
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func keys(m map[int]syscall.PtraceRegs) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkGoroutines reads the goroutines of a running Go process with the program's
// BinaryInfo cached (what a sampling round costs per Go process), and, as "cold", with a new
// reader each time (the first sample of a binary: delve loading its DWARF).
func BenchmarkGoroutines(b *testing.B) {
	exe := buildGowait(b, "", false, false)
	pid := startGowait(b, exe)
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	reads := 0
	mem := func(addr uint64, buf []byte) error {
		reads++
		_, err := f.ReadAt(buf, int64(addr))
		return err
	}
	maps, err := ReadMaps(pid)
	if err != nil {
		b.Fatal(err)
	}
	exePath := "/proc/" + strconv.Itoa(pid) + "/exe"
	read := func(g *GoReader) int {
		gs, err := g.Goroutines(pid, exePath, maps, mem, nil, 64)
		if err != nil {
			b.Fatal(err)
		}
		return len(gs)
	}
	b.Run("cached", func(b *testing.B) {
		g := NewGoReader()
		defer g.Close()
		read(g)
		reads = 0
		n := 0
		b.ResetTimer()
		for b.Loop() {
			n = read(g)
		}
		b.ReportMetric(float64(n), "goroutines")
		b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			g := NewGoReader()
			read(g)
			g.Close()
		}
	})
}

// TestGoReaderConcurrent: one reader used from several goroutines at once, for one process
// (the race detector watches delve's shared BinaryInfo and Target).
func TestGoReaderConcurrent(t *testing.T) {
	exe := buildGowait(t, "", false, false)
	pid := startGowait(t, exe)
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGoReader()
	defer g.Close()
	mem := procMem(t, pid)
	errs := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 10 {
				var gs []Goroutine
				if gs, err = g.Goroutines(pid, exe, maps, mem, nil, 64); err == nil && len(gs) < 6 {
					err = fmt.Errorf("%d goroutines, want 6 or more", len(gs))
				}
				if err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestGoSignalFrames: a Go program's thread stopped inside the runtime's signal handler (a
// flood of SIGURG, the runtime's preemption signal, puts one there soon) unwinds through
// the signal frame into the code the signal interrupted, down to its thread's first
// function, with and without cgo (the runtime's own trampoline, or glibc's).
func TestGoSignalFrames(t *testing.T) {
	for _, cgo := range []bool{false, true} {
		t.Run(map[bool]string{false: "go", true: "cgo"}[cgo], func(t *testing.T) {
			exe := buildGowait(t, "", cgo, false)
			pid := startGowait(t, exe)
			mem := procMem(t, pid)
			r := NewResolver()
			defer r.Close()
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case <-done:
						return
					default:
						syscall.Kill(pid, syscall.SIGURG)
					}
				}
			}()
			// Stop it until a thread is in the handler (the test waits on that state; each
			// stop lands there with a small probability).
			deadline := time.Now().Add(120 * time.Second)
			for try := 0; ; try++ {
				groupStop(t, pid)
				runtime.LockOSThread()
				regs := threadRegs(t, pid)
				runtime.UnlockOSThread()
				maps, err := ReadMaps(pid)
				if err != nil {
					t.Fatal(err)
				}
				for tid, rg := range regs {
					fs := r.Unwind(pid, maps, rg.Rip, rg.Rsp, rg.Rbp, 0, "amd64", mem, 64)
					k := slices.IndexFunc(fs, func(f Frame) bool { return f.Function == "runtime.sigtramp" })
					if k < 0 {
						continue
					}
					t.Logf("stop %d, thread %d: %s", try, tid, stackNames(fs))
					switch {
					case k+2 >= len(fs) || !fs[k+1].Signal || fs[k+1].SourceFrames()[0].Function != SignalFrameName:
						t.Errorf("no signal frame after runtime.sigtramp: %+v", fs)
					case fs[k+2].Function == "" || fs[k+2].Signal:
						t.Errorf("the interrupted frame is unnamed: %+v", fs[k+2])
					case !outermost[fs[len(fs)-1].Function]:
						t.Errorf("the stack ends in %s", fs[len(fs)-1].Location)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("no thread was in the signal handler in %d stops", try+1)
				}
				groupCont(t, pid)
			}
		})
	}
}
