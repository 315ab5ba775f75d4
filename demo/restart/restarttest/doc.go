// Package restarttest builds and drives demo/restart/restart.c for tests of the simulated
// checkpoint (tracer and cmd/crashtui): threads blocked in read, futex, nanosleep and poll,
// with and without signal handlers and SA_RESTART, each reporting what its syscall returned.
//
// It starts the program outside the test's children (setsid -f) so that a tracer embedded in
// the test never competes for its wait status, reads its line protocol, and kills it by pid in
// t.Cleanup. It must not call ptrace (only package tracer does) and is for tests only.
package restarttest
