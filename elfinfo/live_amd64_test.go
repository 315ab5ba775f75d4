//go:build linux

package elfinfo

// Tests that need a stopped thread's registers. Only package tracer calls ptrace in crashtui;
// these tests are the exception the brief allows (there is no other way to get registers), and
// they use the amd64 PtraceRegs layout, hence the _amd64 file.

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// startTraced starts path under PTRACE_TRACEME and returns it at its exec SIGTRAP stop. The
// calling goroutine stays locked to its OS thread: every later ptrace request must come from it.
func startTraced(t *testing.T, path string) int {
	t.Helper()
	runtime.LockOSThread()
	cmd := exec.Command(path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		cmd.Wait()
	})
	if ws := waitStop(t, pid, "exec stop"); ws.StopSignal() != syscall.SIGTRAP {
		t.Fatalf("%s: first stop %v, want SIGTRAP at exec", path, ws.StopSignal())
	}
	return pid
}

// contUntil resumes the tracee until it stops with sig (a signal-delivery-stop).
func contUntil(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.PtraceCont(pid, 0); err != nil {
		t.Fatalf("cont %d: %v", pid, err)
	}
	if ws := waitStop(t, pid, "signal delivery"); ws.StopSignal() != sig {
		t.Fatalf("pid %d stopped with %v, want %v", pid, ws.StopSignal(), sig)
	}
}

func buildC(t *testing.T, name string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	src, _ := filepath.Abs(filepath.Join("testdata", name+".c"))
	gccIn(t, dir, append(append([]string{"-g", "-O0"}, flags...), "-o", name, src)...)
	return filepath.Join(dir, name)
}

func TestUnwind(t *testing.T) {
	for _, tc := range []struct {
		name         string
		flags        []string
		noDebugFrame bool
	}{
		{"frame pointers", nil, false},
		// Without frame pointers only CFI can get from the leaf back to main.
		{"no frame pointers", []string{"-fomit-frame-pointer"}, false},
		// Without CFI for the program's functions the frame-pointer chain has to do it.
		// (-g then puts the CFI in .debug_frame, which is removed.)
		{"no CFI", []string{"-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe := buildC(t, "chain", tc.flags...)
			if tc.noDebugFrame {
				objcopy := needTool(t, "objcopy")
				if out, err := exec.Command(objcopy, "--remove-section", ".debug_frame", exe).CombinedOutput(); err != nil {
					t.Fatalf("objcopy: %v\n%s", err, out)
				}
			}
			pid := startTraced(t, exe)
			contUntil(t, pid, syscall.SIGSTOP) // leaf() raised it
			var regs syscall.PtraceRegs
			if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
				t.Fatal(err)
			}
			maps, err := ReadMaps(pid)
			if err != nil {
				t.Fatal(err)
			}
			r := NewResolver()
			defer r.Close()
			frames := r.Unwind(pid, maps, regs.Rip, regs.Rsp, regs.Rbp, 0, "amd64", procMem(t, pid), 64)
			var names []string
			for _, f := range frames {
				names = append(names, f.Function)
				t.Logf("%#x %s", f.PC, f.Location)
			}
			if len(frames) == 0 || filepath.Base(frames[0].Module) != "libc.so.6" {
				t.Fatalf("frame 0 should be in libc (raise): %v", frames)
			}
			chain := []string{"leaf", "depth3", "depth2", "depth1", "main"}
			joined := "," + strings.Join(names, ",") + ","
			if !strings.Contains(joined, ","+strings.Join(chain, ",")+",") {
				t.Fatalf("frames %v do not contain the chain %v", names, chain)
			}
			// Caller frames carry the line of the call.
			for _, f := range frames {
				var want int
				switch f.Function {
				case "leaf":
					want = defLine(t, "chain.c", "void leaf(void)")
				case "depth2":
					want = defLine(t, "chain.c", "void depth2(void)")
				case "main":
					want = defLine(t, "chain.c", "depth1();")
				default:
					continue
				}
				if f.Line != want || filepath.Base(f.File) != "chain.c" {
					t.Errorf("%s at %s:%d, want chain.c:%d", f.Function, f.File, f.Line, want)
				}
			}
		})
	}
}

// ptraceGetSiginfo is PTRACE_GETSIGINFO into the 128-byte siginfo_t (no x/sys wrapper).
func ptraceGetSiginfo(t *testing.T, pid int) (signo, errno, code int32, addr uint64) {
	var b [128]byte
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_GETSIGINFO, uintptr(pid), 0, uintptr(unsafe.Pointer(&b[0])), 0, 0); e != 0 {
		t.Fatalf("getsiginfo %d: %v", pid, e)
	}
	le := binary.LittleEndian
	return int32(le.Uint32(b[0:])), int32(le.Uint32(b[4:])), int32(le.Uint32(b[8:])), le.Uint64(b[16:])
}

func TestWriteCoreGDB(t *testing.T) {
	gdb := needTool(t, "gdb")
	exe := buildC(t, "crash")
	pid := startTraced(t, exe)
	contUntil(t, pid, syscall.SIGSEGV)
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		t.Fatal(err)
	}
	var words bytes.Buffer
	binary.Write(&words, binary.LittleEndian, regs)
	raw := make([]uint64, words.Len()/8)
	binary.Read(&words, binary.LittleEndian, raw)

	signo, errno, code, addr := ptraceGetSiginfo(t, pid)
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	auxv, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/auxv")
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver()
	defer r.Close()
	if loc := r.Locate(pid, maps, regs.Rip); loc.Function != "crash_here" {
		t.Fatalf("Locate(rip) = %+v, want crash_here", loc)
	}

	core := filepath.Join(t.TempDir(), "core")
	f, err := os.Create(core)
	if err != nil {
		t.Fatal(err)
	}
	err = WriteCore(f, CoreInput{
		Arch: "amd64", PID: pid, PPID: os.Getpid(), UID: os.Getuid(), GID: os.Getgid(),
		Comm: "crash", Args: exe,
		Signal: int(signo), SigCode: int(code), SigErrno: int(errno), SigAddr: addr,
		Threads: []CoreThread{{TID: pid, Regs: raw, Signal: int(signo)}},
		Maps:    maps, Auxv: auxv, Mem: procMem(t, pid),
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gdb, "-nx", "-batch", "-ex", "bt", exe, core).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	t.Logf("gdb:\n%s", out)
	for _, re := range []string{
		`Program terminated with signal SIGSEGV`,
		`(?m)^#0 .*crash_here \(p=0x0\) at .*crash\.c:\d+`,
		`(?m)^#1 .*crash_caller`,
		`(?m)^#2 .*main \(\) at .*crash\.c`,
	} {
		if !regexp.MustCompile(re).Match(out) {
			t.Errorf("gdb bt output lacks %q", re)
		}
	}
}
