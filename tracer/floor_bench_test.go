package tracer

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// buildFloor compiles the floor tracer and the event workload (tracer/testdata/floor).
func buildFloor(b *testing.B) (floor, events string) {
	b.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("gcc is not installed (make test installs it)")
	}
	dir := b.TempDir()
	floor, events = filepath.Join(dir, "floor"), filepath.Join(dir, "events")
	for _, c := range [][]string{
		{"gcc", "-O2", "-o", floor, "testdata/floor/floor.c"},
		{"gcc", "-O2", "-pthread", "-o", events, "testdata/floor/events.c"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	return floor, events
}

// BenchmarkEventCost is the time crashtui adds per ptrace event — one signal delivered, one
// thread created, one fork+exec — against the floor: a minimal C tracer of the same design
// (PTRACE_SEIZE, the same options, one blocking waitpid loop, no /proc reads), measured in
// the same run. Each cost is (time of N events − time of none) / N, traced minus untraced,
// each time the least of three runs;
// the ratio crashtui/floor is the figure of merit (goal ≤ 1.3).
func BenchmarkEventCost(b *testing.B) {
	floor, events := buildFloor(b)
	for _, kind := range []struct {
		name string
		n    int
	}{{"signal", 2000}, {"thread", 1000}, {"fork", 200}} {
		b.Run(kind.name, func(b *testing.B) {
			run := func(how string, n int) time.Duration {
				start := time.Now()
				switch how {
				case "plain":
					if err := exec.Command(events, kind.name, strconv.Itoa(n)).Run(); err != nil {
						b.Fatal(err)
					}
				case "floor":
					if err := exec.Command(floor, events, kind.name, strconv.Itoa(n)).Run(); err != nil {
						b.Fatal(err)
					}
				case "crashtui":
					tr := New(Options{})
					if _, err := tr.Launch(LaunchSpec{N: 1, Argv: []string{events, kind.name, strconv.Itoa(n)}}); err != nil {
						b.Fatal(err)
					}
					<-tr.JobDone()
					d := time.Since(start)
					tr.Close()
					return d
				}
				return time.Since(start)
			}
			// The least of three runs of each: a busy machine only ever adds time.
			least := func(how string, n int) time.Duration {
				best := run(how, n)
				for i := 0; i < 2; i++ {
					best = min(best, run(how, n))
				}
				return best
			}
			per := func(how string) float64 {
				return float64(least(how, kind.n)-least(how, 0)) / float64(kind.n)
			}
			var plain, fl, ct float64
			for i := 0; i < b.N; i++ {
				plain += per("plain")
				fl += per("floor")
				ct += per("crashtui")
			}
			n := float64(b.N)
			floorAdded, crashtuiAdded := (fl-plain)/n/1000, (ct-plain)/n/1000
			b.ReportMetric(floorAdded, "floor-us/event")
			b.ReportMetric(crashtuiAdded, "crashtui-us/event")
			b.ReportMetric(crashtuiAdded/floorAdded, "crashtui/floor")
		})
	}
}
