// Command arm64-test boots an arm64 Linux guest under qemu-system-aarch64 (the
// virt board, -cpu max by default) and runs the tracer package's TestARM64*
// tests inside it on a real arm64 kernel: syscall restart state after an
// interrupted `svc #0` and what each checkpoint policy makes the program see.
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
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/crashtui/crashtui/tracer/qemu"
)

func main() {
	a := qemu.ARM64
	cpus := flag.String("cpus", strings.Join(a.CPUs, ","), "comma-separated QEMU -cpu models to boot")
	run := flag.String("run", a.Run, "guest -test.run pattern")
	cache := flag.String("cache", os.Getenv("CRASHTUI_ARM64_CACHE"), "kernel cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/arm64)")
	kernel := flag.String("kernel", os.Getenv("CRASHTUI_ARM64_KERNEL"), "arm64 Image to boot instead of the cached Debian kernel")
	record := flag.String("record", "", "write the register words the guest test saw to DIR/arm64_<cpu>_svc_<call>[_<stop>].json")
	timeout := flag.Duration("timeout", 150*time.Second, "limit per guest boot")
	parallel := flag.Int("parallel", 2, "guests booted at once")
	keep := flag.Bool("keep", false, "keep the build directory")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := qemu.Run(ctx, qemu.Options{
		Arch: a, CacheDir: *cache, Kernel: *kernel, CPUs: strings.Split(*cpus, ","),
		Run: *run, Timeout: *timeout, Parallel: *parallel, Keep: *keep,
	})
	var skip *qemu.SkipError
	if errors.As(err, &skip) {
		fmt.Println(skip.Error())
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arm64-test:", err)
		os.Exit(1)
	}
	if *record != "" {
		for _, c := range res.CPUs {
			if err := qemu.WriteRegRecords(*record, c.Regs); err != nil {
				fmt.Fprintln(os.Stderr, "arm64-test:", err)
				os.Exit(1)
			}
			if len(c.Regs) > 0 {
				fmt.Fprintf(os.Stderr, "arm64-test: %s: wrote %d register records to %s\n", c.CPU, len(c.Regs), *record)
			}
		}
	}
	pass, fail := 0, 0
	for _, c := range res.CPUs {
		if c.Pass {
			pass++
		} else {
			fail++
			fmt.Fprintf(os.Stderr, "arm64-test: FAIL %s: %s\n", c.CPU, c.Verdict)
		}
	}
	// The plain closing line CI reads: one guest boot counts as one test.
	fmt.Printf("arm64: %d passed, %d failed\n", pass, fail)
	if fail > 0 {
		os.Exit(1)
	}
}
