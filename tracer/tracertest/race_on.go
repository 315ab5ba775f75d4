//go:build race

package tracertest

// RaceSlowdown scales the time bounds of tests on what the tracer does (not what the kernel
// does): the race detector makes Go code 5-10x slower, delve's DWARF loading above all.
const RaceSlowdown = 10
