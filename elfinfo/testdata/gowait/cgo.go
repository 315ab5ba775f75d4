//go:build gowaitcgo

package main

// A cgo build runs its threads' g0 on stacks libc set up: above runtime.mcall the unwinder
// used to read a junk frame there.

// static int twice(int x) { return 2 * x; }
import "C"

var _ = C.twice(2)
