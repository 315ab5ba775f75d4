//go:build linux

// Command init is PID 1 of the ppc64le and arm64 test guests booted by package
// qemu. It mounts proc, sysfs, devtmpfs and a tmpfs, runs the cross-compiled
// tracer test binary with -test.run from crashtui.run= on the kernel command
// line (PPC64LE when absent), prints one verdict line that the host parses,
// and powers the guest off. A watchdog powers off even if the tests hang, so
// QEMU always exits.
//
// It must not run anything but the test binary, and must always power off:
// returning from PID 1 would panic the kernel.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// VerdictPrefix starts the line the host looks for (package qemu parses it).
const VerdictPrefix = "CRASHTUI-VERDICT:"

const (
	testBinary = "/bin/tracer.test"
	scvProg    = "/bin/scvprog"   // ppc64le sc/scv helper
	svcProg    = "/bin/svcprog"   // arm64 svc helper
	peerProg   = "/bin/peer"      // demo/access/peer (the Yama matrix test)
	crashProg  = "/bin/crashprog" // the crash test's Go helper
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
	args := []string{"-test.run", run, "-test.v", "-test.count=1", "-test.timeout", (timeout - 5*time.Second).String()}
	cmd := exec.Command(testBinary, args...)
	cmd.Dir = "/tmp"
	cmd.Env = []string{
		"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp",
		"CRASHTUI_GUEST_CPU=" + cpu,
		"CRASHTUI_SCVPROG=" + scvProg,
		"CRASHTUI_SVCPROG=" + svcProg,
		"CRASHTUI_PEER=" + peerProg,
		"CRASHTUI_CRASHPROG=" + crashProg,
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	var sawNoTests, sawPass bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Println(line)
			if strings.Contains(line, "no tests to run") {
				sawNoTests = true
			}
			if strings.HasPrefix(line, "--- PASS: ") {
				sawPass = true
			}
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	switch {
	case err != nil:
		verdict("FAIL", fmt.Sprintf("%s: %v", testBinary, err))
	case sawNoTests || !sawPass:
		// go test exits 0 when -test.run matches nothing: that is no pass.
		verdict("FAIL", "no test ran")
	default:
		verdict("PASS", "cpu="+cpu)
	}
}

// verdict prints the verdict line once and powers off; it never returns.
func verdict(v, detail string) {
	powerOnce.Do(func() {
		fmt.Printf("\n%s %s %s\n", VerdictPrefix, v, detail)
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
