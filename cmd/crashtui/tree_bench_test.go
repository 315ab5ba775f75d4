package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkMillionTasks is issue 27's tree at a million tasks: a real agent's stream of 1024
// ranks (treerank: crashes at 4 sites, 3 stack classes; recordAgent), copied for 1024 hosts
// with their ranks moved up (1,048,576 tasks), merged by 32 `view --json --reduce` of 32
// copies each (level 1: each copy as one srun would merge its agents' lines), then by one root
// `view --json` of the 32 reduced streams; beside them, one flat `view --json --reduce` of all
// 1024 copies, in the same run. It reports each level's time (level 1: its slowest view; they
// run side by side on their own nodes) and CPU time (user and system: what a loaded machine
// inflates less), the root's and the flat view's time and largest RSS, and their ratios; it
// fails when the root does not show what the flat view shows (groups, classes, counts, rank
// ranges). Goals: each level under 1 s, the root under 256 MB.
//
// The views run one after another, so each is timed alone on this machine; the copies are
// written to a view's stdin as it reads (by this process: memory copies, not JSON). It is
// measured once per run of the test binary, whatever b.N: one run is minutes.
// CRASHTUI_TREE_SCALE=N runs it with N agents of N ranks instead (N a square: 64, 256).
func BenchmarkMillionTasks(b *testing.B) {
	m := measureTree(b)
	b.ReportMetric(float64(m.tasks), "tasks")
	b.ReportMetric(m.level1.Seconds(), "level1-s")
	b.ReportMetric(m.level1Median.Seconds(), "level1-median-s")
	b.ReportMetric(m.level1CPU.Seconds(), "level1-cpu-s")
	b.ReportMetric(m.level1MedianCPU.Seconds(), "level1-median-cpu-s")
	b.ReportMetric(float64(m.level1RSS)/(1<<20), "level1-rss-MB")
	b.ReportMetric(m.root.Seconds(), "root-s")
	b.ReportMetric(m.rootCPU.Seconds(), "root-cpu-s")
	b.ReportMetric(float64(m.rootRSS)/(1<<20), "root-rss-MB")
	b.ReportMetric(m.flat.Seconds(), "flat-s")
	b.ReportMetric(float64(m.flatRSS)/(1<<20), "flat-rss-MB")
	b.ReportMetric(m.flat.Seconds()/(m.level1+m.root).Seconds(), "flat/tree-time")
	b.ReportMetric(float64(m.flatRSS)/float64(m.rootRSS), "flat/root-rss")
	b.ReportMetric(float64(m.streamBytes)/(1<<20), "agent-stream-MB")
}

type treeMeasure struct {
	tasks                       int
	level1, level1Median, root  time.Duration
	level1CPU, level1MedianCPU  time.Duration // user and system time
	rootCPU                     time.Duration
	flat                        time.Duration
	level1RSS, rootRSS, flatRSS int64
	streamBytes                 int
}

var treeMeasured struct {
	sync.Once
	m   *treeMeasure
	err string
}

func measureTree(b *testing.B) *treeMeasure {
	treeMeasured.Do(func() {
		n := 1024
		if s := os.Getenv("CRASHTUI_TREE_SCALE"); s != "" {
			n, _ = strconv.Atoi(s)
		}
		fan := int(math.Sqrt(float64(n)))
		if fan*fan != n || n < 4 {
			b.Fatalf("CRASHTUI_TREE_SCALE=%d: want a square of at least 4", n)
		}
		stream := recordAgent(b, n)
		tpl := newStreamTemplate(stream, n)
		m := &treeMeasure{tasks: n * n, streamBytes: len(stream)}
		dir := b.TempDir()
		var files []string
		var times, cpus []time.Duration
		for v := 0; v < fan; v++ {
			run := runView(b, func(w io.Writer) error { return tpl.merged(w, v*fan, fan) },
				"--json", "--reduce", "--host", fmt.Sprintf("view%02d", v))
			times, cpus = append(times, run.wall), append(cpus, run.cpu)
			m.level1RSS = max(m.level1RSS, run.rss)
			f := filepath.Join(dir, fmt.Sprintf("view%02d.jsonl", v))
			if err := os.WriteFile(f, run.out, 0o600); err != nil {
				b.Fatal(err)
			}
			files = append(files, f)
		}
		slices.Sort(times)
		slices.Sort(cpus)
		m.level1, m.level1Median = times[len(times)-1], times[len(times)/2]
		m.level1CPU, m.level1MedianCPU = cpus[len(cpus)-1], cpus[len(cpus)/2]
		root := runView(b, nil, append([]string{"--json"}, files...)...)
		m.root, m.rootRSS, m.rootCPU = root.wall, root.rss, root.cpu
		flat := runView(b, func(w io.Writer) error { return tpl.merged(w, 0, n) }, "--json", "--reduce", "--host", "flat")
		m.flat, m.flatRSS = flat.wall, flat.rss
		if got, want := shows(b, root.out), shows(b, flat.out); got != want {
			b.Fatalf("the root shows\n%s\nthe flat view shows\n%s", got, want)
		}
		treeMeasured.m = m
	})
	if treeMeasured.m == nil {
		b.Fatal("the tree was not measured (see the first run's failure)")
	}
	return treeMeasured.m
}
