// Package stacks is where every rank is now: stack samples of every thread of the job, one
// process at a time, for the merged call-path tree and equivalence classes (sessions.MergeStacks,
// STAT's 2D and 3D trees). A process's threads are held by the engine (tracer.Loop.Hold) only
// while their registers and the top of each stack are copied; unwinding and symbols come after
// they run again. A thread an interrupt would hand an EINTR is never stopped: it is read from
// /proc. It never waits, resumes or injects itself.
package stacks
