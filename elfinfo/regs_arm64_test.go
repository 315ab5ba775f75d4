//go:build linux

package elfinfo

import "syscall"

// startRegs are the registers Unwind starts from in arm64's PtraceRegs (user_pt_regs):
// pc, sp, x29, x30.
func startRegs(r *syscall.PtraceRegs) (pc, sp, fp, lr uint64) {
	return r.Pc, r.Sp, r.Regs[29], r.Regs[30]
}

// cStart is the outermost frame of a C program's main thread: glibc's _start, which clears
// x29 and x30 (its CFI says LR is undefined).
const cStart = "_start"
