// Package seccomp evaluates a thread's seccomp filters as the kernel runs them
// (kernel/seccomp.c): a classic BPF interpreter over struct seccomp_data, the precedence of
// actions across filters, and the actions named. The access matrix predicts with it; the
// engine's gate (tracer/gate.go) asks it, with the call's real arguments and address, before
// any system call is injected into a thread. Pure: no /proc, no ptrace.
package seccomp
