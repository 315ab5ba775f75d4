package tracer

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
)

// TestInjectSyscallKeepsRestart injects getpid, the way the product does (injectSyscall: the
// guard, PTRACE_SYSCALL, the restore), into a thread a Tracer holds while it is blocked in its
// sleep, and checks what the kernel reports: the call returns the child's pid; the thread's
// registers, signal mask and the bytes the guard overwrote are what they were; and, resumed,
// the thread goes back into its sleep through restart_syscall, as it would have without the
// injection (a lost restart would return -ERESTART_RESTARTBLOCK to the child, which then calls
// clock_nanosleep again).
func TestInjectSyscallKeepsRestart(t *testing.T) {
	pid, tid := regsTestStart(t) // one thread sleeping 1000 s; no async preemption signals
	sleepNrs := []int{}
	for _, name := range []string{"clock_nanosleep", "nanosleep", "restart_syscall"} {
		if nr, ok := arch.SyscallNumber(arch.Host(), name); ok {
			sleepNrs = append(sleepNrs, nr)
		}
	}
	// Blocked in its sleep before it is attached: the interrupt then ends the sleep with
	// -ERESTART_RESTARTBLOCK.
	if nr := waitSyscallNr(t, pid, tid, sleepNrs); nr < 0 {
		t.Fatalf("thread %d never blocked in its sleep", tid)
	}
	tr := attachPID(t, pid)
	getpid, _ := arch.SyscallNumber(arch.Host(), "getpid")
	err := tr.do(func() error {
		return tr.holdOne(tid, func(tk *task) error {
			saved, err := getRegs(tid)
			if err != nil {
				return err
			}
			if st := arch.Decode(saved, restartInsn(tid, saved)); !st.InSyscall && arch.Host() != arch.ARM64 {
				return fmt.Errorf("held outside its sleep: %+v", st)
			}
			mask := taskStatusField(pid, tid, "SigBlk")
			// Where beginInject will write the guard, and what is there now.
			site, err := tr.guardSite(pid, tid, saved.Arch, arch.ResumeRegs(saved, restartInsn(tid, saved)).PC())
			if err != nil {
				return err
			}
			before := make([]byte, arch.GuardSize)
			if err := peekBytes(tid, site, before); err != nil {
				return err
			}

			ret, errno, err := tr.injectSyscall(tk, getpid)
			if err != nil || ret != int64(pid) || errno != 0 {
				return fmt.Errorf("injected getpid = %d (errno %d, %v), want %d", ret, errno, err, pid)
			}
			if !canInject(tk) {
				t.Errorf("after the injection the thread is not held at its interrupt stop: %s %+v", tk.state, tk.stop)
			}
			if got, err := getRegs(tid); err != nil || len(regsTestDiff(saved, got, true)) != 0 {
				t.Errorf("registers after the injection: %v, differ: %v", err, regsTestDiff(saved, got, true))
			}
			if m := taskStatusField(pid, tid, "SigBlk"); m != mask {
				t.Errorf("SigBlk %s after the injection, %s before", m, mask)
			}
			after := make([]byte, len(before))
			if err := peekBytes(tid, site, after); err != nil || !bytes.Equal(after, before) {
				t.Errorf("guard site %#x after the injection: %v, bytes put back: %v", site, err, bytes.Equal(after, before))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	restartNr, _ := arch.SyscallNumber(arch.Host(), "restart_syscall")
	if nr := waitSyscallNr(t, pid, tid, sleepNrs); nr != restartNr {
		t.Errorf("after the injection the thread sleeps in syscall %d (%s), want restart_syscall", nr, arch.SyscallName(arch.Host(), nr))
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if tp := taskStatusField(pid, tid, "TracerPid"); tp != "0" {
		t.Errorf("TracerPid %s after Close", tp)
	}
}

// waitSyscallNr waits until the kernel reports tid blocked in one of the syscalls nrs
// (/proc/PID/task/TID/syscall) and returns that number, or the number it is blocked in
// after 5 s (-1 if none).
func waitSyscallNr(t *testing.T, pid, tid int, nrs []int) int {
	t.Helper()
	nr := -1
	for deadline := patience.New(5 * time.Second); !deadline.Passed(); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
		if err != nil {
			t.Fatalf("syscall of %d: %v", tid, err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil && n >= 0 {
			nr = n
			for _, want := range nrs {
				if n == want {
					return n
				}
			}
		}
	}
	return nr
}
