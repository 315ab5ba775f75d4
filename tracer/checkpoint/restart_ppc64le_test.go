package checkpoint

// Tests that run on a real ppc64le kernel: inside the QEMU guests booted by
// `make test-ppc64le` (tracer/qemu), or on ppc64le hardware. They check what
// the kernel really reports for a thread blocked in a syscall entered with
// `sc` or `scv 0`, and what a simulated checkpoint/restore (arch.ApplyPolicy)
// makes the program observe (seed 002: the CRIU scv bug).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/qemu"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

const (
	ppcFeature2SCV = 0x00100000 // PPC_FEATURE2_SCV in AT_HWCAP2 (arch/powerpc/include/uapi/asm/cputable.h)
)

// ppcExpectSCV says whether scv must work here: decided by the CPU model the
// guest was booted with (POWER9 and later have it), or on hardware by
// AT_HWCAP2 alone.
func ppcExpectSCV(t *testing.T) bool {
	t.Helper()
	switch cpu := guestCPU(t); cpu {
	case "":
		return auxvHWCap2(t)&ppcFeature2SCV != 0
	case "power8", "power7":
		return false
	default:
		return true
	}
}

// TestPPC64LEHWCap2SCV: the kernel advertises scv exactly on POWER9 and later.
func TestPPC64LEHWCap2SCV(t *testing.T) {
	cpu := guestCPU(t)
	if cpu == "" {
		t.Skip("not in the QEMU guest (no crashtui.cpu= on the kernel command line): nothing to compare AT_HWCAP2 with")
	}
	hw2 := auxvHWCap2(t)
	t.Logf("cpu=%s AT_HWCAP2=%#x", cpu, hw2)
	if got, want := hw2&ppcFeature2SCV != 0, ppcExpectSCV(t); got != want {
		t.Fatalf("cpu %s: AT_HWCAP2 %#x has PPC_FEATURE2_SCV = %v, want %v", cpu, hw2, got, want)
	}
}

// ppcHelper is one running scvprog.
type ppcHelper struct {
	*guestHelper
	tid  int
	nr   int
	arg0 uint64
}

func startPPCHelper(t *testing.T, insn, call string, sleep time.Duration, extra ...string) *ppcHelper {
	t.Helper()
	args := append([]string{"-insn", insn, "-call", call, "-sleep", sleep.String()}, extra...)
	return &ppcHelper{guestHelper: startGuestHelper(t, "CRASHTUI_SCVPROG", "scvprog", args...)}
}

// ready reads the helper's "ready tid=T nr=N a1=A" line.
func (h *ppcHelper) ready(t *testing.T) {
	t.Helper()
	h.scan(t, "ready", "ready tid=%d nr=%d a1=%v", &h.tid, &h.nr, &h.arg0)
}

// result reads the helper's "result r3=R so=S cr=C byte=B" line and waits for it to exit 0
// (with maybeReaped, see guestHelper.wait).
func (h *ppcHelper) result(t *testing.T, maybeReaped bool) (r3 int64, so int, b int) {
	t.Helper()
	var cr uint64
	h.scan(t, "result", "result r3=%d so=%d cr=%v byte=%d", &r3, &so, &cr, &b)
	h.wait(t, maybeReaped)
	return r3, so, b
}

// waitInSyscall waits until tid sleeps inside syscall nr with first argument
// arg0, as /proc/<pid>/task/<tid>/syscall shows. There is no event for "went
// to sleep in a syscall", so this polls; the helper prints "ready" just
// before the call, so it is a matter of microseconds.
// TestPPC64LEScvProbe: scv 0 works (getpid returns the pid) where the CPU
// has it, and raises SIGILL where it does not (POWER8).
func TestPPC64LEScvProbe(t *testing.T) {
	prog := tracertest.GuestProgram(t, "CRASHTUI_SCVPROG", "scvprog")
	want := ppcExpectSCV(t)
	cmd := exec.Command(prog, "-insn", "scv", "-call", "getpid")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("cpu=%q expect scv=%v: err=%v stdout=%q stderr(head)=%q", guestCPU(t), want, err, stdout.String(), head(stderr.String(), 200))
	if want {
		if err != nil {
			t.Fatalf("scv getpid: %v\n%s", err, stderr.String())
		}
		var tid, nr, pid int
		var a1 uint64
		var so, b int
		var cr uint64
		if _, err := fmt.Sscanf(stdout.String(), "ready tid=%d nr=%d a1=%v\nresult r3=%d so=%d cr=%v byte=%d", &tid, &nr, &a1, &pid, &so, &cr, &b); err != nil {
			t.Fatalf("scvprog output %q: %v", stdout.String(), err)
		}
		if pid != cmd.Process.Pid {
			t.Fatalf("scv getpid returned %d, want the helper's pid %d", pid, cmd.Process.Pid)
		}
		return
	}
	// The Go runtime turns the synchronous SIGILL into this report and exit 2.
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "SIGILL: illegal instruction") {
		t.Fatalf("scv on a CPU without it: want death by SIGILL (Go runtime report, exit 2), got err=%v stderr=%q", err, head(stderr.String(), 400))
	}
	if strings.Contains(stdout.String(), "result") {
		t.Fatalf("scv returned on a CPU without it: %q", stdout.String())
	}
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Word indices of unix.PtraceRegs on ppc64le (struct user_pt_regs), checked
// here independently of package arch so that a disagreement shows which side
// is wrong.
const (
	ppcWR0     = 0
	ppcWR3     = 3
	ppcWNIP    = 32
	ppcWOrigR3 = 34
	ppcWLink   = 36
	ppcWCCR    = 38
	ppcWTrap   = 40
	ppcCR0SO   = 0x10000000
)

// ppcRestartCase: what the helper must print after the stop is resumed with
// registers rewritten by arch.ApplyPolicy.
type ppcRestartCase struct {
	insn, call string
	errno      int // what the kernel holds at the stop: 512 read, 516 nanosleep
	vec        uint64
	word       uint32
}

// TestPPC64LERestart: a thread blocked in read (ERESTARTSYS) or nanosleep
// (ERESTART_RESTARTBLOCK), entered with sc or scv 0, is PTRACE_INTERRUPTed;
// the registers the kernel reports are decoded with arch.Decode and checked
// word by word, then a checkpoint/restore in place is simulated by writing
// back arch.ApplyPolicy's registers, and the test reads what the program
// itself observed:
//
//	           read (512)                    nanosleep (516)
//	correct    1 byte read                   EINTR (sc 4+SO, scv -4)
//	none       1 byte read (kernel restart)  0 (restart_syscall finishes the sleep)
//	naive      sc 512+SO / scv -512          sc 516+SO / scv -516   (seed 002)
func TestPPC64LERestart(t *testing.T) {
	scv := ppcExpectSCV(t)
	for _, c := range []ppcRestartCase{
		{"sc", "read", arch.ERESTARTSYS, 0xc00, 0x44000002},
		{"sc", "nanosleep", arch.ERESTART_RESTARTBLOCK, 0xc00, 0x44000002},
		{"scv", "read", arch.ERESTARTSYS, 0x3000, 0x44000001},
		{"scv", "nanosleep", arch.ERESTART_RESTARTBLOCK, 0x3000, 0x44000001},
	} {
		for _, p := range []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNone, sessions.PolicyNaive} {
			t.Run(c.insn+"/"+c.call+"/"+string(p), func(t *testing.T) {
				if c.insn == "scv" && !scv {
					t.Skip("this CPU has no scv (TestPPC64LEScvProbe asserts that it raises SIGILL)")
				}
				testPPCRestart(t, c, p)
			})
		}
	}
}

func testPPCRestart(t *testing.T, c ppcRestartCase, p sessions.Policy) {
	// ptrace requests must come from the thread that seized the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// Long enough to be interrupted well before it ends even on a loaded
	// host under TCG; only the "none" policy waits for the rest of it.
	const sleep = 3 * time.Second
	h := startPPCHelper(t, c.insn, c.call, sleep)
	h.ready(t)
	pid := h.cmd.Process.Pid
	if h.tid != pid {
		t.Fatalf("helper blocks on tid %d, want its main thread %d", h.tid, pid)
	}
	waitInSyscall(t, pid, h.tid, h.nr, h.arg0)

	tid := h.tid
	if err := unix.PtraceSeize(tid); err != nil {
		t.Fatalf("seize %d: %v", tid, err)
	}
	detached := false
	defer func() {
		if !detached {
			unix.PtraceDetach(tid)
		}
	}()
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatalf("interrupt %d: %v", tid, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		t.Fatalf("wait %d: %v", tid, err)
	}
	// SIGTRAP | PTRACE_EVENT_STOP<<16: the PTRACE_INTERRUPT stop.
	if uint32(ws) != 0x80057f {
		t.Fatalf("wait status %#x after PTRACE_INTERRUPT, want 0x80057f", uint32(ws))
	}

	regs, err := raw(tid).Regs()
	if err != nil {
		t.Fatalf("getRegs %d: %v", tid, err)
	}
	if regs.Arch != arch.PPC64LE || len(regs.Words) < 44 {
		t.Fatalf("getRegs %d: arch %q with %d words, want ppc64le with 44", tid, regs.Arch, len(regs.Words))
	}
	w := regs.Words
	nip := w[ppcWNIP]
	var peek [8]byte
	if _, err := unix.PtracePeekData(tid, uintptr(nip-4), peek[:]); err != nil {
		t.Fatalf("peek %d at nip-4 %#x: %v", tid, nip-4, err)
	}
	insn := peek[:4]
	if p == sessions.PolicyCorrect {
		ppcRecord(t, c, "interrupt", ws, insn, h.arg0, w)
	}

	// What the kernel reports, checked against kernel.md §B.2 directly.
	if got := binary.LittleEndian.Uint32(insn); got != c.word {
		t.Errorf("word at nip-4 = %#08x, want %#08x (%s)", got, c.word, c.insn)
	}
	if w[ppcWTrap] != c.vec {
		t.Errorf("trap = %#x, want %#x with no flag bits (check_syscall_restart has not run yet)", w[ppcWTrap], c.vec)
	}
	if w[ppcWR0] != uint64(h.nr) {
		t.Errorf("r0 = %d, want the syscall number %d", w[ppcWR0], h.nr)
	}
	if w[ppcWOrigR3] != h.arg0 {
		t.Errorf("orig_gpr3 = %#x, want arg0 %#x", w[ppcWOrigR3], h.arg0)
	}
	so := w[ppcWCCR]&ppcCR0SO != 0
	switch c.insn {
	case "sc":
		if int64(w[ppcWR3]) != int64(c.errno) || !so {
			t.Errorf("sc: r3 = %d with CR0.SO %v, want +%d with SO", int64(w[ppcWR3]), so, c.errno)
		}
	case "scv":
		if int64(w[ppcWR3]) != -int64(c.errno) {
			t.Errorf("scv: r3 = %d, want %d", int64(w[ppcWR3]), -c.errno)
		}
		if w[ppcWLink] != nip {
			t.Errorf("scv: link = %#x, want nip %#x (scv sets LR to the return address)", w[ppcWLink], nip)
		}
	}

	// What arch.Decode makes of it.
	st := arch.Decode(regs, insn)
	t.Logf("decoded: %+v", st)
	code := arch.ErrnoName(c.errno)
	if !st.InSyscall || st.Insn != c.insn || st.InsnLen != 4 || st.Trap != c.vec || st.Nr != h.nr ||
		st.Syscall != c.call || st.Args[0] != h.arg0 || st.Errno != c.errno || st.Code != code || st.AlreadyRestarted {
		t.Errorf("arch.Decode = %+v\nwant InSyscall, Insn %q, InsnLen 4, Trap %#x, Nr %d, Syscall %q, Args[0] %#x, Errno %d, Code %q, AlreadyRestarted false",
			st, c.insn, c.vec, h.nr, c.call, h.arg0, c.errno, code)
	}
	if t.Failed() {
		return
	}

	// Simulate the restore in place, then let the thread go.
	out := arch.ApplyPolicy(regs, st, p)
	if err := raw(tid).SetRegs(out); err != nil {
		t.Fatalf("setRegs %d: %v", tid, err)
	}
	back, err := raw(tid).Regs()
	if err != nil {
		t.Fatalf("getRegs %d after setRegs: %v", tid, err)
	}
	// set_user_trap keeps the kernel's flag bits, so compare vectors only.
	if back.Words[ppcWTrap]&^0x1f != out.Words[ppcWTrap]&^0x1f || back.Words[ppcWNIP] != out.Words[ppcWNIP] || back.Words[ppcWR3] != out.Words[ppcWR3] {
		t.Errorf("registers read back after setRegs: trap %#x nip %#x r3 %#x, wrote trap %#x nip %#x r3 %#x",
			back.Words[ppcWTrap], back.Words[ppcWNIP], back.Words[ppcWR3], out.Words[ppcWTrap], out.Words[ppcWNIP], out.Words[ppcWR3])
	}
	if err := unix.PtraceDetach(tid); err != nil {
		t.Fatalf("detach %d: %v", tid, err)
	}
	detached = true
	if c.call == "read" {
		// Always offer the byte, whatever the expected outcome, so that a
		// policy that wrongly restarts the read fails on its result instead
		// of hanging. EPIPE: the helper already returned without reading
		// and exited (the naive case).
		if _, err := h.pipeW.Write([]byte{'x'}); err != nil && !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write to helper pipe: %v", err)
		}
	}
	r3, gotSO, b := h.result(t, false)
	t.Logf("policy %s: program saw r3=%d so=%d byte=%d", p, r3, gotSO, b)

	wantR3, wantSO := ppcWantResult(c, p)
	if r3 != wantR3 || gotSO != wantSO {
		t.Errorf("policy %s: program saw r3=%d so=%d, want r3=%d so=%d", p, r3, gotSO, wantR3, wantSO)
	}
	if c.call == "read" && wantR3 == 1 && b != 'x' {
		t.Errorf("policy %s: read returned 1 but the byte is %d, want 'x'", p, b)
	}
}

func ppcWantResult(c ppcRestartCase, p sessions.Policy) (r3 int64, so int) {
	// errors: sc returns +errno with CR0.SO, scv returns -errno.
	fail := func(e int) (int64, int) {
		if c.insn == "sc" {
			return int64(e), 1
		}
		return -int64(e), 0
	}
	switch p {
	case sessions.PolicyNaive:
		return fail(c.errno) // the internal code leaks: seed 002
	case sessions.PolicyCorrect:
		if c.errno == arch.ERESTART_RESTARTBLOCK {
			return fail(arch.EINTR) // restart_block cannot be saved: CRIU returns EINTR
		}
	}
	if c.call == "read" {
		return 1, 0
	}
	return 0, 0 // nanosleep restarted through restart_syscall and finished
}

func ppcRecord(t *testing.T, c ppcRestartCase, stop string, ws unix.WaitStatus, insn []byte, arg0 uint64, w []uint64) {
	t.Helper()
	emitRegsRecord(t, qemu.RegRecord{
		Insn: c.insn, Call: c.call, Stop: stop, WaitStatus: fmt.Sprintf("%#x", uint32(ws)), Arg0: fmt.Sprintf("%#x", arg0),
		Layout: "unix.PtraceRegs on ppc64le (PTRACE_GETREGS user_pt_regs): gpr0-31, nip, msr, orig_gpr3, ctr, link, xer, ccr, softe, trap, dar, dsisr, result; stop " + stop + " of a thread blocked in the call",
	}, insn, w)
}

// TestPPC64LEAlreadyRestarted: the kernel's norestart flag (trap bit 0x1
// since 5.13) as a tracer sees it. A thread blocked in read gets SIGUSR1,
// which has a Go handler (SA_RESTART):
//
//  1. signal-delivery-stop: get_signal has not returned yet, so the registers
//     are those of the PTRACE_INTERRUPT stop (trap 0xc00/0x3000, ERESTARTSYS);
//  2. resumed with PTRACE_SINGLESTEP and the signal, the kernel runs
//     check_syscall_restart (rewinds into the signal frame), sets up the
//     handler, sets the norestart flag and reports SIGTRAP
//     (signal_setup_done with TIF_SINGLESTEP): nip has left the syscall for
//     the signal entry (logged with the [vdso] range: 6.1 enters handlers
//     through the vDSO trampoline) and trap is 0xc01/0x3001, so arch.Decode must say AlreadyRestarted and
//     ApplyPolicy must not rewind again (kernel selftest
//     sig_sc_double_restart.c);
//  3. after the handler returns, the read restarts and gets the byte.
func TestPPC64LEAlreadyRestarted(t *testing.T) {
	scv := ppcExpectSCV(t)
	for _, c := range []ppcRestartCase{
		{"sc", "read", arch.ERESTARTSYS, 0xc00, 0x44000002},
		{"scv", "read", arch.ERESTARTSYS, 0x3000, 0x44000001},
	} {
		t.Run(c.insn, func(t *testing.T) {
			if c.insn == "scv" && !scv {
				t.Skip("this CPU has no scv (TestPPC64LEScvProbe asserts that it raises SIGILL)")
			}
			testPPCAlreadyRestarted(t, c)
		})
	}
}

func testPPCAlreadyRestarted(t *testing.T, c ppcRestartCase) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	h := startPPCHelper(t, c.insn, c.call, time.Second, "-sigusr1")
	h.ready(t)
	pid, tid := h.cmd.Process.Pid, h.tid
	if tid != pid {
		t.Fatalf("helper blocks on tid %d, want its main thread %d", tid, pid)
	}
	waitInSyscall(t, pid, tid, h.nr, h.arg0)
	if err := unix.PtraceSeize(tid); err != nil {
		t.Fatalf("seize %d: %v", tid, err)
	}
	detached := false
	defer func() {
		if !detached {
			unix.PtraceDetach(tid)
		}
	}()
	if err := unix.Tgkill(pid, tid, unix.SIGUSR1); err != nil {
		t.Fatalf("tgkill %d/%d SIGUSR1: %v", pid, tid, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		t.Fatalf("wait %d: %v", tid, err)
	}
	if uint32(ws) != 0xa7f {
		t.Fatalf("wait status %#x, want the SIGUSR1 signal-delivery-stop 0xa7f", uint32(ws))
	}
	peek := func(addr uint64) []byte {
		t.Helper()
		var b [8]byte
		if _, err := unix.PtracePeekData(tid, uintptr(addr), b[:]); err != nil {
			t.Fatalf("peek %d at %#x: %v", tid, addr, err)
		}
		return b[:4]
	}

	// 1. Signal-delivery-stop: nothing decided yet.
	regs, err := raw(tid).Regs()
	if err != nil {
		t.Fatalf("getRegs %d: %v", tid, err)
	}
	nip := regs.Words[ppcWNIP]
	insn := peek(nip - 4)
	ppcRecord(t, c, "signal", ws, insn, h.arg0, regs.Words)
	st := arch.Decode(regs, insn)
	t.Logf("signal-delivery-stop: trap %#x nip %#x r3 %#x: %+v", regs.Words[ppcWTrap], nip, regs.Words[ppcWR3], st)
	if regs.Words[ppcWTrap] != c.vec || !st.InSyscall || st.Insn != c.insn || st.Errno != c.errno || st.AlreadyRestarted {
		t.Fatalf("signal-delivery-stop: trap %#x, Decode %+v; want trap %#x, %s, errno %d, not AlreadyRestarted", regs.Words[ppcWTrap], st, c.vec, c.insn, c.errno)
	}

	// 2. Let the kernel restart and set up the handler; stop right after.
	// x/sys's PtraceSingleStep passes no signal; the signal must be delivered.
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SINGLESTEP, uintptr(tid), 0, uintptr(unix.SIGUSR1), 0, 0); e != 0 {
		t.Fatalf("singlestep %d with SIGUSR1: %v", tid, e)
	}
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		t.Fatalf("wait %d: %v", tid, err)
	}
	if uint32(ws) != 0x57f {
		t.Fatalf("wait status %#x after singlestep with SIGUSR1, want the SIGTRAP stop 0x57f of signal_setup_done", uint32(ws))
	}
	regs, err = raw(tid).Regs()
	if err != nil {
		t.Fatalf("getRegs %d: %v", tid, err)
	}
	hnip := regs.Words[ppcWNIP]
	hinsn := peek(hnip - 4)
	ppcRecord(t, c, "handler", ws, hinsn, h.arg0, regs.Words)
	st = arch.Decode(regs, hinsn)
	t.Logf("handler stop: trap %#x nip %#x (%s) r3 %#x: %+v", regs.Words[ppcWTrap], hnip, ppcMapping(pid, hnip), regs.Words[ppcWR3], st)
	// 6.1 >= 5.13: the flag is bit 0x1 (kernel.md §B.1).
	if regs.Words[ppcWTrap] != c.vec|0x1 {
		t.Errorf("trap at the handler stop = %#x, want %#x (vector | norestart bit 0x1)", regs.Words[ppcWTrap], c.vec|0x1)
	}
	if hnip == nip {
		t.Errorf("nip %#x did not move to the handler", hnip)
	}
	if !st.InSyscall || st.Insn != c.insn || !st.AlreadyRestarted || st.Errno != 0 {
		t.Errorf("arch.Decode at the handler stop = %+v, want InSyscall %s, AlreadyRestarted, Errno 0", st, c.insn)
	}
	// A restorer must not rewind a second time: nip and r3 stay.
	for _, p := range []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNaive} {
		out := arch.ApplyPolicy(regs, st, p)
		if out.Words[ppcWNIP] != hnip || out.Words[ppcWR3] != regs.Words[ppcWR3] {
			t.Errorf("ApplyPolicy(%s) at the handler stop moved nip %#x->%#x or r3 %#x->%#x", p, hnip, out.Words[ppcWNIP], regs.Words[ppcWR3], out.Words[ppcWR3])
		}
	}
	if t.Failed() {
		return
	}
	if err := raw(tid).SetRegs(arch.ApplyPolicy(regs, st, sessions.PolicyCorrect)); err != nil {
		t.Fatalf("setRegs %d: %v", tid, err)
	}

	// 3. The handler returns through rt_sigreturn to the rewound read.
	if err := unix.PtraceDetach(tid); err != nil {
		t.Fatalf("detach %d: %v", tid, err)
	}
	detached = true
	if _, err := h.pipeW.Write([]byte{'x'}); err != nil && !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write to helper pipe: %v", err)
	}
	r3, so, b := h.result(t, false)
	if r3 != 1 || so != 0 || b != 'x' {
		t.Errorf("after the SA_RESTART handler the program saw r3=%d so=%d byte=%d, want the restarted read's 1, 0, 'x'", r3, so, b)
	}
}

// ppcMapping names the /proc/<pid>/maps entry holding addr, for logs.
func ppcMapping(pid int, addr uint64) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && addr >= l && addr < h {
			return line
		}
	}
	return "unmapped"
}
