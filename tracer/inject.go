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
// before the registers at the end. Every call passes the gate first (gate.go): the thread's
// own seccomp filters and syscall user dispatch, evaluated as the kernel will, must let it
// through.

var errInjectInterrupted = errors.New("injected syscall interrupted by another stop")

// ErrInjectInterrupted is what Injection.Call returns when another stop (a signal that
// cannot be blocked, a group-stop) came in the middle: the thread is put back at that stop,
// and the injection is over.
var ErrInjectInterrupted = errInjectInterrupted

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
	// The stop that ended the last resume, as dispatch saw it.
	got  bool
	last stopInfo
	// scratch is memory below the red zone lent to the calls, put back at the end.
	scratch []*Scratch
}

// Injection runs system calls inside one held thread. Calls are gated (gate.go); End puts
// the thread back exactly as it was.
type Injection struct{ s *injectSession }

// Inject starts an injection into th, which must be held at an interrupt stop (Hold with
// AtInterrupt): its registers and signal mask are saved and its guard written. The caller
// must call End.
func (th Thread) Inject() (*Injection, error) {
	s, err := th.t.beginInject(th.tk)
	if err != nil {
		return nil, err
	}
	return &Injection{s: s}, nil
}

// Call runs syscall nr with args in the thread, once the gate lets it through; a refusal is
// a *Refused error, and nothing ran. After an error other than a syscall result or a refusal
// the injection is broken: every later call returns that error.
func (in *Injection) Call(nr int, args ...uint64) (ret int64, errno int, err error) {
	return in.s.call(nr, args...)
}

// End puts back the thread's registers and mask, the guard's bytes and the scratch memory.
// It is idempotent.
func (in *Injection) End() error { return in.s.end() }

// Broken is why the injection cannot go on (the thread died, another stop came), or nil.
func (in *Injection) Broken() error { return in.s.broken }

// canInject says whether tk is held where an injection may start: an interrupt stop (never
// a signal-delivery-stop, whose signal a guard could only deliver in the wrong context if
// crashtui died, nor a group-stop or an event stop, whose resume semantics would change).
func canInject(tk *task) bool {
	return tk.state == held && tk.stop.class == classInterrupt && tk.inj == nil
}

// beginInject saves tk's registers and signal mask and writes its guard. The caller must call
// end, which restores them.
func (t *Tracer) beginInject(tk *task) (*injectSession, error) {
	if t.tasks[tk.tid] != tk || !canInject(tk) {
		return nil, fmt.Errorf("inject into %d: not held at an interrupt stop (%s)", tk.tid, tk.state)
	}
	if p := t.procs[tk.pid]; p != nil {
		for _, o := range p.tasks {
			if o.state == abandoned {
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
	// Syscall-stops must be told from SIGTRAPs (and a syscall-stop whose tracer died
	// without consuming it must carry no signal: ptrace_report_syscall sends exit_code,
	// which SIGTRAP|0x80 is not).
	if !tk.sysgood {
		if err := ptraceSetOptions(tk.tid, seizeOptions|unix.PTRACE_O_TRACESYSGOOD); err != nil {
			pokeBytes(tk.tid, s.base, s.saved)
			return nil, fmt.Errorf("setoptions %d: %w", tk.tid, err)
		}
		tk.sysgood = true
	}
	tk.inj = s
	return s, nil
}

// call runs one syscall in the guard.
func (s *injectSession) call(nr int, args ...uint64) (ret int64, errno int, err error) {
	if s.broken != nil {
		return 0, 0, s.broken
	}
	if s.ended {
		return 0, 0, fmt.Errorf("inject into %d: session ended", s.tk.tid)
	}
	tk := s.tk
	var a [6]uint64
	copy(a[:], args)
	if err := s.t.gate(tk, nr, a, arch.SyscallIP(s.orig.Arch, s.base)); err != nil {
		return 0, 0, err
	}
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
		si, err := s.step(unix.PTRACE_SYSCALL)
		if err != nil {
			return 0, 0, err
		}
		if si.class != classSyscall {
			return 0, 0, s.interrupted(si)
		}
		if info, err := getSyscallInfo(tk.tid); err != nil || info.Op != want {
			s.broken = fmt.Errorf("inject into %d: syscall-stop %d, want %d (%v)", tk.tid, info.Op, want, err)
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

// saw records the stop that ends a resume of an injected thread (dispatch hands it here): a
// stop that holds no signal is consumed, a signal-delivery-stop left to the kernel (peeked).
func (s *injectSession) saw(si stopInfo) {
	s.got, s.last = true, si
	if si.class == classSignal {
		s.t.park(s.tk, si)
	} else {
		s.t.keep(s.tk, si)
	}
}

// injectWait bounds one step of an injected call; a call that blocks is interrupted, and one
// that does not come back from that either is abandoned to its guard.
var injectWait = 5 * time.Second

// Test hooks: injectNoInterrupt withholds the interrupt of a call that outlives injectWait
// (as a call in uninterruptible sleep ignores it), stepHook sees the thread just before each
// step resumes it and stepResumed runs just after.
var (
	injectNoInterrupt bool
	stepHook          func(tk *task)
	stepResumed       func()
)

// step resumes the thread with req and waits for its next stop (or its death).
func (s *injectSession) step(req int) (stopInfo, error) {
	t, tk := s.t, s.tk
	s.got = false
	tk.state = injecting
	if stepHook != nil {
		stepHook(tk)
	}
	if err := ptraceResume(req, tk.tid, 0); err != nil {
		tk.state = held
		if errors.Is(err, unix.ESRCH) {
			s.gone = true
		}
		s.broken = fmt.Errorf("resume injected %d: %w", tk.tid, err)
		return stopInfo{}, s.broken
	}
	if stepResumed != nil {
		stepResumed()
	}
	own := []*task{tk}
	came := func() bool { return s.got || s.gone }
	if !t.waitUntil(own, came, injectWait) {
		// The call blocks (it should not for kcmp or a 1-byte read): interrupt it. A failure
		// (ESRCH: it died) shows as its death below.
		wait := 2 * time.Second
		if injectNoInterrupt {
			wait = 0
		} else {
			ptraceInterrupt(tk.tid)
		}
		if !t.waitUntil(own, came, wait) {
			// Still inside (an uninterruptible sleep): its guard restores it whenever it
			// returns; finishAbandoned puts the rest back.
			s.broken = fmt.Errorf("injected syscall in %d did not return", tk.tid)
			tk.state = abandoned
			return stopInfo{}, s.broken
		}
	}
	if s.gone {
		s.broken = fmt.Errorf("inject into %d: the task died", tk.tid)
		return stopInfo{}, s.broken
	}
	return s.last, nil
}

// interrupted handles a stop other than the injected call's own (a signal that cannot be
// blocked, a group-stop, a queued interrupt, an exit): the thread is put back at that stop,
// so it is held exactly as if the stop had come while it was held before (a signal stays
// the kernel's: the loop delivers it once the holder lets go).
func (s *injectSession) interrupted(si stopInfo) error {
	s.broken = errInjectInterrupted
	if err := s.restore(); err != nil {
		s.broken = errors.Join(errInjectInterrupted, err)
	}
	return s.broken
}

// end brings the thread back to an interrupt stop and puts back its mask and registers, then
// the guard's bytes and the scratch. It is idempotent.
func (s *injectSession) end() error {
	if s.ended {
		return nil
	}
	s.ended = true
	tk := s.tk
	if s.gone || tk.state == abandoned {
		return nil // dead, or still inside the injected syscall: its guard restores it
	}
	defer func() {
		if tk.inj == s && tk.state != abandoned {
			tk.inj = nil
		}
	}()
	if s.inGuard && s.broken == nil {
		// At the exit stop of the last call: have it stop again before it reaches user space
		// (the interrupt is taken on the way out, every signal being blocked).
		if err := ptraceInterrupt(tk.tid); err != nil {
			return fmt.Errorf("interrupt injected %d: %w", tk.tid, err)
		}
		si, err := s.step(unix.PTRACE_CONT)
		if err != nil {
			if s.gone || tk.state == abandoned {
				return nil
			}
			return err
		}
		if si.class != classInterrupt {
			s.interrupted(si) // another stop took the interrupt's place: held as it is
			return s.restoreScratch()
		}
		if s.cut("end") {
			return nil
		}
	}
	return errors.Join(s.restore(), s.restoreScratch())
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
func (t *Tracer) finishAbandoned(tk *task, si stopInfo) bool {
	s := tk.inj
	tk.inj = nil
	if s == nil {
		tk.state = running
		return false
	}
	if si.class == classSyscall {
		// At its syscall-exit stop: put back what the guard would (the mask, then the
		// registers with the kernel's restart applied, as at a syscall exit the kernel applies
		// none) and let it go, so no code of the guard runs after the guard's bytes are
		// put back.
		consume(tk.tid)
		e1 := setSigmask(tk.tid, s.mask)
		e2 := setRegs(tk.tid, s.safe)
		if e1 == nil && e2 == nil {
			s.inGuard, s.masked = false, false
			if s.saved != nil {
				pokeBytes(tk.tid, s.base, s.saved)
				s.saved = nil
			}
		}
		s.restoreScratch()
		if err := ptraceResume(unix.PTRACE_CONT, tk.tid, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			t.emitErr(tk.pid, "inject restore", fmt.Errorf("resume %d: %w", tk.tid, err))
		}
		tk.state = running
		return true
	}
	tk.state = running // its stop is dispatched as any other's
	tk.stop = si
	if err := s.restore(); err != nil {
		t.emitErr(tk.pid, "inject restore", err)
	}
	s.restoreScratch()
	return false
}

// Scratch is memory below a held thread's red zone (where the kernel would write a signal
// frame), lent to an injection's calls and put back at its end.
type Scratch struct {
	tid  int
	Addr uint64
	save []byte
}

// Scratch reserves n bytes below the thread's red zone (16-byte aligned), saved to be put
// back when the injection ends.
func (in *Injection) Scratch(n int) (*Scratch, error) {
	s := in.s
	addr := (s.orig.SP() - arch.RedZone(s.orig.Arch) - uint64(n) - 64) &^ 15
	for _, o := range s.scratch {
		addr = min(addr, (o.Addr-uint64(n)-16)&^15)
	}
	sc := &Scratch{tid: s.tk.tid, Addr: addr, save: make([]byte, (n+7)&^7)}
	if err := peekBytes(sc.tid, addr, sc.save); err != nil {
		return nil, err
	}
	s.scratch = append(s.scratch, sc)
	return sc, nil
}

// Write writes b at off (whole words: the rest of each word is kept).
func (sc *Scratch) Write(off int, b []byte) error {
	buf := make([]byte, len(sc.save))
	if err := peekBytes(sc.tid, sc.Addr, buf); err != nil {
		return err
	}
	copy(buf[off:], b)
	for i := 0; i < len(buf); i += 8 {
		if err := pokeWord(sc.tid, sc.Addr+uint64(i), binary.LittleEndian.Uint64(buf[i:])); err != nil {
			return err
		}
	}
	return nil
}

// Poke writes one word at off (a multiple of 8).
func (sc *Scratch) Poke(off int, v uint64) error { return pokeWord(sc.tid, sc.Addr+uint64(off), v) }

// Read reads len(buf) bytes at off.
func (sc *Scratch) Read(off int, buf []byte) error {
	return peekBytes(sc.tid, sc.Addr+uint64(off), buf)
}

func (sc *Scratch) restore() error {
	for i := 0; i < len(sc.save); i += 8 {
		if err := pokeWord(sc.tid, sc.Addr+uint64(i), binary.LittleEndian.Uint64(sc.save[i:])); err != nil {
			return err
		}
	}
	return nil
}

func (s *injectSession) restoreScratch() error {
	var errs []error
	if !s.gone {
		for i := len(s.scratch) - 1; i >= 0; i-- {
			errs = append(errs, s.scratch[i].restore())
		}
	}
	s.scratch = nil
	return errors.Join(errs...)
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

// injectSyscall runs one syscall inside the held task tk and restores it (tests).
func (t *Tracer) injectSyscall(tk *task, nr int, args ...uint64) (ret int64, errno int, err error) {
	s, err := t.beginInject(tk)
	if err != nil {
		return 0, 0, err
	}
	ret, errno, err = s.call(nr, args...)
	return ret, errno, errors.Join(err, s.end())
}
