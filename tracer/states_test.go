package tracer

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// The engine's hold states, each entered and left on a real process, and the tracee's death
// in each of them (tracer/doc.go, "One hold state per task"). The victim is this test binary
// re-executed: one locked thread sleeps 1 ms at a time and checks every result, SIGUSR1 and
// SIGTRAP are caught and counted, and a FIFO it holds open lets an injected read block until
// the test writes to it.

const stateVictimEnv = "CRASHTUI_STATE_VICTIM"

// TestStateVictimProcess is the tracee of the state tests, not a test. Its stdin takes
// "count" (prints "count USR1 TRAP"), "check" (prints "ok LOOPS" or "bad WHAT") and "mask"
// (prints the sleeping thread's SigBlk).
func TestStateVictimProcess(t *testing.T) {
	fifo := os.Getenv(stateVictimEnv)
	if fifo == "" {
		return
	}
	usr1 := make(chan os.Signal, 64)
	signal.Notify(usr1, unix.SIGUSR1, unix.SIGTRAP)
	var mu sync.Mutex
	counts := map[os.Signal]int{}
	go func() {
		for s := range usr1 {
			mu.Lock()
			counts[s]++
			mu.Unlock()
		}
	}()
	fd, err := unix.Open(fifo, unix.O_RDWR, 0) // never EOF, never blocks on open
	if err != nil {
		fmt.Printf("bad open %v\n", err)
		os.Exit(1)
	}
	bad := make(chan string, 16)
	loops := make(chan int, 1)
	ready := make(chan int)
	go func() {
		runtime.LockOSThread()
		ready <- unix.Gettid()
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
	tid := <-ready
	fmt.Printf("ready %d\ntid %d\nfifo %d\n", os.Getpid(), tid, fd)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "count":
			mu.Lock()
			fmt.Printf("count %d %d\n", counts[unix.SIGUSR1], counts[unix.SIGTRAP])
			mu.Unlock()
		case "mask":
			fmt.Printf("mask %s\n", procfs.StatusField(fmt.Sprintf("/proc/self/task/%d/status", tid), "SigBlk"))
		default:
			select {
			case b := <-bad:
				fmt.Printf("bad %s\n", b)
			default:
				fmt.Printf("ok %d\n", <-loops)
			}
		}
	}
	os.Exit(0)
}

// stateVictim is a running TestStateVictimProcess.
type stateVictim struct {
	*piped
	tid, fifoFD int
	fifo        string
}

func startStateVictim(t *testing.T) *stateVictim {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(stateVictimEnv, fifo) // for the child only: restored after the test
	v := &stateVictim{piped: startPiped(t, exe, "-test.run=^TestStateVictimProcess$"), fifo: fifo}
	if _, err := fmt.Sscanf(v.line(t), "tid %d", &v.tid); err != nil {
		t.Fatalf("victim: %v", err)
	}
	if _, err := fmt.Sscanf(v.line(t), "fifo %d", &v.fifoFD); err != nil {
		t.Fatalf("victim: %v", err)
	}
	return v
}

// ask sends a command and returns the answer.
func (v *stateVictim) ask(t *testing.T, cmd string) string {
	t.Helper()
	fmt.Fprintln(v.in, cmd)
	return v.line(t)
}

// healthy checks that the victim's sleeps kept returning what they should.
func (v *stateVictim) healthy(t *testing.T) {
	t.Helper()
	if a := v.ask(t, "check"); !strings.HasPrefix(a, "ok") {
		t.Errorf("victim: %s", a)
	}
}

// feed lets an injected read of the victim's FIFO return.
func (v *stateVictim) feed(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(v.fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{'x'})
	f.Close()
}

// stateLog records the engine's events for a state test (Emit runs on the loop).
type stateLog struct {
	mu    sync.Mutex
	exits map[int]sessions.Exit
	errs  []sessions.Error
}

func (l *stateLog) emit(e sessions.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch b := e.Body.(type) {
	case sessions.Exit:
		if l.exits == nil {
			l.exits = map[int]sessions.Exit{}
		}
		l.exits[b.PID] = b
	case sessions.Error:
		l.errs = append(l.errs, b)
	}
}

func (l *stateLog) exit(pid int) (sessions.Exit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	x, ok := l.exits[pid]
	return x, ok
}

// stateTracer attaches a Tracer (with w as its watcher, if any) to the victim.
func stateTracer(t *testing.T, v *stateVictim, w Watcher) (*Tracer, *stateLog) {
	t.Helper()
	log := &stateLog{}
	tr := New(Options{Emit: log.emit, Watcher: w})
	t.Cleanup(func() { tr.Close() })
	job, _ := ParseJob("pid:" + strconv.Itoa(v.pid))
	if _, err := tr.Attach(job); err != nil {
		t.Fatal(err)
	}
	return tr, log
}

// stateOf is the engine's state of tid ("gone" once it left the table), read on the loop.
func stateOf(tr *Tracer, tid int) string {
	st := "gone"
	tr.do(func() error {
		if tk := tr.tasks[tid]; tk != nil {
			st = tk.state.String()
		}
		return nil
	})
	return st
}

// waitStateOf waits until the engine has tid in state want.
func waitStateOf(t *testing.T, tr *Tracer, tid int, want string) {
	t.Helper()
	if !patience.Until(5*time.Second, time.Millisecond, func() bool { return stateOf(tr, tid) == want }) {
		t.Fatalf("thread %d is %s, never %s", tid, stateOf(tr, tid), want)
	}
}

// procState is the kernel's state letter of thread tid of pid.
func procState(pid, tid int) byte {
	st, err := procfs.ReadTaskStat(pid, tid)
	if err != nil {
		return 0
	}
	return st.State
}

// killed checks that the victim died of SIGKILL and that the engine saw it go.
func killed(t *testing.T, tr *Tracer, log *stateLog, v *stateVictim) {
	t.Helper()
	if !patience.Until(10*time.Second, time.Millisecond, func() bool { _, ok := log.exit(v.pid); return ok }) {
		t.Fatalf("no exit event for %d (thread %s)", v.pid, stateOf(tr, v.tid))
	}
	if x, _ := log.exit(v.pid); x.Signal != "SIGKILL" {
		t.Errorf("exit %+v, want death by SIGKILL", x)
	}
	if st := stateOf(tr, v.tid); st != "gone" {
		t.Errorf("thread %d still in the table, %s", v.tid, st)
	}
	for _, e := range log.errs {
		t.Errorf("error event: %+v", e)
	}
}

// TestStateHeldAndBack: running → stopping → held (the kernel shows a tracing stop) →
// running again (it sleeps on, unharmed); and a thread killed while held, while stopping and
// while running is gone, with its exit.
func TestStateHeldAndBack(t *testing.T) {
	v := startStateVictim(t)
	tr, _ := stateTracer(t, v, nil)
	if st := stateOf(tr, v.tid); st != "running" {
		t.Fatalf("after attach: %s", st)
	}
	var during string
	var kernel byte
	err := tr.do(func() error {
		return tr.holdOne(v.tid, func(tk *task) error {
			during, kernel = tk.state.String(), procState(v.pid, v.tid)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != "held" || kernel != 't' {
		t.Errorf("held: engine %s, kernel %c; want held, t", during, kernel)
	}
	waitStateOf(t, tr, v.tid, "running")
	v.healthy(t)

	// Killed while held or stopping, a thread stops once more, at PTRACE_EVENT_EXIT, and is
	// kept there while held (the kernel cannot end it before it is let go); let go, it is gone.
	for _, when := range []string{"held", "stopping", "running"} {
		t.Run("death while "+when, func(t *testing.T) {
			v := startStateVictim(t)
			tr, log := stateTracer(t, v, nil)
			err := tr.do(func() error {
				tk := tr.tasks[v.tid]
				var got []*task
				switch when {
				case "held":
					var late []Late
					if got, late = tr.hold([]*task{tk}, HoldOptions{Timeout: 5 * time.Second}); len(got) == 0 {
						return fmt.Errorf("not held: %v", late)
					}
				case "stopping":
					if err := tr.interrupt(tk); err != nil {
						return err
					}
					tk.holders++
					got = []*task{tk}
				}
				defer tr.release(got, "test")
				if tk.state.String() != when {
					return fmt.Errorf("thread is %s, want %s", tk.state, when)
				}
				if err := unix.Kill(v.pid, unix.SIGKILL); err != nil || when == "running" {
					return err
				}
				if !tr.waitUntil(got, func() bool {
					return tr.tasks[v.tid] == nil || (tk.state == held && tk.stop.event == unix.PTRACE_EVENT_EXIT)
				}, 10*time.Second) {
					return fmt.Errorf("killed while %s: %s %s, never at its exit stop", when, tk.state, tk.stop)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			killed(t, tr, log, v)
		})
	}
}

// TestStateListening: a job-control stop is the job's (listening); a hold brings it to its
// group-stop, held, and gives it back listening (still stopped); SIGCONT runs it on; killed
// while listening, it is gone.
func TestStateListening(t *testing.T) {
	v := startStateVictim(t)
	tr, log := stateTracer(t, v, nil)
	unix.Kill(v.pid, unix.SIGSTOP)
	waitStateOf(t, tr, v.tid, "listening")
	var kind StopKind
	err := tr.Do(func(l *Loop) error {
		return l.Hold([]int{v.tid}, HoldOptions{}, func(h *Held) error {
			if len(h.Threads) != 1 {
				return h.LateErr("hold")
			}
			kind = h.Threads[0].Stop()
			return nil
		})
	})
	if err != nil || kind != StopGroup {
		t.Fatalf("held a job-stopped thread at %v (%v), want its group-stop", kind, err)
	}
	waitStateOf(t, tr, v.tid, "listening")
	if st := procState(v.pid, v.tid); st != 't' && st != 'T' {
		t.Errorf("a job-stopped thread runs after a hold: %c", st)
	}
	unix.Kill(v.pid, unix.SIGCONT)
	waitStateOf(t, tr, v.tid, "running")
	v.healthy(t)
	unix.Kill(v.pid, unix.SIGSTOP)
	waitStateOf(t, tr, v.tid, "listening")
	unix.Kill(v.pid, unix.SIGKILL)
	killed(t, tr, log, v)
}

// signalWatcher is a Watcher for the state tests: it records the state of each thread
// handed to it at a signal-delivery-stop and decides with decide (nil: the default).
type signalWatcher struct {
	mu     sync.Mutex
	states []string
	sigs   []int
	decide func(s *SignalStop)
}

func (w *signalWatcher) Signal(l *Loop, s *SignalStop) {
	w.mu.Lock()
	w.states = append(w.states, s.State())
	w.sigs = append(w.sigs, s.Sig)
	w.mu.Unlock()
	if w.decide != nil {
		w.decide(s)
	}
}
func (w *signalWatcher) Syscall(l *Loop, s *SyscallStop)                  {}
func (w *signalWatcher) TaskGone(l *Loop, pid, tid int)                   {}
func (w *signalWatcher) ProcessGone(l *Loop, pid int, ws unix.WaitStatus) {}
func (w *signalWatcher) Tick(l *Loop) bool                                { return false }

func (w *signalWatcher) seen() ([]string, []int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.states...), append([]int(nil), w.sigs...)
}

// TestStatePeeked: a signal-delivery-stop is handed to the watcher peeked (its status not
// consumed); delivered, the program's handler runs; suppressed, it does not; a thread killed
// while peeked is gone.
func TestStatePeeked(t *testing.T) {
	v := startStateVictim(t)
	suppress := false
	var mu sync.Mutex
	w := &signalWatcher{decide: func(s *SignalStop) {
		mu.Lock()
		defer mu.Unlock()
		if suppress && s.Sig == int(unix.SIGUSR1) {
			s.Suppress()
		}
	}}
	tr, _ := stateTracer(t, v, w)
	count := func() string { return v.ask(t, "count") }
	unix.Tgkill(v.pid, v.tid, unix.SIGUSR1)
	if !patience.Until(5*time.Second, 5*time.Millisecond, func() bool { return count() == "count 1 0" }) {
		t.Fatalf("delivered SIGUSR1 not counted: %s", count())
	}
	states, _ := w.seen()
	if len(states) == 0 || states[0] != "peeked" {
		t.Errorf("the watcher saw the signal stop as %v, want peeked", states)
	}
	mu.Lock()
	suppress = true
	mu.Unlock()
	unix.Tgkill(v.pid, v.tid, unix.SIGUSR1)
	if !patience.Until(5*time.Second, time.Millisecond, func() bool { _, sigs := w.seen(); return len(sigs) >= 2 }) {
		t.Fatal("the second SIGUSR1 never reached the watcher")
	}
	waitStateOf(t, tr, v.tid, "running")
	if c := count(); c != "count 1 0" {
		t.Errorf("a suppressed SIGUSR1 reached the handler: %s", c)
	}
	v.healthy(t)

	t.Run("death while peeked", func(t *testing.T) {
		v := startStateVictim(t)
		w := &signalWatcher{decide: func(s *SignalStop) { unix.Kill(s.PID(), unix.SIGKILL) }}
		tr, log := stateTracer(t, v, w)
		unix.Tgkill(v.pid, v.tid, unix.SIGUSR1)
		killed(t, tr, log, v)
	})
}

// TestStateInjecting: a thread inside an injected call (a read of its FIFO, which blocks) is
// injecting; when the call returns it is held again, with its registers and mask its own. A
// SIGSTOP pending as it enters the guard (every other signal blocked) takes the place of the
// call's stop: the thread is put back at that signal stop, mask included, and then stopped
// as the job wanted (the bug of a drain that delivered that signal while the injection was
// still putting the thread back left it with every signal blocked). Killed while injecting,
// it is gone.
func TestStateInjecting(t *testing.T) {
	readNr, ok := arch.SyscallNumber(arch.Host(), "read")
	if !ok || arch.NumWords(arch.Host()) == 0 {
		t.Skipf("no register glue or read on %s", arch.Host())
	}
	for _, how := range []string{"returns", "sigstop", "killed"} {
		t.Run(how, func(t *testing.T) {
			v := startStateVictim(t)
			// The signal stop the injection met is the injection's until it is done: the
			// loop hands it to the watcher only after.
			// early is written on the loop (the watcher may still be called there after do
			// returns) and read here.
			var inCall bool
			var early atomic.Bool
			w := &signalWatcher{decide: func(*SignalStop) {
				if inCall {
					early.Store(true)
				}
			}}
			tr, log := stateTracer(t, v, w)
			mask := v.ask(t, "mask")
			var ret int64
			var callErr error
			var during string
			go func() {
				// The read blocks: the engine says injecting, the kernel a read.
				nr, _ := arch.SyscallNumber(arch.Host(), "read")
				patience.Until(5*time.Second, time.Millisecond, func() bool {
					return procfs.ReadTaskSyscall(v.pid, v.tid).Nr == nr
				})
				switch how {
				case "returns":
					v.feed(t)
				case "killed":
					unix.Kill(v.pid, unix.SIGKILL)
				}
			}()
			err := tr.do(func() error {
				return tr.holdOne(v.tid, func(tk *task) error {
					s, err := tr.beginInject(tk)
					if err != nil {
						return err
					}
					sc, err := (&Injection{s: s}).Scratch(8)
					if err != nil {
						return err
					}
					stepHook = func(tk *task) {
						if during == "" {
							during = tk.state.String()
							if how == "sigstop" {
								unix.Tgkill(v.pid, v.tid, unix.SIGSTOP) // pending as it enters the guard
							}
						}
					}
					if how == "sigstop" {
						// The signal stop is there before the wait's first look at every
						// task: the look that once handed it on to the loop.
						stepResumed = func() { time.Sleep(20 * time.Millisecond) }
					}
					defer func() { stepHook, stepResumed = nil, nil }()
					inCall = true
					ret, _, callErr = s.call(readNr, uint64(v.fifoFD), sc.Addr, 1)
					s.end()
					inCall = false
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if early.Load() {
				t.Error("the signal stop met by the injection was handed to the watcher before the injection was done with it")
			}
			if during != "injecting" {
				t.Errorf("inside the call the thread was %s, want injecting", during)
			}
			switch how {
			case "returns":
				if callErr != nil || ret != 1 {
					t.Errorf("injected read = %d, %v; want 1", ret, callErr)
				}
			case "sigstop":
				if callErr != errInjectInterrupted {
					t.Errorf("injected read with a SIGSTOP pending: %d, %v; want errInjectInterrupted", ret, callErr)
				}
				waitStateOf(t, tr, v.tid, "listening")
				unix.Kill(v.pid, unix.SIGCONT)
				waitStateOf(t, tr, v.tid, "running")
			case "killed":
				if callErr == nil {
					t.Error("the injected read of a killed thread returned no error")
				}
				killed(t, tr, log, v)
				return
			}
			if m := v.ask(t, "mask"); m != mask {
				t.Errorf("after the injection the thread's mask is %s, was %s", m, mask)
			}
			v.healthy(t)
		})
	}
}

// TestStateAbandoned: an injected call that outlives the injection (here the wait is cut
// short and the interrupt withheld, as for a call in uninterruptible sleep) leaves the thread
// abandoned to its guard; when the call returns the engine puts back the rest and it runs on,
// its own; killed while abandoned, it is gone.
func TestStateAbandoned(t *testing.T) {
	readNr, ok := arch.SyscallNumber(arch.Host(), "read")
	if !ok || arch.NumWords(arch.Host()) == 0 {
		t.Skipf("no register glue or read on %s", arch.Host())
	}
	defer func(w time.Duration, n bool) { injectWait, injectNoInterrupt = w, n }(injectWait, injectNoInterrupt)
	injectWait, injectNoInterrupt = 100*time.Millisecond, true
	for _, how := range []string{"returns", "killed"} {
		t.Run(how, func(t *testing.T) {
			v := startStateVictim(t)
			tr, log := stateTracer(t, v, nil)
			mask := v.ask(t, "mask")
			var callErr error
			err := tr.do(func() error {
				return tr.holdOne(v.tid, func(tk *task) error {
					s, err := tr.beginInject(tk)
					if err != nil {
						return err
					}
					sc, err := (&Injection{s: s}).Scratch(8)
					if err != nil {
						return err
					}
					_, _, callErr = s.call(readNr, uint64(v.fifoFD), sc.Addr, 1)
					s.end()
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if callErr == nil {
				t.Fatal("the injected read returned within its wait: not abandoned")
			}
			if st := stateOf(tr, v.tid); st != "abandoned" {
				t.Fatalf("after the cut-short wait the thread is %s, want abandoned", st)
			}
			if how == "killed" {
				unix.Kill(v.pid, unix.SIGKILL)
				killed(t, tr, log, v)
				return
			}
			v.feed(t)
			waitStateOf(t, tr, v.tid, "running")
			if m := v.ask(t, "mask"); m != mask {
				t.Errorf("after the abandoned call returned the mask is %s, was %s", m, mask)
			}
			v.healthy(t)
		})
	}
}

// TestStateExited: a thread held at PTRACE_EVENT_EXIT is let go into exited (it never stops
// again) and then gone with its process's exit.
func TestStateExited(t *testing.T) {
	v := startStateVictim(t)
	tr, log := stateTracer(t, v, nil)
	var tks []*task
	err := tr.do(func() error {
		for _, tk := range tr.procs[v.pid].tasks {
			tks = append(tks, tk)
		}
		got, late := tr.hold(tks, HoldOptions{Timeout: 5 * time.Second})
		if len(late) > 0 {
			return fmt.Errorf("not held: %v", late)
		}
		unix.Kill(v.pid, unix.SIGTERM)
		for _, tk := range got {
			tr.resume(tk, 0) // holds kept: each stops for them at its exit
		}
		if !tr.waitUntil(got, func() bool {
			tk := tr.tasks[v.tid]
			return tk == nil || (tk.state == held && tk.stop.event == unix.PTRACE_EVENT_EXIT)
		}, 10*time.Second) {
			return fmt.Errorf("the thread never reached its exit stop: %s %s", tr.tasks[v.tid].state, tr.tasks[v.tid].stop)
		}
		tk := tr.tasks[v.tid]
		if tk == nil {
			return fmt.Errorf("the thread died before its exit stop")
		}
		for _, o := range got {
			if tr.tasks[o.tid] == o {
				o.holders = 0
				tr.resume(o, 0)
			}
		}
		if tk.state != exited {
			return fmt.Errorf("let go from its exit stop, the thread is %s, want exited", tk.state)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !patience.Until(10*time.Second, time.Millisecond, func() bool { _, ok := log.exit(v.pid); return ok }) {
		t.Fatal("no exit event")
	}
	if x, _ := log.exit(v.pid); x.Signal != "SIGTERM" {
		t.Errorf("exit %+v, want SIGTERM", x)
	}
}

const signalDeathEnv = "CRASHTUI_SIGNAL_DEATH_HELPER"

// TestSignalSurvivesTracerDeath: kernel.md D.3 made a promise. A tracer process (this test
// binary re-executed) whose watcher SIGKILLs it while it decides a signal-delivery-stop dies
// with the stop peeked, its status never consumed: the kernel delivers the signal, and the
// program's handler runs. (Had the stop been consumed, the signal would be lost.)
func TestSignalSurvivesTracerDeath(t *testing.T) {
	if pid := os.Getenv(signalDeathEnv); pid != "" {
		signalDeathHelper(pid)
		return
	}
	v := startStateVictim(t)
	exe, _ := os.Executable()
	helper := exec.Command(exe, "-test.run=^TestSignalSurvivesTracerDeath$")
	helper.Env = append(os.Environ(), signalDeathEnv+"="+strconv.Itoa(v.pid))
	helper.Env = append(helper.Env, stateVictimEnv+"=")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "attached" {
	}
	unix.Tgkill(v.pid, v.tid, unix.SIGUSR1)
	err = helper.Wait()
	if ws, ok := err.(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the helper tracer ended with %v, want its own SIGKILL", err)
	}
	if !patience.Until(5*time.Second, 5*time.Millisecond, func() bool { return v.ask(t, "count") == "count 1 0" }) {
		t.Fatalf("the SIGUSR1 held at the dead tracer's stop was lost: %s", v.ask(t, "count"))
	}
	if tp := taskStatusField(v.pid, v.tid, "TracerPid"); tp != "0" {
		t.Errorf("TracerPid %s after the tracer died", tp)
	}
	v.healthy(t)
}

func signalDeathHelper(pid string) {
	w := &signalWatcher{decide: func(s *SignalStop) {
		if s.Sig == int(unix.SIGUSR1) {
			unix.Kill(os.Getpid(), unix.SIGKILL) // crashtui dies deciding
			time.Sleep(time.Hour)
		}
	}}
	tr := New(Options{Watcher: w})
	job, _ := ParseJob("pid:" + pid)
	if _, err := tr.Attach(job); err != nil {
		fmt.Println("attach:", err)
		os.Exit(3)
	}
	fmt.Println("attached")
	time.Sleep(time.Minute)
	os.Exit(4)
}
