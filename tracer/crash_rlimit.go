package tracer

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
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
// its signal-delivery-stop (the fatal signal stays the one to deliver); the rlimit struct
// lives below the red zone for the duration.
func (t *Tracer) injectCoreLimit(tk *task) error {
	_, err := t.injectWithScratch(tk, "prlimit64", 16, nil, func(addr uint64) []uint64 {
		return []uint64{0, unix.RLIMIT_CORE, addr, 0}
	})
	return err
}
