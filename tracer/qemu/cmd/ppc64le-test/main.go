// Command ppc64le-test is the `make test-ppc64le` stage: it boots ppc64le
// Linux guests under QEMU (power8, power9, power10) and runs the tracer
// package's TestPPC64LE* tests, TestYamaMeasured (the access matrix measured
// by syscall injection), TestCrashGo, TestGlibcSigpending (glibc's own scv
// under the simulated checkpoint) and TestGuestCrashSuite (the C crash suite)
// inside them on a real ppc64le kernel; then it boots the `make guest` checks
// (a command's output and exit status, -guest=false skips them).
//
//	go run ./tracer/qemu/cmd/ppc64le-test [-cpus power8,power9,power10] [-record tracer/qemu/testdata]
//
// Exit status 0 on pass, 1 on failure; it prints "SKIP: <reason>" and exits 0
// only when the stage cannot run here (no QEMU and no way to install it, no
// kernel and no way to fetch one). The kernel is cached in
// ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/ppc64le (override with -cache or
// CRASHTUI_PPC64LE_CACHE; -kernel or CRASHTUI_PPC64LE_KERNEL boots a given
// vmlinux instead).
//
// It does no ptrace itself; see package qemu.
package main

import (
	"os"

	"github.com/crashtui/crashtui/tracer/qemu"
)

func main() {
	os.Exit(qemu.Main(qemu.PPC64LE, os.Args[1:], os.Stdout, os.Stderr))
}
