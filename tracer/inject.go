package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
)

// Syscall injection without writing code (kernel.md §A.5 "No code writes"): point the held
// thread's pc at a syscall instruction that already exists in one of its r-x mappings (the
// vDSO's fallback path, or libc), block every signal, PTRACE_SINGLESTEP over it, read the
// result, then put back the registers and the signal mask unchanged. Nothing in the text is
// written, so the process's other threads, which keep running, can never execute a half-made
// stub; restoring the saved registers re-arms exactly the pending restart (orig_rax/trap).

// syscallInsn is the instruction to look for, and its alignment.
func syscallInsn(a arch.Arch) (insn []byte, align int) {
	switch a {
	case arch.AMD64:
		return []byte{0x0f, 0x05}, 1
	case arch.PPC64LE:
		return []byte{0x02, 0x00, 0x00, 0x44}, 4 // sc, little-endian
	case arch.ARM64:
		return []byte{0x01, 0x00, 0x00, 0xd4}, 4 // svc #0
	}
	return nil, 1
}

// steppable says whether the syscall instruction followed by next can be single-stepped.
// On ppc64le a single-step over sc is not reported at the syscall's exit (powerpc reports a
// step there only when syscall tracing is on): the thread returns with MSR_SE set, runs the
// next instruction too, and traps after it. Measured on Debian's 6.1 ppc64el kernel: the vDSO
// signal trampoline's sc is followed by a zero word, and stepping it raised SIGILL. So on
// ppc64le the next instruction must change nothing but the pc, CTR or LR, which the
// injection restores: a branch (b, bc, bclr, bcctr: Go's and glibc's syscall wrappers test
// CR0.SO right after sc) or a nop.
func steppable(a arch.Arch, next []byte) bool {
	if a != arch.PPC64LE {
		return true
	}
	if len(next) < 4 {
		return false // at the end of the chunk: the next one is looked at on its own
	}
	w := binary.LittleEndian.Uint32(next)
	switch w >> 26 {
	case 16, 18: // bc, b
		return true
	case 19: // XL-form: bclr (16), bcctr (528)
		xo := (w >> 1) & 0x3ff
		return xo == 16 || xo == 528
	}
	return w == 0x60000000 // nop (ori 0,0,0)
}

// findSyscallSite returns the address of an existing syscall instruction in pid: the vDSO
// first (a few pages), then libc, then any other r-x file mapping.
func findSyscallSite(pid int, a arch.Arch) (uint64, error) {
	maps, err := elfinfo.ReadMaps(pid)
	if err != nil {
		return 0, err
	}
	insn, align := syscallInsn(a)
	if insn == nil {
		return 0, fmt.Errorf("syscall site: unsupported arch %s", a)
	}
	var order []elfinfo.Mapping
	for _, pass := range []func(elfinfo.Mapping) bool{
		func(m elfinfo.Mapping) bool { return m.Path == "[vdso]" },
		func(m elfinfo.Mapping) bool { return bytes.Contains([]byte(m.Path), []byte("/libc.so")) },
		func(m elfinfo.Mapping) bool { return m.IsFile() },
	} {
		for _, m := range maps {
			if len(m.Perms) >= 3 && m.Perms[2] == 'x' && pass(m) {
				order = append(order, m)
			}
		}
	}
	buf := make([]byte, 64<<10)
	for _, m := range order {
		for start := m.Start; start < m.End; start += uint64(len(buf)) {
			n := min(uint64(len(buf)), m.End-start)
			chunk := buf[:n]
			if err := readMem(pid, start, chunk); err != nil {
				break
			}
			for off := 0; ; {
				i := bytes.Index(chunk[off:], insn)
				if i < 0 {
					break
				}
				at := off + i
				if (start+uint64(at))%uint64(align) == 0 && steppable(a, chunk[at+len(insn):]) {
					return start + uint64(at), nil
				}
				off = at + 1
			}
		}
	}
	return 0, fmt.Errorf("syscall site in %d: no %x in any executable mapping", pid, insn)
}

// injection records the stop that ends a single-step.
type injection struct {
	ws   unix.WaitStatus
	gone bool
}

var errInjectInterrupted = errors.New("injected syscall interrupted by another stop")

// injectSyscall runs one syscall inside the held task tk and restores it. tk must be held in
// a ptrace-stop other than a group-stop or PTRACE_EVENT_EXIT.
func (t *Tracer) injectSyscall(tk *task, site uint64, nr int, args ...uint64) (ret int64, errno int, err error) {
	s, err := t.beginInject(tk)
	if err != nil {
		return 0, 0, err
	}
	ret, errno, err = s.call(site, nr, args...)
	return ret, errno, errors.Join(err, s.end())
}

// injectWithScratch runs the syscall called name inside the held task tk with n bytes of
// scratch memory below its red zone, filled with init (zeros if shorter), the arguments made
// by args from the scratch's address. It returns what the scratch holds after the call; the
// scratch is put back. A failed call (negative result) is an error. If tk was held at a
// signal-delivery-stop, that signal stays the one to deliver even when another stop came
// first (injectSyscall keeps that stop held as it is).
func (t *Tracer) injectWithScratch(tk *task, name string, n int, init []byte, args func(addr uint64) []uint64) ([]byte, error) {
	regs, err := getRegs(tk.tid)
	if err != nil {
		return nil, err
	}
	nr, ok := arch.SyscallNumber(regs.Arch, name)
	if !ok {
		return nil, fmt.Errorf("no %s on %s", name, regs.Arch)
	}
	site, err := t.syscallSite(tk.pid, regs.Arch)
	if err != nil {
		return nil, err
	}
	sc, err := newScratch(tk, regs, n)
	if err != nil {
		return nil, err
	}
	defer sc.restore()
	buf := make([]byte, n)
	copy(buf, init)
	if err := sc.write(0, buf); err != nil {
		return nil, err
	}
	sig, atSignal := tk.sig, tk.stopped == stopSignal
	ret, errno, err := t.injectSyscall(tk, site, nr, args(sc.addr)...)
	if atSignal && tk.stopped == stopSignal && tk.sig != sig {
		tk.sig = sig
	}
	if err != nil {
		return nil, err
	}
	if ret < 0 || errno != 0 {
		return nil, fmt.Errorf("%s in %d: %s", name, tk.tid, arch.ErrnoName(errno))
	}
	if err := peekBytes(tk.tid, sc.addr, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// injectSession holds one thread for a batch of injected syscalls (the matrix runs two per
// other process): the registers and the signal mask are saved, and every signal blocked,
// once at the start and put back once at the end, instead of around every call.
type injectSession struct {
	t      *Tracer
	tk     *task
	orig   arch.Regs
	mask   uint64
	broken error // set when the thread died or another stop came: no more calls
	gone   bool  // the thread died: nothing to restore
	ended  bool
	// The held stop the session started from: a signal held at a signal-delivery-stop keeps
	// its siginfo (PTRACE_SETSIGINFO before the resume, or the kernel would rewrite it as
	// SI_USER from crashtui: a safepoint handler would lose si_addr).
	origSig  int
	siginfo  *[128]byte
	atTrap   bool // the last stop was our single-step trap (a SIGTRAP signal-delivery-stop)
	lastStop bool // a stop was seen after the first step
}

// beginInject saves tk's registers and signal mask and blocks every signal. The caller must
// call end, which restores both.
func (t *Tracer) beginInject(tk *task) (*injectSession, error) {
	// Only at an interrupt stop, or at a signal-delivery-stop (whose signal and siginfo are
	// kept for the resume). Not at a group-stop, an exit stop, or a fork/exec/syscall stop,
	// whose resume semantics a single-step would change.
	interrupt := tk.stopped == stopEvent && tk.cause == unix.PTRACE_EVENT_STOP
	if !interrupt && tk.stopped != stopSignal {
		return nil, fmt.Errorf("inject into %d: not in a usable stop", tk.tid)
	}
	if tk.stopped == stopSignal && tk.sig == int(unix.SIGTRAP)|0x80 {
		return nil, fmt.Errorf("inject into %d: at a syscall-stop", tk.tid)
	}
	orig, err := getRegs(tk.tid)
	if err != nil {
		return nil, err
	}
	s := &injectSession{t: t, tk: tk, orig: orig}
	if tk.stopped == stopSignal {
		s.origSig = tk.sig
		var si [128]byte
		if err := ptrace(unix.PTRACE_GETSIGINFO, tk.tid, 0, uintptr(unsafePointer(&si))); err != nil {
			return nil, fmt.Errorf("getsiginfo %d: %w", tk.tid, err)
		}
		s.siginfo = &si
	}
	if err := ptrace(unix.PTRACE_GETSIGMASK, tk.tid, 8, uintptr(unsafePointer(&s.mask))); err != nil {
		return nil, fmt.Errorf("getsigmask %d: %w", tk.tid, err)
	}
	all := ^uint64(0)
	if err := ptrace(unix.PTRACE_SETSIGMASK, tk.tid, 8, uintptr(unsafePointer(&all))); err != nil {
		return nil, fmt.Errorf("setsigmask %d: %w", tk.tid, err)
	}
	return s, nil
}

// end puts back the saved registers (which re-arm exactly the pending restart: orig_rax/trap)
// and the signal mask, unless the thread is gone. It is idempotent.
func (s *injectSession) end() error {
	if s.ended {
		return nil
	}
	s.ended = true
	if s.gone || s.tk.abandoned == s {
		return nil // dead, or still inside the injected syscall: finishAbandoned restores it
	}
	return s.restore()
}

// restore puts back registers, signal mask and the held signal. It must run at a ptrace-stop.
func (s *injectSession) restore() error {
	tk := s.tk
	e1 := setRegs(tk.tid, arch.InjectionRestore(s.orig))
	e2 := ptrace(unix.PTRACE_SETSIGMASK, tk.tid, 8, uintptr(unsafePointer(&s.mask)))
	if errors.Is(e1, unix.ESRCH) && errors.Is(e2, unix.ESRCH) {
		return nil // killed meanwhile (SIGKILL): its exit status follows
	}
	var e3 error
	if s.origSig != 0 {
		if !s.lastStop || s.atTrap {
			// Resumed from our SIGTRAP stop with the held signal: its siginfo must be the
			// original one (ptrace_signal keeps info only when si_signo matches).
			if s.siginfo != nil && s.lastStop {
				e3 = ptrace(unix.PTRACE_SETSIGINFO, tk.tid, 0, uintptr(unsafePointer(s.siginfo)))
			}
			tk.stopped, tk.sig = stopSignal, s.origSig
		} else {
			// Another stop replaced ours (an interrupt or an unblockable signal): the held
			// signal cannot ride on its resume, so send it again (its siginfo becomes
			// SI_TKILL; said in an error event).
			e3 = unix.Tgkill(tk.pid, tk.tid, unix.Signal(s.origSig))
			s.t.emitErr(tk.pid, "inject", fmt.Errorf("signal %s of thread %d re-sent after an injection was interrupted", signalName(s.origSig), tk.tid))
		}
	} else if s.lastStop && s.atTrap {
		tk.stopped, tk.sig = stopEvent, 0 // resume the trap with no signal
	}
	return errors.Join(e1, e2, e3)
}

// finishAbandoned handles the first stop of a thread whose injected syscall outlived the
// injection (it blocked): the registers and signal mask are put back, so the thread goes on
// exactly where it was held. It says whether the stop was consumed.
func (t *Tracer) finishAbandoned(tk *task, ws unix.WaitStatus) bool {
	s := tk.abandoned
	tk.abandoned = nil
	s.lastStop = true
	s.atTrap = ws.StopSignal() == unix.SIGTRAP && int(ws>>16)&0xff == 0
	interrupt := int(ws>>16)&0xff == unix.PTRACE_EVENT_STOP && ws.StopSignal() == unix.SIGTRAP
	if !s.atTrap && !interrupt {
		// Some other stop (a signal, a group-stop): restore, then let it be handled as usual.
		tk.stopped = stopEvent
		s.restore()
		return false
	}
	tk.stopped, tk.cause = stopEvent, 0
	if err := s.restore(); err != nil {
		t.emitErr(tk.pid, "inject restore", err)
	}
	t.resume(tk)
	return true
}

// call runs one syscall at site with the saved registers as the base. After an error other
// than a syscall result the session is broken: every later call returns that error.
func (s *injectSession) call(site uint64, nr int, args ...uint64) (ret int64, errno int, err error) {
	if s.broken != nil {
		return 0, 0, s.broken
	}
	if s.ended {
		return 0, 0, fmt.Errorf("inject into %d: session ended", s.tk.tid)
	}
	t, tk := s.t, s.tk
	if err := setRegs(tk.tid, arch.SetupSyscall(s.orig, site, nr, args...)); err != nil {
		s.broken = err
		return 0, 0, err
	}
	inj := &injection{}
	tk.inject = inj
	defer func() {
		tk.inject = nil
		s.gone = s.gone || inj.gone
	}()
	if err := ptrace(unix.PTRACE_SINGLESTEP, tk.tid, 0, 0); err != nil {
		s.broken = fmt.Errorf("singlestep %d: %w", tk.tid, err)
		return 0, 0, s.broken
	}
	t.reapStep(tk, inj)
	if err := t.pump(func() bool { return inj.gone || inj.ws != 0 }, 5*time.Second,
		fmt.Sprintf("injected syscall in %d did not return", tk.tid)); err != nil {
		// The syscall blocks (it should not for kcmp or a 1-byte read): interrupt it; end
		// then restores the registers over whatever it returned.
		ptrace(unix.PTRACE_INTERRUPT, tk.tid, 0, 0)
		t.pump(func() bool { return inj.gone || inj.ws != 0 }, 2*time.Second, "")
		s.broken = err
		if !inj.gone && inj.ws == 0 {
			// Still inside (an uninterruptible sleep): restore it whenever it stops.
			tk.abandoned = s
			tk.stopped = running
		} else {
			s.noteStop(inj.ws)
		}
		return 0, 0, err
	}
	s.noteStop(inj.ws)
	if inj.gone {
		s.broken = fmt.Errorf("inject into %d: the task died (seccomp KILL?)", tk.tid)
		return 0, 0, s.broken
	}
	if !s.atTrap {
		// Some other stop came first (SIGSTOP cannot be blocked; a queued PTRACE_INTERRUPT):
		// hold that stop as it is, as if we had never run.
		if cause := int(inj.ws>>16) & 0xff; cause == 0 {
			tk.stopped, tk.sig, tk.cause = stopSignal, int(inj.ws.StopSignal()), 0
		} else {
			tk.stopped, tk.sig, tk.cause = stopEvent, 0, cause
			if cause == unix.PTRACE_EVENT_STOP && inj.ws.StopSignal() != unix.SIGTRAP {
				tk.stopped = stopGroup
			}
		}
		s.broken = errInjectInterrupted
		return 0, 0, s.broken
	}
	after, err := getRegs(tk.tid)
	if err != nil {
		s.broken = err
		return 0, 0, err
	}
	ret, errno = arch.SyscallResult(after)
	return ret, errno, nil
}

// noteStop records which stop ended a single-step.
func (s *injectSession) noteStop(ws unix.WaitStatus) {
	if ws == 0 {
		return
	}
	s.lastStop = true
	s.atTrap = ws.StopSignal() == unix.SIGTRAP && int(ws>>16)&0xff == 0
}

// reapStep waits briefly for the stop that ends the single-step with wait4 on that one
// thread: kcmp and a 1-byte process_vm_readv return within microseconds, and reaping the stop
// directly saves the SIGCHLD round trip through os/signal that pump waits for (most of the
// cost of one injection). Whatever wait4 reports for the thread is handled as usual; pump
// (with its timeout) remains the slow path.
func (t *Tracer) reapStep(tk *task, inj *injection) {
	for spin := 0; spin < 64 && !inj.gone && inj.ws == 0; spin++ {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(tk.tid, &ws, waitFlags, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if pid == tk.tid {
			t.handle(waitResult{pid: pid, ws: ws})
			continue
		}
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) // let the tracee run if it shares our CPU
	}
}

// scratch is memory below the held thread's red zone, saved so it can be put back.
type scratch struct {
	tid  int
	addr uint64
	save []byte
}

// newScratch reserves n bytes below sp-redzone in tk's stack (16-byte aligned).
func newScratch(tk *task, regs arch.Regs, n int) (*scratch, error) {
	addr := (regs.SP() - arch.RedZone(regs.Arch) - uint64(n) - 64) &^ 15
	s := &scratch{tid: tk.tid, addr: addr, save: make([]byte, (n+7)&^7)}
	if err := peekBytes(tk.tid, addr, s.save); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *scratch) write(off int, b []byte) error {
	// Whole words only (the scratch is word-sized and word-aligned).
	buf := make([]byte, len(s.save))
	copy(buf, s.save)
	if err := peekBytes(s.tid, s.addr, buf); err != nil {
		return err
	}
	copy(buf[off:], b)
	for i := 0; i < len(buf); i += 8 {
		if err := pokeWord(s.tid, s.addr+uint64(i), binary.LittleEndian.Uint64(buf[i:])); err != nil {
			return err
		}
	}
	return nil
}

// poke writes one word at off (a multiple of 8) of the scratch.
func (s *scratch) poke(off int, v uint64) error {
	return pokeWord(s.tid, s.addr+uint64(off), v)
}

func (s *scratch) restore() error {
	for i := 0; i < len(s.save); i += 8 {
		if err := pokeWord(s.tid, s.addr+uint64(i), binary.LittleEndian.Uint64(s.save[i:])); err != nil {
			return err
		}
	}
	return nil
}
