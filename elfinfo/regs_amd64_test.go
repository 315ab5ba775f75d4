//go:build linux

package elfinfo

import "syscall"

// startRegs are the registers Unwind starts from in amd64's PtraceRegs (no link register).
func startRegs(r *syscall.PtraceRegs) (pc, sp, fp, lr uint64) { return r.Rip, r.Rsp, r.Rbp, 0 }

// cStart is the outermost frame of a C program's main thread: glibc's _start.
const cStart = "_start"
