package tracer

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
)

// CrashOptions configure crash handling.
type CrashOptions struct {
	// Symbolize adds function, file and line to crash events.
	Symbolize bool
}

// crashState is the tracer's crash bookkeeping (owned by the loop goroutine).
type crashState struct {
	opts     CrashOptions
	resolver *elfinfo.Resolver
}

func newCrashState(o *CrashOptions) *crashState {
	c := &crashState{resolver: elfinfo.NewResolver()}
	if o != nil {
		c.opts = *o
	}
	return c
}

// fatalSignals are the signals whose default action dumps core and that a crash handler
// (Spindle, kernel.md §C) watches. SIGTRAP counts unless crashtui caused it.
var fatalSignals = map[int]bool{
	int(unix.SIGSEGV): true, int(unix.SIGBUS): true, int(unix.SIGFPE): true,
	int(unix.SIGILL): true, int(unix.SIGABRT): true, int(unix.SIGSYS): true, int(unix.SIGTRAP): true,
}

// siginfo is the part of siginfo_t a crash needs.
type siginfo struct {
	Signo, Errno, Code int32
	Addr               uint64 // si_addr for faults
	PID, UID           int32  // sender for si_code <= 0
}

func getSiginfo(tid int) (siginfo, error) {
	var buf [128]byte
	if err := ptrace(unix.PTRACE_GETSIGINFO, tid, 0, uintptr(unsafePointer(&buf))); err != nil {
		return siginfo{}, fmt.Errorf("getsiginfo %d: %w", tid, err)
	}
	le := binary.LittleEndian
	si := siginfo{Signo: int32(le.Uint32(buf[0:])), Errno: int32(le.Uint32(buf[4:])), Code: int32(le.Uint32(buf[8:]))}
	si.Addr = le.Uint64(buf[16:])
	si.PID, si.UID = int32(le.Uint32(buf[16:])), int32(le.Uint32(buf[20:]))
	return si, nil
}

// userSent is true for kill/tkill/sigqueue (si_code <= 0, include/uapi/asm-generic/siginfo.h).
func (si siginfo) userSent() bool { return si.Code <= 0 }

// disposition says what the kernel will do with sig for thread tid when it is re-injected.
type disposition int

const (
	dispDefault disposition = iota // default action: for the fatal set, die (and dump core)
	dispCaught                     // a handler runs
	dispIgnored                    // discarded
)

func signalDisposition(pid, tid, sig int, si siginfo) disposition {
	bit := uint64(1) << (sig - 1)
	status := procPath(pid, "status")
	caught := sigMask(status, "SigCgt")&bit != 0
	ignored := sigMask(status, "SigIgn")&bit != 0
	blocked := sigMask(procPath(pid, "task/"+itoa(tid)+"/status"), "SigBlk")&bit != 0
	// A synchronous fault that is blocked or ignored is forced to SIG_DFL
	// (kernel/signal.c force_sig_info_to_task): it kills.
	if !si.userSent() && (blocked || ignored) {
		return dispDefault
	}
	switch {
	case ignored:
		return dispIgnored
	case caught:
		return dispCaught
	}
	return dispDefault
}

// onSignal runs at every signal-delivery-stop that is not crashtui's own.
func (t *Tracer) onSignal(tk *task, sig int) {
	if !fatalSignals[sig] {
		return
	}
	si, err := getSiginfo(tk.tid)
	if err != nil {
		return
	}
	if signalDisposition(tk.pid, tk.tid, sig, si) != dispDefault {
		return
	}
	p := t.procs[tk.pid]
	if p == nil {
		return
	}
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tk.tid, &regs); err != nil {
		t.emitErr(tk.pid, "crash registers", err)
		return
	}
	pc := regs.PC()
	c := sessions.Crash{PID: tk.pid, TID: tk.tid, Rank: p.rank, Exe: p.exe, Signal: signalName(sig),
		Code: sigCodeName(sig, si.Code), Addr: sessions.Hex(si.Addr), PC: sessions.Hex(pc),
		UserSent: si.userSent()}
	if si.userSent() {
		c.Addr = 0
	}
	maps, err := elfinfo.ReadMaps(tk.pid)
	if err == nil {
		loc := t.crash.resolver.Locate(tk.pid, maps, pc)
		c.Module, c.Offset, c.Function, c.File, c.Line = loc.Module, sessions.Hex(loc.Offset), loc.Function, loc.File, loc.Line
	}
	c.Key = sessions.SiteKey(c)
	t.emit(c)
}

// onExit is called when a process is gone.
func (c *crashState) onExit(t *Tracer, p *proc, ws unix.WaitStatus) {}

// sigCodeName names si_code for the fatal signals (include/uapi/asm-generic/siginfo.h).
func sigCodeName(sig int, code int32) string {
	switch code {
	case 0:
		return "SI_USER"
	case -1:
		return "SI_QUEUE"
	case -6:
		return "SI_TKILL"
	case 0x80:
		return "SI_KERNEL"
	}
	names := map[int][]string{
		int(unix.SIGSEGV): {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR"},
		int(unix.SIGBUS):  {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"},
		int(unix.SIGFPE):  {"FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", "FPE_FLTUNK", "FPE_CONDTRAP"},
		int(unix.SIGILL):  {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"},
		int(unix.SIGTRAP): {"TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF"},
		int(unix.SIGSYS):  {"SYS_SECCOMP", "SYS_USER_DISPATCH"},
	}
	if n := names[sig]; code >= 1 && int(code) <= len(n) {
		return n[code-1]
	}
	return fmt.Sprintf("code %d", code)
}
