//go:build linux && (amd64 || arm64 || ppc64le)

package elfinfo

// Signal frames crossed on the architecture that runs the test: the QEMU stages run these on
// real arm64 and ppc64le kernels (tracer/qemu's Arch.Run), where the trampoline a handler
// returns to is the vDSO's and the kernel's rt_sigframe has each arch's own layout.

import (
	"bufio"
	"debug/elf"
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

// sighandlerProgram is testdata/sighandler.c built -O2 without frame pointers: by the gcc
// on PATH, or the one a QEMU guest carries (no compiler there; the harness cross-builds it).
func sighandlerProgram(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err == nil {
		dir := t.TempDir()
		src, _ := filepath.Abs(filepath.Join("testdata", "sighandler.c"))
		gccIn(t, dir, "-g", "-O2", "-fomit-frame-pointer", "-o", "sighandler", src)
		return filepath.Join(dir, "sighandler")
	}
	p, err := exec.LookPath("sighandler")
	if err != nil {
		t.Skip("no gcc to build testdata/sighandler.c, and no sighandler on PATH (the QEMU guests carry one)")
	}
	return p
}

// symbolRange is [st_value, st_value+st_size) of a function in an ELF file.
func symbolRange(t *testing.T, path, name string) (uint64, uint64) {
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

func frameList(fs []Frame) string {
	var b strings.Builder
	for i, f := range fs {
		fmt.Fprintf(&b, "\n  #%d %#x %s", i, f.PC, f.Location)
		if f.Signal {
			b.WriteString(" " + SignalFrameName)
		}
	}
	return b.String()
}

// TestSignalFrameC: sighandler, a -O2 C program, blocked in libc's read inside its SIGALRM
// handler, unwinds from read through the handler, the signal frame (the trampoline: glibc's
// __restore_rt on amd64, the vDSO's on arm64 and ppc64le), then the function the signal
// interrupted at the very pc the program's own ucontext_t says the signal hit, and its
// callers down to the thread's first frame; so does a thread in the trampoline itself.
// Relocate keeps the signal frame.
func TestSignalFrameC(t *testing.T) {
	exe := sighandlerProgram(t)
	pid, said := startStopped(t, exec.Command(exe), func(pid int) bool {
		return countNr(taskSyscalls(pid), syscall.SYS_READ) == 1
	})
	var hit, uc uint64 // where the signal hit, where the ucontext is
	for i, p := range []*uint64{&hit, &uc} {
		var err error
		if len(said) != 2 {
			t.Fatalf("sighandler said ready %v, want the interrupted pc and the ucontext", said)
		} else if *p, err = strconv.ParseUint(strings.TrimPrefix(said[i], "0x"), 16, 64); err != nil {
			t.Fatalf("sighandler said ready %v: %v", said, err)
		}
	}
	runtime.LockOSThread() // every ptrace request must come from the thread that seized
	rg, ok := threadRegs(t, pid)[pid]
	runtime.UnlockOSThread()
	if !ok {
		t.Fatalf("no registers of thread %d", pid)
	}
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver()
	defer r.Close()
	pc, sp, fp, lr := startRegs(&rg)
	mem := procMem(t, pid)
	fs := r.Unwind(pid, maps, pc, sp, fp, lr, runtime.GOARCH, mem, 64)
	t.Logf("%s: the signal hit %#x; frames:%s", runtime.GOARCH, hit, frameList(fs))

	k := slices.IndexFunc(fs, func(f Frame) bool { return f.Signal })
	if k < 2 || k+3 >= len(fs) {
		t.Fatalf("no signal frame between read's and main's")
	}
	if n := len(slices.DeleteFunc(slices.Clone(fs), func(f Frame) bool { return !f.Signal })); n != 1 {
		t.Errorf("%d signal frames, want 1", n)
	}
	if m := filepath.Base(fs[0].Module); m != "libc.so.6" {
		t.Errorf("frame 0 is in %s, want libc.so.6 (read)", m)
	}
	if f := fs[k-1].Function; f != "in_handler" {
		t.Errorf("the handler's frame before the signal frame is %q, want in_handler (on_alarm tail-calls it)", f)
	}
	trampIn := map[string]string{"amd64": "libc.so.6", "arm64": "[vdso]", "ppc64le": "[vdso]"}[runtime.GOARCH]
	if sf := fs[k].SourceFrames(); filepath.Base(fs[k].Module) != trampIn || len(sf) != 1 || sf[0].Function != SignalFrameName {
		t.Errorf("signal frame %s (%v), want the trampoline in %s shown as %s", fs[k].Location, sf, trampIn, SignalFrameName)
	}
	lo, hi := symbolRange(t, exe, "interrupted_work")
	if in := fs[k+1]; in.PC != hit || in.Function != "interrupted_work" || in.Offset < lo || in.Offset >= hi || in.FuncOff != in.Offset-lo {
		t.Errorf("interrupted frame %#x %s, want interrupted_work [%#x,%#x) at %#x, the pc the signal hit", in.PC, in.Location, lo, hi, hit)
	}
	if f := fs[k+2].Function; f != "main" {
		t.Errorf("interrupted_work's caller is %q, want main", f)
	}
	if last := fs[len(fs)-1]; last.Function != cStart || len(fs)-1-(k+2) > 3 {
		t.Errorf("the stack ends %d frames past main at %s, want %s within 3", len(fs)-1-(k+2), last.Location, cStart)
	}
	// A thread stopped in the trampoline itself (its handler returned, rt_sigreturn not made
	// yet) is in the same signal frame: unwound from each of the trampoline's instructions,
	// with the stack pointer the handler returned with (the ucontext is at it on amd64, 128
	// bytes above it on arm64, past the siginfo, and on ppc64le, past the dummy caller frame
	// that the trampoline's first instruction pops), the same frames follow. So they do on
	// ppc64le from the vDSO's bctrl before it, where the kernel enters the handler (a thread
	// held as its handler is about to run is there).
	type at struct {
		off int64
		sp  uint64
	}
	tsp := uc - map[string]uint64{"amd64": 0, "arm64": 128, "ppc64le": 128}[runtime.GOARCH]
	starts := map[string][]at{
		"amd64":   {{0, tsp}, {7, tsp}},                                  // mov $15,%rax; syscall
		"arm64":   {{0, tsp}, {4, tsp}},                                  // mov x8,#139; svc #0
		"ppc64le": {{-4, tsp}, {0, tsp}, {4, tsp + 128}, {8, tsp + 128}}, // bctrl; addi r1,r1,128; li r0,172; sc
	}[runtime.GOARCH]
	for _, st := range starts {
		got := r.Unwind(pid, maps, fs[k].PC+uint64(st.off), st.sp, 0, 0, runtime.GOARCH, mem, 64)
		if len(got) != len(fs)-k || !got[0].Signal || got[1].PC != hit || stackNames(got[1:]) != stackNames(fs[k+1:]) {
			t.Errorf("from the trampoline's pc%+d, sp %#x:%s\nwant the signal frame, then:%s", st.off, st.sp, frameList(got), frameList(fs[k+1:]))
		}
	}
	again := r.Relocate(pid, maps, fs)
	for i := range fs {
		if again[i].Signal != fs[i].Signal || again[i].Function != fs[i].Function || again[i].Offset != fs[i].Offset {
			t.Errorf("Relocate: frame %d %s (signal %v), was %s (signal %v)", i, again[i].Location, again[i].Signal, fs[i].Location, fs[i].Signal)
		}
	}
}

// guestProgram is the guest helper tracer/qemu/guest/NAME: the one a QEMU guest carries
// (its path in env, as the guest's init sets it), or one built now with the go toolchain.
func guestProgram(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no %s and no go toolchain to build tracer/qemu/guest/%s", env, name)
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(gobin, "build", "-o", out, "./tracer/qemu/guest/"+name)
	cmd.Dir = ".." // the module root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	return out
}

// TestSignalFrameGo: the Go runtime's own signal handler path on the architecture that runs
// it (its handler sigtramp, entered from the kernel's rt_sigframe and returning to the
// trampoline: its own sigreturn__sigaction on amd64, the vDSO's on arm64 and ppc64le). A
// flood of SIGURG, the runtime's preemption signal, keeps crashprog's threads (one spinning
// in main.spin, main blocked in a raw read) in the handler; the process is stopped until
// one is, and every thread found in runtime.sigtramp must unwind into a signal frame and a
// named interrupted function; some thread must do so into main.spin or main.blockRead, down
// to its goroutine's (or thread's) first frame.
func TestSignalFrameGo(t *testing.T) {
	exe := guestProgram(t, "CRASHTUI_CRASHPROG", "crashprog")
	cmd := exec.Command(exe, "hang")
	stdin, err := cmd.StdinPipe() // open until the end: crashprog exits at EOF
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		stdin.Close()
		cmd.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("crashprog printed %q (%v), want ready PID", line, err)
	}
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
	// Each stop finds a thread in the handler with some probability: the test waits on that
	// state, with a deadline generous for an emulated guest.
	deadline := time.Now().Add(240 * time.Second)
	inHandler := 0
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
			pc, sp, fp, lr := startRegs(&rg)
			fs := r.Unwind(pid, maps, pc, sp, fp, lr, runtime.GOARCH, mem, 64)
			k := slices.IndexFunc(fs, func(f Frame) bool { return f.Function == "runtime.sigtramp" })
			if k < 0 {
				continue
			}
			inHandler++
			switch {
			case k+2 >= len(fs) || !fs[k+1].Signal || fs[k+1].SourceFrames()[0].Function != SignalFrameName:
				t.Fatalf("stop %d, thread %d: no signal frame after runtime.sigtramp:%s", try, tid, frameList(fs))
			case fs[k+2].Function == "" || fs[k+2].Signal:
				t.Fatalf("stop %d, thread %d: the interrupted frame is unnamed:%s", try, tid, frameList(fs))
			}
			past := fs[k+2:]
			ours := slices.ContainsFunc(past, func(f Frame) bool { return f.Function == "main.spin" || f.Function == "main.blockRead" })
			if ours && outermost[past[len(past)-1].Function] {
				t.Logf("stop %d, thread %d (%d stacks in the handler seen): %s", try, tid, inHandler, stackNames(fs))
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("in %d stops, %d threads were in the signal handler, none interrupted in crashprog's main.spin or main.blockRead", try+1, inHandler)
		}
		groupCont(t, pid)
	}
}
