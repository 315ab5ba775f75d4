// Package qemu runs crashtui's ppc64le tests on a real ppc64le Linux kernel
// booted under qemu-system-ppc64 (TCG software emulation), so that restart
// state after an interrupted `sc` or `scv 0` syscall is checked against what
// the kernel really does, not only against fixtures (docs/ppc64le-qemu.md).
//
// It installs QEMU when it is missing (apt-get, as root), fetches Debian's
// ppc64el kernel with a private apt state into a cache directory, cross-builds
// a static Go /init, the tracer package's test binary and the scv helper
// program, packs them into a newc initramfs, boots one guest per CPU model and
// parses the verdict line that /init prints before it powers the guest off.
//
// It must not call ptrace itself (only package tracer does, inside the guest),
// must not touch the host's apt state, and must not boot QEMU from a plain
// `go test ./...`: the host test TestPPC64LEQEMU runs only with CRASHTUI_QEMU=1.
package qemu
