package tracer

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
)

const guardVictimEnv = "CRASHTUI_GUARD_VICTIM"

// TestGuardVictimProcess is the tracee of TestInjectionDeathAtEveryPoint, not a test. One
// locked thread sleeps 1 ms at a time and checks every result; a SIGTRAP handler (Go's,
// through signal.Notify) must still catch SIGTRAP at the end. "check" on stdin asks for the
// verdict: "ok LOOPS" or "bad WHAT".
func TestGuardVictimProcess(t *testing.T) {
	if os.Getenv(guardVictimEnv) != "1" {
		return
	}
	traps := make(chan os.Signal, 1)
	signal.Notify(traps, unix.SIGTRAP)
	bad := make(chan string, 16)
	loops := make(chan int, 1)
	ready := make(chan string)
	go func() {
		runtime.LockOSThread()
		// Its own mask, read by itself as it runs: what SigBlk shows between its signal
		// handlers (Go's block every signal while they run).
		var own unix.Sigset_t
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &own); err != nil {
			bad <- "rt_sigprocmask " + err.Error()
		}
		ready <- fmt.Sprintf("tid %d mask %016x", unix.Gettid(), own.Val[0])
		n := 0
		for {
			err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &unix.Timespec{Nsec: 1e6}, nil)
			if err != nil && err != unix.EINTR {
				bad <- "clock_nanosleep " + err.Error()
			}
			n++
			select {
			case <-loops:
			default:
			}
			loops <- n
		}
	}()
	fmt.Printf("ready %d\n%s\n", os.Getpid(), <-ready)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		select {
		case b := <-bad:
			fmt.Printf("bad %s\n", b)
			continue
		default:
		}
		unix.Kill(os.Getpid(), unix.SIGTRAP)
		select {
		case <-traps:
		case <-patience.After(5 * time.Second):
			fmt.Println("bad SIGTRAP not caught")
			continue
		}
		fmt.Printf("ok %d\n", <-loops)
	}
	os.Exit(0)
}

// guardVictim runs TestGuardVictimProcess and returns its pid, its sleeping thread, that
// thread's own signal mask (as SigBlk shows it), and a function that asks for its verdict.
func guardVictim(t *testing.T) (pid, tid int, mask string, verdict func() string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	t.Setenv(guardVictimEnv, "1") // for the child only: this test's env is restored after it
	p := startPiped(t, exe, "-test.run=^TestGuardVictimProcess$")
	if _, err := fmt.Sscanf(p.line(t), "tid %d mask %s", &tid, &mask); err != nil {
		t.Fatalf("victim: %v", err)
	}
	return p.pid, tid, mask, func() string {
		fmt.Fprintln(p.in, "check")
		return p.line(t)
	}
}

// settledMask is the thread's SigBlk once two reads 20 ms apart agree: while the Go runtime
// (or glibc's pthread_create) clones a thread, the creating thread briefly has every signal
// blocked, and a snapshot of that moment is not the thread's mask.
func settledMask(pid, tid int) string {
	m := taskStatusField(pid, tid, "SigBlk")
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		again := taskStatusField(pid, tid, "SigBlk")
		if again == m {
			return m
		}
		m = again
	}
	return m
}

// TestInjectionDeathAtEveryPoint lets the injected thread go, as the kernel does when
// crashtui dies, at every point of an injection: after its registers point into the guard,
// after every signal is blocked, at the call's entry and exit stops, at the end's interrupt
// stop and between the restored mask and the restored registers. Each time the thread must
// go on with its own registers, mask and SIGTRAP handler: its sleeps keep returning 0 and its
// handler still catches SIGTRAP. Run in the arm64 and ppc64le guests too, it checks each
// architecture's guard code by executing it.
func TestInjectionDeathAtEveryPoint(t *testing.T) {
	if arch.NumWords(arch.Host()) == 0 {
		t.Skipf("no register glue for %s", arch.Host())
	}
	for _, point := range []string{"", "regs", "mask", "entry", "exit", "end", "restore"} {
		name := point
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			// The mask before is the one the thread read for itself: a read of SigBlk from
			// outside can catch it inside a handler, twice in a row when a loaded guest's vCPU
			// stalls (fffffffffffbfeff before, 0000000000000000 after, in the power9 guest).
			pid, tid, blocked, verdict := guardVictim(t)
			if v := verdict(); !strings.HasPrefix(v, "ok") {
				t.Fatalf("victim before: %s", v)
			}
			caught := taskStatusField(pid, tid, "SigCgt")
			tr := attachPID(t, pid)
			getpid, _ := arch.SyscallNumber(arch.Host(), "getpid")
			var ret int64
			err := tr.do(func() error {
				return tr.holdOne(tid, func(tk *task) error {
					tr.injectCut = point
					defer func() { tr.injectCut = "" }()
					r, _, err := tr.injectSyscall(tk, getpid)
					ret = r
					return err
				})
			})
			if point == "" && (err != nil || ret != int64(pid)) {
				t.Fatalf("injected getpid = %d, %v; want %d", ret, err, pid)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // a few more sleeps
			if tp := taskStatusField(pid, tid, "TracerPid"); tp != "0" {
				t.Errorf("TracerPid %s after detach", tp)
			}
			// The guard gives the thread its own mask back as it runs. A read may still catch
			// it inside a signal handler (Go's handlers block every signal while they run) or a
			// clone, twice when a loaded guest's vCPU stalls mid-way: so the mask is waited
			// for, and one that never comes back fails.
			var b string
			if !patience.Until(5*time.Second, 20*time.Millisecond, func() bool {
				b = settledMask(pid, tid)
				return b == blocked
			}) {
				t.Errorf("SigBlk %s after, %s before", b, blocked)
			}
			if c := taskStatusField(pid, tid, "SigCgt"); c != caught {
				t.Errorf("SigCgt %s after, %s before", c, caught)
			}
			if v := verdict(); !strings.HasPrefix(v, "ok") {
				t.Errorf("victim after: %s", v)
			}
		})
	}
}
