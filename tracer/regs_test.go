package tracer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
)

// These tests drive a real `sleep` child by hand with ptrace, on the test's own locked OS
// thread (the tracer thread), to check the register glue and the arch injection model against
// what the kernel really does. Nothing here uses the Tracer: they must not run while a Tracer's
// wait4(-1) waiter is alive (they are not parallel).

// regsTestChild starts `sleep 100`, seizes it with PTRACE_O_TRACESYSGOOD and stops it with
// PTRACE_INTERRUPT. The caller must have locked its OS thread. The child is killed and reaped
// in t.Cleanup whatever happens.
func regsTestChild(t *testing.T) int {
	t.Helper()
	if arch.NumWords(arch.Host()) == 0 {
		t.Skipf("no register glue for %s", arch.Host())
	}
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("needs sleep(1) in PATH: %v", err)
	}
	cmd := exec.Command(path, "100")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // SIGKILL also ends a tracee in a ptrace-stop
		_ = cmd.Wait()
	})
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, unix.PTRACE_O_TRACESYSGOOD, 0, 0); e != 0 {
		t.Skipf("PTRACE_SEIZE %d not permitted here: %v", pid, e)
	}
	if err := unix.PtraceInterrupt(pid); err != nil {
		t.Fatalf("interrupt %d: %v", pid, err)
	}
	ws := regsTestWait(t, pid)
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP || ws.TrapCause() != unix.PTRACE_EVENT_STOP {
		t.Fatalf("after PTRACE_INTERRUPT %d: wait status %#x, want PTRACE_EVENT_STOP", pid, uint32(ws))
	}
	return pid
}

func regsTestWait(t *testing.T, pid int) unix.WaitStatus {
	t.Helper()
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("wait4 %d: %v", pid, err)
		}
		if ws.Exited() || ws.Signaled() {
			t.Fatalf("child %d died: wait status %#x", pid, uint32(ws))
		}
		return ws
	}
}

// regsTestSyscallInfo returns PTRACE_GET_SYSCALL_INFO's op (1 entry, 2 exit) and, at an entry
// stop, the syscall number: an arch-independent cross-check of what getRegs decodes.
func regsTestSyscallInfo(t *testing.T, pid int) (op uint8, nr uint64) {
	t.Helper()
	var buf [88]byte // struct ptrace_syscall_info
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(pid), uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])), 0, 0); e != 0 {
		t.Skipf("PTRACE_GET_SYSCALL_INFO (Linux 5.3) failed: %v", e)
	}
	return buf[0], binary.NativeEndian.Uint64(buf[24:])
}

// regsTestStopAtSyscallEntry resumes pid with PTRACE_SYSCALL until a syscall-entry stop whose
// number is one of nrs, and returns that number.
func regsTestStopAtSyscallEntry(t *testing.T, pid int, nrs ...int) int {
	t.Helper()
	for range 100000 {
		if err := unix.PtraceSyscall(pid, 0); err != nil {
			t.Fatalf("PTRACE_SYSCALL %d: %v", pid, err)
		}
		ws := regsTestWait(t, pid)
		if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP|0x80 {
			continue // not a syscall-stop (sleep receives no signals; an exec event would be odd)
		}
		op, nr := regsTestSyscallInfo(t, pid)
		if op == unix.PTRACE_SYSCALL_INFO_ENTRY && slices.Contains(nrs, int(nr)) {
			return int(nr)
		}
	}
	t.Fatalf("child %d never entered syscalls %v", pid, nrs)
	return -1
}

// regsTestSleeping returns pid stopped by PTRACE_INTERRUPT while blocked in its sleep: the
// syscall was entered (seen at its entry stop), then the child was continued and interrupted.
// If the interrupt arrives before the task blocks, the sleep still returns
// -ERESTART_RESTARTBLOCK (it sees the pending wake-up), so the state is the same either way.
func regsTestSleeping(t *testing.T, pid int) (sleepNrs []int) {
	t.Helper()
	h := arch.Host()
	for _, name := range []string{"clock_nanosleep", "nanosleep", "restart_syscall"} {
		if nr, ok := arch.SyscallNumber(h, name); ok {
			sleepNrs = append(sleepNrs, nr)
		}
	}
	// restart_syscall is in the list because the first interrupt may already have caught the
	// child inside its sleep: resuming then restarts it through restart_syscall.
	regsTestStopAtSyscallEntry(t, pid, sleepNrs...)
	if err := unix.PtraceCont(pid, 0); err != nil {
		t.Fatalf("cont %d: %v", pid, err)
	}
	if err := unix.PtraceInterrupt(pid); err != nil {
		t.Fatalf("interrupt %d: %v", pid, err)
	}
	ws := regsTestWait(t, pid)
	if !ws.Stopped() || ws.TrapCause() != unix.PTRACE_EVENT_STOP {
		t.Fatalf("interrupt in sleep: wait status %#x, want PTRACE_EVENT_STOP", uint32(ws))
	}
	return sleepNrs
}

func TestRegsRoundTrip(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid := regsTestChild(t)

	r, err := getRegs(pid)
	if err != nil {
		t.Fatal(err)
	}
	if r.Arch != arch.Host() || len(r.Words) != arch.NumWords(arch.Host()) {
		t.Fatalf("getRegs = %s with %d words", r.Arch, len(r.Words))
	}
	if r.PC() == 0 || r.SP() == 0 {
		t.Errorf("pc %#x sp %#x: the word layout is wrong", r.PC(), r.SP())
	}
	// The pc is inside an executable mapping of the child.
	if !regsTestInExec(t, pid, r.PC()) {
		t.Errorf("pc %#x is not in an executable mapping of %d", r.PC(), pid)
	}

	edited := r.Clone()
	edited.Words[0] ^= 0x5a5a5a5a // amd64 r15, arm64 x0, ppc64le r0
	if err := setRegs(pid, edited); err != nil {
		t.Fatal(err)
	}
	if got, err := getRegs(pid); err != nil || !slices.Equal(got.Words, edited.Words) {
		t.Fatalf("after setRegs: %v, words differ: %v", err, regsTestDiff(edited, got))
	}
	if err := setRegs(pid, r); err != nil {
		t.Fatal(err)
	}
	if got, err := getRegs(pid); err != nil || !slices.Equal(got.Words, r.Words) {
		t.Fatalf("after restoring: %v, words differ: %v", err, regsTestDiff(r, got))
	}

	other := arch.AMD64
	if arch.Host() == arch.AMD64 {
		other = arch.PPC64LE
	}
	if err := setRegs(pid, arch.Regs{Arch: other, Words: make([]uint64, arch.NumWords(other))}); err == nil {
		t.Errorf("setRegs accepted %s registers", other)
	}

	if err := unix.PtraceDetach(pid); err != nil {
		t.Fatalf("detach %d: %v", pid, err)
	}
	_, err = getRegs(pid)
	if !errors.Is(err, unix.ESRCH) || !strings.Contains(err.Error(), fmt.Sprintf("getregs %d", pid)) {
		t.Errorf("getRegs after detach: %v, want ESRCH naming the tid", err)
	}
	regsTestStillRunning(t, pid)
}

// TestRegsInjectGetpid injects getpid into a child blocked in its sleep, the compel way
// (kernel.md §A.5), using arch.SyscallStub/SetupSyscall/SyscallResult/SyscallStopPC, then
// restores the code word and the registers and checks that the kernel restarts the sleep
// exactly as it would have without us (through restart_syscall).
func TestRegsInjectGetpid(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid := regsTestChild(t)
	sleepNrs := regsTestSleeping(t, pid)
	h := arch.Host()

	saved, err := getRegs(pid)
	if err != nil {
		t.Fatal(err)
	}
	st := arch.Decode(saved, restartInsn(pid, saved))
	if !st.InSyscall || !slices.Contains(sleepNrs, st.Nr) || !st.InsnConfirmed {
		t.Fatalf("Decode of the interrupted sleep = %+v, want one of %v, instruction confirmed", st, sleepNrs)
	}
	if h != arch.ARM64 { // arm64 has lost the code before the stop (kernel.md B.1)
		if st.Errno != arch.ERESTART_RESTARTBLOCK || st.OnResume(arch.NoHandler) != arch.ActRestartSyscall {
			t.Fatalf("Decode = %+v, want ERESTART_RESTARTBLOCK restarting through restart_syscall", st)
		}
	}

	stub, err := regsTestExecArea(pid)
	if err != nil {
		t.Fatal(err)
	}
	code := arch.SyscallStub(h)
	orig := make([]byte, len(code))
	if _, err := unix.PtracePeekData(pid, uintptr(stub), orig); err != nil {
		t.Fatalf("peek %d %#x: %v", pid, stub, err)
	}
	if _, err := unix.PtracePokeData(pid, uintptr(stub), code); err != nil {
		t.Fatalf("poke %d %#x: %v", pid, stub, err)
	}
	getpid, _ := arch.SyscallNumber(h, "getpid")
	if err := setRegs(pid, arch.SetupSyscall(saved, stub, getpid)); err != nil {
		t.Fatal(err)
	}
	if err := unix.PtraceCont(pid, 0); err != nil {
		t.Fatalf("cont %d: %v", pid, err)
	}
	ws := regsTestWait(t, pid)
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP || ws.TrapCause() != 0 {
		t.Fatalf("after the stub: wait status %#x, want a SIGTRAP signal-delivery-stop", uint32(ws))
	}
	after, err := getRegs(pid)
	if err != nil {
		t.Fatal(err)
	}
	if want := arch.SyscallStopPC(h, stub); after.PC() != want {
		t.Errorf("stopped at pc %#x, want %#x (stub %#x)", after.PC(), want, stub)
	}
	if ret, errno := arch.SyscallResult(after); ret != int64(pid) || errno != 0 {
		t.Errorf("injected getpid = %d (errno %d), want %d", ret, errno, pid)
	}

	// Put everything back; restoring the saved registers unchanged re-arms the restart.
	if _, err := unix.PtracePokeData(pid, uintptr(stub), orig); err != nil {
		t.Fatalf("restore code %d %#x: %v", pid, stub, err)
	}
	back := make([]byte, len(orig))
	if _, err := unix.PtracePeekData(pid, uintptr(stub), back); err != nil || !bytes.Equal(back, orig) {
		t.Fatalf("code at %#x after restore: % x (%v), want % x", stub, back, err, orig)
	}
	if err := setRegs(pid, saved); err != nil {
		t.Fatal(err)
	}
	if got, err := getRegs(pid); err != nil || !slices.Equal(got.Words, saved.Words) {
		t.Fatalf("registers after restore: %v, differ: %v", err, regsTestDiff(saved, got))
	}
	restartNr, _ := arch.SyscallNumber(h, "restart_syscall")
	// Resuming with signal 0 drops our SIGTRAP; the kernel then sees the restored
	// -ERESTART_RESTARTBLOCK with no handler and re-enters the sleep through restart_syscall.
	if nr := regsTestStopAtSyscallEntry(t, pid, append(sleepNrs, getpid)...); nr != restartNr {
		t.Fatalf("after restoring, the child entered syscall %d (%s), want restart_syscall", nr, arch.SyscallName(h, nr))
	}
	if h == arch.AMD64 {
		if r, err := getRegs(pid); err != nil || arch.Decode(r, nil).Nr != restartNr {
			t.Errorf("getRegs at the restart_syscall entry: %v, orig_rax %d", err, arch.Decode(r, nil).Nr)
		}
	}
	if err := unix.PtraceDetach(pid); err != nil {
		t.Fatalf("detach %d: %v", pid, err)
	}
	regsTestStillRunning(t, pid)
}

// regsTestExecArea returns the start of the first executable mapping of pid, as compel's
// find_executable_area does.
func regsTestExecArea(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, fmt.Errorf("maps %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.Contains(fields[1], "x") {
			continue
		}
		start, _, _ := strings.Cut(fields[0], "-")
		return strconv.ParseUint(start, 16, 64)
	}
	return 0, fmt.Errorf("maps %d: no executable mapping", pid)
}

func regsTestInExec(t *testing.T, pid int, pc uint64) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatalf("maps %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.Contains(fields[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && pc >= l && pc < h {
			return true
		}
	}
	return false
}

// regsTestStillRunning checks that the detached child has neither exited nor been killed.
func regsTestStillRunning(t *testing.T, pid int) {
	t.Helper()
	var ws unix.WaitStatus
	wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
	if err != nil || wpid != 0 {
		t.Errorf("child %d after detach: wait4 = %d %v, status %#x; want still running", pid, wpid, err, uint32(ws))
	}
}

func regsTestDiff(want, got arch.Regs) []string {
	var d []string
	for i := range max(len(want.Words), len(got.Words)) {
		var w, g uint64
		if i < len(want.Words) {
			w = want.Words[i]
		}
		if i < len(got.Words) {
			g = got.Words[i]
		}
		if w != g {
			d = append(d, fmt.Sprintf("%s: %#x != %#x", arch.RegName(want.Arch, i), g, w))
		}
	}
	return d
}
