package patience

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFromLoadavg(t *testing.T) {
	for _, tc := range []struct {
		line string
		cpus int
		want float64
	}{
		{"0.83 1.39 1.42 1/118 2258", 2, 1},  // quiet: never below 1
		{"13.00 9.00 5.00 2/300 99", 2, 6.5}, // loaded
		{"1.00 1.00 1.00 31/300 99", 2, 15},  // a burst the average has not seen yet
		{"4.00 4.00 4.00 3/300 99", 4, 1},    // as many tasks as CPUs
		{"garbage", 2, 1},                    // unreadable: quiet
		{"x 1 1 1/1 1", 2, 1},                // unreadable load
		{"30.00 1 1 1/1 1", 0, 1},            // no CPU count
	} {
		if got := FromLoadavg(tc.line, tc.cpus); got != tc.want {
			t.Errorf("FromLoadavg(%q, %d) = %v, want %v", tc.line, tc.cpus, got, tc.want)
		}
	}
}

// The floor from the environment applies, and the factor never leaves [1, MaxFactor].
func TestFactorFloorAndBounds(t *testing.T) {
	t.Setenv(Env, "7")
	cache.Lock()
	cache.at = time.Time{}
	cache.Unlock()
	if f := Factor(); f < 7 || f > MaxFactor {
		t.Errorf("Factor with %s=7: %v, want at least 7 and at most %d", Env, f, MaxFactor)
	}
	t.Setenv(Env, "1000")
	cache.Lock()
	cache.at = time.Time{}
	cache.Unlock()
	if f := Factor(); f != MaxFactor {
		t.Errorf("Factor with %s=1000: %v, want the cap %d", Env, f, MaxFactor)
	}
	if d := Scale(time.Second); d != MaxFactor*time.Second {
		t.Errorf("Scale(1s) at the cap: %v", d)
	}
}

// A Deadline is never shorter than asked, however quiet the machine, and Reset starts it over.
func TestDeadlineNeverShort(t *testing.T) {
	start := time.Now()
	dl := New(30 * time.Millisecond)
	for !dl.Passed() {
		time.Sleep(time.Millisecond)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("a 30ms deadline passed after %v", d)
	}
	dl.Reset()
	if dl.Passed() {
		t.Error("passed right after Reset")
	}
	if !Until(20*time.Millisecond, time.Millisecond, func() bool { return true }) {
		t.Error("Until of a true condition returned false")
	}
	start = time.Now()
	if Until(20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("Until of a false condition returned true")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("Until gave up after %v, want at least 20ms", d)
	}
}

// A stretched deadline: at factor 5, 20ms of wall time use 4ms of a 20ms wait, 100ms more use
// the rest.
func TestDeadlineStretches(t *testing.T) {
	factor = func() float64 { return 5 }
	t.Cleanup(func() { factor = Factor })
	dl := New(20 * time.Millisecond)
	dl.last = dl.last.Add(-20 * time.Millisecond)
	dl.start = dl.last
	if dl.Passed() {
		t.Errorf("a 20ms deadline passed after 20ms at factor 5 (used %v)", dl.used)
	}
	dl.last = dl.last.Add(-100 * time.Millisecond)
	if !dl.Passed() {
		t.Errorf("a 20ms deadline had not passed after 120ms at factor 5 (used %v)", dl.used)
	}
	// However loaded, MaxFactor times the budget ends it.
	factor = func() float64 { return 1e9 }
	dl = New(time.Millisecond)
	dl.start = dl.start.Add(-MaxFactor * time.Millisecond)
	if !dl.Passed() {
		t.Error("a deadline outlived MaxFactor times its budget")
	}
}

func TestAfterAndWithTimeout(t *testing.T) {
	start := time.Now()
	<-After(20 * time.Millisecond)
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("After(20ms) fired after %v", d)
	}
	ctx, cancel := WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("WithTimeout's Err after the deadline: %v, want DeadlineExceeded", ctx.Err())
	}
	ctx, cancel = WithTimeout(context.Background(), time.Hour)
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("WithTimeout's Err after cancel: %v, want Canceled", ctx.Err())
	}
}

// A Stopwatch is over once its budget is used at the load of each moment, not before.
func TestStopwatch(t *testing.T) {
	sw := Start(time.Hour)
	if took, over := sw.Stop(); over || took <= 0 {
		t.Errorf("an hour's stopwatch stopped at once: took %v, over %v", took, over)
	}
	factor = func() float64 { return 1 }
	t.Cleanup(func() { factor = Factor })
	sw = Start(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if _, over := sw.Stop(); !over {
		t.Error("a 1ms stopwatch was not over after 5ms on a quiet machine")
	}
}
