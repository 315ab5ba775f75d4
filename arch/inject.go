package arch

// Syscall injection (tracer/inject.go): a thread held at an interrupt stop is pointed at a
// guard (guard.go) whose first instruction is the syscall, with SetupSyscall; it runs the call
// between its syscall-entry and syscall-exit stops (PTRACE_SYSCALL), SyscallResult decodes what
// the call returned, and InjectionRestore is what is written back afterwards.

// SetupSyscall returns orig with the pc at guard (the address of the guard's syscall
// instruction), the syscall number and up to six arguments loaded, and the thread's pending
// restart cancelled so that resuming into the guard cannot rewind it (compel
// parasite_setup_regs):
//
//   - amd64: rax=nr, rdi rsi rdx r10 r8 r9, orig_rax=-1, TF and DF cleared (IF is not writable
//     through ptrace).
//   - ppc64le: r0=nr, r3..r8, orig_gpr3=arg0, r12=nip (ELFv2 entry convention, as compel), trap=0,
//     CR0.SO cleared.
//   - arm64: x8=nr, x0..x5. Moving the pc is itself what cancels arm64's pending fix-ups
//     (do_signal skips them when the debugger changed the pc).
//
// Arguments beyond six are ignored; missing ones are 0.
func SetupSyscall(orig Regs, guard uint64, nr int, args ...uint64) Regs {
	r := orig.Clone()
	var a [6]uint64
	copy(a[:], args)
	r.SetPC(guard)
	switch r.Arch {
	case AMD64:
		const tf, df = 0x100, 0x400
		r.set(amd64RAX, uint64(nr))
		r.set(amd64OrigRAX, ^uint64(0))
		for i, idx := range []int{amd64RDI, amd64RSI, amd64RDX, amd64R10, amd64R8, amd64R9} {
			r.set(idx, a[i])
		}
		r.set(amd64EFLAGS, r.word(amd64EFLAGS)&^(tf|df))
	case PPC64LE:
		r.set(ppcR0, uint64(nr))
		for i := range a {
			r.set(ppcR3+i, a[i])
		}
		r.set(ppcOrigR3, a[0])
		r.set(ppcR12, guard)
		r.set(ppcTRAP, r.word(ppcTRAP)&ppcTrapNoRstrt) // vector 0; the kernel keeps its flag bits

		r.set(ppcCCR, r.word(ppcCCR)&^ppcCR0SO)
	case ARM64:
		r.set(arm64X8, uint64(nr))
		for i := range a {
			r.set(arm64X0+i, a[i])
		}
	}
	return r
}

// SyscallResult decodes the result of an injected syscall from the registers at its
// syscall-exit stop. ret is the raw Linux convention (-errno on failure); errno is 0 on success.
// amd64/arm64: rax/x0 in -4095..-1 is -errno. ppc64le: the guard uses sc rather than scv (so it
// also works on POWER8 and kernels before 5.9), whose error convention is CR0.SO set with r3 a
// positive errno; compel itself returns r3 without looking at SO, so check it here.
func SyscallResult(after Regs) (ret int64, errno int) {
	const maxErrno = 4095
	switch after.Arch {
	case AMD64, ARM64:
		idx := amd64RAX
		if after.Arch == ARM64 {
			idx = arm64X0
		}
		ret = int64(after.word(idx))
		if ret >= -maxErrno && ret <= -1 {
			errno = int(-ret)
		}
	case PPC64LE:
		r3 := after.word(ppcR3)
		if after.word(ppcCCR)&ppcCR0SO != 0 {
			return -int64(r3), int(r3)
		}
		ret = int64(r3)
	}
	return ret, errno
}

// RedZone is how many bytes below the stack pointer the ABI lets a leaf function use without
// moving it; scratch memory written into the tracee goes below it (amd64 128, ppc64le ELFv2 288,
// arm64 none).
func RedZone(a Arch) uint64 {
	switch a {
	case AMD64:
		return 128
	case PPC64LE:
		return 288
	}
	return 0
}

// InjectionRestore is what to write back after injected syscalls to put the thread back as it
// was held. It is the saved snapshot, except on ppc64le when the saved trap carries the
// kernel's "restart already applied" flag (trap & 0x11): ptrace writes only the vector bits of
// trap (set_user_trap keeps the current flags, by then those of the injection's own stop), so
// the flag would be lost and check_syscall_restart could rewind a second time
// (tools/testing/selftests/powerpc/signal/sig_sc_double_restart.c). Writing vector 0 there
// keeps the same meaning: no restart.
func InjectionRestore(saved Regs) Regs {
	if saved.Arch != PPC64LE || saved.word(ppcTRAP)&ppcTrapNoRstrt == 0 {
		return saved
	}
	r := saved.Clone()
	r.set(ppcTRAP, saved.word(ppcTRAP)&ppcTrapNoRstrt)
	return r
}

// SyscallIP is the instruction_pointer the kernel reports in struct seccomp_data for a
// syscall instruction at addr (the guard's first): instruction_pointer(regs) at syscall
// entry, the address after the instruction (rip after the 2-byte syscall; pc after svc and
// nip after sc, 4 bytes each). A filter that looks at it sees this value.
func SyscallIP(a Arch, addr uint64) uint64 {
	if a == AMD64 {
		return addr + 2
	}
	return addr + 4
}
