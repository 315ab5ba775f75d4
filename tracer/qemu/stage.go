package qemu

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
)

// stageCommands are the checks of `make guest` (shell mode, BootCommand) every stage runs
// from its own initramfs: a command's output and exit status come back from the guest, for a
// success and for a failure (crashtui's own status 2 for a JOB that names nothing), and a
// file added from the host (stageAdded) is on the command's PATH.
var stageCommands = []struct {
	run    string
	status int
	ok     func(out string) bool
	want   string
}{
	{"crashtui version; " + stageAddedName + " ok", 0, func(out string) bool {
		l := strings.Split(out, "\n")
		return len(l) == 3 && strings.HasPrefix(l[0], "crashtui ") && len(l[0]) > len("crashtui ") && l[1] == "added: ok" && l[2] == ""
	}, `"crashtui VERSION\nadded: ok\n"`},
	{"crashtui matrix pid:999999", 2, func(out string) bool {
		return strings.Contains(out, "names no process") && strings.Contains(out, "pid:999999")
	}, "crashtui saying pid:999999 names no process"},
}

// stageAdded is the script the stage adds to its guests, as `make guest ADD=...` would.
const (
	stageAddedName = "crashtui-added"
	stageAdded     = "#!/bin/sh\necho added: \"$@\"\n"
)

// Main is a whole test stage for one architecture, as a command line: boot a guest per CPU
// model, run the tracer tests in it, run stageCommands in shell mode, print "<arch>: N passed,
// N failed" (the plain closing line CI reads, one guest boot counting as one test) and return
// the exit status. Its progress lines (ProgressPrefix) go to stderr with the rest of the log.
// A guest is stopped only when it stops making progress (-boot, -idle), never after a fixed
// time: on a loaded host the same guest takes several times as long. It returns 0 after printing "SKIP: reason" only when the stage truly cannot
// run (SkipError). cmd/ppc64le-test and cmd/arm64-test are this for PPC64LE and ARM64.
func Main(a *Arch, args []string, stdout, stderr io.Writer) int {
	name := a.GOARCH + "-test"
	env := "CRASHTUI_" + strings.ToUpper(a.GOARCH)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpus := fs.String("cpus", strings.Join(a.CPUs, ","), "comma-separated QEMU -cpu models to boot")
	run := fs.String("run", a.Run, "guest -test.run pattern")
	cache := fs.String("cache", os.Getenv(env+"_CACHE"), "kernel cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/"+a.GOARCH+")")
	kernel := fs.String("kernel", os.Getenv(env+"_KERNEL"), "kernel to boot instead of the cached Debian one")
	record := fs.String("record", "", "write the register words the guest tests saw to DIR as JSON fixtures")
	boot := fs.Duration("boot", DefaultBoot, "how long a guest may take to reach its /init, in quiet-machine time (stretched while the host is loaded)")
	idle := fs.Duration("idle", DefaultIdle, "how long a booted guest may print nothing, in quiet-machine time (stretched while the host is loaded)")
	timeout := fs.Duration("timeout", DefaultTimeout, "backstop per guest boot, for a guest that never stops printing")
	parallel := fs.Int("parallel", 2, "guests booted at once")
	keep := fs.Bool("keep", false, "keep the build directory")
	shell := fs.Bool("guest", true, "also boot the `make guest` checks (shell mode)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var commands, add []string
	if *shell {
		for _, c := range stageCommands {
			commands = append(commands, c.run)
		}
		dir, err := os.MkdirTemp("", "crashtui-added-")
		if err != nil {
			fmt.Fprintln(stderr, name+":", err)
			return 1
		}
		defer os.RemoveAll(dir)
		script := filepath.Join(dir, stageAddedName)
		if err := os.WriteFile(script, []byte(stageAdded), 0o755); err != nil {
			fmt.Fprintln(stderr, name+":", err)
			return 1
		}
		add = append(add, script)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := Run(ctx, Options{
		Arch: a, CacheDir: *cache, Kernel: *kernel, CPUs: strings.Split(*cpus, ","),
		Run: *run, Boot: *boot, Idle: *idle, Timeout: *timeout, Parallel: *parallel, Keep: *keep, Commands: commands, Add: add,
	})
	var skip *SkipError
	if errors.As(err, &skip) {
		fmt.Fprintln(stdout, skip.Error())
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	if *record != "" {
		for _, c := range res.CPUs {
			if err := WriteRegRecords(*record, c.Regs); err != nil {
				fmt.Fprintln(stderr, name+":", err)
				return 1
			}
			if len(c.Regs) > 0 {
				fmt.Fprintf(stderr, "%s: %s: wrote %d register records to %s\n", name, c.CPU, len(c.Regs), *record)
			}
		}
	}
	pass, fail := 0, 0
	for _, c := range res.CPUs {
		if c.Pass {
			pass++
		} else {
			fail++
			fmt.Fprintf(stderr, "%s: FAIL %s: %s\n", name, c.CPU, c.Verdict)
			for _, l := range FailedTests(c.Output, 20) {
				fmt.Fprintf(stderr, "%s:   %s\n", c.CPU, l)
			}
		}
	}
	for i, c := range res.Commands {
		want := stageCommands[i]
		switch {
		case c.Err != nil:
			fail++
			fmt.Fprintf(stderr, "%s: FAIL guest %q: %v\n", name, c.Command, c.Err)
		case c.Status != want.status || !want.ok(c.Output):
			fail++
			fmt.Fprintf(stderr, "%s: FAIL guest %q: status %d, output %q; want status %d and %s\n", name, c.Command, c.Status, c.Output, want.status, want.want)
		default:
			pass++
		}
	}
	fmt.Fprintf(stdout, "%s: %d passed, %d failed\n", a.GOARCH, pass, fail)
	if fail > 0 {
		return 1
	}
	return 0
}
