// Package access decides whether process A may use process_vm_readv/writev on process B, and
// whether kcmp(A, B, KCMP_VM) succeeds — the two checks Open MPI's smsc/cma depends on (seed
// 000) — by reading /proc as an external observer and applying the ordered rule table of
// kernel.md §A.3 (kernel/ptrace.c __ptrace_may_access, kernel/kcmp.c, mm/process_vm_access.c,
// security/yama). It also evaluates a process's seccomp filters (classic BPF, as returned by
// PTRACE_SECCOMP_GET_FILTER) for the syscalls an injected measurement would run, so that a
// measurement never kills A.
//
// The prediction is a read of /proc and /sys, a self-probe of crashtui's own process
// (ReadSystem), and pure functions (Predict, PredictAll, SeccompFor). The measurement
// (kernel.md §A.5, Access.Matrix) runs kcmp and process_vm_readv inside each A through the
// engine: it holds one thread (tracer.Loop.Hold) and injects the calls (Thread.Inject), whose
// gate refuses any call A's own seccomp filters would not let through; this package never
// calls ptrace itself (tracer/doc.go).
//
// It reports facts, never sentences: each cell's first failing rule (sessions.Reason), the row
// of §A.3 that decided it with what its sentence names (sessions.Rule) and its disagreements
// (sessions.Disagreement); views word them (views.CellWhy).
package access
