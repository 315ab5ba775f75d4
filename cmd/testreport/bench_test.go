package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
)

// A run as go test -bench prints it (lines from a real run of make bench on this machine).
const sample = `goos: linux
goarch: amd64
pkg: github.com/crashtui/crashtui/tracer
cpu: Intel(R) Xeon(R) Processor
BenchmarkEventCost/signal-2         	       3	 199802968 ns/op	        12.41 crashtui-us/event	         1.063 crashtui/floor	        11.45 floor-us/event
BenchmarkEventCost/thread-2         	       3	 444788280 ns/op	        31.31 crashtui-us/event	         1.454 crashtui/floor	        27.80 floor-us/event
BenchmarkEventCost/fork-2           	       3	1475613163 ns/op	       124.4 crashtui-us/event	         0.8169 crashtui/floor	       136.9 floor-us/event
--- FAIL: BenchmarkEventCost/nofloor
    floor_bench_test.go:60: gcc: exit status 1
BenchmarkEventCost/other-2           	       3	1475613163 ns/op	       124.4 crashtui-us/event
BenchmarkAttachDetach1000-2   	       3	 819921393 ns/op	         1.744 attach-longest-stop-ms	        75.79 attach-us/process	         2.050 attach/floor	         0.5620 detach-longest-stop-ms	        36.97 floor-attach-us/process	         2.386 untraced-longest-ms
BenchmarkJobTime/fork-2           	       1	49410435804 ns/op	       522.2 floor-cpu-us/event	        10.48 floor-switches/event	       570.2 floor-us/event	       534.5 json-cpu-us/event	       514.3 json-live-cpu-us/event	        14.31 json-live-switches/event	       703.4 json-live-us/event	         1.649 json-live/floor	        14.07 json-switches/event	       708.3 json-us/event	         1.438 json/floor	       481.8 tui-cpu-us/event	       673.4 tui-us/event	         2.752 tui/floor
BenchmarkStopHold-2   	       3	8830934497 ns/op	        38.75 floor-exec-held-us	       366.7 floor-held-us/event	        25.74 floor-oncpu-us/event	       130.2 json-exec-held-us	         3.323 json-exec-held/floor	       535.2 json-held-us/event	         1.371 json-held/floor	        98.01 json-oncpu-us/event	         3.808 json-oncpu/floor
BenchmarkStacks1000-2   	       3	 300000000 ns/op	       101.0 ms/sample	       600.0 first-sample-ms
BenchmarkMergeStacks1000/10classes-2           	       3	  22483046 ns/op
BenchmarkDecode-2   	 1000000	      1312 ns/op
--- SKIP: BenchmarkMatrixMeasure64
    measure_bench_test.go:20: gcc is not installed (make test installs it)
--- FAIL: BenchmarkCrashStorm
    crash_test.go:330: 60 crashes, want 64
FAIL
exit status 1
FAIL	github.com/crashtui/crashtui/tracer	40.1s
ok  	github.com/crashtui/crashtui/views	1.2s
`

func TestBenchTable(t *testing.T) {
	var log strings.Builder
	rep, err := readBench(strings.NewReader(sample), &log)
	if err != nil {
		t.Fatal(err)
	}
	if log.String() != sample {
		t.Error("the log is not everything go test said")
	}
	var out strings.Builder
	missed := writeBench(&out, rep)
	got := out.String()
	for _, want := range []string{
		"one signal delivered",
		"12.4 µs", // crashtui
		"11.4 µs", // floor (11.45, to 3 figures)
		"1.06",    // the benchmark's own round-by-round ratio, not 12.41/11.45
		"ratio ≤ 1.3 ✓",
		"1.45   ratio ≤ 1.3 ✗", // thread over its goal
		"75.8 µs",
		"≤ 100 µs ✓",
		"≤ 5 ms ✓",
		"Stacks1000",
		"101 ms/sample, 600 first-sample-ms",
		"MergeStacks1000/10classes          22.5 ms/op",
		"Decode                             1312 ns/op",
		"--- SKIP: BenchmarkMatrixMeasure64: measure_bench_test.go:20: gcc is not installed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if !regexp.MustCompile(`first crash \(cold\) +no result`).MatchString(got) {
		t.Errorf("a failed benchmark's row should say it has no result:\n%s", got)
	}
	for _, want := range []string{
		`fork\+exec, json +708 µs +570 µs +1\.44 +ratio ≤ 1\.3 ✗`, // the round-by-round ratio: 1.438, not 708/570
		`fork\+exec, tui +673 µs +570 µs +2\.75 +ratio ≤ 1\.3 ✗`,
		`fork\+exec, json switches +14\.1 /ev +10\.5 /ev +1\.34 *\n`, // no goal
		`fork\+exec, json job CPU +534 µs +522 µs +1\.02 *\n`,
		`all five stops +535 µs +367 µs +1\.37 *\n`, // a diagnosis: no goal
		`the exec stop +130 µs +38\.8 µs +3\.32 *\n`,
		`tracer on the job's CPU +98\.0 µs +25\.7 µs +3\.81 *\n`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("the table lacks a row like %q:\n%s", want, got)
		}
	}
	if !regexp.MustCompile(`signal, json +no result`).MatchString(got) {
		t.Errorf("a benchmark that did not run should say it has no result:\n%s", got)
	}
	if strings.Contains(got, "JobTime/fork") || strings.Contains(got, "StopHold ") {
		t.Errorf("JobTime is in the table, not among the other benchmarks:\n%s", got)
	}
	if missed != 4 {
		t.Errorf("%d goals missed, want 4 (thread per event; fork+exec json, live and tui)", missed)
	}
	failed := strings.Join(rep.failed, "\n")
	for _, want := range []string{"60 crashes, want 64", "floor_bench_test.go:60: gcc: exit status 1"} {
		if !strings.Contains(failed, want) {
			t.Errorf("the failure %q and its reason were not kept: %q", want, rep.failed)
		}
	}
	if strings.Contains(failed, "goos:") || strings.Contains(failed, "cpu:") {
		t.Errorf("the header went into the failures: %q", rep.failed)
	}
}

func TestBenchParseLine(t *testing.T) {
	r, ok := parseLine("BenchmarkX/y-16   5   100 ns/op   2.5 widgets")
	if !ok || r.name != "BenchmarkX/y" || r.metrics["widgets"] != 2.5 || r.metrics["ns/op"] != 100 {
		t.Errorf("%+v %v", r, ok)
	}
	for _, bad := range []string{"BenchmarkX", "BenchmarkX-2 notanumber 1 ns/op", "ok pkg 1s", "BenchmarkX-2 3 x ns/op"} {
		if _, ok := parseLine(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestBenchNoFloor: a ratio goal without its floor is not met, and says why.
func TestBenchNoFloor(t *testing.T) {
	rep, _ := readBench(strings.NewReader("BenchmarkEventCost/signal-2 3 100 ns/op 12.4 crashtui-us/event\n"), io.Discard)
	var out strings.Builder
	if missed := writeBench(&out, rep); missed != 1 || !strings.Contains(out.String(), "no floor   ratio ≤ 1.3 ✗") {
		t.Errorf("%d missed:\n%s", missed, out.String())
	}
}
