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
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
	flag.Parse()
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
	os.Exit(report(os.Stdin, os.Stdout, log, *logPath))
}

func report(in io.Reader, out, log io.Writer, logPath string) int {
	start := time.Now()
	outputs := map[string][]string{} // package/test: its output lines
	var passed, failed, skipped int
	var stray []string
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
				fmt.Fprintf(out, "%s %-50s %6.1fs\n", status, e.Package, e.Elapsed)
				if e.Action == "fail" {
					for _, l := range outputs[key] {
						if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- PASS") {
							fmt.Fprint(out, "     ", l)
						}
					}
				}
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
				fmt.Fprintf(out, "     --- FAIL: %s (%s)\n", e.Test, e.Package)
				for _, l := range subtestOutput(outputs, e.Package, e.Test) {
					fmt.Fprint(out, "     ", l)
				}
			}
		}
	}
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
