package arch

import (
	"encoding/binary"
	"fmt"
)

// Kernel-internal restart codes (include/linux/errno.h). They never reach user space unless a
// restorer forgets to handle them, which is the bug crashtui makes visible (seed 002).
const (
	ERESTARTSYS           = 512
	ERESTARTNOINTR        = 513
	ERESTARTNOHAND        = 514
	ENOIOCTLCMD           = 515
	ERESTART_RESTARTBLOCK = 516
	EINTR                 = 4
)

// Instruction words the decoder recognises.
const (
	insnPPCSc      = 0x44000002 // sc
	insnPPCScv0    = 0x44000001 // scv 0
	insnPPCTwi     = 0x0fe00000 // twi 31,0,0 (TRAP_BRKPT)
	insnARM64Svc0  = 0xd4000001 // svc #0
	insnARM64Brk0  = 0xd4200000 // brk #0
	ppcTrapSc      = 0xc00      // TRAP(regs) of a syscall entered with sc
	ppcTrapScv     = 0x3000     // TRAP(regs) of a syscall entered with scv (trap_is_scv)
	ppcTrapFlags   = 0x1f       // vector = trap &^ ppcTrapFlags
	ppcTrapNoRstrt = 0x11       // TRAP_NORESTART: 0x10 on 5.8–5.12, 0x1 from 5.13
	ppcCR0SO       = 0x10000000 // CR0.SO in ccr: error flag of sc
)

// ErrnoName returns the kernel's name of errno e ("EPERM", "ERESTARTSYS"), or "errno N".
func ErrnoName(e int) string {
	switch e {
	case ERESTARTSYS:
		return "ERESTARTSYS"
	case ERESTARTNOINTR:
		return "ERESTARTNOINTR"
	case ERESTARTNOHAND:
		return "ERESTARTNOHAND"
	case ENOIOCTLCMD:
		return "ENOIOCTLCMD"
	case ERESTART_RESTARTBLOCK:
		return "ERESTART_RESTARTBLOCK"
	}
	if e > 0 && e < len(errnoNames) && errnoNames[e] != "" {
		return errnoNames[e]
	}
	return fmt.Sprintf("errno %d", e)
}

func isRestartCode(e int64) bool {
	switch e {
	case ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK:
		return true
	}
	return false
}

// RestartState is the restart state of a thread stopped at PTRACE_EVENT_STOP, a
// signal-delivery-stop or a group-stop on the way out of a syscall (kernel.md §B.2).
type RestartState struct {
	Arch      Arch
	InSyscall bool
	Nr        int    // syscall number (-1 if not in a syscall)
	Syscall   string // name, e.g. "read", "futex", "nanosleep"; "" if unknown
	Args      [6]uint64
	// Insn is how the syscall was entered: "syscall", "int80", "sc", "scv", "svc" or "".
	// ppc64le takes it from the trap vector, amd64 from the bytes before rip ("syscall" when
	// they were not given, "" when they are neither syscall nor int $0x80), arm64 from the
	// word at pc. InsnConfirmed says whether the instruction bytes passed to Decode agreed.
	Insn          string
	InsnConfirmed bool
	InsnLen       int
	Trap          uint64 // ppc64le raw trap word, 0 elsewhere
	Ret           int64  // raw return register (rax / r3 / x0), signed
	// Errno is 512, 513, 514 or 516 when the return register holds an ERESTART* code (ppc sc:
	// SO set and r3 positive; scv: r3 negative), else 0.
	Errno int
	Code  string // "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK" or ""
	// AlreadyRestarted: ppc64le trap&0x11, the kernel's check_syscall_restart already ran for
	// this syscall exit (0x10 on 5.8–5.12, 0x1 from 5.13).
	AlreadyRestarted bool
	Note             string // one sentence when registers cannot tell (arm64: kernel already rewound)
}

// Decode reads the restart state out of r. insn is the instruction bytes at the pc as the
// tracer could read them, or nil if unreadable: amd64 the 2 bytes at rip-2, ppc64le the 4 bytes
// at nip-4, arm64 the 4 bytes at pc (arm64 has already rewound to the svc). Decode never panics,
// whatever the length of r.Words or insn.
func Decode(r Regs, insn []byte) RestartState {
	s := RestartState{Arch: r.Arch, Nr: -1}
	switch r.Arch {
	case AMD64:
		decodeAMD64(&s, r, insn)
	case PPC64LE:
		decodePPC64LE(&s, r, insn)
	case ARM64:
		decodeARM64(&s, r, insn)
	default:
		s.Note = fmt.Sprintf("Unknown architecture %q: restart state not decoded.", string(r.Arch))
		return s
	}
	if s.InSyscall && s.Insn != "int80" {
		s.Syscall = SyscallName(r.Arch, s.Nr)
	}
	if s.Errno != 0 {
		s.Code = ErrnoName(s.Errno)
	}
	return s
}

// decodeAMD64 follows arch/x86/kernel/signal.c: a thread is in a syscall when orig_ax != -1
// (syscall_get_nr); restore_sigcontext sets orig_ax=-1 so sigreturn never restarts.
func decodeAMD64(s *RestartState, r Regs, insn []byte) {
	s.Ret = int64(r.word(amd64RAX))
	orig := int64(r.word(amd64OrigRAX))
	if orig < 0 {
		return
	}
	s.InSyscall = true
	s.Nr = int(orig)
	s.Args = [6]uint64{r.word(amd64RDI), r.word(amd64RSI), r.word(amd64RDX), r.word(amd64R10), r.word(amd64R8), r.word(amd64R9)}
	// Both syscall (0f 05) and int $0x80 (cd 80) are 2 bytes; the kernel rewinds ip by 2 for either.
	s.Insn, s.InsnLen = "syscall", 2
	if len(insn) >= 2 {
		b := insn[len(insn)-2:]
		switch {
		case b[0] == 0x0f && b[1] == 0x05:
			s.InsnConfirmed = true
		case b[0] == 0xcd && b[1] == 0x80:
			s.Insn, s.InsnConfirmed = "int80", true
			s.Note = "Entered with int $0x80, so orig_rax is an i386 syscall number (arch/x86/entry/syscalls/syscall_32.tbl), not named here."
		default:
			s.Insn = ""
			s.Note = fmt.Sprintf("The bytes before rip are %02x %02x, not syscall or int $0x80: the pc was moved after the syscall, so a rewind by 2 would land mid-instruction.", b[0], b[1])
		}
	}
	if e := -s.Ret; isRestartCode(e) {
		s.Errno = int(e)
	}
}

// decodePPC64LE follows arch/powerpc/kernel/signal.c check_syscall_restart and
// asm/ptrace.h: TRAP() masks the flag bits, trap_is_syscall() is 0xc00 or 0x3000.
func decodePPC64LE(s *RestartState, r Regs, insn []byte) {
	trap := r.word(ppcTRAP)
	s.Trap = trap
	r3 := r.word(ppcR3)
	s.Ret = int64(r3)
	switch trap &^ ppcTrapFlags {
	case ppcTrapSc:
		s.Insn = "sc"
	case ppcTrapScv:
		s.Insn = "scv"
	default:
		return
	}
	s.InSyscall = true
	s.InsnLen = 4
	s.Nr = int(r.word(ppcR0))
	// r3 is the return value now; the kernel kept the first argument in orig_gpr3.
	s.Args = [6]uint64{r.word(ppcOrigR3), r.word(4), r.word(5), r.word(6), r.word(7), r.word(8)}
	if trap&ppcTrapNoRstrt != 0 {
		s.AlreadyRestarted = true
		s.Note = fmt.Sprintf("trap 0x%x carries the kernel's norestart flag: check_syscall_restart already ran for this exit, so nip and r3 hold its outcome, not the interrupted code.", trap)
		return
	}
	if len(insn) >= 4 {
		w := binary.LittleEndian.Uint32(insn[len(insn)-4:])
		want := uint32(insnPPCSc)
		if s.Insn == "scv" {
			want = insnPPCScv0
		}
		if w == want {
			s.InsnConfirmed = true
		} else {
			s.Note = fmt.Sprintf("The word at nip-4 is 0x%08x, not the %s the trap vector 0x%x says: the pc was moved after the syscall.", w, s.Insn, trap&^ppcTrapFlags)
		}
	}
	switch s.Insn {
	case "sc":
		// sc reports errors as CR0.SO plus a positive errno.
		if r.word(ppcCCR)&ppcCR0SO != 0 && isRestartCode(int64(r3)) {
			s.Errno = int(r3)
		}
	case "scv":
		// scv returns a negative errno like x86 (IS_ERR_VALUE(r3)).
		if e := -int64(r3); isRestartCode(e) {
			s.Errno = int(e)
		}
	}
}

// decodeARM64: arch/arm64/kernel/signal.c do_signal rewinds pc to the svc and sets
// x0=orig_x0 *before* get_signal(), "so that a debugger will see the already changed PC". At
// any ptrace stop the interrupted code is gone; all that is visible is an svc at pc.
func decodeARM64(s *RestartState, r Regs, insn []byte) {
	s.Ret = int64(r.word(arm64X0))
	if len(insn) < 4 {
		s.Note = "arm64 registers cannot tell whether the thread is in a syscall (the kernel rewinds an interrupted svc before the stop) and the word at pc was not readable."
		return
	}
	if binary.LittleEndian.Uint32(insn[:4]) != insnARM64Svc0 {
		s.Note = "The word at pc is not svc #0, so the thread is not at a rewound syscall (arm64 rewinds an interrupted svc before the stop)."
		return
	}
	s.InSyscall = true
	s.Insn, s.InsnLen, s.InsnConfirmed = "svc", 4, true
	s.Nr = int(r.word(arm64X8))
	s.Args = [6]uint64{r.word(0), r.word(1), r.word(2), r.word(3), r.word(4), r.word(5)}
	s.Note = "arm64 already rewound pc to this svc and restored x0=orig_x0 before the stop, so the interrupted code is gone (only a syscall-exit-stop's PTRACE_GET_SYSCALL_INFO shows it); a thread about to enter the svc looks the same."
}

// WithErrno returns s with the interrupted restart code set from another source, for arm64
// where the registers have lost it (e.g. the rval of PTRACE_GET_SYSCALL_INFO at the preceding
// syscall-exit-stop). e must be 512, 513, 514 or 516; anything else clears it.
func (s RestartState) WithErrno(e int) RestartState {
	s.Errno, s.Code = 0, ""
	if s.InSyscall && isRestartCode(int64(e)) {
		s.Errno, s.Code = e, ErrnoName(e)
	}
	return s
}

// Handler says what the pending signal does when the thread resumes.
type Handler int

const (
	// NoHandler: resumed with signal 0, the signal is ignored, its default action is stop, or
	// the stop came from PTRACE_INTERRUPT.
	NoHandler Handler = iota
	// HandlerRestart: a handler installed with SA_RESTART runs.
	HandlerRestart
	// HandlerNoRestart: a handler without SA_RESTART runs.
	HandlerNoRestart
)

func (h Handler) String() string {
	switch h {
	case NoHandler:
		return "no handler"
	case HandlerRestart:
		return "an SA_RESTART handler"
	case HandlerNoRestart:
		return "a handler without SA_RESTART"
	}
	return fmt.Sprintf("Handler(%d)", int(h))
}

// Action is what happens to an interrupted syscall.
type Action string

const (
	ActRestart        Action = "restart"         // the same syscall is re-executed (pc rewound, arg0 restored)
	ActRestartSyscall Action = "restart_syscall" // re-entered through restart_syscall (ERESTART_RESTARTBLOCK)
	ActEINTR          Action = "eintr"           // the syscall returns EINTR
	ActNone           Action = "none"            // nothing to do
	ActRewind         Action = "rewind"          // a restorer must rewind the pc and restore arg0 itself
	// ActUnknown: the registers cannot tell (arm64 with a handler: the code is gone).
	ActUnknown Action = "unknown"
)

// pending reports whether the kernel still has a restart decision to make for s.
func (s RestartState) pending() bool {
	return s.InSyscall && !s.AlreadyRestarted && s.Errno != 0
}

// OnResume says what the kernel does with the interrupted syscall when the thread resumes and
// the pending signal is handled as h (kernel.md B.3 columns 1-3).
func (s RestartState) OnResume(h Handler) Action {
	if s.Arch == ARM64 && s.InSyscall && s.Errno == 0 {
		// The svc at pc is re-executed unless a handler turns it into EINTR, which depends on
		// the code the registers no longer hold.
		if h == NoHandler {
			return ActRestart
		}
		return ActUnknown
	}
	if !s.pending() {
		return ActNone
	}
	switch s.Errno {
	case ERESTARTNOINTR:
		return ActRestart
	case ERESTARTSYS:
		if h == HandlerNoRestart {
			return ActEINTR
		}
		return ActRestart
	case ERESTARTNOHAND:
		if h == NoHandler {
			return ActRestart
		}
		return ActEINTR
	case ERESTART_RESTARTBLOCK:
		if h == NoHandler {
			return ActRestartSyscall
		}
		return ActEINTR
	}
	return ActNone
}

// Restore says what a checkpoint/restore must do itself (kernel.md B.3 last column): the
// restored thread returns through rt_sigreturn, which disables the kernel's restart, so CRIU
// rewinds at dump time (ActRewind), turns ERESTART_RESTARTBLOCK into EINTR because
// restart_block is kernel-private (ActEINTR), or has nothing to do (ActNone; always on arm64,
// whose kernel rewound before the stop, and on ppc64le when the norestart flag is set).
func (s RestartState) Restore() Action {
	if !s.pending() || s.Arch == ARM64 {
		return ActNone
	}
	if s.Errno == ERESTART_RESTARTBLOCK {
		return ActEINTR
	}
	return ActRewind
}
