// Package tracer is the only package that calls ptrace.
//
// It resolves a JOB (pgid, sid, pid tree, cgroup, Slurm job) to processes, seizes every thread
// of every process with PTRACE_SEIZE, follows forks, clones and execs, catches fatal signals at
// their signal-delivery-stop, and detaches leaving the job exactly as it was: running threads
// keep running, stopped jobs stay stopped, signals that are not ours are re-injected.
//
// All ptrace requests for a tracee must come from the thread that attached it, so the tracer
// runs one goroutine locked to its OS thread (runtime.LockOSThread); other goroutines talk to
// it through requests. It emits sessions.Event values and nothing else: it never formats text
// for a screen.
//
// On top of the loop: crash sites grouped as they happen, with handled faults told apart and
// one core per site (crash*.go, core.go); the access matrix, predicted from /proc
// (tracer/access) and measured by running kcmp and process_vm_readv inside each process
// without writing any code (inject.go, measure.go, live.go); and the simulated checkpoint,
// which captures every thread's syscall restart state and applies a restore policy in place
// (checkpoint*.go). tracer/qemu runs the ppc64le tests on a real kernel under QEMU.
//
// The loop waits with wait4(-1, __WALL|__WNOTHREAD) on its own thread, woken by SIGCHLD: it
// sees its tracees and the ranks it launched, never the other children of the program that
// embeds it. A tracee that is also the embedding program's own child and exits while traced is
// reaped here (its parent's wait then reports ECHILD). The kernel treats a tracee whose tracer
// and real parent are threads of one process as if its parent were its tracer
// (kernel/exit.c wait_consider_task, !ptrace_reparented): a second Tracer whose loop runs on
// the thread that forked the first one's tracees would be handed their stops, and the first
// would wait for them in vain. crashtui runs one Tracer per process; a program that embeds
// more must not let them overlap while tracing its own children (TestYamaMeasured found
// this on ppc64le).
package tracer
