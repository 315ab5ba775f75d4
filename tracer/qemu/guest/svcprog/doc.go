// Command svcprog is the guest helper of the arm64 restart tests
// (tracer/restart_arm64_test.go). It enters one blocking syscall with a raw
// `svc #0` (0xd4000001) written in assembly, so that no libc or Go runtime
// wrapper is involved and the instruction at the stopped pc is known, then
// prints what the syscall returned in x0 exactly as a program observes it.
//
// Protocol: it prints "ready tid=T nr=N a1=A svc=P" before the call (P is the
// address of the svc instruction) and "result x0=R byte=B" after it. -call read
// reads one byte from fd 3 (a pipe the test holds); -call nanosleep sleeps
// -sleep; -call getpid does not block.
//
// It must stay a single blocking call on the main thread (locked in init, so
// tid == pid): the test seizes exactly that thread.
package main
