// Package access decides whether process A may use process_vm_readv/writev on process B, and
// whether kcmp(A, B, KCMP_VM) succeeds — the two checks Open MPI's smsc/cma depends on (seed
// 000) — by reading /proc as an external observer and applying the ordered rule table of
// kernel.md §A.3 (kernel/ptrace.c __ptrace_may_access, kernel/kcmp.c, mm/process_vm_access.c,
// security/yama). It also evaluates a process's seccomp filters (classic BPF, as returned by
// PTRACE_SECCOMP_GET_FILTER) for the syscalls an injected measurement would run, so that a
// measurement never kills A.
//
// Everything here is either a read of /proc and /sys, a self-probe of crashtui's own process
// (ReadSystem), or a pure function (Predict, PredictAll, EvalSeccomp). This package must not
// call ptrace, write to other processes, or touch the job in any way: measurement by
// injection (kernel.md §A.5) belongs to package tracer, which hands filters in and reads
// verdicts out.
package access
