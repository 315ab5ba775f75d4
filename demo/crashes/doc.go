// Package crashes holds the crash-pattern suite of issue 3 (src/*.c: C programs in the spirit
// of Spindle's crash tests, kernel.md §C, seed 001) and Build, which compiles it with gcc for
// tests and benchmarks (build.mk does the same for make).
//
// It must not trace, signal or run anything: tests start the programs under crashtui and judge
// what crashtui reports. Each mode of src/crash.c is one pattern (same, different, two,
// abort-segv, abort, stack, lib, fixed-lib, dlmopen, thread, safepoint, safepoint-crash,
// safepoint-bad-write, safepoint-longjmp, safepoint-spin, sigbus-fixed, sigbus-bad, kill, storm), and every
// crash happens in a named noinline function so keys, stacks and gdb's top frame can be
// checked against the symbol table.
package crashes
