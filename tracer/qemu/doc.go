// Package qemu runs crashtui's ppc64le and arm64 tests on real kernels of
// those architectures booted under qemu-system-ppc64 / qemu-system-aarch64
// (TCG software emulation), so that restart state after an interrupted `sc`,
// `scv 0` or `svc #0` syscall is checked against what the kernel really does,
// not only against fixtures (docs/ppc64le-qemu.md; kernel.md §B). Both guests
// also run TestYamaMeasured (Debian's kernels have Yama, the host's may not; it
// measures the access matrix by syscall injection), TestCrashGo (crash sites,
// a handled fault and cores, with a Go helper), TestGlibcSigpending (the
// simulated checkpoint of a static C program blocked in glibc's own wrappers:
// glibc's scv on POWER9/10, sc on POWER8) and TestGuestCrashSuite (the C crash
// suite of demo/crashes, dynamically linked against the cross glibc).
//
// For each Arch (PPC64LE, ARM64) it installs QEMU and Debian's cross gcc when
// they are missing (apt-get, as root), fetches Debian's kernel and busybox-static
// with a private apt state into a cache directory, cross-builds a static Go
// /init, the tracer package's test binary, crashtui and the Go helper programs
// (scvprog, svcprog, crashprog, demo/access/peer), compiles the C helpers
// (Arch.CHelpers) on the host, packs them with the interpreter and libraries the
// dynamic ones need into a newc initramfs, boots one guest per CPU model and
// parses the verdict line that /init prints before it powers the guest off.
//
// A guest is stopped only when it stops making progress: it must reach its /init
// (Boot), then print a line at least every Idle, both in quiet-machine time
// (demo/patience stretches them while the host is loaded), with a backstop of
// an hour for a guest that never stops printing; its own watchdog is set past
// that. The steps that take a while (installing, downloading, building, a guest
// booted, each guest test that ended: "power9: 3/12 TestCrashGo PASS") are
// "progress: " lines of the log, which make test's stage runner shows.
//
// The same guest runs one shell command instead (BootCommand, RunGuest: `make
// guest`, cmd/guest), with busybox as its shell and tools; every stage boots
// it twice to check that a command's output and exit status come back.
//
// It must not call ptrace itself (only package tracer does, inside the guest),
// must not touch the host's apt state, and must not boot QEMU from a plain
// `go test ./...`: the host tests TestPPC64LEQEMU and TestARM64QEMU run only
// with CRASHTUI_QEMU=1.
package qemu
