//go:build linux && (amd64 || arm64 || ppc64le)

package elfinfo

// Signal frames crossed on the architecture that runs the test: the QEMU stages run these on
// real arm64 and ppc64le kernels (tracer/qemu's Arch.Run), where the trampoline a handler
// returns to is the vDSO's and the kernel's rt_sigframe has each arch's own layout.

import (
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

// ptraceHandlerEntry takes a thread of a running process into its handler for sig, the way
// a debugger (or crashtui's engine, which delivers a signal before it holds a thread) does:
// PTRACE_SEIZE and PTRACE_INTERRUPT it, queue sig, let it take it (its signal-delivery-stop),
// then PTRACE_SINGLESTEP with sig, which sets up the handler's frame and stops the thread
// where the handler is entered (signal_delivered's ptrace_notify). Call from a goroutine
// locked to its OS thread; t.Cleanup detaches. With there given, it asks it once the thread
// is stopped, and if it says no, lets the thread go at once and returns false.
func ptraceHandlerEntry(t *testing.T, pid, tid int, sig syscall.Signal, there func() bool) bool {
	t.Helper()
	wait := func(what string) syscall.WaitStatus { return waitStop(t, tid, what) }
	if err := ptraceSeize(tid); err != nil {
		t.Fatalf("seize %d: %v", tid, err)
	}
	t.Cleanup(func() { syscall.PtraceDetach(tid) })
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, 0x4207, uintptr(tid), 0, 0, 0, 0); e != 0 { // PTRACE_INTERRUPT
		t.Fatalf("interrupt %d: %v", tid, e)
	}
	if ws := wait("interrupt"); there != nil && !there() {
		letGo(tid, ws)
		return false
	}
	if err := syscall.Tgkill(pid, tid, sig); err != nil {
		t.Fatalf("tgkill %d %v: %v", tid, sig, err)
	}
	// Until its signal-delivery-stop for sig (the runtime may have queued another first).
	for n := 0; ; n++ {
		if err := syscall.PtraceCont(tid, 0); err != nil {
			t.Fatalf("cont %d: %v", tid, err)
		}
		if ws := wait("signal delivery"); ws.StopSignal() == sig {
			break
		} else if n > 100 {
			t.Fatalf("thread %d: no stop for %v, last %#x", tid, sig, ws)
		}
	}
	ptraceStep(t, tid, sig)
	if ws := wait("handler entry"); ws.StopSignal() != syscall.SIGTRAP {
		t.Fatalf("thread %d: stopped with %v after stepping into the handler, want SIGTRAP", tid, ws.StopSignal())
	}
	return true
}

// ptraceStep is PTRACE_SINGLESTEP delivering sig (0 for none); the caller waits.
func ptraceStep(t *testing.T, tid int, sig syscall.Signal) {
	t.Helper()
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_SINGLESTEP, uintptr(tid), 0, uintptr(sig), 0, 0); e != 0 {
		t.Fatalf("single-step %d: %v", tid, e)
	}
}

// unwindThread unwinds a ptrace-stopped thread.
func unwindThread(t *testing.T, r *Resolver, pid, tid int, mem MemReader) []Frame {
	t.Helper()
	rg, maps := stoppedAt(t, pid, tid)
	pc, sp, fp, lr := startRegs(rg)
	return r.Unwind(pid, maps, pc, sp, fp, lr, runtime.GOARCH, mem, 64)
}

// stoppedAt is a ptrace-stopped thread's registers, and its process's mappings now.
func stoppedAt(t *testing.T, pid, tid int) (*syscall.PtraceRegs, []Mapping) {
	t.Helper()
	var rg syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(tid, &rg); err != nil {
		t.Fatalf("registers of %d: %v", tid, err)
	}
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return &rg, maps
}

// TestSignalFrameGo: the Go runtime's own signal handler path (sigtramp, entered from the
// kernel's rt_sigframe, returning to the trampoline: its own sigreturn__sigaction on amd64,
// the vDSO's on arm64 and ppc64le), on crashprog's thread blocked in a raw read under
// main.blockRead and on the one spinning in main.spin, each taken into the runtime's SIGURG
// handler by ptrace. Where the handler is entered (runtime.sigtramp; on ppc64le the vDSO's
// bctrl that calls it) and again at runtime.sigtrampgo, single steps later, the stack is the
// handler's frames, the signal frame, the interrupted code at the pc the signal hit, down to
// the goroutine's first frame.
func TestSignalFrameGo(t *testing.T) {
	exe := guestProgram(t, "CRASHTUI_CRASHPROG", "crashprog")
	for _, tc := range []struct{ name, fn string }{{"read", "main.blockRead"}, {"spin", "main.spin"}} {
		t.Run(tc.name, func(t *testing.T) {
			pid := startHang(t, exe)
			// Every ptrace request must come from the thread that seized, the cleanups' detach
			// too: the goroutine stays locked to its thread to its end, and the thread ends
			// with it (which lets go of whatever it still traces).
			runtime.LockOSThread()
			mem := procMem(t, pid)
			r := NewResolver()
			defer r.Close()
			// The thread: the one in read(2), or one running (user code) whose stack is in
			// main.spin (sysmon and idle threads run now and then too).
			var tid int
			// The spinner may move to another thread (another M) between the look and the
			// stop, when the scheduler preempts it on a loaded machine: it is only known to
			// be there once its thread is stopped; if it is not, look again.
			var there func() bool
			if tc.fn == "main.spin" {
				there = func() bool { return inStack(unwindThread(t, r, pid, tid, mem), tc.fn) }
			}
			for try := 0; ; try++ {
				waitFor(t, func() bool {
					nrs := taskSyscalls(pid)
					// Until the main goroutine sits in its read, the scheduler may yet run it
					// on the thread found in main.spin.
					reading := false
					for _, nr := range nrs {
						reading = reading || nr == syscall.SYS_READ
					}
					for id, nr := range nrs {
						switch {
						case tc.fn == "main.blockRead" && nr == syscall.SYS_READ:
							tid = id
							return true
						case tc.fn == "main.spin" && reading && nr == -1 && stopsIn(t, r, pid, id, mem, tc.fn):
							tid = id
							return true
						}
					}
					return false
				}, "a thread of crashprog in "+tc.fn)
				if ptraceHandlerEntry(t, pid, tid, syscall.SIGURG, there) {
					break
				}
				if try == 50 {
					t.Fatalf("the spinner left its thread before each of %d stops", try+1)
				}
			}

			entry := unwindThread(t, r, pid, tid, mem)
			t.Logf("handler entered, thread %d:%s", tid, frameList(entry))
			k := slices.IndexFunc(entry, func(f Frame) bool { return f.Signal })
			switch {
			case runtime.GOARCH == "ppc64le" && k != 0:
				t.Fatalf("frame 0 is not the signal frame (the vDSO's bctrl to the handler)")
			case runtime.GOARCH != "ppc64le" && (k != 1 || entry[0].Function != "runtime.sigtramp"):
				t.Fatalf("frames 0 and 1 are not runtime.sigtramp and the signal frame")
			}
			interrupted := checkInterrupted(t, entry[k+1:], tc.fn)

			// Into the handler, to its call of sigtrampgo: sigtramp is a caller now.
			for n := 0; ; n++ {
				rg, maps := stoppedAt(t, pid, tid)
				pc, _, _, _ := startRegs(rg)
				if r.Locate(pid, maps, pc).Function == "runtime.sigtrampgo" {
					break
				}
				if n == 5000 {
					t.Fatalf("no runtime.sigtrampgo in %d single steps from the handler's entry", n)
				}
				ptraceStep(t, tid, 0)
				if ws := waitStop(t, tid, fmt.Sprintf("single step %d", n)); ws.StopSignal() != syscall.SIGTRAP {
					t.Fatalf("single step %d of %d: stopped with %#x", n, tid, ws)
				}
			}
			inGo := unwindThread(t, r, pid, tid, mem)
			t.Logf("in runtime.sigtrampgo:%s", frameList(inGo))
			if len(inGo) < 3 || inGo[0].Function != "runtime.sigtrampgo" || inGo[1].Function != "runtime.sigtramp" || !inGo[2].Signal {
				t.Fatalf("frames 0-2 are not runtime.sigtrampgo, runtime.sigtramp and the signal frame")
			}
			if again := checkInterrupted(t, inGo[3:], tc.fn); stackNames(again) != stackNames(interrupted) || again[0].PC != interrupted[0].PC {
				t.Errorf("from sigtrampgo the interrupted frames are %s at %#x, from the handler's entry %s at %#x",
					stackNames(again), again[0].PC, stackNames(interrupted), interrupted[0].PC)
			}
		})
	}
}

// stopsIn says whether thread tid of pid, interrupted for a moment with ptrace, is in fn
// (its stack holds it); it is detached again.
func stopsIn(t *testing.T, r *Resolver, pid, tid int, mem MemReader, fn string) bool {
	t.Helper()
	if err := ptraceSeize(tid); err != nil {
		return false
	}
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, 0x4207, uintptr(tid), 0, 0, 0, 0); e != 0 { // PTRACE_INTERRUPT
		syscall.PtraceDetach(tid)
		return false
	}
	ws := waitStop(t, tid, "interrupted to look")
	defer letGo(tid, ws)
	return inStack(unwindThread(t, r, pid, tid, mem), fn)
}

// inStack says whether fn is one of the frames gdb would show for fs (inlined calls too).
func inStack(fs []Frame, fn string) bool {
	return slices.ContainsFunc(fs, func(f Frame) bool {
		return slices.ContainsFunc(f.SourceFrames(), func(s SourceFrame) bool { return s.Function == fn })
	})
}

// checkInterrupted checks the frames past a signal frame: the interrupted code, named, whose
// stack holds fn and ends at its goroutine's first frame; it returns them.
func checkInterrupted(t *testing.T, fs []Frame, fn string) []Frame {
	t.Helper()
	switch {
	case len(fs) == 0 || fs[0].Function == "" || fs[0].Signal:
		t.Fatalf("the interrupted frame is unnamed")
	case !inStack(fs, fn):
		t.Fatalf("the interrupted code is not under %s", fn)
	case !outermost[fs[len(fs)-1].Function]:
		t.Fatalf("the interrupted code's stack ends in %s", fs[len(fs)-1].Location)
	}
	return fs
}

// TestSignalFrameGoPreempt: a goroutine the runtime preempts asynchronously. Its SIGURG
// handler makes the spinning thread return from the signal into runtime.asyncPreempt as if
// main.spin had called it at the pc the signal hit (sigctxt.pushCall); on arm64 and ppc64le
// it also moves the stack pointer past a slot holding the interrupted code's link register.
// From every instruction of asyncPreempt's entry, up to its call of asyncPreempt2, the stack
// is asyncPreempt, then main.spin at that very pc (not a return address), down to
// runtime.goexit: no wrong caller read from a stack pointer 16 (arm64) or 32 (ppc64le) bytes
// off. The thread is followed by this test's own ptrace (PTRACE_SYSCALL from the runtime's
// SIGURG to the rt_sigreturn that enters asyncPreempt, then single steps).
func TestSignalFrameGoPreempt(t *testing.T) {
	exe := guestProgram(t, "CRASHTUI_CRASHPROG", "crashprog")
	pid := startHang(t, exe)
	runtime.LockOSThread() // to its end, as TestSignalFrameGo's are
	mem := procMem(t, pid)
	r := NewResolver()
	defer r.Close()
	locate := func(tid int) (uint64, *syscall.PtraceRegs, Location) {
		rg, maps := stoppedAt(t, pid, tid)
		pc, _, _, _ := startRegs(rg)
		return pc, rg, r.Locate(pid, maps, pc)
	}
	for try := 0; ; try++ {
		if try == 20 {
			t.Fatalf("the spinner's thread entered runtime.asyncPreempt in none of %d tries", try)
		}
		tid := spinnerThread(t, r, pid, mem)
		if !followIntoAsyncPreempt(t, tid, func() bool { _, _, l := locate(tid); return l.Function == "runtime.asyncPreempt" }) {
			continue
		}
		// At its entry: the interrupted pc is the link register on arm64 and ppc64le, the
		// word pushCall pushed on amd64.
		_, rg, _ := locate(tid)
		_, sp, _, resume := startRegs(rg)
		if runtime.GOARCH == "amd64" {
			var err error
			if resume, err = readWord(mem, sp); err != nil {
				t.Fatal(err)
			}
		}
		maps, err := ReadMaps(pid)
		if err != nil {
			t.Fatal(err)
		}
		want := r.Locate(pid, maps, resume)
		if want.Function != "main.spin" {
			t.Fatalf("asyncPreempt entered to resume at %#x in %s, want main.spin", resume, want)
		}
		steps := 0
		for ; ; steps++ {
			pc, _, loc := locate(tid)
			if loc.Function != "runtime.asyncPreempt" {
				break // called asyncPreempt2
			}
			fs := unwindThread(t, r, pid, tid, mem)
			if len(fs) < 3 || fs[0].PC != pc || fs[1].PC != resume || fs[1].Function != want.Function || fs[1].FuncOff != want.FuncOff || fs[len(fs)-1].Function != "runtime.goexit" {
				t.Fatalf("asyncPreempt+%#x, %d steps in, resuming at %#x (%s): %s\nwant runtime.asyncPreempt, main.spin at that pc, ..., runtime.goexit",
					loc.FuncOff, steps, resume, want, frameList(fs))
			}
			if steps == 500 {
				t.Fatalf("still in runtime.asyncPreempt after %d single steps", steps)
			}
			for {
				ptraceStep(t, tid, 0)
				ws := waitStop(t, tid, fmt.Sprintf("single step %d in runtime.asyncPreempt", steps))
				if sig := ws.StopSignal(); sig != syscall.SIGTRAP {
					// The runtime's next SIGURG: held back while stepping (a handler would
					// run in the middle of asyncPreempt), sent again when the test is done,
					// so the runtime, which sends no other until it was handled, preempts on.
					t.Cleanup(func() { syscall.Tgkill(pid, tid, sig) })
					continue
				}
				break
			}
		}
		t.Logf("the stack was right at %d instructions of runtime.asyncPreempt, resuming main.spin at %#x", steps, resume)
		if steps < 3 {
			t.Fatalf("only %d instructions of asyncPreempt were checked", steps)
		}
		return
	}
}

// startHang starts crashprog hang (a goroutine spinning in main.spin, main blocked in a read
// of stdin) and returns its pid once it said ready; t.Cleanup kills and reaps it.
func startHang(t *testing.T, exe string) int {
	t.Helper()
	cmd := exec.Command(exe, "hang")
	if _, err := cmd.StdinPipe(); err != nil { // open until the end: crashprog exits at EOF
		t.Fatal(err)
	}
	pid, _ := startReady(t, cmd)
	return pid
}

// spinnerThread is a thread of crashprog hang found running main.spin (stopped a moment to
// look, and let go), once its main goroutine sits in its read.
func spinnerThread(t *testing.T, r *Resolver, pid int, mem MemReader) (tid int) {
	t.Helper()
	waitFor(t, func() bool {
		nrs := taskSyscalls(pid)
		if countNr(nrs, syscall.SYS_READ) == 0 {
			return false // the scheduler may yet run main on the spinner's thread
		}
		for id, nr := range nrs {
			if nr == -1 && stopsIn(t, r, pid, id, mem, "main.spin") {
				tid = id
				return true
			}
		}
		return false
	}, "a thread of crashprog in main.spin")
	return tid
}

// followIntoAsyncPreempt seizes thread tid and follows it through the runtime's next SIGURGs
// (delivered, then PTRACE_SYSCALL to the rt_sigreturn out of the handler) until it returns
// from one into asyncPreempt (in says where it is), and leaves it stopped there; t.Cleanup
// detaches. It lets go and returns false when the thread gets no SIGURG for a while (the
// scheduler moved the spinner to another thread) or a handler returns elsewhere too often.
func followIntoAsyncPreempt(t *testing.T, tid int, in func() bool) bool {
	t.Helper()
	if err := ptraceSeize(tid); err != nil {
		t.Fatalf("seize %d: %v", tid, err)
	}
	t.Cleanup(func() { syscall.PtraceDetach(tid) })
	giveUp := func() bool {
		syscall.Syscall6(syscall.SYS_PTRACE, 0x4207, uintptr(tid), 0, 0, 0, 0) // PTRACE_INTERRUPT
		letGo(tid, waitStop(t, tid, "interrupted to let go"))
		return false
	}
	// wait is the thread's next stop, or false once the thread has slept through 50 looks
	// in a row (the spinner left it: the runtime parked it in a futex) or after 20 s.
	wait := func() (syscall.WaitStatus, bool) {
		var ws syscall.WaitStatus
		asleep := 0
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if id, err := syscall.Wait4(tid, &ws, syscall.WALL|syscall.WNOHANG, nil); err != nil {
				t.Fatalf("wait %d: %v", tid, err)
			} else if id == tid {
				return ws, true
			}
			if s := threadState(tid); s == "S" || s == "D" {
				asleep++
			} else {
				asleep = 0
			}
			if asleep == 50 {
				t.Logf("thread %d sleeps: the spinner left it (%s)", tid, describeThread(tid))
				return ws, false
			}
		}
		t.Logf("thread %d took no SIGURG in 20 s (%s)", tid, describeThread(tid))
		return ws, false
	}
	resume := func(req int, sig syscall.Signal) {
		if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, uintptr(req), uintptr(tid), 0, uintptr(sig), 0, 0); e != 0 {
			t.Fatalf("ptrace %d on %d: %v", req, tid, e)
		}
	}
	for handlers := 0; handlers < 50; {
		ws, ok := wait()
		if !ok {
			return giveUp()
		}
		sig, event := ws.StopSignal(), int(ws)>>16 // PTRACE_EVENT_*: 0 for a signal's or a syscall's stop
		switch {
		case event != 0: // an event or group stop (PTRACE_EVENT_STOP): nothing to deliver
			resume(syscall.PTRACE_CONT, 0)
		case sig == syscall.SIGURG:
			resume(syscall.PTRACE_SYSCALL, sig) // into the handler, stopping at its syscalls
			handlers++
		case sig == syscall.SIGTRAP: // a syscall stop
			if in() {
				return true
			}
			resume(syscall.PTRACE_SYSCALL, 0)
		default:
			resume(syscall.PTRACE_CONT, sig)
		}
	}
	t.Logf("thread %d: 50 SIGURG handlers, none returned into runtime.asyncPreempt", tid)
	return giveUp()
}

// TestCleanupReapsWhatAnotherThreadTraces: a process whose thread is still traced by another
// thread of this test process (a cleanup's detach that ran on the wrong thread leaves it so)
// is killed and reaped by startReady's cleanup. A traced thread that dies waits for its
// tracer to reap it, and its leader's wait hung until the test binary's timeout (seen in
// TestSignalFrameGo/spin beside two CPU hogs: 13 minutes in cmd.Wait).
func TestCleanupReapsWhatAnotherThreadTraces(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // the last cleanup: after startReady's kill and wait
	pid := startHang(t, guestProgram(t, "CRASHTUI_CRASHPROG", "crashprog"))
	tid := 0
	for _, id := range tids(t, pid) {
		if id != pid {
			tid = id
			break
		}
	}
	if tid == 0 {
		t.Fatalf("crashprog %d has no thread but its leader", pid)
	}
	seized := make(chan error, 1)
	go func() {
		// The tracer: a thread of its own, which traces tid until the test has ended, and
		// then ends (locked, its thread with it).
		runtime.LockOSThread()
		err := ptraceSeize(tid)
		if err == nil {
			syscall.Syscall6(syscall.SYS_PTRACE, 0x4207, uintptr(tid), 0, 0, 0, 0) // PTRACE_INTERRUPT
			var ws syscall.WaitStatus
			_, err = syscall.Wait4(tid, &ws, syscall.WALL, nil)
		}
		seized <- err
		<-release
	}()
	if err := <-seized; err != nil {
		t.Fatalf("seize and stop thread %d: %v", tid, err)
	}
	if tp := tracerOf(tid); tp == "0" || tp == "" {
		t.Fatalf("thread %d: TracerPid %q, want this test's thread", tid, tp)
	}
}

// tracerOf is the TracerPid line's value in /proc/TID/status.
func tracerOf(tid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
