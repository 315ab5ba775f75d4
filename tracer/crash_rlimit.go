package tracer

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
)

// limitCore sets RLIMIT_CORE of tk's process to {0,0} before its fatal signal proceeds
// (Spindle's loser rule, kernel.md §C step 5): prlimit from outside, which
// kernel/sys.c:check_prlimit_permission allows for the same real/effective/saved ids or with
// CAP_SYS_RESOURCE; where it does not (a setuid rank, crashtui without CAP_SYS_RESOURCE),
// prlimit64(0, RLIMIT_CORE, {0,0}, NULL) injected into the stopped crashing thread itself.
func (t *Tracer) limitCore(tk *task) error {
	err := error(unix.EPERM) // tests: take the injection path
	if !t.crash.forceInjectLimit {
		err = unix.Prlimit(tk.pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil)
	}
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("prlimit %d RLIMIT_CORE 0: %w", tk.pid, err)
	}
	if ierr := t.injectCoreLimit(tk); ierr != nil {
		return fmt.Errorf("prlimit %d RLIMIT_CORE 0: %w; injected prlimit64: %v", tk.pid, err, ierr)
	}
	return nil
}

// injectCoreLimit runs prlimit64(0, RLIMIT_CORE, &{0,0}, NULL) inside tk, which is held in
// its signal-delivery-stop; the rlimit struct lives below the red zone for the duration.
func (t *Tracer) injectCoreLimit(tk *task) error {
	a := t.crash.arch
	nr, ok := arch.SyscallNumber(a, "prlimit64")
	if !ok {
		return fmt.Errorf("no prlimit64 on %s", a)
	}
	regs, err := getRegs(tk.tid)
	if err != nil {
		return err
	}
	site, err := findSyscallSite(tk.pid, a)
	if err != nil {
		return err
	}
	sc, err := newScratch(tk, regs, 16)
	if err != nil {
		return err
	}
	defer sc.restore()
	if err := sc.write(0, make([]byte, 16)); err != nil {
		return err
	}
	sig := tk.sig
	ret, errno, err := t.injectSyscall(tk, site, nr, 0, unix.RLIMIT_CORE, sc.addr, 0)
	if tk.stopped == stopSignal && tk.sig != sig {
		// Another stop came first (injectSyscall kept its signal): the fatal signal must
		// still be the one re-injected; a fault would come back, a kill would not.
		tk.sig = sig
	}
	if err != nil {
		return err
	}
	if ret < 0 || errno != 0 {
		return fmt.Errorf("prlimit64 in %d: %s", tk.tid, arch.ErrnoName(errno))
	}
	return nil
}
