//go:build linux

// Command init is PID 1 of the ppc64le and arm64 guests booted by package
// qemu. It mounts proc, sysfs, devtmpfs and a tmpfs, runs the cross-compiled
// tracer test binaries (the engine's and its features') with -test.run from crashtui.run= on the kernel command
// line (PPC64LE when absent), prints one verdict line that the host parses,
// and powers the guest off. A watchdog powers off even if the tests hang, so
// QEMU always exits.
//
// Before the tests it prints the names of those that will run on one line
// ("crashtui guest: tests: TestA TestB"), so that the host can say how far
// they have got; crashtui.patience= (the host's load factor at boot,
// demo/patience) reaches the tests as CRASHTUI_PATIENCE, so that their waits
// stretch with the host's load as well as with the guest's own.
//
// With crashtui.mode=shell (`make guest`) it runs instead the command in
// crashtui.cmd= (base64url, no padding) with busybox's `sh -c`, between a
// begin line and an exit line carrying its status, which the host parses.
//
// It must not run anything but the test binary or that command, and must
// always power off: returning from PID 1 would panic the kernel.
package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// VerdictPrefix starts the line the host looks for (package qemu parses it).
const VerdictPrefix = "CRASHTUI-VERDICT:"

// Shell mode's lines around the command's output (package qemu has the same literals).
const (
	BeginLine  = "CRASHTUI-BEGIN"
	ExitPrefix = "CRASHTUI-EXIT:"
)

// TestsPrefix starts the line naming the tests that will run (package qemu has the literal).
const TestsPrefix = "crashtui guest: tests:"

const (
	// testGlob are the cross-compiled test binaries: the engine's (tracer.test) and each
	// feature's (crash.test, checkpoint.test, access.test, stacks.test).
	testGlob  = "/bin/*.test"
	scvProg   = "/bin/scvprog"   // ppc64le sc/scv helper
	svcProg   = "/bin/svcprog"   // arm64 svc helper
	peerProg  = "/bin/peer"      // demo/access/peer (the Yama matrix test)
	crashProg = "/bin/crashprog" // the crash test's Go helper
	// C programs built with the cross gcc (qemu.Arch.CHelpers).
	sigpendingProg = "/bin/sigpending" // demo/restart/sigpending.c, static
	crashSuiteProg = "/bin/crash"      // demo/crashes' crash.c, dynamic
	busybox        = "/bin/busybox"    // Debian's busybox-static
)

var powerOnce sync.Once

func main() {
	mounts := []struct{ src, dst, fstype string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/tmp", "tmpfs"},
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			verdict("FAIL", fmt.Sprintf("mkdir %s: %v", m.dst, err))
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, 0, ""); err != nil && err != unix.EBUSY {
			verdict("FAIL", fmt.Sprintf("mount %s on %s: %v", m.fstype, m.dst, err))
		}
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	params := parseCmdline(string(cmdline))

	timeout := 150 * time.Second
	if s, ok := params["crashtui.timeout"]; ok {
		if d, err := time.ParseDuration(s); err == nil {
			timeout = d
		}
	}
	// Busybox's applets as symlinks in /bin: the shell of shell mode, and /bin/sh for
	// Tracer.Launch (crashtui run) in the tests.
	for _, d := range []string{"/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/root"} {
		os.MkdirAll(d, 0o755)
	}
	if _, err := os.Stat(busybox); err == nil {
		if out, err := exec.Command(busybox, "--install", "-s", "/bin").CombinedOutput(); err != nil {
			verdict("FAIL", fmt.Sprintf("busybox --install: %v: %s", err, out))
		}
	}
	if params["crashtui.mode"] == "shell" {
		shell(params["crashtui.cmd"], timeout, params["crashtui.stdin"] == "console")
	}
	// Watchdog: the tests get `timeout`; past it the guest powers off with a
	// FAIL verdict instead of letting the host's timeout kill QEMU blind.
	time.AfterFunc(timeout, func() { verdict("FAIL", fmt.Sprintf("watchdog: tests still running after %v", timeout)) })

	cpu := params["crashtui.cpu"]
	hw2 := hwcap2()
	// Leading newline: the firmware banner before it ends mid-line.
	fmt.Printf("\ncrashtui guest: cpu=%s AT_HWCAP2=%#x kernel=%s\n", cpu, hw2, uname())

	run := params["crashtui.run"]
	if run == "" {
		run = "PPC64LE"
	}
	env := []string{
		"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp",
		"CRASHTUI_GUEST_CPU=" + cpu,
		"CRASHTUI_SCVPROG=" + scvProg,
		"CRASHTUI_SVCPROG=" + svcProg,
		"CRASHTUI_PEER=" + peerProg,
		"CRASHTUI_CRASHPROG=" + crashProg,
		"CRASHTUI_SIGPENDING=" + sigpendingProg,
		"CRASHTUI_CRASHSUITE=" + crashSuiteProg,
	}
	if f := params["crashtui.patience"]; f != "" {
		env = append(env, "CRASHTUI_PATIENCE="+f)
	}
	binaries, _ := filepath.Glob(testGlob)
	// access.test last: its TestYamaMeasured ends at Yama's ptrace_scope 3, which cannot be
	// lowered until reboot and denies every later test /proc/PID/syscall and attaching.
	sort.Slice(binaries, func(i, j int) bool {
		ai, aj := filepath.Base(binaries[i]) == "access.test", filepath.Base(binaries[j]) == "access.test"
		if ai != aj {
			return aj
		}
		return binaries[i] < binaries[j]
	})
	if len(binaries) == 0 {
		verdict("FAIL", "no test binary in the image ("+testGlob+")")
	}
	// The names first (-test.list runs nothing), so that the host can count them down.
	var names []string
	for _, bin := range binaries {
		list := exec.Command(bin, "-test.list", run)
		list.Dir, list.Env = "/tmp", env
		if out, err := list.Output(); err == nil {
			for _, n := range strings.Fields(string(out)) {
				if strings.HasPrefix(n, "Test") {
					names = append(names, n)
				}
			}
		}
	}
	fmt.Printf("%s %s\n", TestsPrefix, strings.Join(names, " "))
	// Every binary runs, one after the other, within the one timeout; the verdict is FAIL if
	// any failed, and PASS only if some test passed (go test exits 0 when -test.run matches
	// nothing in a binary, which is no pass).
	deadline := time.Now().Add(timeout - 5*time.Second)
	var failed []string
	sawPass := false
	for _, bin := range binaries {
		left := time.Until(deadline)
		if left <= 0 {
			failed = append(failed, filepath.Base(bin)+": no time left")
			continue
		}
		args := []string{"-test.run", run, "-test.v", "-test.count=1", "-test.timeout", left.String()}
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/tmp"
		cmd.Env = env
		pr, pw := io.Pipe()
		cmd.Stdout = pw
		cmd.Stderr = pw
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 1<<16), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				fmt.Println(line)
				if strings.HasPrefix(line, "--- PASS: ") {
					sawPass = true
				}
			}
		}()
		err := cmd.Run()
		pw.Close()
		<-done
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", bin, err))
		}
	}
	switch {
	case len(failed) > 0:
		verdict("FAIL", strings.Join(failed, "; "))
	case !sawPass:
		verdict("FAIL", "no test ran")
	default:
		verdict("PASS", "cpu="+cpu)
	}
}

// shell runs the base64url command with busybox's sh -c, its output on the console, prints
// the exit line and powers off; it never returns. With console (crashtui.stdin=console) the
// command's stdin is the console, so that the host can talk to it (crashtui agent --control
// under crashtui demo --guest); otherwise /dev/null. PATH puts the host's added files
// (/usr/local/bin) first. Past timeout it powers off with a FAIL verdict and no exit line.
func shell(cmd64 string, timeout time.Duration, console bool) {
	b, err := base64.RawURLEncoding.DecodeString(cmd64)
	if err != nil {
		verdict("FAIL", "crashtui.cmd: "+err.Error())
	}
	cmd := exec.Command("/bin/sh", "-c", string(b))
	cmd.Dir = "/root"
	cmd.Env = []string{"PATH=/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin", "HOME=/root", "TMPDIR=/tmp", "TERM=dumb"}
	// A pipe, not the console itself: the command's stdout is no terminal (crashtui without
	// --json refuses instead of waiting for keys that never come), and a background process
	// that keeps the pipe open holds up the exit line by WaitDelay at most.
	cmd.Stdout = writerOnly{os.Stdout}
	cmd.Stderr = cmd.Stdout
	if console {
		cmd.Stdin = os.Stdin // the console the kernel opened for PID 1
	}
	cmd.WaitDelay = 2 * time.Second
	time.AfterFunc(timeout, func() {
		verdict("FAIL", fmt.Sprintf("watchdog: command still running after %v", timeout))
	})
	// Leading newline: the firmware banner before it ends mid-line.
	fmt.Printf("\n%s\n", BeginLine)
	err = cmd.Run()
	status := 0
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited 0; something it started still had the pipe open.
	case errors.As(err, &ee):
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal()) // as a shell reports it
		}
	case err != nil:
		fmt.Printf("\nsh: %v\n", err)
		status = 127
	}
	powerOff(fmt.Sprintf("%s %d", ExitPrefix, status))
}

// writerOnly hides the *os.File, so that exec.Cmd copies through a pipe of its own.
type writerOnly struct{ w *os.File }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// verdict prints the verdict line once and powers off; it never returns.
func verdict(v, detail string) {
	powerOff(fmt.Sprintf("%s %s %s", VerdictPrefix, v, detail))
}

// powerOff prints the last line (the first caller's only) and powers off; it never returns.
func powerOff(line string) {
	powerOnce.Do(func() {
		fmt.Printf("\n%s\n", line)
		os.Stdout.Sync()
		unix.Sync()
		// LINUX_REBOOT_CMD_POWER_OFF makes QEMU exit (with -no-reboot).
		if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
			fmt.Printf("reboot: %v\n", err)
		}
	})
	select {}
}

func parseCmdline(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// hwcap2 reads AT_HWCAP2 from /proc/self/auxv (8-byte key/value pairs).
func hwcap2() uint64 {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0
	}
	for i := 0; i+16 <= len(b); i += 16 {
		k := le64(b[i:])
		if k == 26 { // AT_HWCAP2
			return le64(b[i+8:])
		}
	}
	return 0
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func uname() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
