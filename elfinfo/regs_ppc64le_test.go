//go:build linux

package elfinfo

import "syscall"

// startRegs are the registers Unwind starts from in ppc64le's PtraceRegs (user_pt_regs):
// nip, r1, r31, link.
func startRegs(r *syscall.PtraceRegs) (pc, sp, fp, lr uint64) {
	return r.Nip, r.Gpr[1], r.Gpr[31], r.Link
}

// cStart is the outermost frame of a C program's main thread: glibc's powerpc64 _start
// branches (b, not bl) to __libc_start_main with LR cleared, so that is the first frame, as
// gdb shows it too.
const cStart = "__libc_start_main"
