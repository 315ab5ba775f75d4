package tracer

import (
	"bufio"
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

// These tests drive a real child by hand with ptrace, on the test's own locked OS thread (the
// tracer thread), to check the register glue and arch.Decode against what the kernel really
// does. Nothing here uses the Tracer: they must not run while a Tracer's wait4(-1) waiter is
// alive (they are not parallel). The same child, traced by a Tracer, is the tracee of
// TestInjectSyscallKeepsRestart (inject_test.go).
//
// The child is this test binary re-executed as TestRegsChildProcess, so the tests need nothing
// but a kernel (they also run inside the ppc64le QEMU guest, whose initramfs has no coreutils):
// one locked thread prints its tid and sleeps in clock_nanosleep; that thread is the tracee.

const regsChildEnv = "CRASHTUI_REGS_TEST_CHILD"

// TestRegsChildProcess is the tracee of the TestRegs* tests, not a test: it only runs when
// re-executed by regsTestChild.
func TestRegsChildProcess(t *testing.T) {
	if os.Getenv(regsChildEnv) != "1" {
		return // the usual helper-process pattern (os/exec's TestHelperProcess)
	}
	runtime.LockOSThread()
	fmt.Printf("tid %d\n", unix.Gettid())
	for {
		_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &unix.Timespec{Sec: 1000}, nil)
	}
}

// regsTestChild starts the child, seizes its sleeping thread with PTRACE_O_TRACESYSGOOD and
// stops it with PTRACE_INTERRUPT. It returns the child's pid and the tracee's tid. The caller
// must have locked its OS thread. The child is killed and reaped in t.Cleanup whatever happens.
func regsTestChild(t *testing.T) (pid, tid int) {
	t.Helper()
	pid, tid = regsTestStart(t)
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, unix.PTRACE_O_TRACESYSGOOD, 0, 0); e != 0 {
		t.Skipf("PTRACE_SEIZE %d not permitted here: %v", tid, e)
	}
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatalf("interrupt %d: %v", tid, err)
	}
	if ws := regsTestWait(t, tid); classify(ws).class != classInterrupt {
		t.Fatalf("after PTRACE_INTERRUPT %d: wait status %#x, want PTRACE_EVENT_STOP", tid, uint32(ws))
	}
	return pid, tid
}

// regsTestStart starts the child and returns its pid and the tid of its sleeping thread,
// untraced. The child is killed and reaped in t.Cleanup whatever happens.
func regsTestStart(t *testing.T) (pid, tid int) {
	t.Helper()
	if arch.NumWords(arch.Host()) == 0 {
		t.Skipf("no register glue for %s", arch.Host())
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^TestRegsChildProcess$")
	// asyncpreemptoff: no SIGURG preemption signals, so the only stops are ours.
	cmd.Env = append(os.Environ(), regsChildEnv+"=1", "GODEBUG=asyncpreemptoff=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	pid = cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // SIGKILL also ends a tracee in a ptrace-stop
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, err := fmt.Sscanf(sc.Text(), "tid %d", &tid); err == nil && n == 1 {
			break
		}
	}
	if tid == 0 {
		t.Fatalf("child %d did not report its thread: %v", pid, sc.Err())
	}
	return pid, tid
}

func regsTestWait(t *testing.T, tid int) unix.WaitStatus {
	t.Helper()
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(tid, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("wait4 %d: %v", tid, err)
		}
		if ws.Exited() || ws.Signaled() {
			t.Fatalf("thread %d died: wait status %#x", tid, uint32(ws))
		}
		return ws
	}
}

// regsTestSyscallInfo returns PTRACE_GET_SYSCALL_INFO's op (1 entry, 2 exit) and, at an entry
// stop, the syscall number: an arch-independent cross-check of what getRegs decodes.
func regsTestSyscallInfo(t *testing.T, tid int) (op uint8, nr uint64) {
	t.Helper()
	var buf [88]byte // struct ptrace_syscall_info
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(tid), uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])), 0, 0); e != 0 {
		t.Skipf("PTRACE_GET_SYSCALL_INFO (Linux 5.3) failed: %v", e)
	}
	return buf[0], binary.NativeEndian.Uint64(buf[24:])
}

// regsTestStopAtSyscallEntry resumes pid with PTRACE_SYSCALL until a syscall-entry stop whose
// number is one of nrs, and returns that number.
func regsTestStopAtSyscallEntry(t *testing.T, tid int, nrs ...int) int {
	t.Helper()
	for range 100000 {
		if err := unix.PtraceSyscall(tid, 0); err != nil {
			t.Fatalf("PTRACE_SYSCALL %d: %v", tid, err)
		}
		if classify(regsTestWait(t, tid)).class != classSyscall {
			continue // not a syscall-stop (sleep receives no signals; an exec event would be odd)
		}
		op, nr := regsTestSyscallInfo(t, tid)
		if op == unix.PTRACE_SYSCALL_INFO_ENTRY && slices.Contains(nrs, int(nr)) {
			return int(nr)
		}
	}
	t.Fatalf("thread %d never entered syscalls %v", tid, nrs)
	return -1
}

// regsTestSleeping returns pid stopped by PTRACE_INTERRUPT while blocked in its sleep: the
// syscall was entered (seen at its entry stop), then the child was continued and interrupted.
// If the interrupt arrives before the task blocks, the sleep still returns
// -ERESTART_RESTARTBLOCK (it sees the pending wake-up), so the state is the same either way.
func regsTestSleeping(t *testing.T, tid int) (sleepNrs []int) {
	t.Helper()
	h := arch.Host()
	for _, name := range []string{"clock_nanosleep", "nanosleep", "restart_syscall"} {
		if nr, ok := arch.SyscallNumber(h, name); ok {
			sleepNrs = append(sleepNrs, nr)
		}
	}
	// restart_syscall is in the list because the first interrupt may already have caught the
	// child inside its sleep: resuming then restarts it through restart_syscall.
	regsTestStopAtSyscallEntry(t, tid, sleepNrs...)
	if err := unix.PtraceCont(tid, 0); err != nil {
		t.Fatalf("cont %d: %v", tid, err)
	}
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatalf("interrupt %d: %v", tid, err)
	}
	if ws := regsTestWait(t, tid); classify(ws).class != classInterrupt {
		t.Fatalf("interrupt in sleep: wait status %#x, want PTRACE_EVENT_STOP", uint32(ws))
	}
	return sleepNrs
}

func TestRegsRoundTrip(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := regsTestChild(t)

	r, err := getRegs(tid)
	if err != nil {
		t.Fatal(err)
	}
	if r.Arch != arch.Host() || len(r.Words) != arch.NumWords(arch.Host()) {
		t.Fatalf("getRegs = %s with %d words", r.Arch, len(r.Words))
	}
	// The pc is inside an executable mapping and the stack pointer inside a writable one: the
	// word layout is the kernel's.
	if !regsTestInMapping(t, pid, r.PC(), "x") {
		t.Errorf("pc %#x is not in an executable mapping of %d", r.PC(), pid)
	}
	if !regsTestInMapping(t, pid, r.SP(), "w") {
		t.Errorf("sp %#x is not in a writable mapping of %d", r.SP(), pid)
	}

	edited := r.Clone()
	edited.Words[0] ^= 0x5a5a5a5a // amd64 r15, arm64 x0, ppc64le r0
	if err := setRegs(tid, edited); err != nil {
		t.Fatal(err)
	}
	if got, err := getRegs(tid); err != nil || !slices.Equal(got.Words, edited.Words) {
		t.Fatalf("after setRegs: %v, words differ: %v", err, regsTestDiff(edited, got, false))
	}
	if err := setRegs(tid, r); err != nil {
		t.Fatal(err)
	}
	if got, err := getRegs(tid); err != nil || !slices.Equal(got.Words, r.Words) {
		t.Fatalf("after restoring: %v, words differ: %v", err, regsTestDiff(r, got, false))
	}

	other := arch.AMD64
	if arch.Host() == arch.AMD64 {
		other = arch.PPC64LE
	}
	if err := setRegs(tid, arch.Regs{Arch: other, Words: make([]uint64, arch.NumWords(other))}); err == nil {
		t.Errorf("setRegs accepted %s registers", other)
	}

	if err := unix.PtraceDetach(tid); err != nil {
		t.Fatalf("detach %d: %v", tid, err)
	}
	_, err = getRegs(tid)
	if !errors.Is(err, unix.ESRCH) || !strings.Contains(err.Error(), fmt.Sprintf("getregs %d", tid)) {
		t.Errorf("getRegs after detach: %v, want ESRCH naming the tid", err)
	}
	regsTestStillRunning(t, pid)
}

// TestRegsRestartBlock interrupts a thread blocked in its sleep and checks arch.Decode against
// the kernel: the interrupted sleep is named, its instruction confirmed, and (but on arm64,
// whose code is gone before the stop) -ERESTART_RESTARTBLOCK predicts what resuming with no
// signal does, which the kernel then does: the child enters restart_syscall, whose number
// getRegs decodes at the entry stop. TestInjectSyscallKeepsRestart checks that an injected
// call in between changes none of it.
func TestRegsRestartBlock(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := regsTestChild(t)
	sleepNrs := regsTestSleeping(t, tid)
	h := arch.Host()

	saved, err := getRegs(tid)
	if err != nil {
		t.Fatal(err)
	}
	st := arch.Decode(saved, restartInsn(tid, saved))
	if !st.InSyscall || !slices.Contains(sleepNrs, st.Nr) || !st.InsnConfirmed {
		t.Fatalf("Decode of the interrupted sleep = %+v, want one of %v, instruction confirmed", st, sleepNrs)
	}
	if h != arch.ARM64 { // arm64 has lost the code before the stop (kernel.md B.1)
		if st.Errno != arch.ERESTART_RESTARTBLOCK || st.OnResume(arch.NoHandler) != arch.ActRestartSyscall {
			t.Fatalf("Decode = %+v, want ERESTART_RESTARTBLOCK restarting through restart_syscall", st)
		}
	}
	restartNr, _ := arch.SyscallNumber(h, "restart_syscall")
	// Resuming with signal 0: the kernel sees -ERESTART_RESTARTBLOCK with no handler and
	// re-enters the sleep through restart_syscall.
	if nr := regsTestStopAtSyscallEntry(t, tid, sleepNrs...); nr != restartNr {
		t.Fatalf("after the interrupt, the child entered syscall %d (%s), want restart_syscall", nr, arch.SyscallName(h, nr))
	}
	if h != arch.ARM64 { // at an entry stop arm64's pc is past the svc, which Decode wants at pc
		if r, err := getRegs(tid); err != nil || arch.Decode(r, nil).Nr != restartNr {
			t.Errorf("getRegs at the restart_syscall entry: %v, Decode().Nr %d", err, arch.Decode(r, nil).Nr)
		}
	}
	if err := unix.PtraceDetach(tid); err != nil {
		t.Fatalf("detach %d: %v", tid, err)
	}
	regsTestStillRunning(t, pid)
}

// regsTestInMapping reports whether addr is inside a mapping of pid whose permissions include
// perm ("x", "w").
func regsTestInMapping(t *testing.T, pid int, addr uint64, perm string) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatalf("maps %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.Contains(fields[1], perm) {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && addr >= l && addr < h {
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

// regsTestDiff lists the words where got differs from want; writable restricts the comparison
// to the bits PTRACE_SETREGS stores (arch.WritableMask).
func regsTestDiff(want, got arch.Regs, writable bool) []string {
	var d []string
	for i := range max(len(want.Words), len(got.Words)) {
		var w, g uint64
		if i < len(want.Words) {
			w = want.Words[i]
		}
		if i < len(got.Words) {
			g = got.Words[i]
		}
		mask := ^uint64(0)
		if writable {
			mask = arch.WritableMask(want.Arch, i)
		}
		if (w^g)&mask != 0 {
			d = append(d, fmt.Sprintf("%s: %#x != %#x", arch.RegName(want.Arch, i), g, w))
		}
	}
	return d
}
