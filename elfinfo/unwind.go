package elfinfo

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// MemReader reads tracee memory (process_vm_readv or /proc/PID/mem in the caller).
type MemReader func(addr uint64, buf []byte) error

// Frame is one unwound frame. PC is the runtime PC (a return address for callers); Location of
// a caller is looked up at PC-1 (inside the call instruction) so that function and line are
// the call's, as gdb does, with Offset/FuncOff still describing PC itself.
type Frame struct {
	PC uint64
	Location
	// TailCalls are functions this frame's call entered that left by a jump (a tail call)
	// towards the function of the frame below, innermost first, each at the line of its
	// jump. They have no frame on the stack; gdb shows them from DWARF call sites
	// (DW_TAG_call_site with DW_AT_call_tail_call), between the two frames.
	TailCalls []SourceFrame
	// Signal marks the kernel's signal frame: PC is the signal trampoline a handler returns
	// to (glibc's __restore_rt, the vDSO's on arm64 and ppc64le: sigframe.go), and the next
	// frame is the code the signal interrupted, at the exact pc it was interrupted at (not a
	// return address).
	Signal bool
}

// SourceFrames are the frames gdb shows for f, innermost first: its tail calls, then its
// location's (Location.SourceFrames); a signal frame is gdb's "<signal handler called>".
func (f Frame) SourceFrames() []SourceFrame {
	if f.Signal {
		return []SourceFrame{{Function: SignalFrameName}}
	}
	if len(f.TailCalls) == 0 {
		return f.Location.SourceFrames()
	}
	return append(slices.Clone(f.TailCalls), f.Location.SourceFrames()...)
}

// SignalFrameName is how gdb shows a signal frame.
const SignalFrameName = "<signal handler called>"

// DWARF register numbers of the registers the unwinder tracks (psABI of each arch).
type unwindRegs struct {
	sp, fp, lr uint64 // lr: the return-address column when it is a register
	hasLR      bool
}

var dwarfRegs = map[string]unwindRegs{
	"amd64":   {sp: 7, fp: 6},
	"arm64":   {sp: 31, fp: 29, lr: 30, hasLR: true},
	"ppc64le": {sp: 1, fp: 31, lr: 65, hasLR: true},
}

// frames returns the module's CFI, parsed on first use (.eh_frame for C, .debug_frame for Go
// and some -g builds; link-time addresses since staticBase is 0).
func (mod *module) frames() frame.FrameDescriptionEntries {
	if mod.fdesLoaded {
		return mod.fdes
	}
	mod.fdesLoaded = true
	parse := func(data []byte, ehAddr uint64) (fdes frame.FrameDescriptionEntries) {
		defer func() {
			if recover() != nil { // corrupt CFI: unwind falls back to frame pointers
				fdes = nil
			}
		}()
		fdes, _ = frame.Parse(data, mod.d.order, 0, mod.d.ptrSize, ehAddr)
		return fdes
	}
	var all frame.FrameDescriptionEntries
	if len(mod.d.ehFrame) > 0 && mod.d.ehFrameAddr > 0 {
		all = all.Append(parse(mod.d.ehFrame, mod.d.ehFrameAddr))
	}
	if len(mod.d.debugFrame) > 0 {
		all = all.Append(parse(mod.d.debugFrame, 0))
	}
	mod.fdes = all
	return all
}

// cfiStep unwinds one frame with CFI. regs holds known register values by DWARF number and is
// updated to the caller's; it returns the caller's PC.
func (r *Resolver) cfiStep(pid int, maps []Mapping, pc uint64, caller bool, regs map[uint64]uint64, ur unwindRegs, mem MemReader) (uint64, error) {
	ctx, cfa, err := r.cfa(pid, maps, pc, caller, regs)
	if err != nil {
		return 0, err
	}
	next := map[uint64]uint64{}
	for reg, val := range regs {
		next[reg] = val // callee-saved unless a rule says otherwise
	}
	for reg, rule := range ctx.Regs {
		switch rule.Rule {
		case frame.RuleUndefined:
			delete(next, reg)
		case frame.RuleOffset:
			val, err := readWord(mem, uint64(int64(cfa)+rule.Offset))
			if err != nil {
				return 0, fmt.Errorf("pc %#x: restore reg %d: %w", pc, reg, err)
			}
			next[reg] = val
		case frame.RuleValOffset:
			next[reg] = uint64(int64(cfa) + rule.Offset)
		case frame.RuleRegister:
			if val, ok := regs[rule.Reg]; ok {
				next[reg] = val
			} else {
				delete(next, reg)
			}
		case frame.RuleSameVal:
		default:
			delete(next, reg) // expressions: not evaluated
		}
	}
	ra, ok := next[ctx.RetAddrReg]
	if !ok {
		if rule, set := ctx.Regs[ctx.RetAddrReg]; set && rule.Rule == frame.RuleUndefined {
			return 0, nil // return address undefined: outermost frame (_start, clone)
		}
		// Still in a register this walk was not given (a leaf's link register, read from
		// /proc without stopping the thread): not the stack's end.
		return 0, fmt.Errorf("pc %#x: return address in register %d, which is not known", pc, ctx.RetAddrReg)
	}
	next[ur.sp] = cfa // the CFA is the caller's SP on every supported arch
	clear(regs)
	for reg, val := range next {
		regs[reg] = val
	}
	return ra, nil
}

// cfa returns the CFI rules at pc (a return address when caller is set) and the canonical
// frame address they give with regs.
func (r *Resolver) cfa(pid int, maps []Mapping, pc uint64, caller bool, regs map[uint64]uint64) (*frame.FrameContext, uint64, error) {
	lookup := pc
	if caller {
		lookup-- // a return address may be past the end of the calling function's FDE
	}
	m, ok := FindMapping(maps, lookup)
	if !ok || !m.IsFile() {
		return nil, 0, fmt.Errorf("pc %#x: not in a file mapping", pc)
	}
	mod, err := r.module(pid, m)
	if err != nil {
		return nil, 0, err
	}
	v, ok := mod.d.fileOffToVaddr(lookup - m.Start + m.Offset)
	if !ok {
		return nil, 0, fmt.Errorf("pc %#x: not in a PT_LOAD of %s", pc, m.Path)
	}
	ctx, err := mod.frameContext(v)
	if err != nil {
		return nil, 0, err
	}
	if ctx.CFA.Rule != frame.RuleCFA {
		return nil, 0, fmt.Errorf("pc %#x: CFA rule %v not supported", pc, ctx.CFA.Rule)
	}
	base, ok := regs[ctx.CFA.Reg]
	if !ok {
		return nil, 0, fmt.Errorf("pc %#x: CFA register %d unknown", pc, ctx.CFA.Reg)
	}
	return ctx, uint64(int64(base) + ctx.CFA.Offset), nil
}

// frameContext is the CFI rule set at link-time address v, memoized per module: the threads
// of a job sit at the same few pcs, and executing the CIE and FDE programs for each of them
// in every sample was most of what a stack sample allocated.
func (mod *module) frameContext(v uint64) (*frame.FrameContext, error) {
	if ctx, ok := mod.cfi[v]; ok {
		return ctx, nil
	}
	fde, err := mod.frames().FDEForPC(v)
	if err != nil {
		return nil, err
	}
	ctx, err := establish(fde, v)
	if err != nil {
		return nil, err
	}
	if mod.cfi == nil || len(mod.cfi) > 1<<14 {
		mod.cfi = map[uint64]*frame.FrameContext{}
	}
	mod.cfi[v] = ctx
	return ctx, nil
}

func establish(fde *frame.FrameDescriptionEntry, pc uint64) (ctx *frame.FrameContext, err error) {
	defer func() {
		if p := recover(); p != nil {
			ctx, err = nil, fmt.Errorf("cfi at %#x: %v", pc, p)
		}
	}()
	return fde.EstablishFrame(pc)
}

func readWord(mem MemReader, addr uint64) (uint64, error) {
	var b [8]byte
	if err := mem(addr, b[:]); err != nil {
		return 0, fmt.Errorf("read %#x: %w", addr, err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// fpStep unwinds one frame by the frame-pointer chain (or, on the first frame of arm64 and
// ppc64le, the link register).
func fpStep(arch string, first bool, regs map[uint64]uint64, ur unwindRegs, mem MemReader) (uint64, bool) {
	sp := regs[ur.sp]
	switch arch {
	case "amd64", "arm64":
		if first && ur.hasLR { // a leaf may not have saved LR or set up FP yet
			if lr, ok := regs[ur.lr]; ok && lr != 0 {
				delete(regs, ur.lr)
				return lr, true
			}
		}
		fp, ok := regs[ur.fp]
		if !ok || fp == 0 || fp < sp {
			return 0, false
		}
		savedFP, err1 := readWord(mem, fp)
		ra, err2 := readWord(mem, fp+8)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		regs[ur.fp] = savedFP
		regs[ur.sp] = fp + 16
		delete(regs, ur.lr)
		return ra, true
	case "ppc64le":
		if first {
			if lr, ok := regs[ur.lr]; ok && lr != 0 {
				delete(regs, ur.lr)
				return lr, true
			}
		}
		// ELFv2 back chain: caller's SP at 0(r1), LR save slot at 16 of the caller's frame.
		back, err := readWord(mem, sp)
		if err != nil || back <= sp {
			return 0, false
		}
		ra, err := readWord(mem, back+16)
		if err != nil {
			return 0, false
		}
		regs[ur.sp] = back
		return ra, true
	}
	return 0, false
}

// Unwind walks the stack of a stopped thread: CFI where the module has it, frame pointers
// otherwise. arch is "amd64" (complete), "arm64" or "ppc64le" (best effort; lr gives the first
// caller of a leaf). It crosses the kernel's signal frames (sigframe.go) on all three. It
// returns at most max frames, the first being pc itself.
func (r *Resolver) Unwind(pid int, maps []Mapping, pc, sp, fp, lr uint64, arch string, mem MemReader, max int) []Frame {
	ur, ok := dwarfRegs[arch]
	if !ok || max <= 0 {
		return nil
	}
	regs := map[uint64]uint64{ur.sp: sp, ur.fp: fp}
	if ur.hasLR {
		regs[ur.lr] = lr
	}
	frames, _ := r.walk(pid, maps, pc, regs, ur, arch, mem, max, true)
	return frames
}

// UnwindBlocked unwinds a thread that is not stopped, blocked in a syscall, from the only
// registers /proc/TID/syscall gives: its user pc and stack pointer. It uses CFI alone (the
// frame pointer and the link register are unknown, so no frame-pointer step is tried), and
// says whether the walk is complete: it reached a thread's outermost frame or the end CFI
// marks (return address undefined). Where a rule needs a register /proc does not give (a
// frame-pointer CFA, a leaf whose return address is still in the link register) it stops
// short: complete is false, and the caller must stop the thread to read it (kernel.md:
// "Reading without stopping"). The thread's memory is read as it is; the caller checks the
// thread did not run meanwhile.
func (r *Resolver) UnwindBlocked(pid int, maps []Mapping, pc, sp uint64, arch string, mem MemReader, max int) (frames []Frame, complete bool) {
	ur, ok := dwarfRegs[arch]
	if !ok || max <= 0 {
		return nil, false
	}
	return r.walk(pid, maps, pc, map[uint64]uint64{ur.sp: sp}, ur, arch, mem, max, false)
}

// walk is Unwind's loop from pc with the registers regs knows; fpFallback allows the
// frame-pointer step where CFI fails. ended says the walk stopped at the stack's end (an
// outermost frame, an undefined return address), not for want of a rule, a register or
// memory.
func (r *Resolver) walk(pid int, maps []Mapping, pc uint64, regs map[uint64]uint64, ur unwindRegs, arch string, mem MemReader, max int, fpFallback bool) (_ []Frame, ended bool) {
	var frames []Frame
	exact := true // pc is where the thread is, not a return address
	// crossSignal appends the signal frame of trampoline tramp, which starts with stack
	// pointer tsp, then the frame the signal interrupted, whose registers replace regs.
	crossSignal := func(tramp, tsp uint64) bool {
		frames = append(frames, Frame{PC: tramp, Location: r.Locate(pid, maps, tramp), Signal: true})
		ipc, ok := sigcontext(arch, regs, tsp, mem)
		if !ok || ipc == 0 || len(frames) >= max {
			return false
		}
		pc, exact = ipc, true
		frames = append(frames, Frame{PC: pc, Location: r.Locate(pid, maps, pc)})
		return true
	}
	if tsp, ok := r.inTrampoline(pid, maps, arch, pc, regs[ur.sp], mem); ok {
		// Stopped in the trampoline itself: the handler has returned, and the kernel's frame
		// is still there (rt_sigreturn is not made yet).
		if !crossSignal(pc, tsp) {
			return r.finishUnwind(pid, maps, frames), false
		}
	} else {
		frames = []Frame{{PC: pc, Location: r.Locate(pid, maps, pc)}}
	}
	for len(frames) < max {
		prevSP := regs[ur.sp]
		callee := strings.TrimSuffix(frames[len(frames)-1].Function, ".abi0")
		if goSigtramps[callee] {
			// Go's signal handler entry: its CFA is where the kernel's rt_sigframe is, and its
			// CFI does not say where it returns (goSigreturn).
			if _, cfa, err := r.cfa(pid, maps, pc, !exact, regs); err == nil {
				if ret, tsp, ok := r.goSigreturn(pid, maps, arch, cfa, regs, exact, mem); ok {
					if !crossSignal(ret, tsp) {
						break
					}
					continue
				}
			}
		}
		ra, err := r.cfiStep(pid, maps, pc, !exact, regs, ur, mem)
		if err != nil {
			var ok bool
			// The link register is live in the innermost frame and in the one a signal
			// interrupted (the kernel saved it): a leaf may not have saved it.
			if !fpFallback {
				break
			}
			if ra, ok = fpStep(arch, exact, regs, ur, mem); !ok {
				break
			}
		}
		if ra == 0 {
			ended = err == nil // CFI says there is no caller
			break
		}
		injected := err == nil && goInjected[callee]
		if injected && !goInjectedCaller(arch, regs, ur, mem) {
			break
		}
		if regs[ur.sp] < prevSP || (regs[ur.sp] == prevSP && ra == pc) {
			break // a corrupt stack going backwards
		}
		pc, exact = ra, injected
		if injected {
			// The code the runtime's signal handler interrupted, at the pc it was at.
			frames = append(frames, Frame{PC: pc, Location: r.Locate(pid, maps, pc)})
			continue
		}
		if r.isSigreturn(pid, maps, arch, pc, mem) {
			// A handler returns to the trampoline, which is not a call: what called it is the
			// code the signal interrupted, whose registers the kernel saved in the rt_sigframe
			// at the handler's CFA.
			if !crossSignal(pc, regs[ur.sp]) {
				break
			}
			continue
		}
		loc := r.callerLocation(pid, maps, pc)
		frames = append(frames, Frame{PC: pc, Location: loc})
		if outermost[loc.Function] {
			ended = true
			break // a thread's first frame: what is above it is not a caller
		}
	}
	return r.finishUnwind(pid, maps, frames), ended
}

// finishUnwind drops what an unwind read past the stack's end and adds the tail calls.
func (r *Resolver) finishUnwind(pid int, maps []Mapping, frames []Frame) []Frame {
	// Past the outermost real frame an unwinder may read one more "return address" out of
	// whatever the stack holds: a frame outside every file, with no name, at the end of the
	// stack is that, not code.
	for len(frames) > 1 {
		if f := frames[len(frames)-1]; f.Function == "" && garbageModule[f.Module] {
			frames = frames[:len(frames)-1]
			continue
		}
		break
	}
	r.addTailCalls(pid, maps, frames)
	return frames
}

// addTailCalls fills in each frame's TailCalls from the DWARF call sites of its module and
// of the module of the frame below (a call through the PLT into a library that then jumps
// on: the callee is found there by name, as gdb does).
func (r *Resolver) addTailCalls(pid int, maps []Mapping, frames []Frame) {
	var calleeMod *module
	var calleeAt uint64
	for i := range frames {
		mod, v := r.moduleAt(pid, maps, frames[i].PC, !exactPC(frames, i))
		// Calls only: not into a signal frame, nor out of one into the interrupted code.
		call := i > 0 && !frames[i].Signal && !frames[i-1].Signal
		if call && mod != nil && calleeMod != nil && mod.sym != nil && calleeMod.sym != nil {
			frames[i].TailCalls = r.tailCalls(mod, v+1, calleeMod, calleeAt)
		}
		calleeMod, calleeAt = mod, v
	}
}

// exactPC says whether frame i's PC is where its code is (the innermost frame, a signal
// trampoline, the code a signal interrupted, the code Go's runtime made call an injected
// function) rather than a return address.
func exactPC(frames []Frame, i int) bool {
	return i == 0 || frames[i].Signal || frames[i-1].Signal || goInjected[strings.TrimSuffix(frames[i-1].Function, ".abi0")]
}

// moduleAt is the module and link-time address of a frame's pc (of the call before it, for
// a caller's return address), nil when it is in none.
func (r *Resolver) moduleAt(pid int, maps []Mapping, pc uint64, caller bool) (*module, uint64) {
	if caller {
		pc--
	}
	m, ok := FindMapping(maps, pc)
	if !ok || !m.IsFile() {
		return nil, 0
	}
	mod, err := r.module(pid, m)
	if err != nil {
		return nil, 0
	}
	v, ok := mod.d.fileOffToVaddr(pc - m.Start + m.Offset)
	if !ok {
		return nil, 0
	}
	return mod, v
}

// tailCalls returns the frames between a caller (in mod, returning to ra) and its callee
// (in calleeMod, at calleeAt), memoized in the caller's module.
func (r *Resolver) tailCalls(mod *module, ra uint64, calleeMod *module, calleeAt uint64) []SourceFrame {
	key := tailKey{ra, calleeMod, calleeAt}
	if fs, ok := mod.tails[key]; ok {
		return fs
	}
	var pcs []uint64
	chainMod := calleeMod // the module whose functions jumped
	if entry, local, names, ok := mod.sym.CallTarget(ra); ok {
		switch {
		case !local && calleeMod != mod:
			// A call through the PLT into the callee's module, which jumped on there.
			for _, n := range names {
				if v, ok := calleeMod.d.syms[n]; ok {
					pcs = calleeMod.sym.TailChain(v, calleeAt)
					break
				}
			}
		case local && calleeMod == mod:
			pcs = mod.sym.TailChain(entry, calleeAt)
		case local:
			// A call inside the caller's module whose function then jumped, through the PLT,
			// into the callee's: the chain is in the caller's module.
			// The callee's entry from the symbol table: DWARF's innermost function at calleeAt
			// may be code inlined into it.
			var calleeEntry uint64
			if sym, ok := calleeMod.d.funcForVaddr(calleeAt); ok {
				calleeEntry = sym.value
			}
			reaches := func(names []string) bool {
				for _, n := range names {
					if v, ok := calleeMod.d.syms[n]; ok && v == calleeEntry {
						return true
					}
				}
				return false
			}
			if calleeEntry != 0 {
				pcs, chainMod = mod.sym.TailChainOut(entry, reaches), mod
			}
		}
	}
	var fs []SourceFrame
	for _, pc := range pcs {
		// A jump's frame is shown, as a caller's, at the instruction before its pc.
		fl, _ := chainMod.symbolize(pc-1, r.deferLines)
		if fl.known {
			fs = append(fs, SourceFrame{Function: fl.name, File: fl.file, Line: fl.line})
			fs = append(fs, fl.inlined...)
		}
	}
	if mod.tails == nil || len(mod.tails) > 1<<14 {
		mod.tails = map[tailKey][]SourceFrame{}
	}
	mod.tails[key] = fs
	return fs
}

// tailKey is a caller's return address and the callee's pc.
type tailKey struct {
	ra       uint64
	callee   *module
	calleeAt uint64
}

// callerLocation is where a return address is: the call instruction before it is looked up
// (the return address may be the first byte of the next function), and the offsets are of
// the return address itself, as gdb and glibc's backtrace print them.
func (r *Resolver) callerLocation(pid int, maps []Mapping, ra uint64) Location {
	loc := r.Locate(pid, maps, ra-1)
	loc.Offset++
	if loc.Function != "" {
		loc.FuncOff++
	}
	return loc
}

// Relocate looks the frames of an earlier Unwind up again, keeping their pcs: after
// Install, a Deferred resolver's frames get their lines and inlined functions. Only the
// resolver's caches are used, so the process may be gone.
func (r *Resolver) Relocate(pid int, maps []Mapping, frames []Frame) []Frame {
	out := make([]Frame, len(frames))
	for i, f := range frames {
		if exactPC(frames, i) {
			out[i] = Frame{PC: f.PC, Location: r.Locate(pid, maps, f.PC), Signal: f.Signal}
		} else {
			out[i] = Frame{PC: f.PC, Location: r.callerLocation(pid, maps, f.PC)}
		}
	}
	r.addTailCalls(pid, maps, out)
	return out
}

// garbageModule are where a "return address" read past a stack's end may point: no file
// ("" is outside every mapping).
var garbageModule = map[string]bool{"": true, "[anon]": true, "[heap]": true, "[stack]": true}

// outermost are the functions every thread starts in (glibc's _start and clone, Go's
// runtime.goexit for goroutines and runtime.mstart for its threads), and Go's
// runtime.mcall and runtime.morestack: they switch from a goroutine's stack to the thread's
// own (g0) and call a function that never returns, so nothing above them on g0 is a caller
// (what the CFI finds there is whatever g0's stack held: delve stops there too).
var outermost = map[string]bool{
	"_start": true, "__clone3": true, "__clone": true, "clone": true, "clone3": true, "thread_start": true,
	"runtime.goexit": true, "runtime.mstart": true, "runtime.rt0_go": true,
	"runtime.mcall": true, "runtime.morestack": true,
}
