package crash

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// limitCore sets RLIMIT_CORE of process pid to {0,0} before its fatal signal proceeds
// (Spindle's loser rule, kernel.md §C step 5), with prlimit from outside, which
// kernel/sys.c:check_prlimit_permission allows for the same real/effective/saved ids or with
// CAP_SYS_RESOURCE. Where it does not (a setuid rank, crashtui without CAP_SYS_RESOURCE), the
// process keeps its limit and the kernel may write its core: nothing is run inside a thread
// at a signal-delivery-stop (tracer/inject.go).
func limitCore(pid int) error {
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil {
		return fmt.Errorf("prlimit %d RLIMIT_CORE 0: %w (its own limit stays, so the kernel may write its core)", pid, err)
	}
	return nil
}

// coreAllowed says whether the process's own RLIMIT_CORE lets the kernel write a core (a
// soft limit above 0), read from outside with prlimit; true when it cannot be read.
func coreAllowed(pid int) bool {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, nil, &old); err != nil {
		return true
	}
	return old.Cur > 0
}
