// Package crash is crashtui's crash handling, as the engine's Watcher (tracer.Watcher): every
// fatal signal caught at its signal-delivery-stop, keyed by crash site (module + link-time
// offset, or the abort message: Spindle's key), grouped, with Spindle's core policy (one core
// per site, written by crashtui with Options.CoresDir or left to the kernel with
// DedupKernelCores) and a crash log, all decided before the signal goes on; and handled faults
// told apart: a caught fault is delivered and its thread followed through the handler
// (PTRACE_SYSCALL), a repaired fault reported as handled, one the handler cannot repair
// delivered as if no handler were installed. A crash's group (Crash.Group, Key) and its
// representative (Crash.Representative) are decided here and nowhere else: the core policy
// needs them before the signal goes on, and sessions.State takes them from the events.
//
// It decides from the stop alone: registers, siginfo, /proc, memory read from outside. It
// never waits, resumes or injects: the engine carries out its decisions (tracer/doc.go), and a
// core's other threads are held through Loop.Hold, which inside a callback waits for those
// threads alone, so one crash's decision is never interleaved with another's.
package crash
