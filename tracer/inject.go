package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
)

// Syscall injection that no death of crashtui can turn into harm (tracer/doc.go, "What a
// SIGKILL of crashtui leaves behind"). A thread held at an interrupt stop is pointed at a
// guard (arch.Guard) written into unused executable bytes of its process: the guard's first
// instruction is the injected syscall, and everything after it puts back the thread's own
// signal mask and registers and jumps to where it would have gone on. The syscall is run with
// PTRACE_SYSCALL (its entry and exit stops, never a single-step, so no trap is ever queued or
// forced), and at every moment the thread is in one of three states:
//
//   - its own registers and mask (before the first call, after the end);
//   - pointed at the guard, with every signal blocked: if the kernel lets it go, it runs the
//     harmless call and then the guard restores it;
//   - at the guard's syscall-exit stop: the same.
//
// The order of the writes keeps it so: registers before the mask at the start, the mask
// before the registers at the end.

// injection records the stop that ends one resume of an injected thread.
type injection struct {
	ws   unix.WaitStatus
	gone bool
}

var errInjectInterrupted = errors.New("injected syscall interrupted by another stop")

// injectSession holds one thread for a batch of injected syscalls (the matrix runs two per
// other process): registers and mask are saved once, the guard written once, and both put
// back once at the end.
type injectSession struct {
	t      *Tracer
	tk     *task
	orig   arch.Regs
	safe   arch.Regs // orig with the kernel's no-signal restart applied (what the guard restores)
	mask   uint64
	base   uint64 // the guard's address
	saved  []byte // the bytes the guard overwrote
	masked bool   // every signal is blocked
	// inGuard: the registers point into the guard; the thread must be put back before it is
	// held as anything else.
	inGuard bool
	broken  error // set when the thread died or another stop came: no more calls
	gone    bool  // the thread died: nothing to restore
	ended   bool
}

// injectSyscall runs one syscall inside the held task tk and restores it.
func (t *Tracer) injectSyscall(tk *task, nr int, args ...uint64) (ret int64, errno int, err error) {
	s, err := t.beginInject(tk)
	if err != nil {
		return 0, 0, err
	}
	ret, errno, err = s.call(nr, args...)
	return ret, errno, errors.Join(err, s.end())
}

// injectWithScratch runs the syscall called name inside the held task tk with n bytes of
// scratch memory below its red zone (where the kernel would write a signal frame), filled with
// init (zeros if shorter), the arguments made by args from the scratch's address. It returns
// what the scratch holds after the call; the scratch is put back. A failed call (negative
// result) is an error.
func (t *Tracer) injectWithScratch(tk *task, name string, n int, init []byte, args func(addr uint64) []uint64) ([]byte, error) {
	regs, err := getRegs(tk.tid)
	if err != nil {
		return nil, err
	}
	nr, ok := arch.SyscallNumber(regs.Arch, name)
	if !ok {
		return nil, fmt.Errorf("no %s on %s", name, regs.Arch)
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
	ret, errno, err := t.injectSyscall(tk, nr, args(sc.addr)...)
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

// canInject says whether tk is held where an injection may start: an interrupt stop (never a
// signal-delivery-stop, whose signal a guard could only deliver in the wrong context if
// crashtui died, nor a group-stop or an event stop, whose resume semantics would change).
func canInject(tk *task) bool {
	return tk.stopped == stopEvent && tk.cause == unix.PTRACE_EVENT_STOP && tk.inject == nil && tk.abandoned == nil
}

// beginInject saves tk's registers and signal mask and writes its guard. The caller must call
// end, which restores them.
func (t *Tracer) beginInject(tk *task) (*injectSession, error) {
	if !canInject(tk) {
		return nil, fmt.Errorf("inject into %d: not held at an interrupt stop", tk.tid)
	}
	if p := t.procs[tk.pid]; p != nil {
		for _, o := range p.tasks {
			if o.abandoned != nil {
				// Its guard is still in the cave, and its thread may still run it: writing
				// another thread's guard there would hand that thread the wrong registers.
				return nil, fmt.Errorf("inject into %d: thread %d of the process is still inside an earlier injected call", tk.tid, o.tid)
			}
		}
	}
	orig, err := getRegs(tk.tid)
	if err != nil {
		return nil, err
	}
	s := &injectSession{t: t, tk: tk, orig: orig}
	if s.mask, err = getSigmask(tk.tid); err != nil {
		return nil, err
	}
	s.safe = arch.ResumeRegs(orig, restartInsn(tk.tid, orig))
	if s.base, err = t.guardSite(tk.pid, tk.tid, orig.Arch, s.safe.PC()); err != nil {
		return nil, err
	}
	g, err := arch.Guard(s.safe, s.mask, s.base)
	if err != nil {
		return nil, err
	}
	s.saved = make([]byte, len(g))
	if err := peekBytes(tk.tid, s.base, s.saved); err != nil {
		return nil, err
	}
	if err := pokeBytes(tk.tid, s.base, g); err != nil {
		return nil, err
	}
	// Syscall-stops must be told from SIGTRAPs.
	if !t.crash.sysgood[tk.tid] {
		if err := ptraceSetOptions(tk.tid, seizeOptions|unix.PTRACE_O_TRACESYSGOOD); err != nil {
			pokeBytes(tk.tid, s.base, s.saved)
			return nil, fmt.Errorf("setoptions %d: %w", tk.tid, err)
		}
		t.crash.sysgood[tk.tid] = true
	}
	return s, nil
}

// call runs one syscall in the guard. After an error other than a syscall result the session
// is broken: every later call returns that error.
func (s *injectSession) call(nr int, args ...uint64) (ret int64, errno int, err error) {
	if s.broken != nil {
		return 0, 0, s.broken
	}
	if s.ended {
		return 0, 0, fmt.Errorf("inject into %d: session ended", s.tk.tid)
	}
	tk := s.tk
	// Registers first, then the mask: a thread let go between the two runs the guard.
	if err := setRegs(tk.tid, arch.SetupSyscall(s.orig, s.base, nr, args...)); err != nil {
		s.broken = err
		return 0, 0, err
	}
	s.inGuard = true
	if s.cut("regs") {
		return 0, 0, s.broken
	}
	if !s.masked {
		if err := setSigmask(tk.tid, ^uint64(0)); err != nil {
			s.broken = err
			return 0, 0, s.broken
		}
		s.masked = true
		if s.cut("mask") {
			return 0, 0, s.broken
		}
	}
	for _, want := range []uint8{unix.PTRACE_SYSCALL_INFO_ENTRY, unix.PTRACE_SYSCALL_INFO_EXIT} {
		ws, err := s.resume(unix.PTRACE_SYSCALL)
		if err != nil {
			return 0, 0, err
		}
		if !isSyscallStop(ws) {
			return 0, 0, s.interrupted(ws)
		}
		if info, err := getSyscallInfo(tk.tid); err != nil || info.op != want {
			s.broken = fmt.Errorf("inject into %d: syscall-stop %d, want %d (%v)", tk.tid, info.op, want, err)
			return 0, 0, s.broken
		}
		if s.cut(map[uint8]string{unix.PTRACE_SYSCALL_INFO_ENTRY: "entry", unix.PTRACE_SYSCALL_INFO_EXIT: "exit"}[want]) {
			return 0, 0, s.broken
		}
	}
	after, err := getRegs(tk.tid)
	if err != nil {
		s.broken = err
		return 0, 0, err
	}
	ret, errno = arch.SyscallResult(after)
	return ret, errno, nil
}

func isSyscallStop(ws unix.WaitStatus) bool {
	return ws.Stopped() && classify(ws).class == classSyscall
}

// resume continues the thread with req and waits for its next stop (or its death).
func (s *injectSession) resume(req int) (unix.WaitStatus, error) {
	t, tk := s.t, s.tk
	inj := &injection{}
	tk.inject = inj
	defer func() { tk.inject = nil }()
	if err := ptraceResume(req, tk.tid, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			s.gone = true
		}
		s.broken = fmt.Errorf("resume injected %d: %w", tk.tid, err)
		return 0, s.broken
	}
	t.reapStep(tk, inj)
	if err := t.pump(func() bool { return inj.gone || inj.ws != 0 }, 5*time.Second,
		fmt.Sprintf("injected syscall in %d did not return", tk.tid)); err != nil {
		// The call blocks (it should not for kcmp or a 1-byte read): interrupt it. A failure
		// (ESRCH: it died) shows as its death below.
		ptraceInterrupt(tk.tid)
		t.pump(func() bool { return inj.gone || inj.ws != 0 }, 2*time.Second, "")
		if !inj.gone && inj.ws == 0 {
			// Still inside (an uninterruptible sleep): its guard restores it whenever it
			// returns; finishAbandoned lets it.
			s.broken = err
			tk.abandoned = s
			tk.stopped = running
			return 0, err
		}
	}
	if inj.gone {
		s.gone = true
		s.broken = fmt.Errorf("inject into %d: the task died (seccomp KILL?)", tk.tid)
		return 0, s.broken
	}
	return inj.ws, nil
}

// interrupted handles a stop other than the injected call's own (a signal that cannot be
// blocked, a group-stop, a queued interrupt, an exit): the thread is put back at that stop, so
// it is held exactly as if the stop had come while it was held before.
func (s *injectSession) interrupted(ws unix.WaitStatus) error {
	tk := s.tk
	s.broken = errInjectInterrupted
	if err := s.restore(); err != nil {
		s.broken = errors.Join(errInjectInterrupted, err)
	}
	switch si := classify(ws); {
	case si.class == classSignal || si.class == classSyscall:
		tk.stopped, tk.sig, tk.cause = stopSignal, si.sig, 0
	case si.event == unix.PTRACE_EVENT_EXIT:
		tk.stopped, tk.sig, tk.cause = stopExit, 0, si.event
	case si.class == classGroup:
		tk.stopped, tk.sig, tk.cause = stopGroup, 0, si.event
	default:
		tk.stopped, tk.sig, tk.cause = stopEvent, 0, si.event
	}
	return s.broken
}

// end brings the thread back to an interrupt stop and puts back its mask and registers, then
// the guard's bytes. It is idempotent.
func (s *injectSession) end() error {
	if s.ended {
		return nil
	}
	s.ended = true
	if s.gone || s.tk.abandoned == s {
		return nil // dead, or still inside the injected syscall: its guard restores it
	}
	if s.inGuard {
		// At the exit stop of the last call: have it stop again before it reaches user space
		// (the interrupt is taken on the way out, every signal being blocked).
		tk := s.tk
		if err := ptraceInterrupt(tk.tid); err != nil {
			return fmt.Errorf("interrupt injected %d: %w", tk.tid, err)
		}
		ws, err := s.resume(unix.PTRACE_CONT)
		if err != nil {
			if s.gone || tk.abandoned == s {
				return nil
			}
			return err
		}
		if classify(ws).class != classInterrupt {
			s.interrupted(ws) // another stop took the interrupt's place: held as it is
			return nil
		}
		tk.stopped, tk.sig, tk.cause = stopEvent, 0, unix.PTRACE_EVENT_STOP
		if s.cut("end") {
			return nil
		}
	}
	return s.restore()
}

// restore puts back the mask, then the registers, then the guard's bytes. It must run at a
// ptrace-stop the kernel leaves through get_signal (interrupt, signal-delivery, group-stop),
// so the kernel's pending restart applies to the restored registers exactly as before.
func (s *injectSession) restore() error {
	tk := s.tk
	var e1, e2 error
	if s.masked {
		e1 = setSigmask(tk.tid, s.mask)
		if e1 == nil {
			s.masked = false
		}
		if s.inGuard && s.cut("restore") {
			return nil
		}
	}
	if s.inGuard {
		e2 = setRegs(tk.tid, arch.InjectionRestore(s.orig))
		if e2 == nil {
			s.inGuard = false
		}
	}
	if errors.Is(e1, unix.ESRCH) || errors.Is(e2, unix.ESRCH) {
		s.gone = true
		return nil // killed meanwhile (SIGKILL): its exit status follows
	}
	var e3 error
	if !s.inGuard && s.saved != nil {
		e3 = pokeBytes(tk.tid, s.base, s.saved)
		s.saved = nil
	}
	return errors.Join(e1, e2, e3)
}

// finishAbandoned handles the first stop of a thread whose injected syscall outlived the
// injection (it blocked). At its syscall-exit stop it is given back what its guard would give
// it and let go; at any other stop it is restored there and the stop handled as usual. It
// says whether the stop was consumed.
func (t *Tracer) finishAbandoned(tk *task, ws unix.WaitStatus) bool {
	s := tk.abandoned
	tk.abandoned = nil
	if isSyscallStop(ws) {
		// At its syscall-exit stop: put back what the guard would (the mask, then the
		// registers with the kernel's restart applied, as at a syscall exit the kernel applies
		// none) and let it go, so no code of the guard runs after the guard's bytes are
		// put back.
		e1 := setSigmask(tk.tid, s.mask)
		e2 := setRegs(tk.tid, s.safe)
		if e1 == nil && e2 == nil {
			s.inGuard, s.masked = false, false
			if s.saved != nil {
				pokeBytes(tk.tid, s.base, s.saved)
				s.saved = nil
			}
		}
		if err := ptraceResume(unix.PTRACE_CONT, tk.tid, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			t.emitErr(tk.pid, "inject restore", fmt.Errorf("resume %d: %w", tk.tid, err))
		}
		tk.stopped = running
		return true
	}
	tk.stopped = stopEvent
	if err := s.restore(); err != nil {
		t.emitErr(tk.pid, "inject restore", err)
	}
	return false
}

// reapStep waits briefly for the stop that ends a resume of an injected thread with wait4 on
// that one thread: kcmp and a 1-byte process_vm_readv return within microseconds, and reaping
// the stop directly saves the SIGCHLD round trip through os/signal that pump waits for (most
// of the cost of one injection). Whatever wait4 reports for the thread is handled as usual;
// pump (with its timeout) remains the slow path.
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

var errInjectCut = errors.New("injection cut (test)")

// cut is the tests' stand-in for crashtui's death at a point of an injection: when
// Tracer.injectCut names the point, the thread is let go right there (PTRACE_DETACH with no
// signal, what exit_ptrace does) and forgotten.
func (s *injectSession) cut(point string) bool {
	if s.t.injectCut == "" || s.t.injectCut != point {
		return false
	}
	ptraceDetach(s.tk.tid, 0)
	s.t.forgetDetached(s.tk)
	s.gone, s.broken = true, errInjectCut
	return true
}
