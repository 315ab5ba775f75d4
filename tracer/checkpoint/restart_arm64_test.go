package checkpoint

// Tests that run on a real arm64 kernel: inside the QEMU guest booted by
// `go run ./tracer/qemu/cmd/arm64-test` (tracer/qemu), or on arm64 hardware.
// They check what the kernel really reports for a thread blocked in a syscall
// entered with `svc #0` (kernel.md §B: arm64's do_signal rewinds pc to the svc
// and puts back x0 = orig_x0 *before* get_signal, so the ptrace stop already
// shows the restart), and what a simulated checkpoint/restore
// (CheckpointStopped with each sessions.Policy) makes the program observe.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/qemu"
)

const (
	arm64SvcWord = 0xd4000001 // svc #0
	// Word indices of unix.PtraceRegs on arm64 (user_pt_regs: x0-x30, sp, pc, pstate),
	// checked here independently of package arch.
	arm64WX0 = 0
	arm64WX8 = 8
	arm64WPC = 32
	// struct ptrace_syscall_info (include/uapi/linux/ptrace.h) offsets.
	sysInfoOp    = 0
	sysInfoArch  = 4
	sysInfoIP    = 8
	sysInfoSP    = 16
	sysInfoNr    = 24 // entry.nr
	sysInfoArgs  = 32 // entry.args[6]
	sysInfoRval  = 24 // exit.rval
	sysInfoIsErr = 32 // exit.is_error
	// Wait statuses: PTRACE_INTERRUPT's PTRACE_EVENT_STOP, and a syscall-stop with
	// PTRACE_O_TRACESYSGOOD.
	arm64WSInterrupt = 0x80057f
	arm64WSSyscall   = 0x857f
)

// arm64Helper is one running svcprog.
type arm64Helper struct {
	*guestHelper
	tid  int
	nr   int
	arg0 uint64
	svc  uint64 // address of the svc instruction
}

func startARM64Helper(t *testing.T, call string, sleep time.Duration) *arm64Helper {
	t.Helper()
	h := &arm64Helper{guestHelper: startGuestHelper(t, "CRASHTUI_SVCPROG", "svcprog", "-call", call, "-sleep", sleep.String())}
	h.scan(t, "ready", "ready tid=%d nr=%d a1=%v svc=%v", &h.tid, &h.nr, &h.arg0, &h.svc)
	if h.tid != h.cmd.Process.Pid {
		t.Fatalf("helper blocks on tid %d, want its main thread %d", h.tid, h.cmd.Process.Pid)
	}
	return h
}

// result reads the helper's "result x0=R byte=B" line and waits for it to exit 0.
func (h *arm64Helper) result(t *testing.T) (x0 int64, b int) {
	t.Helper()
	h.scan(t, "result", "result x0=%d byte=%d", &x0, &b)
	h.wait(t, false)
	return x0, b
}

// arm64SyscallInfo is PTRACE_GET_SYSCALL_INFO's raw answer.
type arm64SyscallInfo struct {
	raw []byte // the bytes the kernel wrote (min of its size and ours)
	n   int    // the size the kernel returned
}

func (s arm64SyscallInfo) u64(off int) uint64 {
	if off+8 > len(s.raw) {
		return 0
	}
	return binary.LittleEndian.Uint64(s.raw[off:])
}

func (s arm64SyscallInfo) op() uint8 { return s.raw[sysInfoOp] }

func (s arm64SyscallInfo) String() string {
	return fmt.Sprintf("op %d arch %#x ip %#x sp %#x size %d word3 %#x",
		s.op(), binary.LittleEndian.Uint32(s.raw[sysInfoArch:]), s.u64(sysInfoIP), s.u64(sysInfoSP), s.n, s.u64(24))
}

func arm64GetSyscallInfo(t *testing.T, tid int) arm64SyscallInfo {
	t.Helper()
	var buf [88]byte
	n, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(tid), uintptr(len(buf)),
		uintptr(unsafe.Pointer(&buf[0])), 0, 0)
	if e != 0 {
		t.Fatalf("PTRACE_GET_SYSCALL_INFO %d: %v", tid, e)
	}
	k := min(int(n), len(buf))
	return arm64SyscallInfo{raw: bytes.Clone(buf[:k]), n: int(n)}
}

// arm64Record prints one register record for tracer/qemu/testdata/arm64_<cpu>_svc_<call>[_<stop>].json.
func arm64Record(t *testing.T, call, stop string, ws unix.WaitStatus, insn []byte, arg0 uint64, w []uint64, info arm64SyscallInfo, errno int) {
	t.Helper()
	emitRegsRecord(t, qemu.RegRecord{
		Arch: "arm64", Insn: "svc", Call: call, Stop: stop, WaitStatus: fmt.Sprintf("%#x", uint32(ws)),
		Arg0: fmt.Sprintf("%#x", arg0),
		Layout: "unix.PtraceRegs on arm64 (PTRACE_GETREGSET NT_PRSTATUS user_pt_regs): x0-x30, sp, pc, pstate; insn is the word at pc; stop " +
			stop + " of a thread blocked in the call",
		SyscallInfo: hex.EncodeToString(info.raw), SyscallInfoLen: info.n, Errno: errno,
	}, insn, w)
}

// arm64SeizeInterrupt seizes tid (with opts) and PTRACE_INTERRUPTs it; it returns the
// registers at the PTRACE_EVENT_STOP. Detach happens in t.Cleanup unless *detached.
func arm64SeizeInterrupt(t *testing.T, tid int, opts uintptr) (arch.Regs, unix.WaitStatus, *bool) {
	t.Helper()
	if err := rawPtrace(unix.PTRACE_SEIZE, tid, 0, opts); err != nil {
		t.Fatalf("seize %d: %v", tid, err)
	}
	detached := new(bool)
	t.Cleanup(func() {
		if !*detached {
			unix.PtraceDetach(tid)
		}
	})
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatalf("interrupt %d: %v", tid, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		t.Fatalf("wait %d: %v", tid, err)
	}
	if uint32(ws) != arm64WSInterrupt {
		t.Fatalf("wait status %#x after PTRACE_INTERRUPT, want %#x", uint32(ws), arm64WSInterrupt)
	}
	regs, err := raw(tid).Regs()
	if err != nil {
		t.Fatalf("regs %d: %v", tid, err)
	}
	if regs.Arch != arch.ARM64 || len(regs.Words) != 34 {
		t.Fatalf("regs %d: arch %q with %d words, want arm64 with 34", tid, regs.Arch, len(regs.Words))
	}
	return regs, ws, detached
}

// TestARM64Restart: a thread blocked in read (ERESTARTSYS) or nanosleep
// (ERESTART_RESTARTBLOCK), entered with svc #0, is PTRACE_INTERRUPTed. At that stop
// arm64 has already rewound: pc is on the svc, x0 is the original first argument, x8
// the syscall number, and nothing in the registers holds the ERESTART code;
// PTRACE_GET_SYSCALL_INFO says op NONE (it reports syscall state only at syscall and
// seccomp stops), so it cannot supply the code either. Then CheckpointStopped
// applies each policy in place, and the test reads what the program observed:
//
//	           read (512)     nanosleep (516)
//	correct    1 byte read    0 (restart_syscall finishes the sleep)
//	none       1 byte read    0
//	naive      1 byte read    0   (arch.ApplyPolicy leaves arm64 registers as they are)
//
// All three are the same because the kernel rewound before the stop: whatever is
// written back, the svc at pc runs again, and for nanosleep do_signal then turns it
// into restart_syscall because pc is still restart_addr.
func TestARM64Restart(t *testing.T) {
	for _, call := range []string{"read", "nanosleep"} {
		for _, p := range []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNone, sessions.PolicyNaive} {
			t.Run(call+"/"+string(p), func(t *testing.T) { testARM64Restart(t, call, p) })
		}
	}
}

func testARM64Restart(t *testing.T, call string, p sessions.Policy) {
	// ptrace requests must come from the thread that seized the tracee, the cleanups' detach
	// too: locked to its end, the thread ends with the test (letting go of any tracee).
	runtime.LockOSThread()

	// Long enough to be interrupted well before it ends under TCG; the nanosleep
	// cases wait for the rest of it.
	const sleep = 2 * time.Second
	h := startARM64Helper(t, call, sleep)
	pid, tid := h.cmd.Process.Pid, h.tid
	waitInSyscall(t, pid, tid, h.nr, h.arg0)
	regs, ws, detached := arm64SeizeInterrupt(t, tid, 0)
	w := regs.Words

	insn := raw(tid).RestartInsn(regs)
	info := arm64GetSyscallInfo(t, tid)
	if p == sessions.PolicyCorrect {
		arm64Record(t, call, "interrupt", ws, insn, h.arg0, w, info, 0)
	}
	t.Logf("pc %#x (svc at %#x) x0 %#x x8 %d; syscall info %s", w[arm64WPC], h.svc, w[arm64WX0], w[arm64WX8], info)

	// What the kernel reports, against kernel.md §B directly.
	if w[arm64WPC] != h.svc {
		t.Errorf("pc = %#x, want the svc at %#x (do_signal rewinds before get_signal)", w[arm64WPC], h.svc)
	}
	if len(insn) != 4 || binary.LittleEndian.Uint32(insn) != arm64SvcWord {
		t.Errorf("word at pc = % x, want svc #0 %#08x", insn, arm64SvcWord)
	}
	if w[arm64WX0] != h.arg0 {
		t.Errorf("x0 = %#x, want orig_x0 = arg0 %#x (no ERESTART code left in x0)", w[arm64WX0], h.arg0)
	}
	if w[arm64WX8] != uint64(h.nr) {
		t.Errorf("x8 = %d, want the syscall number %d", w[arm64WX8], h.nr)
	}
	// PTRACE_GET_SYSCALL_INFO at a PTRACE_EVENT_STOP: ptrace_get_syscall_info fills
	// entry/exit only for SIGTRAP|0x80 syscall-stops, so op is NONE and only arch, ip
	// and sp are given; ip is the rewound pc.
	if info.op() != unix.PTRACE_SYSCALL_INFO_NONE || binary.LittleEndian.Uint32(info.raw[sysInfoArch:]) != unix.AUDIT_ARCH_AARCH64 ||
		info.u64(sysInfoIP) != w[arm64WPC] || info.u64(sysInfoSP) != w[31] || info.n != sysInfoNr {
		t.Errorf("PTRACE_GET_SYSCALL_INFO = %s, want op NONE, arch AARCH64, ip = pc %#x, sp %#x, size 24", info, w[arm64WPC], w[31])
	}

	// What arch.Decode makes of it.
	st := arch.Decode(regs, insn)
	t.Logf("decoded: %+v", st)
	if !st.InSyscall || st.Insn != "svc" || !st.InsnConfirmed || st.InsnLen != 4 || st.Nr != h.nr ||
		st.Syscall != call || st.Args[0] != h.arg0 || st.Errno != 0 || st.Code != "" || st.Note == "" {
		t.Errorf("arch.Decode = %+v\nwant InSyscall svc (confirmed, 4 bytes), Nr %d %q, Args[0] %#x, Errno 0 (lost), a Note", st, h.nr, call, h.arg0)
	}
	if a := st.OnResume(arch.NoHandler); a != arch.ActRestart {
		t.Errorf("OnResume(no handler) = %s, want restart (the svc at pc runs again)", a)
	}
	if t.Failed() {
		return
	}

	// Simulate the checkpoint and restore in place, then let the thread go.
	ev, err := CheckpointStopped(pid, tid, p)
	if err != nil {
		t.Fatalf("CheckpointStopped(%s): %v", p, err)
	}
	t.Logf("checkpoint event: on_resume %s restore %s applied %s stop %s handler %s insn_bytes %s", ev.OnResume, ev.Restore, ev.Applied, ev.Stop, ev.Handler, ev.InsnBytes)
	if !ev.InSyscall || ev.Syscall != call || ev.Insn != "svc" || ev.Restore != string(arch.ActNone) || ev.Applied != p {
		t.Errorf("checkpoint event %+v: want in %s via svc, restore none, applied %s", ev, call, p)
	}
	if len(ev.Before) != len(ev.After) {
		t.Fatalf("checkpoint event: %d registers before, %d after", len(ev.Before), len(ev.After))
	}
	for i := range ev.Before {
		if ev.Before[i] != ev.After[i] {
			t.Errorf("policy %s changed %s: %#x -> %#x (arm64 needs no fix-up)", p, ev.Before[i].Name, ev.Before[i].Value, ev.After[i].Value)
		}
	}
	t0 := time.Now()
	if err := unix.PtraceDetach(tid); err != nil {
		t.Fatalf("detach %d: %v", tid, err)
	}
	*detached = true
	if call == "read" {
		// EPIPE: the helper already returned without reading and exited.
		if _, err := h.pipeW.Write([]byte{'x'}); err != nil && !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write to helper pipe: %v", err)
		}
	}
	x0, b := h.result(t)
	t.Logf("policy %s: program saw x0=%d byte=%d %.2fs after the restore", p, x0, b, time.Since(t0).Seconds())
	switch call {
	case "read":
		if x0 != 1 || b != 'x' {
			t.Errorf("policy %s: read returned x0=%d byte=%d, want 1 and 'x' (the rewound svc reads again)", p, x0, b)
		}
	case "nanosleep":
		if x0 != 0 {
			t.Errorf("policy %s: nanosleep returned %d, want 0 (re-entered through restart_syscall)", p, x0)
		}
	}
}

// TestARM64SyscallExitErrno: where the ERESTART code can be had on arm64. The
// thread is seized with PTRACE_O_TRACESYSGOOD while blocked, interrupted (already
// rewound), resumed with PTRACE_SYSCALL into the restarted svc (syscall-entry-stop:
// GET_SYSCALL_INFO op ENTRY with the number and arguments) and into the blocking
// call again (for nanosleep that is restart_syscall, nr 128: the first stop was resumed
// with no signal, so do_signal's setup_restart_syscall put 128 in x8), then
// interrupted once more. This time the tracer sees the
// syscall-exit-stop first, before do_signal: x0 still holds -512 / -516, pc is past
// the svc, and GET_SYSCALL_INFO op EXIT reports rval = -errno, is_error = 1. A
// PTRACE_INTERRUPT queued there gives the PTRACE_EVENT_STOP after the rewind, where
// RestartState.WithErrno(rval) restores what the registers lost.
func TestARM64SyscallExitErrno(t *testing.T) {
	for _, c := range []struct {
		call  string
		errno int
		act   arch.Action
		nr    int // the call restarted after the first stop
	}{
		{"read", arch.ERESTARTSYS, arch.ActRestart, 63},
		{"nanosleep", arch.ERESTART_RESTARTBLOCK, arch.ActRestartSyscall, arm64NrRestartSyscall},
	} {
		t.Run(c.call, func(t *testing.T) { testARM64SyscallExit(t, c.call, c.errno, c.act, c.nr) })
	}
}

// arm64NrRestartSyscall is __NR_restart_syscall on arm64 (asm-generic/unistd.h).
const arm64NrRestartSyscall = 128

func testARM64SyscallExit(t *testing.T, call string, errno int, act arch.Action, nr int) {
	runtime.LockOSThread() // to its end, as testARM64Restart's

	h := startARM64Helper(t, call, 2*time.Second)
	pid, tid := h.cmd.Process.Pid, h.tid
	waitInSyscall(t, pid, tid, h.nr, h.arg0)
	_, _, detached := arm64SeizeInterrupt(t, tid, unix.PTRACE_O_TRACESYSGOOD)

	wait := func(want uint32, what string) unix.WaitStatus {
		t.Helper()
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			t.Fatalf("wait %d: %v", tid, err)
		}
		if uint32(ws) != want {
			t.Fatalf("wait status %#x, want %#x (%s)", uint32(ws), want, what)
		}
		return ws
	}
	// 1. Into the restarted svc: syscall-entry-stop.
	if err := rawPtrace(unix.PTRACE_SYSCALL, tid, 0, 0); err != nil {
		t.Fatalf("PTRACE_SYSCALL %d: %v", tid, err)
	}
	wait(arm64WSSyscall, "syscall-entry-stop of the restarted svc")
	entry := arm64GetSyscallInfo(t, tid)
	t.Logf("entry stop: %s nr %d arg0 %#x", entry, entry.u64(sysInfoNr), entry.u64(sysInfoArgs))
	if entry.op() != unix.PTRACE_SYSCALL_INFO_ENTRY || entry.u64(sysInfoNr) != uint64(nr) || entry.u64(sysInfoArgs) != h.arg0 ||
		entry.u64(sysInfoIP) != h.svc+4 {
		t.Errorf("entry stop: GET_SYSCALL_INFO %s nr %d arg0 %#x, want op ENTRY, nr %d, arg0 %#x, ip svc+4 %#x",
			entry, entry.u64(sysInfoNr), entry.u64(sysInfoArgs), nr, h.arg0, h.svc+4)
	}

	// 2. Let it block again, interrupt: the syscall-exit-stop comes first.
	if err := rawPtrace(unix.PTRACE_SYSCALL, tid, 0, 0); err != nil {
		t.Fatalf("PTRACE_SYSCALL %d: %v", tid, err)
	}
	waitInSyscall(t, pid, tid, nr, h.arg0)
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatalf("interrupt %d: %v", tid, err)
	}
	ws := wait(arm64WSSyscall, "syscall-exit-stop of the interrupted call")
	exitRegs, err := raw(tid).Regs()
	if err != nil {
		t.Fatalf("regs %d: %v", tid, err)
	}
	exit := arm64GetSyscallInfo(t, tid)
	exitInsn := raw(tid).RestartInsn(exitRegs)
	rval := int64(exit.u64(sysInfoRval))
	isErr := len(exit.raw) > sysInfoIsErr && exit.raw[sysInfoIsErr] != 0
	arm64Record(t, call, "exit", ws, exitInsn, h.arg0, exitRegs.Words, exit, errno)
	t.Logf("exit stop: pc %#x x0 %d; GET_SYSCALL_INFO %s rval %d is_error %v", exitRegs.Words[arm64WPC], int64(exitRegs.Words[arm64WX0]), exit, rval, isErr)
	if exit.op() != unix.PTRACE_SYSCALL_INFO_EXIT || rval != -int64(errno) || !isErr {
		t.Errorf("exit stop: GET_SYSCALL_INFO %s rval %d is_error %v, want op EXIT, rval %d, is_error", exit, rval, isErr, -errno)
	}
	if int64(exitRegs.Words[arm64WX0]) != -int64(errno) || exitRegs.Words[arm64WPC] != h.svc+4 {
		t.Errorf("exit stop: x0 %d pc %#x, want %d and svc+4 %#x (not rewound yet)", int64(exitRegs.Words[arm64WX0]), exitRegs.Words[arm64WPC], -errno, h.svc+4)
	}

	// 3. The stop after do_signal's rewind, with the code from the exit stop.
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatalf("interrupt %d at the exit stop: %v", tid, err)
	}
	if err := rawPtrace(unix.PTRACE_CONT, tid, 0, 0); err != nil {
		t.Fatalf("PTRACE_CONT %d: %v", tid, err)
	}
	wait(arm64WSInterrupt, "PTRACE_EVENT_STOP after the rewind")
	regs, err := raw(tid).Regs()
	if err != nil {
		t.Fatalf("regs %d: %v", tid, err)
	}
	st := arch.Decode(regs, raw(tid).RestartInsn(regs))
	if regs.Words[arm64WPC] != h.svc || regs.Words[arm64WX0] != h.arg0 || regs.Words[arm64WX8] != uint64(nr) || !st.InSyscall || st.Nr != nr || st.Errno != 0 {
		t.Fatalf("after the rewind: pc %#x x0 %#x x8 %d, Decode %+v; want pc %#x, x0 %#x, x8 %d, in the svc, Errno 0",
			regs.Words[arm64WPC], regs.Words[arm64WX0], regs.Words[arm64WX8], st, h.svc, h.arg0, nr)
	}
	full := st.WithErrno(int(-rval))
	t.Logf("with the exit stop's code: %+v; on resume: %s", full, full.OnResume(arch.NoHandler))
	if full.Errno != errno || full.Code != arch.ErrnoName(errno) || full.OnResume(arch.NoHandler) != act || full.Restore() != arch.ActNone {
		t.Errorf("WithErrno(%d) = %+v, OnResume %s Restore %s; want %s, on resume %s, restore none", -rval, full, full.OnResume(arch.NoHandler), full.Restore(), arch.ErrnoName(errno), act)
	}

	if err := unix.PtraceDetach(tid); err != nil {
		t.Fatalf("detach %d: %v", tid, err)
	}
	*detached = true
	if call == "read" {
		if _, err := h.pipeW.Write([]byte{'x'}); err != nil && !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write to helper pipe: %v", err)
		}
	}
	x0, b := h.result(t)
	if call == "read" && (x0 != 1 || b != 'x') {
		t.Errorf("read returned x0=%d byte=%d, want 1 and 'x'", x0, b)
	}
	if call == "nanosleep" && x0 != 0 {
		t.Errorf("nanosleep returned %d, want 0 (finished through restart_syscall)", x0)
	}
}
