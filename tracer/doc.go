// Package tracer is the engine: the only code that calls ptrace, waits for a tracee, resumes
// one, holds one, injects into one or detaches one.
//
// It resolves a JOB (pgid, sid, pid tree, cgroup, Slurm job) to processes, seizes every thread
// of every process with PTRACE_SEIZE, follows forks, clones and execs, and detaches leaving the
// job exactly as it was: running threads keep running, stopped jobs stay stopped, no signal is
// lost. All ptrace requests for a tracee must come from the thread that attached it, so the
// engine runs one goroutine locked to its OS thread (runtime.LockOSThread); other goroutines
// talk to it through requests. It emits sessions.Event values and nothing else: it never
// formats text for a screen.
//
// # The engine and its features
//
// The features are packages of their own, beside the engine, and cannot see a task's fields
// (Go's package boundary keeps them out): tracer/crash (crash sites, handled faults, cores),
// tracer/access (the access matrix, predicted and measured), tracer/checkpoint (the simulated
// checkpoint) and tracer/stacks (stack samples). What a feature may ask:
//
//   - Tracer.Do(fn): run fn on the loop thread with a Loop. Through the Loop it sees the
//     job's processes (Loop.Processes, Loop.Process, Loop.Thread), emits its events in order
//     with the engine's (Loop.Emit), and asks for
//   - Loop.Hold(tids, opts, fn) / Loop.HoldJob(opts, fn): "hold these threads, run fn, let
//     them go". The engine interrupts what runs, waits, and hands fn the threads it holds and
//     those it could not hold, each with why (Late: blocked in a call an interrupt would end
//     with EINTR, a vfork parent, past its exit, a timeout). A held Thread's registers, mask,
//     memory (PTRACE_PEEKDATA), seccomp state and siginfo can be read, its registers written.
//     fn's end lets every thread go, each as its stop wants.
//   - Thread.Inject(): "inject these calls into that thread", held at an interrupt stop
//     (HoldOptions.AtInterrupt). Every call passes the gate first (gate.go): the thread's own
//     seccomp filters, evaluated with the call's real arguments and address, and its syscall
//     user dispatch must let it through, or nothing runs and a *Refused says why.
//   - Options.Watcher: the one feature (crash) that decides the stops the engine does not own.
//     Its Signal is told of every signal-delivery-stop and decides its fate (deliver, suppress,
//     follow the thread through its syscalls, deliver as if unhandled); its Syscall is told of
//     a followed thread's syscall-stops; TaskGone, ProcessGone and Tick of the job's ends and
//     the passing time. Tick comes only while asked for (Loop.WantTick, until it returns
//     false): an idle loop otherwise sleeps until a stop or a request.
//
// What a feature must never do: call ptrace, wait for a tracee, or keep a Loop, a Thread or a
// Held past the function it was given to; block the loop (unwinding, symbols and /proc work
// that needs no stop belong outside Do: the job's stops wait while a feature runs on the
// loop). procfs reads /proc and a process's memory without a stop; features use it freely.
//
// # One hold state per task
//
// Every task is in exactly one state (task.go): running, listening (the job's own
// job-control stop, PTRACE_LISTEN), stopping (interrupted for a holder), held (in a stop
// whose wait status was consumed: interrupt, event, group, exit), peeked (in a stop whose
// status was not consumed: a signal-delivery-stop while it is decided), injecting, abandoned
// (its injected call outlived the injection) or exited (past PTRACE_EVENT_EXIT); and it is
// gone when it leaves the table. Each change of state is one function of the engine.
//
// Two rules make the edges safe by construction:
//
//   - A signal-delivery-stop is never consumed and never held (kernel.md D.3). Every wait
//     peeks (waitid WNOWAIT); a signal stop ends only by a resume that passes the signal on,
//     so at any instant of a SIGKILL of crashtui the signal is still in the tracee's
//     exit_code, where the kernel delivers it. A thread a holder wants that reports a signal
//     gets it delivered first (its handler frame set up), and stops at the holder's pending
//     interrupt after: what CRIU's compel_wait_task does. So no operation, however long,
//     holds a signal only crashtui knows of.
//   - While the Watcher decides a stop (a callback, its stop peeked), every wait looks only
//     at the tasks it waits for (waitOwn): a peeked stop would be reported again by a wait
//     of all, and no other feature callback can start in the middle of one.
//
// Per-task facts the kernel resets are the task's: PTRACE_O_TRACESYSGOOD (task.sysgood) is
// set before a task is first resumed with PTRACE_SYSCALL and belongs to that seize, so a
// process let go for a debugger (Release) and taken back (Reacquire) starts afresh.
//
// # How the loop waits, and why it is cheap
//
// A tracee's stop costs the job the time until the tracer resumes it, so the loop waits the
// way a minimal C tracer does: blocked in waitid on the tracing thread itself, woken by the
// kernel straight from the stop (wait.go). A peek and a resume are two syscalls, as a C
// tracer's wait4 and PTRACE_CONT are; only a stop kept for a holder and a death are
// consumed (a third). There is no SIGCHLD in the path: SIGCHLD's action is the kernel's
// default (quietChildren), so neither a stop nor a death runs a handler, and there is no
// os/signal goroutine and no channel hand-off to the locked thread. After a stop it polls
// for 100 µs, because stops come in bursts, but only while polling pays (burst): where
// stops come far apart (fork+exec) a tracer that never sleeps is preempted by the job it
// just resumed, between a stop's peek and its resume, or yields its CPU to it. Then it does
// not poll even once after a stop its blocking wait found: the next blocking wait finds the
// next stop as soon, and a fork+exec costs the loop as many waits as the C tracer's. The
// polls and the resumes do not wait for a tracee, so they are raw syscalls, of which the Go
// scheduler is not told. A request from another goroutine (do) wakes the loop with a
// thread-directed kick signal whose handler has SA_RESTART cleared, so waitid returns
// EINTR; a request's lost kick is repeated every millisecond. An idle wait that must end in
// time (queued events, an image being read, a fault whose verdict is Tick's) is ended
// within 100 ms by one watching goroutine (watchWaits), never by a timer per wait; one that
// need not lasts until a stop or a request: a tracer of a sleeping job sleeps. Work a stop
// does not need is done after the tracee runs again, and off the loop thread where it can:
// an exec'd process's argv, environment, uid and comm are read at its exec stop from its
// new stack (stackImage: one register read and one process_vm_readv, in place of four /proc
// files, a fresh process's first /proc files being the kernel's dearest) and its exe by one
// readlink once it runs; where the stack does not say it all (a secure exec, an exec by
// /dev/fd, arguments past 32 KiB) the image is read from /proc by a goroutine of its own
// while it runs, and told at its next stop or once read (execImage); a new thread is told
// from a new process by pidfd_open, which opens only a group's leader (no /proc entry made
// for it), and a fork copies what its child inherits. An attach reads /proc on every CPU at
// once (procfs.InParallel). BenchmarkEventCost and BenchmarkAttachDetach1000 (make bench)
// measure each cost against a C floor tracer in the same run, BenchmarkJobTime what the
// job's own clock sees.
//
// # What a SIGKILL of crashtui leaves behind
//
// When a tracer dies the kernel detaches its tracees (kernel/ptrace.c exit_ptrace): each
// thread leaves its stop and runs with whatever registers and signal mask it has at that
// instant. Syscall tracing and a pending interrupt are cleared; a pending single-step is not;
// a signal-delivery-stop whose status no wait consumed delivers its signal. So a thread that
// crashtui is merely holding is safe (its own state; it holds no signal), and the one danger
// is a thread whose state crashtui has changed: an injected syscall.
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
// Limits of that promise: nothing is injected into a thread at a signal-delivery-stop (a
// guard could only deliver the signal in its own context), so injections start only at an
// interrupt stop; a thread let go between the two register writes at the start (two
// consecutive ptrace calls) runs the guard with its own mask, so a signal arriving in those
// microseconds would run its handler over the guard's frame. crashtui never single-steps (the
// step flag outlives the tracer): a caught fault whose handler returned is followed with
// syscall-stops (tracer/crash).
//
// The loop waits with waitid(P_ALL, __WALL|__WNOTHREAD) on its own thread: it sees its
// tracees and the ranks it launched, never the other children of the program that embeds
// it. A tracee that is also the embedding program's own child and exits while traced is
// reaped here (its parent's wait then reports ECHILD). The kernel treats a tracee whose tracer
// and real parent are threads of one process as if its parent were its tracer
// (kernel/exit.c wait_consider_task, !ptrace_reparented): a second Tracer whose loop runs on
// the thread that forked the first one's tracees would be handed their stops, and the first
// would wait for them in vain. crashtui runs one Tracer per process; a program that embeds
// more must not let them overlap while tracing its own children (TestYamaMeasured found
// this on ppc64le).
package tracer
