package tracer

import (
	"encoding/binary"
	"fmt"
)

// Siginfo is the part of a siginfo_t the features use.
type Siginfo struct {
	Signo, Errno, Code int32
	Addr               uint64 // si_addr for faults
	PID, UID           int32  // sender for si_code <= 0
}

// decodeSiginfo reads the 128-byte siginfo_t of a 64-bit arch.
func decodeSiginfo(buf []byte) Siginfo {
	le := binary.LittleEndian
	si := Siginfo{Signo: int32(le.Uint32(buf[0:])), Errno: int32(le.Uint32(buf[4:])), Code: int32(le.Uint32(buf[8:]))}
	si.Addr = le.Uint64(buf[16:])
	si.PID, si.UID = int32(le.Uint32(buf[16:])), int32(le.Uint32(buf[20:]))
	return si
}

// UserSent is true for kill/tkill/sigqueue (si_code <= 0, include/uapi/asm-generic/siginfo.h).
func (si Siginfo) UserSent() bool { return si.Code <= 0 }

// SigCodeName names si_code for the fatal signals (include/uapi/asm-generic/siginfo.h).
func SigCodeName(sig int, code int32) string {
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
	if n := sigCodeNames[sig]; code >= 1 && int(code) <= len(n) {
		return n[code-1]
	}
	return fmt.Sprintf("code %d", code)
}

var sigCodeNames = map[int][]string{
	11: {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR"},
	7:  {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"},
	8:  {"FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", "FPE_FLTUNK", "FPE_CONDTRAP"},
	4:  {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"},
	5:  {"TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF"},
	31: {"SYS_SECCOMP", "SYS_USER_DISPATCH"},
}
