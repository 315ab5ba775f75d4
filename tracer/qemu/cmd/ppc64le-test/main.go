// Command ppc64le-test is the `make test-ppc64le` stage: it boots ppc64le
// Linux guests under QEMU (power8, power9, power10) and runs the tracer
// package's TestPPC64LE* tests inside them on a real ppc64le kernel.
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
	cpus := flag.String("cpus", strings.Join(qemu.DefaultCPUs, ","), "comma-separated QEMU -cpu models to boot")
	run := flag.String("run", "PPC64LE", "guest -test.run pattern")
	cache := flag.String("cache", os.Getenv("CRASHTUI_PPC64LE_CACHE"), "kernel cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/ppc64le)")
	kernel := flag.String("kernel", os.Getenv("CRASHTUI_PPC64LE_KERNEL"), "vmlinux to boot instead of the cached Debian kernel")
	record := flag.String("record", "", "write the register words the guest test saw to DIR/<cpu>_<insn>_<call>.json")
	timeout := flag.Duration("timeout", 150*time.Second, "limit per guest boot")
	parallel := flag.Int("parallel", 2, "guests booted at once")
	keep := flag.Bool("keep", false, "keep the build directory")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := qemu.Run(ctx, qemu.Options{
		CacheDir: *cache, Kernel: *kernel, CPUs: strings.Split(*cpus, ","),
		Run: *run, Timeout: *timeout, Parallel: *parallel, Keep: *keep,
	})
	var skip *qemu.SkipError
	if errors.As(err, &skip) {
		fmt.Println(skip.Error())
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ppc64le-test:", err)
		os.Exit(1)
	}
	if *record != "" {
		for _, c := range res.CPUs {
			if err := qemu.WriteRegRecords(*record, c.Regs); err != nil {
				fmt.Fprintln(os.Stderr, "ppc64le-test:", err)
				os.Exit(1)
			}
			if len(c.Regs) > 0 {
				fmt.Fprintf(os.Stderr, "ppc64le-test: %s: wrote %d register records to %s\n", c.CPU, len(c.Regs), *record)
			}
		}
	}
	pass, fail := 0, 0
	for _, c := range res.CPUs {
		if c.Pass {
			pass++
		} else {
			fail++
			fmt.Fprintf(os.Stderr, "ppc64le-test: FAIL %s: %s\n", c.CPU, c.Verdict)
		}
	}
	// The plain closing line CI reads: one guest boot counts as one test.
	fmt.Printf("ppc64le: %d passed, %d failed\n", pass, fail)
	if fail > 0 {
		os.Exit(1)
	}
}
