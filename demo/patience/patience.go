// Package patience says how long to wait for something on a machine that others share. A
// wait is given the time it needs on a quiet machine, and that budget is spent more slowly
// while the machine is busy: at a load of L runnable tasks on N CPUs each task gets about N/L
// of a CPU, so the same work takes L/N times as long. Tests (tracer, cmd/crashtui) wait on
// conditions with a Deadline, After or WithTimeout instead of a fixed clock, and the QEMU
// stages (tracer/qemu) give a guest's silence a limit that stretches the same way: a test
// that passes on a quiet laptop passes on a login node at load 30, and one that hangs still
// fails, later.
//
// It reads /proc/loadavg (the 1-minute load average, and the tasks runnable right now, which
// a burst of load raises before the average follows) and the CPUs this process may run on.
// CRASHTUI_PATIENCE=F sets a floor under the factor: a QEMU guest, whose own load says
// nothing of the host's, is booted with the host's factor.
//
// It is about waiting, never about measuring: no test may assert that something was fast
// (benchmarks do that), so nothing here makes a deadline shorter than asked.
package patience

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxFactor bounds the stretch: a wait asked for d gives up after MaxFactor×d whatever the
// load says, so that a condition that never comes still fails the test.
const MaxFactor = 50

// Env is the variable whose value (a number >= 1) is a floor under Factor.
const Env = "CRASHTUI_PATIENCE"

var cache struct {
	sync.Mutex
	at     time.Time
	factor float64
}

// refresh is how long one reading of the load serves: waits poll every millisecond or so,
// and /proc/loadavg changes every 5 s (the runnable count more often, but a 100 ms sample of
// it is what a deadline needs).
const refresh = 100 * time.Millisecond

// Factor is how many times slower than quiet this machine runs now: the 1-minute load
// average, or the tasks runnable now (less this reader), whichever is higher, per CPU this
// process may use; at least 1 (and at least $CRASHTUI_PATIENCE), at most MaxFactor.
func Factor() float64 {
	cache.Lock()
	defer cache.Unlock()
	if now := time.Now(); now.Sub(cache.at) >= refresh || cache.at.IsZero() {
		cache.at, cache.factor = now, measure()
	}
	return cache.factor
}

// factor is Factor, or a fixed one in this package's tests.
var factor = Factor

func measure() float64 {
	f := 1.0
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f = max(f, FromLoadavg(string(b), runtime.NumCPU()))
	}
	if v, err := strconv.ParseFloat(os.Getenv(Env), 64); err == nil {
		f = max(f, v)
	}
	return min(f, MaxFactor)
}

// FromLoadavg is the factor a /proc/loadavg line ("0.83 1.39 1.42 3/118 2258") gives on cpus
// CPUs: max(load1, runnable-1)/cpus, at least 1. A line it cannot read gives 1.
func FromLoadavg(line string, cpus int) float64 {
	f := strings.Fields(line)
	if len(f) < 4 || cpus < 1 {
		return 1
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 1
	}
	if run, _, ok := strings.Cut(f[3], "/"); ok {
		if n, err := strconv.Atoi(run); err == nil {
			load = max(load, float64(n-1)) // the reader itself is running
		}
	}
	return max(1, load/float64(cpus))
}

// Scale is d stretched by the factor now, for a limit that is fixed once given (a child's
// -timeout, a kernel command line).
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}

// Deadline is the limit of one wait, in quiet-machine time: d of it passes in d on a quiet
// machine and in up to MaxFactor×d on a busy one, the load read again as the wait goes on.
// It is not safe for concurrent use.
type Deadline struct {
	budget, used time.Duration
	start, last  time.Time
}

// New starts a wait that a quiet machine would finish within d.
func New(d time.Duration) *Deadline {
	now := time.Now()
	return &Deadline{budget: d, start: now, last: now}
}

// Passed is true once the wait has used its budget (or MaxFactor times it in wall time).
// Each call charges the time since the last one at the factor now.
func (dl *Deadline) Passed() bool {
	now := time.Now()
	dl.used += time.Duration(float64(now.Sub(dl.last)) / factor())
	dl.last = now
	return dl.used >= dl.budget || now.Sub(dl.start) >= MaxFactor*dl.budget
}

// Reset starts the budget again: the thing waited on showed progress (a guest printed a line).
func (dl *Deadline) Reset() {
	now := time.Now()
	dl.used, dl.start, dl.last = 0, now, now
}

// Waited is the wall time since New or Reset: what a failure message should say.
func (dl *Deadline) Waited() time.Duration { return time.Since(dl.start).Round(time.Millisecond) }

// Until calls cond every poll until it returns true (Until returns true) or d of
// quiet-machine time has passed (false; cond is called once more at the end).
func Until(d, poll time.Duration, cond func() bool) bool {
	dl := New(d)
	for !cond() {
		if dl.Passed() {
			return cond()
		}
		time.Sleep(poll)
	}
	return true
}

// tick is how often After and WithTimeout charge their deadline: often enough that they
// fire within a few percent of d on a quiet machine.
func tick(d time.Duration) time.Duration {
	return min(max(d/50, time.Millisecond), refresh)
}

// After is time.After for a wait that a quiet machine would finish within d: its channel
// receives the time once the Deadline has passed. The goroutine behind it lives until then.
func After(d time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	dl := New(d)
	go func() {
		t := time.NewTicker(tick(d))
		defer t.Stop()
		for now := range t.C {
			if dl.Passed() {
				c <- now
				return
			}
		}
	}()
	return c
}

// WithTimeout is context.WithTimeout with d in quiet-machine time: once the Deadline passes,
// the context is done and its Err is context.DeadlineExceeded.
func WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	dl := New(d)
	go func() {
		t := time.NewTicker(tick(d))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if dl.Passed() {
					cancel(context.DeadlineExceeded)
					return
				}
			}
		}
	}()
	return stretched{ctx}, func() { cancel(nil) }
}

// stretched reports its own deadline as context.DeadlineExceeded, as a context with a
// deadline does (a cancel with a cause still says Canceled).
type stretched struct{ context.Context }

func (c stretched) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

// Stopwatch times something that should take at most a given time on a quiet machine (a
// detach that must not wait for a child, a verdict that must not wait for a timeout): while
// it runs, a Deadline of that limit is charged at the load of each moment, so the limit
// stretches as the machine's load does. A test that asserts promptness asserts Over, never a
// wall-clock bound.
type Stopwatch struct {
	mu    sync.Mutex
	dl    *Deadline
	start time.Time
	over  bool
	done  chan struct{}
	ended chan struct{} // the charging goroutine has returned
}

// Start starts timing something a quiet machine does within limit.
func Start(limit time.Duration) *Stopwatch {
	s := &Stopwatch{dl: New(limit), start: time.Now(), done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		t := time.NewTicker(tick(limit))
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.charge()
			}
		}
	}()
	return s
}

func (s *Stopwatch) charge() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.over = s.over || s.dl.Passed()
}

// Stop ends the timing: the wall time it took, and whether that was over the limit at the
// load it ran under. Call it once.
func (s *Stopwatch) Stop() (took time.Duration, over bool) {
	close(s.done)
	<-s.ended
	s.charge()
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.start), s.over
}
