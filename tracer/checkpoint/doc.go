// Package checkpoint is the simulated checkpoint (seed 002, kernel.md §B): it freezes every
// thread of the job through the engine (tracer.Loop.HoldJob), captures each one's registers
// and syscall restart state (sc, scv, syscall, svc; ERESTART* codes), writes back in place
// what a restorer following the chosen policy would write, lets the job run, and looks at
// what each thread did next, so the consequence of the policy is visible in the real program.
//
// It never waits, resumes or injects: a frozen thread is held by the engine, which delivers
// any signal before it holds a thread and leaves unfrozen the threads an interrupt would hand
// an EINTR (their events say so).
package checkpoint
