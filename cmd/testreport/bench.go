package main

// The -bench mode: `go test -bench` on stdin becomes the table `make bench` prints: each of
// crashtui's costs beside the floor measured in the same run (a minimal C tracer, or the
// job's own noise with nothing attached), their ratio and the goal, then one line for every
// other benchmark. A failing or skipped benchmark is printed with its reason; the exit status
// is 1 when a benchmark failed. A goal not met is shown (✗) but is not a failure: this is a
// measurement, not a test.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// row is one line of the table: metric of bench, beside floor (a metric of the same bench,
// "" for none), against goal: the ratio must be at most ratioGoal, or the value at most
// valueGoal (0: no such goal).
type row struct {
	bench, label        string
	metric, floor, unit string
	ratio               string // the benchmark's own ratio metric ("" : metric/floor)
	ratioGoal           float64
	valueGoal           float64
	strict              bool // the value must be below valueGoal, not at most
}

type section struct {
	title string
	rows  []row
}

// table is what the issue asks of the hot path (tracer/floor_bench_test.go, crash_test.go).
var table = []section{
	{"added per event: crashtui against the floor tracer (floor.c)", []row{
		{bench: "BenchmarkEventCost/signal", label: "one signal delivered", metric: "crashtui-us/event", floor: "floor-us/event", unit: "µs", ratio: "crashtui/floor", ratioGoal: 1.3},
		{bench: "BenchmarkEventCost/thread", label: "one thread created", metric: "crashtui-us/event", floor: "floor-us/event", unit: "µs", ratio: "crashtui/floor", ratioGoal: 1.3},
		{bench: "BenchmarkEventCost/fork", label: "one fork+exec", metric: "crashtui-us/event", floor: "floor-us/event", unit: "µs", ratio: "crashtui/floor", ratioGoal: 1.3},
	}},
	{"end to end: the job's own clock, time added per event (json: run --json; live: with --matrix measure --sample-every 5s; tui: the TUI on a drained pty)", jobTimeRows()},
	{"held at ptrace stops, per fork+exec: from a task's switch away in the traced state to its next run; then the tracer's run on a CPU where a task of the job waits, woken (the kernel's sched events; json: run --json)", []row{
		{bench: "BenchmarkStopHold", label: "all five stops", metric: "json-held-us/event", floor: "floor-held-us/event", unit: "µs", ratio: "json-held/floor"},
		{bench: "BenchmarkStopHold", label: "the exec stop", metric: "json-exec-held-us", floor: "floor-exec-held-us", unit: "µs", ratio: "json-exec-held/floor"},
		{bench: "BenchmarkStopHold", label: "tracer on the job's CPU", metric: "json-oncpu-us/event", floor: "floor-oncpu-us/event", unit: "µs", ratio: "json-oncpu/floor"},
	}},
	{"attach and detach, 1000 processes (floor: floor.c -attach; stops: untraced noise)", []row{
		{bench: "BenchmarkAttachDetach1000", label: "attach, per process", metric: "attach-us/process", floor: "floor-attach-us/process", unit: "µs", ratio: "attach/floor", valueGoal: 100},
		{bench: "BenchmarkAttachDetach1000", label: "longest stop, attaching", metric: "attach-longest-stop-ms", floor: "untraced-longest-ms", unit: "ms", valueGoal: 5},
		{bench: "BenchmarkAttachDetach1000", label: "longest stop, detaching", metric: "detach-longest-stop-ms", floor: "untraced-longest-ms", unit: "ms", valueGoal: 5},
	}},
	{"a million tasks: 1024 agents' streams of 1024 ranks, 32 reducing views of 32, one root (floor: one flat view of all)", []row{
		{bench: "BenchmarkMillionTasks", label: "level 1, slowest view", metric: "level1-s", unit: "s", valueGoal: 1, strict: true},
		{bench: "BenchmarkMillionTasks", label: "level 1, a view's most CPU", metric: "level1-cpu-s", unit: "s"},
		{bench: "BenchmarkMillionTasks", label: "root (flat view: floor)", metric: "root-s", floor: "flat-s", unit: "s", valueGoal: 1, strict: true},
		{bench: "BenchmarkMillionTasks", label: "root's RSS (flat's: floor)", metric: "root-rss-MB", floor: "flat-rss-MB", unit: "MB", valueGoal: 256, strict: true},
		{bench: "BenchmarkMillionTasks", label: "level 1 view's RSS", metric: "level1-rss-MB", unit: "MB"},
	}},
	{"crashes: signal-delivery-stop to crash event, 64 ranks at 4 sites", []row{
		{bench: "BenchmarkCrashStorm", label: "first crash (cold)", metric: "ms/cold-crash", unit: "ms", valueGoal: 20},
		{bench: "BenchmarkCrashStorm", label: "each later crash (warm)", metric: "ms/warm-crash", unit: "ms", valueGoal: 0.5, strict: true},
		{bench: "BenchmarkCrashStorm", label: "first to last", metric: "ms/first-to-last", unit: "ms"},
	}},
}

// jobTimeRows are BenchmarkJobTime's figures (issue 23 item 4): for each kind of event and
// each way a user runs crashtui, the time it adds to the job against the floor tracer's,
// round by round; then the context switches --json adds, and the CPU time the job itself
// adds under --json, beside the floor's (no goal).
func jobTimeRows() []row {
	var rows []row
	for _, k := range []struct{ bench, name string }{{"signal", "signal"}, {"thread", "thread"}, {"fork", "fork+exec"}} {
		bench := "BenchmarkJobTime/" + k.bench
		for _, m := range []struct{ mode, label string }{{"json", "json"}, {"json-live", "live"}, {"tui", "tui"}} {
			rows = append(rows, row{bench: bench, label: k.name + ", " + m.label, metric: m.mode + "-us/event",
				floor: "floor-us/event", unit: "µs", ratio: m.mode + "/floor", ratioGoal: 1.3})
		}
		rows = append(rows, row{bench: bench, label: k.name + ", json switches", metric: "json-switches/event",
			floor: "floor-switches/event", unit: "/ev"},
			row{bench: bench, label: k.name + ", json job CPU", metric: "json-cpu-us/event",
				floor: "floor-cpu-us/event", unit: "µs"})
	}
	return rows
}

// result is one benchmark line: its metrics by unit.
type result struct {
	name    string
	metrics map[string]float64
	order   []string
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseLine parses "BenchmarkX-2   3   123 ns/op   4.5 unit ..." (ok false for other lines).
func parseLine(line string) (result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return result{}, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return result{}, false
	}
	r := result{name: procSuffix.ReplaceAllString(f[0], ""), metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return result{}, false
		}
		if _, dup := r.metrics[f[i+1]]; !dup {
			r.order = append(r.order, f[i+1])
		}
		r.metrics[f[i+1]] = v
	}
	return r, true
}

// benchRun is what one run of go test -bench said.
type benchRun struct {
	results  map[string]result
	order    []string
	failed   []string // the lines of failing benchmarks and packages, and their output
	skipped  []string
	packages int
}

func readBench(in io.Reader, log io.Writer) (*benchRun, error) {
	rep := &benchRun{results: map[string]result{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// pending is what a package said since its last benchmark line, but its header: the
	// errors of a build that failed. after is what the lines indented under a "--- FAIL" or
	// "--- SKIP" belong to (its reason).
	var pending []string
	after := ""
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		trim := strings.TrimSpace(line)
		if after != "" && strings.HasPrefix(line, "    ") {
			if after == "fail" {
				rep.failed = append(rep.failed, line)
			} else {
				rep.skipped[len(rep.skipped)-1] += ": " + trim
				after = ""
			}
			continue
		}
		after = ""
		switch {
		case strings.HasPrefix(trim, "--- FAIL"):
			rep.failed = append(rep.failed, line)
			pending, after = nil, "fail"
		case strings.HasPrefix(line, "FAIL"), strings.HasPrefix(line, "panic:"):
			rep.failed = append(rep.failed, append(pending, line)...)
			pending = nil
		case strings.HasPrefix(trim, "--- SKIP"):
			rep.skipped = append(rep.skipped, trim)
			pending, after = nil, "skip"
		case strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "ok\t"):
			rep.packages++
			pending = nil
		default:
			if r, ok := parseLine(line); ok {
				if _, seen := rep.results[r.name]; !seen {
					rep.order = append(rep.order, r.name)
				}
				rep.results[r.name] = r
				pending = nil
			} else if !benchHeader(line) && len(pending) < 40 {
				pending = append(pending, line)
			}
		}
	}
	return rep, sc.Err()
}

// benchHeader says whether line is one go test -bench prints before a package's results.
func benchHeader(line string) bool {
	for _, p := range []string{"goos:", "goarch:", "pkg:", "cpu:", "PASS", "exit status"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func num(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// g is a goal as written in the issue.
func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// writeBench prints the table, then the other benchmarks; it returns how many goals were not met.
func writeBench(w io.Writer, rep *benchRun) int {
	missed := 0
	shown := map[string]bool{}
	fmt.Fprintf(w, "%-28s %12s %12s %7s   %s\n", "", "crashtui", "floor", "ratio", "goal")
	for _, sec := range table {
		fmt.Fprintln(w, sec.title)
		for _, r := range sec.rows {
			res, ok := rep.results[r.bench]
			v, has := res.metrics[r.metric]
			if !ok || !has {
				fmt.Fprintf(w, "  %-26s %12s\n", r.label, "no result")
				continue
			}
			shown[r.bench] = true
			floor, ratio := "", ""
			var q float64
			if fv, ok := res.metrics[r.floor]; ok && r.floor != "" {
				floor = num(fv) + " " + r.unit
				if rv, ok := res.metrics[r.ratio]; ok && r.ratio != "" {
					q = rv
				} else if fv > 0 {
					q = v / fv
				}
				ratio = num(q)
			}
			goal, met := "", true
			switch {
			case r.ratioGoal > 0 && floor == "":
				goal, met, ratio = "ratio ≤ "+g(r.ratioGoal), false, "no floor"
			case r.ratioGoal > 0:
				goal, met = "ratio ≤ "+g(r.ratioGoal), q <= r.ratioGoal
			case r.valueGoal > 0 && r.strict:
				goal, met = "< "+g(r.valueGoal)+" "+r.unit, v < r.valueGoal
			case r.valueGoal > 0:
				goal, met = "≤ "+g(r.valueGoal)+" "+r.unit, v <= r.valueGoal
			}
			mark := ""
			if goal != "" {
				mark = "✓"
				if !met {
					mark = "✗"
					missed++
				}
			}
			fmt.Fprintf(w, "  %-26s %12s %12s %7s   %s %s\n", r.label, num(v)+" "+r.unit, floor, ratio, goal, mark)
		}
	}
	var others []string
	for _, name := range rep.order {
		if shown[name] {
			continue
		}
		res := rep.results[name]
		var parts []string
		for _, unit := range res.order {
			if unit == "ns/op" && len(res.order) > 1 {
				continue // the loop's own time, when the benchmark reports what it measured
			}
			v := res.metrics[unit]
			if unit == "ns/op" && v >= 1e6 {
				v, unit = v/1e6, "ms/op" // as the goals in the doc comments are written
			}
			parts = append(parts, num(v)+" "+unit)
		}
		others = append(others, fmt.Sprintf("  %-34s %s", strings.TrimPrefix(name, "Benchmark"), strings.Join(parts, ", ")))
	}
	if len(others) > 0 {
		fmt.Fprintln(w, "other benchmarks (goals in each one's doc comment)")
		for _, o := range others {
			fmt.Fprintln(w, o)
		}
	}
	for _, s := range rep.skipped {
		fmt.Fprintln(w, "  "+s)
	}
	return missed
}

// benchReport is testreport -bench: the table of go test -bench's output on in, written to
// out; what go test said goes to log. It returns the exit status.
func benchReport(in io.Reader, out, log io.Writer) int {
	rep, err := readBench(in, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		return 2
	}
	missed := writeBench(out, rep)
	switch {
	case len(rep.failed) > 0:
		fmt.Fprintln(out, "FAIL: a benchmark failed:")
		for _, l := range rep.failed {
			fmt.Fprintln(out, l)
		}
		return 1
	case missed > 0:
		fmt.Fprintf(out, "%d goal(s) not met (✗); this machine's noise moves each figure: run again to tell noise from a regression\n", missed)
	default:
		fmt.Fprintln(out, "every goal met")
	}
	return 0
}
