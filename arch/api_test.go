package arch

import "github.com/crashtui/crashtui/sessions"

// Compile-time check of the API other packages are coded against (the arch task brief): a
// change of any of these signatures breaks this file before it breaks tracer or views.
var (
	_ func() Arch                                    = Host
	_ func(Regs) uint64                              = Regs.PC
	_ func(Regs) uint64                              = Regs.SP
	_ func(*Regs, uint64)                            = (*Regs).SetPC
	_ func(Regs) Regs                                = Regs.Clone
	_ func(Regs) []NamedReg                          = Regs.Named
	_ func(Regs, []byte) RestartState                = Decode
	_ func(RestartState, Handler) Action             = RestartState.OnResume
	_ func(RestartState) Action                      = RestartState.Restore
	_ func(RestartState, Handler) string             = RestartState.Explain
	_ func(Regs, RestartState, sessions.Policy) Regs = ApplyPolicy
	_ func(Arch, int) string                         = SyscallName
	_ func(Arch, string) (int, bool)                 = SyscallNumber
	_ func(int) string                               = ErrnoName
	_ func(Regs, uint64, int, ...uint64) Regs        = SetupSyscall
	_ func(Regs) (int64, int)                        = SyscallResult
	_ func(Regs, []byte) Regs                        = ResumeRegs
	_ func(Regs, uint64, uint64) ([]byte, error)     = Guard
	_ func(Arch, uint64, uint64) bool                = GuardReaches
	_ func(Regs) Regs                                = InjectionRestore
	_ func(Arch) uint64                              = RedZone
	_ func(Arch, []byte, uint64, int) []Inst         = Disasm
	_                                                = RestartState{Arch: AMD64, InSyscall: true, Nr: 0, Syscall: "", Args: [6]uint64{}, Insn: "", InsnLen: 2, Trap: 0, Ret: 0, Errno: 0, Code: "", AlreadyRestarted: false, Note: ""}
	_                                                = Inst{PC: 0, Len: 0, Text: "", Bytes: nil}
	_                                                = NamedReg{Name: "", Value: 0}
	_                                                = []Arch{AMD64, ARM64, PPC64LE}
	_                                                = []Handler{NoHandler, HandlerRestart, HandlerNoRestart}
	_                                                = []Action{ActRestart, ActRestartSyscall, ActEINTR, ActNone, ActRewind}
	_                                                = []sessions.Policy{sessions.PolicyCorrect, sessions.PolicyNaive, sessions.PolicyNone}
)
