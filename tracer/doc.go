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
// (inject.go, guard.go, measure.go, live.go); and the simulated checkpoint, which captures
// every thread's syscall restart state and applies a restore policy in place
// (checkpoint*.go). tracer/qemu runs the ppc64le and arm64 tests on real kernels under QEMU.
//
// # How the loop waits, and why it is cheap
//
// A tracee's stop costs the job the time until the tracer resumes it, so the loop waits the
// way a minimal C tracer does: blocked in wait4 on the tracing thread itself, woken by the
// kernel straight from the stop (wait.go). There is no SIGCHLD in the path: no signal
// handler, no os/signal goroutine, no channel hand-off to the locked thread, which cost 7.5
// context switches per stop. After a stop it polls for 100 µs, because stops come in
// bursts; the polls and the resumes do not wait for a tracee, so they are raw syscalls, of
// which the Go scheduler is not told. A request from another goroutine (do) wakes the loop
// with a thread-directed kick signal whose handler has SA_RESTART cleared, so wait4 returns
// EINTR; a lost kick is repeated every millisecond. Work a stop does not need is done after
// the tracee runs again: an exec is read from /proc when the loop is next idle (freshen), a
// new thread is recognised by one stat of /proc/PID/task/TID, and a fork copies what its
// child inherits. An attach reads /proc on every CPU at once (inParallel).
// BenchmarkEventCost and BenchmarkAttachDetach1000 (make bench) measure each cost against a
// C floor tracer in the same run.
//
// # What a SIGKILL of crashtui leaves behind
//
// When a tracer dies the kernel detaches its tracees (kernel/ptrace.c exit_ptrace): each
// thread leaves its stop and runs with whatever registers and signal mask it has at that
// instant. Syscall tracing is cleared; a pending single-step is not. So a thread that crashtui
// is merely holding is safe (its own state; a held signal is still delivered), and the one
// danger is a thread whose state crashtui has changed: an injected syscall.
//
// Three designs were weighed. A separate tracer process with a guardian cannot help: the
// guardian cannot stop the kernel from resuming the tracees of a dead tracer, and may be
// killed too. Stepping the injected call with PTRACE_SYSCALL alone still leaves the thread,
// at its syscall-exit stop, with the injected registers. What crashtui does is make the
// injected state itself harmless to resume: the thread's pc points at a guard (arch.Guard)
// written into executable bytes of its own process that no code uses (the tail of a mapping
// past its last ELF segment), whose first instruction is the injected call and whose rest
// puts back the thread's own signal mask and every register, from literals in the guard, and
// jumps to where the thread would have gone on. Whatever the moment of crashtui's death, the
// thread either has its own state or runs the guard: registers are written before the mask
// is blocked at the start, the mask restored before the registers at the end (inject.go), and
// the call is stepped with PTRACE_SYSCALL, so no trap is ever queued or forced (a forced
// SIGTRAP with signals blocked would reset the program's SIGTRAP handler). The guard is
// written with PTRACE_POKEDATA (the process gets a private copy of that page; its bytes are
// put back after each injection; left behind only if crashtui dies mid-injection, where no
// code reads them). TestInjectionDeathAtEveryPoint lets go of the thread at each of those
// points, on amd64 and in the arm64 and ppc64le guests; TestKill9DuringInjection (make soak)
// SIGKILLs the real binary at random moments.
//
// Limits of that promise: nothing is injected into a thread held at a signal-delivery-stop (a
// guard could only deliver the held signal in its own context), so a process whose every
// thread is held at a signal has its handler's SA_RESTART reported unknown; a thread let go
// between the two register writes at the start (two consecutive ptrace calls) runs the guard
// with its own mask, so a signal arriving in those microseconds would run its handler over the
// guard's frame. crashtui never single-steps (the step flag outlives the tracer): a caught
// fault whose handler returned is followed with syscall-stops (crash_handled.go).
//
// The loop waits with wait4(-1, __WALL|__WNOTHREAD) on its own thread (see above): it
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
