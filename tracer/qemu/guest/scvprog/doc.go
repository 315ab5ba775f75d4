// Command scvprog is the guest helper of the ppc64le restart tests
// (tracer/restart_ppc64le_test.go). It enters one blocking syscall with the
// instruction it is told to use, `sc` or `scv 0`, written as raw words in
// assembly so that no libc or Go runtime wrapper is involved, then prints what
// the syscall returned in r3 (and CR0.SO for sc) exactly as a program would
// observe it. That lets the test check what a checkpoint-restore register
// policy does to the program (seed 002: CRIU restored interrupted scv calls
// at nip with r3 = -512).
//
// Protocol: it prints "ready tid=T nr=N a1=A" before the call and
// "result r3=R so=S cr=C byte=B" after it. -call read reads one byte from fd 3
// (a pipe the test holds); -call nanosleep sleeps -sleep; -call getpid does
// not block (used to probe whether scv exists: on POWER8 it raises SIGILL).
// -sigusr1 installs a Go handler for SIGUSR1 (SA_RESTART), so that the test
// can watch the kernel restart the call around a handler.
//
// It must stay a single blocking call on the main thread (locked in init, so
// tid == pid): the test seizes exactly that thread.
package main
