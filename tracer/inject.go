package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
)

// Syscall injection without writing code (kernel.md §A.5 "No code writes"): point the held
// thread's pc at a syscall instruction that already exists in one of its r-x mappings (the
// vDSO's fallback path, or libc), block every signal, PTRACE_SINGLESTEP over it, read the
// result, then put back the registers and the signal mask unchanged. Nothing in the text is
// written, so the process's other threads, which keep running, can never execute a half-made
// stub; restoring the saved registers re-arms exactly the pending restart (orig_rax/trap).

// syscallInsn is the instruction to look for, and its alignment.
func syscallInsn(a arch.Arch) (insn []byte, align int) {
	switch a {
	case arch.AMD64:
		return []byte{0x0f, 0x05}, 1
	case arch.PPC64LE:
		return []byte{0x02, 0x00, 0x00, 0x44}, 4 // sc, little-endian
	case arch.ARM64:
		return []byte{0x01, 0x00, 0x00, 0xd4}, 4 // svc #0
	}
	return nil, 1
}

// findSyscallSite returns the address of an existing syscall instruction in pid: the vDSO
// first (a few pages), then libc, then any other r-x file mapping.
func findSyscallSite(pid int, a arch.Arch) (uint64, error) {
	maps, err := elfinfo.ReadMaps(pid)
	if err != nil {
		return 0, err
	}
	insn, align := syscallInsn(a)
	if insn == nil {
		return 0, fmt.Errorf("syscall site: unsupported arch %s", a)
	}
	var order []elfinfo.Mapping
	for _, pass := range []func(elfinfo.Mapping) bool{
		func(m elfinfo.Mapping) bool { return m.Path == "[vdso]" },
		func(m elfinfo.Mapping) bool { return bytes.Contains([]byte(m.Path), []byte("/libc.so")) },
		func(m elfinfo.Mapping) bool { return m.IsFile() },
	} {
		for _, m := range maps {
			if len(m.Perms) >= 3 && m.Perms[2] == 'x' && pass(m) {
				order = append(order, m)
			}
		}
	}
	buf := make([]byte, 64<<10)
	for _, m := range order {
		for start := m.Start; start < m.End; start += uint64(len(buf)) {
			n := min(uint64(len(buf)), m.End-start)
			chunk := buf[:n]
			if err := readMem(pid, start, chunk); err != nil {
				break
			}
			for off := 0; ; {
				i := bytes.Index(chunk[off:], insn)
				if i < 0 {
					break
				}
				at := off + i
				if (start+uint64(at))%uint64(align) == 0 {
					return start + uint64(at), nil
				}
				off = at + 1
			}
		}
	}
	return 0, fmt.Errorf("syscall site in %d: no %x in any executable mapping", pid, insn)
}

// injection records the stop that ends a single-step.
type injection struct {
	ws   unix.WaitStatus
	gone bool
}

var errInjectInterrupted = errors.New("injected syscall interrupted by another stop")

// injectSyscall runs one syscall inside the held task tk and restores it. tk must be held in
// a ptrace-stop other than a group-stop or PTRACE_EVENT_EXIT.
func (t *Tracer) injectSyscall(tk *task, site uint64, nr int, args ...uint64) (ret int64, errno int, err error) {
	if tk.stopped == running || tk.stopped == stopGroup || tk.stopped == stopExit {
		return 0, 0, fmt.Errorf("inject into %d: not in a usable stop", tk.tid)
	}
	orig, err := getRegs(tk.tid)
	if err != nil {
		return 0, 0, err
	}
	var mask, all uint64
	if err := ptrace(unix.PTRACE_GETSIGMASK, tk.tid, 8, uintptr(unsafePointer(&mask))); err != nil {
		return 0, 0, fmt.Errorf("getsigmask %d: %w", tk.tid, err)
	}
	all = ^uint64(0)
	if err := ptrace(unix.PTRACE_SETSIGMASK, tk.tid, 8, uintptr(unsafePointer(&all))); err != nil {
		return 0, 0, fmt.Errorf("setsigmask %d: %w", tk.tid, err)
	}
	restore := func() error {
		e1 := setRegs(tk.tid, orig)
		e2 := ptrace(unix.PTRACE_SETSIGMASK, tk.tid, 8, uintptr(unsafePointer(&mask)))
		return errors.Join(e1, e2)
	}
	if err := setRegs(tk.tid, arch.SetupSyscall(orig, site, nr, args...)); err != nil {
		restore()
		return 0, 0, err
	}
	tk.inject = &injection{}
	defer func() { tk.inject = nil }()
	if err := ptrace(unix.PTRACE_SINGLESTEP, tk.tid, 0, 0); err != nil {
		restore()
		return 0, 0, fmt.Errorf("singlestep %d: %w", tk.tid, err)
	}
	inj := tk.inject
	if err := t.pump(func() bool { return inj.gone || inj.ws != 0 }, 5*time.Second,
		fmt.Sprintf("injected syscall in %d did not return", tk.tid)); err != nil {
		// The syscall blocks (it should not for kcmp or a 1-byte read): interrupt it.
		ptrace(unix.PTRACE_INTERRUPT, tk.tid, 0, 0)
		t.pump(func() bool { return inj.gone || inj.ws != 0 }, 2*time.Second, "")
		if !inj.gone {
			restore()
		}
		return 0, 0, err
	}
	if inj.gone {
		return 0, 0, fmt.Errorf("inject into %d: the task died (seccomp KILL?)", tk.tid)
	}
	if sig := inj.ws.StopSignal(); sig != unix.SIGTRAP || int(inj.ws>>16)&0xff != 0 {
		// Some other stop came first (SIGKILL/SIGSTOP cannot be blocked): keep its signal for
		// the resume, as if we had never run.
		if int(inj.ws>>16)&0xff == 0 {
			tk.stopped, tk.sig = stopSignal, int(sig)
		}
		restore()
		return 0, 0, errInjectInterrupted
	}
	after, err := getRegs(tk.tid)
	if err != nil {
		restore()
		return 0, 0, err
	}
	ret, errno = arch.SyscallResult(after)
	return ret, errno, restore()
}

// scratch is memory below the held thread's red zone, saved so it can be put back.
type scratch struct {
	tid  int
	addr uint64
	save []byte
}

// newScratch reserves n bytes below sp-redzone in tk's stack (16-byte aligned).
func newScratch(tk *task, regs arch.Regs, n int) (*scratch, error) {
	addr := (regs.SP() - arch.RedZone(regs.Arch) - uint64(n) - 64) &^ 15
	s := &scratch{tid: tk.tid, addr: addr, save: make([]byte, (n+7)&^7)}
	if err := peekBytes(tk.tid, addr, s.save); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *scratch) write(off int, b []byte) error {
	// Whole words only (the scratch is word-sized and word-aligned).
	buf := make([]byte, len(s.save))
	copy(buf, s.save)
	if err := peekBytes(s.tid, s.addr, buf); err != nil {
		return err
	}
	copy(buf[off:], b)
	for i := 0; i < len(buf); i += 8 {
		if err := pokeWord(s.tid, s.addr+uint64(i), binary.LittleEndian.Uint64(buf[i:])); err != nil {
			return err
		}
	}
	return nil
}

func (s *scratch) restore() error {
	for i := 0; i < len(s.save); i += 8 {
		if err := pokeWord(s.tid, s.addr+uint64(i), binary.LittleEndian.Uint64(s.save[i:])); err != nil {
			return err
		}
	}
	return nil
}
