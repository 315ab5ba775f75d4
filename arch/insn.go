package arch

// RestartInsnAt says where the syscall instruction that Decode wants to see lies for a thread
// stopped at pc, and how long it is: amd64 the 2 bytes at rip-2 (syscall 0f 05, int $0x80
// cd 80); ppc64le the word at nip-4 (sc 0x44000002, scv 0 0x44000001); arm64 the word at pc
// itself, because arm64 rewinds an interrupted svc before the stop (arch/arm64/kernel/signal.c
// do_signal).
func RestartInsnAt(a Arch, pc uint64) (addr uint64, n int) {
	switch a {
	case AMD64:
		return pc - 2, 2
	case PPC64LE:
		return pc - 4, 4
	case ARM64:
		return pc, 4
	}
	return pc, 0
}
