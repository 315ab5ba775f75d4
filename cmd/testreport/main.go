// Command testreport turns `go test -json` on its stdin into one line per package (pass or
// fail, and how long it took) and a closing "go: N passed, N failed[, N skipped]" line, for
// `make test`. Everything go test said goes to the -log file; the output of each failing test
// (and any line that is not JSON: a build failure) is printed in full. It exits 1 when
// anything failed.
//
//	go test -json ./... 2>&1 | go run ./cmd/testreport -log build/test-logs/go-test.log
//
// With -bench it reads `go test -bench` instead and prints `make bench`'s table (bench.go).
//
//	go test -run '^$' -bench . ./... 2>&1 | go run ./cmd/testreport -bench -log build/bench.log
//
// With -stage it runs one stage of `make test` (a command) with its output in a log and its
// progress lines on the console, and with -summary it prints the stages' results (stage.go).
//
//	testreport -stage test-arm64 -log build/test-logs/test-arm64.log -results R -- make stage-test-arm64
//	testreport -summary R test-go test-slurm cross test-ppc64le test-arm64
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	logPath := flag.String("log", "", "write everything go test said to `FILE`")
	bench := flag.Bool("bench", false, "read go test -bench, not go test -json, and print the benchmark table")
	stage := flag.String("stage", "", "run the command after the flags as the stage `NAME`, its output in -log")
	results := flag.String("results", "", "append the stage's result to `FILE` (JSON Lines), for -summary")
	all := flag.Bool("all", false, "with -stage: show every line of the command, not only its progress lines")
	quiet := flag.Duration("quiet", 90*time.Second, "with -stage: say the stage is still running after the console was silent this long (0: never)")
	limit := flag.Duration("limit", 0, "with -stage: stop the stage (SIGQUIT, then SIGKILL after -grace) once it has run this long (0: no limit)")
	deadline := flag.Int64("deadline", 0, "with -stage: stop the stage at this time too (Unix seconds: the end of make test's whole budget; 0: none)")
	grace := flag.Duration("grace", time.Minute, "with -stage: how long a stopped stage has to end after SIGQUIT before SIGKILL")
	sum := flag.String("summary", "", "print the results in `FILE` of the stages named after the flags, and the totals")
	flag.Parse()
	switch {
	case *sum != "":
		os.Exit(summary(*sum, flag.Args(), os.Stdout))
	case *stage != "":
		if *logPath == "" || flag.NArg() == 0 {
			fmt.Fprintln(os.Stderr, "testreport: -stage NAME needs -log FILE and a command")
			os.Exit(2)
		}
		o := stageOptions{name: *stage, log: *logPath, results: *results, all: *all, quiet: *quiet, limit: *limit, grace: *grace}
		if *deadline > 0 {
			o.deadline = time.Unix(*deadline, 0)
		}
		os.Exit(runStage(o, flag.Args(), os.Stdout))
	}
	var log io.Writer = io.Discard
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		log = f
	}
	if *bench {
		os.Exit(benchReport(os.Stdin, os.Stdout, log))
	}
	// A stage stopped at its time limit gets SIGQUIT, this reader with it (it runs in the
	// stage's process group): it reads on, so that what the test binaries print of their
	// goroutines reaches the log and the console.
	signal.Ignore(syscall.SIGQUIT)
	os.Exit(report(os.Stdin, os.Stdout, log, *logPath, time.Minute))
}

// running is what report knows of the tests in progress, for the line it prints when it has
// printed nothing for a while (a package of real-process tests can take minutes).
type running struct {
	mu      sync.Mutex
	out     io.Writer
	last    time.Time            // the last line printed
	tests   map[string]time.Time // "package test": when it started
	passed  int
	stopped bool // the closing lines are being printed: no more still-running lines
}

func (r *running) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, format, args...)
	r.last = time.Now()
}

// heartbeat prints the still-running line when nothing was printed for quiet.
func (r *running) heartbeat(now time.Time, quiet time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || now.Sub(r.last) < quiet {
		return
	}
	if l := r.stillRunning(now); l != "" {
		fmt.Fprint(r.out, l)
		r.last = now
	}
}

// stillRunning is the line for a silence: the test that has run longest, how many others run,
// how many passed so far; "" when no test runs. The caller holds r.mu.
func (r *running) stillRunning(now time.Time) string {
	var oldest string
	var since time.Time
	for k, t := range r.tests {
		if oldest == "" || t.Before(since) || (t.Equal(since) && k < oldest) {
			oldest, since = k, t
		}
	}
	if oldest == "" {
		return ""
	}
	pkg, test, _ := strings.Cut(oldest, " ")
	more := ""
	if n := len(r.tests) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more)", n)
	}
	return fmt.Sprintf("     running %s (%s) for %s%s; %d passed so far\n", test, pkg, now.Sub(since).Round(time.Second), more, r.passed)
}

// report is the default mode. quiet is how long it may print nothing while tests run before
// it says which one is running (0: never).
func report(in io.Reader, out, log io.Writer, logPath string, quiet time.Duration) int {
	start := time.Now()
	outputs := map[string][]string{} // package/test: its output lines
	var passed, failed, skipped int
	var stray []string
	run := &running{out: out, last: start, tests: map[string]time.Time{}}
	if quiet > 0 {
		done := make(chan struct{})
		defer close(done)
		go func() {
			t := time.NewTicker(min(quiet/4, time.Second))
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case now := <-t.C:
					run.heartbeat(now, quiet)
				}
			}
		}()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e testEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Action == "" {
			fmt.Fprintln(log, line)
			if strings.TrimSpace(line) != "" {
				stray = append(stray, line) // a build failure, a vet error
			}
			continue
		}
		key := e.Package + " " + e.Test
		if e.Test != "" && !strings.Contains(e.Test, "/") {
			run.mu.Lock()
			switch e.Action {
			case "run":
				run.tests[key] = time.Now()
			case "pass", "fail", "skip":
				delete(run.tests, key)
				if e.Action == "pass" {
					run.passed++
				}
			}
			run.mu.Unlock()
		}
		switch e.Action {
		case "output":
			fmt.Fprint(log, e.Output)
			outputs[key] = append(outputs[key], e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "skip" {
					continue // no test files
				}
				status := map[string]string{"pass": "ok  ", "fail": "FAIL"}[e.Action]
				var b strings.Builder
				fmt.Fprintf(&b, "%s %-50s %6.1fs\n", status, e.Package, e.Elapsed)
				if e.Action == "fail" {
					for _, l := range outputs[key] {
						if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- PASS") {
							fmt.Fprint(&b, "     ", l)
						}
					}
				}
				run.printf("%s", b.String())
				continue
			}
			if strings.Contains(e.Test, "/") {
				if e.Action != "fail" {
					delete(outputs, key) // a failing one's output is printed with its parent
				}
				continue // subtests are counted through their parent
			}
			switch e.Action {
			case "pass":
				passed++
				delete(outputs, key)
			case "skip":
				skipped++
				delete(outputs, key)
			case "fail":
				failed++
				var b strings.Builder
				fmt.Fprintf(&b, "     --- FAIL: %s (%s)\n", e.Test, e.Package)
				for _, l := range subtestOutput(outputs, e.Package, e.Test) {
					fmt.Fprint(&b, "     ", l)
				}
				run.printf("%s", b.String())
			}
		}
	}
	run.mu.Lock() // from here on only this goroutine prints
	run.stopped = true
	run.mu.Unlock()
	code := 0
	if len(stray) > 0 {
		fmt.Fprintln(out, "output that is not a test result (a build or vet failure?):")
		for _, l := range stray {
			fmt.Fprintln(out, "     "+l)
		}
		code = 1
	}
	if failed > 0 {
		code = 1
	}
	if logPath != "" {
		fmt.Fprintf(out, "full log: %s (%s)\n", logPath, time.Since(start).Round(time.Second))
	}
	fmt.Fprintf(out, "go: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return code
}

// subtestOutput is the output of test and its subtests, in a stable order, without the
// === RUN/PAUSE/CONT lines.
func subtestOutput(outputs map[string][]string, pkg, test string) []string {
	var keys []string
	for k := range outputs {
		if k == pkg+" "+test || strings.HasPrefix(k, pkg+" "+test+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		for _, l := range outputs[k] {
			if !strings.HasPrefix(strings.TrimSpace(l), "=== ") {
				lines = append(lines, l)
			}
		}
	}
	return lines
}
