// Command guest is `make guest`: it boots a ppc64le or arm64 Linux guest under QEMU (Debian's
// kernel, as the test stages do) with crashtui cross-built for it, busybox (Debian's
// busybox-static) as its shell and tools, the C helpers (sigpending, the crash suite) and
// the given files on its PATH (/usr/local/bin first), runs COMMAND there with sh -c, prints
// its output (stdout and stderr together) and exits with its status.
//
//	go run ./tracer/qemu/cmd/guest [-arch ppc64le|arm64] [-cpu power8|power9|power10|max] -run COMMAND [FILE...]
//	make guest ARCH=ppc64le CPU=power10 ADD="FILE..." RUN="COMMAND"
//
// A command killed by signal N exits 128+N, as a shell reports it. When the guest itself
// fails (bad usage, no QEMU and no way to install it, a guest that does not boot or a command
// still running at -timeout) it says why on stderr and exits 125. The guest has 1 GiB of
// memory, one CPU, no network and no disk: what the command writes is gone at power-off.
//
// It does no ptrace itself; see package qemu.
package main

import (
	"os"

	"github.com/crashtui/crashtui/tracer/qemu"
)

func main() {
	os.Exit(qemu.GuestMain(os.Args[1:], os.Stdout, os.Stderr))
}
