package elfinfo

import (
	"encoding/binary"
	"strings"
)

// Signal frames. To run a handler the kernel (setup_rt_frame in arch/*/kernel/signal*.c)
// pushes an rt_sigframe holding the registers of the code the signal interrupted (a
// ucontext's mcontext) and enters the handler as if called from a trampoline that makes
// rt_sigreturn: glibc's __restore_rt or the Go runtime's sigreturn__sigaction on amd64
// (SA_RESTORER), the vDSO's __kernel_rt_sigreturn on arm64 and __kernel_sigtramp_rt64 on
// ppc64le (glibc and the Go runtime give none there). The trampoline is not a call: the frame
// above it is the interrupted code, at the exact pc the signal hit, with every register it had.

// sigframeABI is where one arch's kernel leaves the interrupted registers, relative to the
// stack pointer the trampoline starts with (what the handler's return left: its CFA).
type sigframeABI struct {
	regs uint64    // offset of the saved general registers from that sp
	slot []regSlot // where each saved register is among them
	pc   uint64    // index of the interrupted pc among them
	// tramp are the trampoline's instructions (arm64, ppc64le): it is recognised by them, as
	// gdb's tramp_frame and libgcc's linux-unwind.h do, since the vDSO is not a file elfinfo
	// parses. nil on amd64, where glibc's CFI and Go's symbols say it (isSigreturn).
	tramp []uint32
	// popped is how much the trampoline's first instruction raises sp (ppc64le's addi r1,r1,128
	// pops the handler's dummy caller frame), for a thread stopped past it.
	popped uint64
	// call is the instruction just before the trampoline that calls the handler, where the
	// kernel enters a handler and a thread stopped before its handler runs is, with the
	// trampoline's sp (ppc64le's bctrl: __kernel_start_sigtramp_rt64, or tramp[0] of the
	// frame's own trampoline). 0 where the kernel enters the handler itself.
	call uint32
}

var sigframeABIs = map[string]*sigframeABI{
	// The handler's return popped the rt_sigframe's pretcode: the ucontext is at sp, its
	// uc_mcontext.gregs (sys/ucontext.h: REG_R8 ... REG_RIP) 40 bytes in.
	"amd64": {
		regs: 40,
		slot: []regSlot{
			{8, 0}, {9, 1}, {10, 2}, {11, 3}, {12, 4}, {13, 5}, {14, 6}, {15, 7},
			{5, 8}, {4, 9}, {6, 10}, {3, 11}, {1, 12}, {0, 13}, {2, 14}, {7, 15},
		},
		pc: 16,
	},
	// setup_return sets sp to the rt_sigframe { struct siginfo info (128 bytes); struct
	// ucontext uc; } and x30 to the trampoline. uc_mcontext is 176 bytes into the ucontext
	// (uc_flags, uc_link, uc_stack, a 1024-bit uc_sigmask = 168, aligned to 16 by sigcontext's
	// __reserved); sigcontext is fault_address, regs[31] (x0-x30), sp, pc, pstate.
	// __kernel_rt_sigreturn is mov x8, #139 (__NR_rt_sigreturn); svc #0.
	"arm64": {
		regs:  128 + 176 + 8,
		slot:  gprSlots(31, regSlot{31, 31}), // x0-x30, sp
		pc:    32,
		tramp: []uint32{0xd2801168, 0xd4000001},
	},
	// handle_rt_signal64 puts the rt_sigframe (the ucontext first: rt_sigreturn reads it at
	// r1) __SIGNAL_FRAMESIZE (128) above the handler's r1, a dummy caller frame whose back
	// chain is the interrupted r1. uc_mcontext is 168 bytes into the ucontext (uc_flags,
	// uc_link, uc_stack, uc_sigmask, __unused[15]); its gp_regs 64 bytes into sigcontext
	// (_unused[4], signal, _pad0, handler, oldmask, regs): r0-r31, then PT_NIP (32) and
	// PT_LNK (36); the vDSO's own CFI reads the same words (PTREGS 128+168+56 points at them).
	// The kernel enters the handler through the vDSO's __kernel_start_sigtramp_rt64, a bctrl
	// to it (the nip a thread stopped before its handler runs has), which returns to the
	// trampoline right after: addi r1,r1,128; li r0,172 (__NR_rt_sigreturn); sc, the vDSO's
	// __kernel_sigtramp_rt64; setup_trampoline writes the same four words into the frame
	// when there is no vDSO.
	"ppc64le": {
		regs:   128 + 168 + 64,
		slot:   gprSlots(32, regSlot{65, 36}), // r0-r31, LR
		pc:     32,
		tramp:  []uint32{0x38210080, 0x380000ac, 0x44000002},
		popped: 128,
		call:   0x4e800421,
	},
}

// regSlot is a saved register: its DWARF number, and its index among the saved words.
type regSlot struct{ dwarf, i uint64 }

// gprSlots are n general registers saved in order, each at the index of its DWARF number
// (arm64's x0-x30, ppc64le's r0-r31), then the others.
func gprSlots(n uint64, others ...regSlot) []regSlot {
	out := make([]regSlot, 0, n+uint64(len(others)))
	for i := range n {
		out = append(out, regSlot{i, i})
	}
	return append(out, others...)
}

// sigcontext replaces regs with those the signal interrupted, from the rt_sigframe of the
// trampoline started with stack pointer sp, and returns the interrupted pc.
func sigcontext(arch string, regs map[uint64]uint64, sp uint64, mem MemReader) (uint64, bool) {
	abi := sigframeABIs[arch]
	if abi == nil {
		return 0, false
	}
	n := abi.pc + 1
	for _, s := range abi.slot {
		n = max(n, s.i+1)
	}
	b := make([]byte, 8*n)
	if err := mem(sp+abi.regs, b); err != nil {
		return 0, false
	}
	clear(regs)
	for _, s := range abi.slot {
		regs[s.dwarf] = binary.LittleEndian.Uint64(b[8*s.i:])
	}
	return binary.LittleEndian.Uint64(b[8*abi.pc:]), true
}

// goSigtramps are the Go runtime's signal handler entries (cgoSigtramp with cgo, which goes
// on to sigtramp by a jump): the kernel's rt_sigframe is at their CFA.
var goSigtramps = map[string]bool{"runtime.sigtramp": true, "runtime.cgoSigtramp": true}

// goInjected are the functions the Go runtime's signal handler makes a thread call as if the
// code the signal interrupted had called them at the pc it was interrupted at
// (sigctxt.pushCall for asyncPreempt and debugCallV2, preparePanic for sigpanic): the frame
// below them is that code at an exact pc, not at a return address (runtime's traceback:
// "injectedCall"). A goroutine preempted at a function's first instruction is in that
// function, not in the one before it.
var goInjected = map[string]bool{"runtime.asyncPreempt": true, "runtime.sigpanic": true, "runtime.debugCallV2": true}

// goInjectedSlot is, on the link-register arches, what the handler took off the stack pointer
// before the injected call, beyond the call itself: a slot where it saved the interrupted
// code's link register, which the call overwrote with the interrupted pc (runtime's
// traceback: alignUp(sys.MinFrameSize, sys.StackAlign)). The interrupted code's stack
// pointer is the injected function's CFA plus the slot, and its link register the slot's
// first word. amd64 pushes the pc as a call does, and has no slot.
var goInjectedSlot = map[string]uint64{"arm64": 16, "ppc64le": 32}

// goInjectedCaller turns the registers a CFI step out of an injected call gave (regs, at its
// CFA) into the interrupted code's: its stack pointer past the handler's slot and its link
// register from it.
func goInjectedCaller(arch string, regs map[uint64]uint64, ur unwindRegs, mem MemReader) bool {
	slot := goInjectedSlot[arch]
	if slot == 0 {
		return true
	}
	cfa := regs[ur.sp]
	lr, err := readWord(mem, cfa)
	if err != nil {
		return false
	}
	regs[ur.lr], regs[ur.sp] = lr, cfa+slot
	return true
}

// sigreturnSyms are signal trampolines with no signal-frame CFI: the Go runtime's (a Go
// program without cgo installs its handlers with its own restorer on amd64).
var sigreturnSyms = map[string]bool{"runtime.sigreturn__sigaction": true, "runtime.sigreturn": true}

// isSigreturn says whether a handler's return address pc is a signal trampoline, where the
// kernel's rt_sigframe is: on amd64 its FDE's CIE says so with the 'S' augmentation, as
// glibc's __restore_rt's does (libgcc's unwinder and gdb read it so), or it is Go's; on
// arm64 and ppc64le its instructions say so.
func (r *Resolver) isSigreturn(pid int, maps []Mapping, arch string, pc uint64, mem MemReader) bool {
	if abi := sigframeABIs[arch]; abi != nil && abi.tramp != nil {
		return r.trampAt(pid, maps, abi, pc, mem)
	}
	mod, v := r.moduleAt(pid, maps, pc, false)
	if mod == nil {
		return false
	}
	if fde, err := mod.frames().FDEForPC(v); err == nil && fde.CIE != nil && strings.ContainsRune(fde.CIE.Augmentation, 'S') {
		return true
	}
	s, ok := mod.d.funcForVaddr(v)
	return ok && s.value == v && sigreturnSyms[strings.TrimSuffix(s.name, ".abi0")] // assembly's ABI suffix
}

// trampAt says whether abi's trampoline starts at pc: in the vDSO (or wherever executable
// memory outside files has it), or in a file (a libc's own restorer), memoized there by
// link-time address, since every frame's return address is asked about.
func (r *Resolver) trampAt(pid int, maps []Mapping, abi *sigframeABI, pc uint64, mem MemReader) bool {
	m, ok := FindMapping(maps, pc)
	if !ok || pc%4 != 0 || len(m.Perms) < 3 || m.Perms[2] != 'x' {
		return false
	}
	if !m.IsFile() {
		is, _ := abi.trampIn(pc, mem)
		return is
	}
	mod, v := r.moduleAt(pid, maps, pc, false)
	if mod == nil {
		return false
	}
	if is, ok := mod.tramps[v]; ok {
		return is
	}
	is, read := abi.trampIn(pc, mem)
	if read {
		if mod.tramps == nil || len(mod.tramps) > 1<<14 {
			mod.tramps = map[uint64]bool{}
		}
		mod.tramps[v] = is
	}
	return is
}

// trampIn says whether the words at pc are abi's trampoline, and whether they could be read.
func (abi *sigframeABI) trampIn(pc uint64, mem MemReader) (is, read bool) {
	b := make([]byte, 4*len(abi.tramp))
	if err := mem(pc, b); err != nil {
		return false, false
	}
	for i, w := range abi.tramp {
		if binary.LittleEndian.Uint32(b[4*i:]) != w {
			return false, true
		}
	}
	return true, true
}

// inTrampoline says whether a thread stopped at pc with stack pointer sp is inside the
// trampoline (its handler has returned, rt_sigreturn is not made yet) or at the call of its
// handler just before it (ppc64le), and gives the stack pointer the trampoline starts with.
func (r *Resolver) inTrampoline(pid int, maps []Mapping, arch string, pc, sp uint64, mem MemReader) (uint64, bool) {
	abi := sigframeABIs[arch]
	if abi == nil {
		return 0, false
	}
	if abi.tramp == nil {
		// amd64: __restore_rt's FDE covers both its instructions, and neither moves rsp.
		return sp, r.isSigreturn(pid, maps, arch, pc, mem)
	}
	for k := range uint64(len(abi.tramp)) {
		if r.trampAt(pid, maps, abi, pc-4*k, mem) {
			if k > 0 {
				sp -= abi.popped
			}
			return sp, true
		}
	}
	if abi.call != 0 && r.trampAt(pid, maps, abi, pc+4, mem) {
		var b [4]byte
		if mem(pc, b[:]) == nil && binary.LittleEndian.Uint32(b[:]) == abi.call {
			return sp, true
		}
	}
	return 0, false
}

// goSigreturn is, for a frame in the Go runtime's signal handler entry (its canonical frame
// address cfa, regs its registers, sp among them), the trampoline it returns to and the stack
// pointer that trampoline starts with, where the kernel's rt_sigframe is. Go's CFI does not
// say: sigtramp is TOPFRAME on amd64 and arm64 (no return address), and on ppc64le it saves
// LR in its caller's frame as the ELF ABI does, not where Go's CFI says a Go function does.
// live: the frame's pc is where its thread is (the innermost frame, or one a signal
// interrupted), so a link register not yet saved is in regs.
func (r *Resolver) goSigreturn(pid int, maps []Mapping, arch string, cfa uint64, regs map[uint64]uint64, live bool, mem MemReader) (ret, sp uint64, ok bool) {
	ur := dwarfRegs[arch]
	var cands []uint64
	switch arch {
	case "amd64":
		// The rt_sigframe's pretcode (the trampoline) is just below the CFA, its ucontext at it.
		if ret, err := readWord(mem, cfa-8); err == nil {
			cands = append(cands, ret)
		}
	case "arm64":
		// sigtramp is entered with sp at the rt_sigframe (the CFA) and LR at the trampoline;
		// a Go prologue saves LR at the bottom of the frame it allocates (obj7.go).
		if regs[ur.sp] < cfa {
			if ret, err := readWord(mem, regs[ur.sp]); err == nil {
				cands = append(cands, ret)
			}
		}
	case "ppc64le":
		// STACK_AND_SAVE_HOST_TO_GO_ABI saves LR at 16 of the caller's frame: the kernel's
		// dummy frame, at the CFA.
		if ret, err := readWord(mem, cfa+16); err == nil {
			cands = append(cands, ret)
		}
	}
	if lr, known := regs[ur.lr]; live && ur.hasLR && known {
		cands = append(cands, lr)
	}
	for _, ret := range cands {
		if r.isSigreturn(pid, maps, arch, ret, mem) {
			return ret, cfa, true
		}
	}
	return 0, 0, false
}
