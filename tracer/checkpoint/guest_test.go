//go:build ppc64le || arm64

package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/qemu"
	"github.com/crashtui/crashtui/tracer/tracertest"
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

// waitInSyscall polls /proc/PID/task/TID/syscall (a blocked syscall cannot be waited on
// otherwise) until the thread is inside syscall nr with first argument arg0.
func waitInSyscall(t *testing.T, pid, tid, nr int, arg0 uint64) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid)
	deadline := patience.New(30 * time.Second)
	var last string
	for !deadline.Passed() {
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

// guestHelper is one running guest helper (scvprog, svcprog): it blocks in a raw syscall
// reading the pipe on its fd 3 and reports on stdout.
type guestHelper struct {
	name   string
	cmd    *exec.Cmd
	out    *bufio.Reader
	stderr *bytes.Buffer
	pipeW  *os.File // write end of the pipe the helper reads (fd 3)
	waited bool
}

// startGuestHelper starts the helper NAME (path in env) with args; cleanup closes its pipe
// and kills it if it was not waited for.
func startGuestHelper(t *testing.T, env, name string, args ...string) *guestHelper {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	cmd := exec.Command(tracertest.GuestProgram(t, env, name), args...)
	cmd.ExtraFiles = []*os.File{pr}
	// No async-preemption signals: the helper sits in a raw syscall the Go runtime does
	// not know about, and SIGURG would add signal stops.
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	h := &guestHelper{name: name, cmd: cmd, out: bufio.NewReader(stdout), stderr: &bytes.Buffer{}, pipeW: pw}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	pr.Close()
	t.Cleanup(func() {
		pw.Close()
		if !h.waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return h
}

// scan reads the helper's next line and parses it with format.
func (h *guestHelper) scan(t *testing.T, what, format string, args ...any) {
	t.Helper()
	line, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s %s line: %v (stderr %q)", h.name, what, err, h.stderr.String())
	}
	if _, err := fmt.Sscanf(line, format, args...); err != nil {
		t.Fatalf("%s %s line %q: %v", h.name, what, line, err)
	}
}

// wait drains the helper's output and waits for it to exit 0. With maybeReaped, ECHILD is
// fine: a helper that exited while a tracer.Tracer of this test was attached was reaped for good by
// it (the tracer thread is in its parent's thread group: kernel/exit.c wait_task_zombie).
func (h *guestHelper) wait(t *testing.T, maybeReaped bool) {
	t.Helper()
	io.Copy(io.Discard, h.out)
	h.waited = true
	if err := h.cmd.Wait(); err != nil && !(maybeReaped && errors.Is(err, unix.ECHILD)) {
		t.Fatalf("%s: %v (stderr %q)", h.name, err, h.stderr.String())
	}
}

// auxvHWCap2 is this process's AT_HWCAP2 (0 if absent).
func auxvHWCap2(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		t.Fatalf("read /proc/self/auxv: %v", err)
	}
	for i := 0; i+16 <= len(b); i += 16 {
		if binary.LittleEndian.Uint64(b[i:]) == 26 { // AT_HWCAP2
			return binary.LittleEndian.Uint64(b[i+8:])
		}
	}
	return 0
}

// emitRegsRecord completes rec with this guest's CPU, kernel and AT_HWCAP2, the instruction
// word and bytes and the register words, and prints it on one stdout line (outside t.Log's
// wrapping) for the host harness to collect into tracer/qemu/testdata.
func emitRegsRecord(t *testing.T, rec qemu.RegRecord, insn []byte, w []uint64) {
	t.Helper()
	var u unix.Utsname
	unix.Uname(&u)
	rec.CPU, rec.Kernel = guestCPU(t), unix.ByteSliceToString(u.Release[:])
	if rec.CPU == "" {
		rec.CPU = "hw"
	}
	rec.HWCap2 = fmt.Sprintf("%#x", auxvHWCap2(t))
	rec.InsnBytes = hex.EncodeToString(insn)
	if len(insn) >= 4 {
		rec.InsnWord = fmt.Sprintf("%#08x", binary.LittleEndian.Uint32(insn))
	}
	for _, v := range w {
		rec.Words = append(rec.Words, fmt.Sprintf("%#x", v))
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatalf("regs record: %v", err)
	}
	fmt.Printf("%s %s\n", qemu.RegsPrefix, b)
}

// threadByTID is the checkpoint's event for tid.
func threadByTID(t *testing.T, threads []sessions.Thread, tid int) *sessions.Thread {
	t.Helper()
	for i := range threads {
		if threads[i].TID == tid {
			return &threads[i]
		}
	}
	t.Fatalf("thread %d not among the %d captured", tid, len(threads))
	return nil
}

// raw is the register access of a thread this test traces itself.
func raw(tid int) tracer.RawThread { return tracer.RawThread{TID: tid} }

// rawPtrace is one ptrace request of this test's own (it traces the helper itself).
func rawPtrace(req, tid int, addr, data uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0); e != 0 {
		return e
	}
	return nil
}
