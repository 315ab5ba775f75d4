// Command arm64-test boots an arm64 Linux guest under qemu-system-aarch64 (the
// virt board, -cpu max by default) and runs the tracer package's TestARM64*
// tests inside it on a real arm64 kernel: syscall restart state after an
// interrupted `svc #0` and what each checkpoint policy makes the program see;
// TestYamaMeasured, the access matrix under Yama's ptrace_scope 0-3;
// TestCrashGo, crash sites, a handled fault and cores; TestGlibcSigpending and
// TestGuestCrashSuite, the same with C programs and the cross glibc; then the
// `make guest` checks (a command's output and exit status).
//
//	go run ./tracer/qemu/cmd/arm64-test [-cpus max] [-record tracer/qemu/testdata]
//
// Exit status 0 on pass, 1 on failure; it prints "SKIP: <reason>" and exits 0
// only when the stage cannot run here (no QEMU and no way to install it, no
// kernel and no way to fetch one). The kernel (Debian's linux-image-*-arm64,
// whose boot/vmlinuz is a plain arm64 Image) is cached in
// ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/arm64 (override with -cache or
// CRASHTUI_ARM64_CACHE; -kernel or CRASHTUI_ARM64_KERNEL boots a given Image).
//
// It does no ptrace itself; see package qemu.
package main

import (
	"os"

	"github.com/crashtui/crashtui/tracer/qemu"
)

func main() {
	os.Exit(qemu.Main(qemu.ARM64, os.Args[1:], os.Stdout, os.Stderr))
}
