//go:build ppc64le || arm64

package tracer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Helpers shared by the tests that run inside the QEMU guests (tracer/qemu): the guest's CPU
// model, the guest helper programs, and waiting for a thread to block in a syscall.

// guestCPU is the QEMU -cpu model the stage booted (crashtui.cpu= on the kernel command
// line), "" outside a guest.
func guestCPU(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Fatalf("read /proc/cmdline: %v", err)
	}
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, "crashtui.cpu="); ok {
			return v
		}
	}
	return ""
}

// guestProgram returns the guest helper tracer/qemu/guest/NAME: the one the guest image
// carries (its path in env), or one built now when a Go toolchain is present.
func guestProgram(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no %s and no go toolchain to build tracer/qemu/guest/%s", env, name)
	}
	out := filepath.Join(t.TempDir(), name)
	if b, err := exec.Command(gobin, "build", "-o", out, "./qemu/guest/"+name).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	return out
}

// waitInSyscall polls /proc/PID/task/TID/syscall (a blocked syscall cannot be waited on
// otherwise) until the thread is inside syscall nr with first argument arg0.
func waitInSyscall(t *testing.T, pid, tid, nr int, arg0 uint64) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid)
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		last = strings.TrimSpace(string(b))
		f := strings.Fields(last)
		if len(f) >= 2 && f[0] == strconv.Itoa(nr) {
			if a, err := strconv.ParseUint(f[1], 0, 64); err == nil && a == arg0 {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s never showed syscall %d(%#x, ...); last %q", path, nr, arg0, last)
}
