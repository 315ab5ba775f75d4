package main

// The -stage and -summary modes: `make test` is five stages (test-go, test-slurm, cross,
// test-ppc64le, test-arm64) that all run even when one fails, each with its whole output in a
// log and a few lines on the console, and one summary at the end.
//
//	testreport -stage NAME -log FILE -results FILE [-all] -- CMD [ARG...]
//	testreport -summary FILE NAME...
//
// -stage runs CMD with its stdout and stderr in FILE. A line CMD prints that starts with
// "progress: " is also shown on the console (without the prefix): installing a package,
// downloading a kernel, a guest booted, 3/5 guest tests, each with its time. With -all every
// line is shown (test-go, whose output is already testreport's one line per package). When
// the console has been silent for -quiet, a line says the stage is still running and what it
// last printed: no stage is silent for minutes. At the end it prints the stage's ok or FAIL
// line with its time and its closing line ("N passed, N failed", or SKIP), on failure the
// lines around each FAIL and the end of the log, appends the result to the results file (JSON
// Lines) and exits 1 if CMD failed.
//
// With -limit (and -deadline, the end of make test's whole time budget) a stage that runs too
// long is stopped: its process group gets SIGQUIT (go test's binaries print every goroutine to
// the log, then exit), after -grace SIGKILL, and the stage fails saying so. A hang then costs
// a stage, never the whole run: CI gets its summary and the goroutines of what hung.
//
// -summary reads the results file and prints one line per stage NAME, in the order given (a
// stage with no result did not run: its make target failed before it started), and the totals;
// it exits 1 if any stage failed or did not run.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// progressPrefix starts a line that a stage prints for the console as well as for its log.
const progressPrefix = "progress: "

// countsRE finds a stage's closing counts: "go: 299 passed, 0 failed, 3 skipped",
// "ppc64le: 5 passed, 0 failed".
var countsRE = regexp.MustCompile(`(\d+) passed, (\d+) failed(?:, (\d+) skipped)?`)

// stageResult is one line of the results file.
type stageResult struct {
	Stage   string  `json:"stage"`
	OK      bool    `json:"ok"`
	Seconds float64 `json:"seconds"`
	// Closing is the stage's last counts or SKIP line, else its last progress line.
	Closing string `json:"closing,omitempty"`
	Counted bool   `json:"counted"` // Closing holds counts
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	Log     string `json:"log"`
}

// stageOptions are -stage's flags.
type stageOptions struct {
	name, log, results string
	all                bool
	quiet              time.Duration
	// limit is the stage's own time limit (0: none); deadline is when make test's whole budget
	// ends (zero: none). The stage gets whichever ends first; grace is how long it has to end
	// after SIGQUIT before SIGKILL.
	limit    time.Duration
	deadline time.Time
	grace    time.Duration
	// expire, when not nil, ends the limit early (tests: a stage stopped once it is in place).
	expire <-chan struct{}
}

// timeLimit is how long the stage may run from now, and whether it is limited at all.
func (o stageOptions) timeLimit(now time.Time) (time.Duration, bool) {
	lim, limited := o.limit, o.limit > 0
	if !o.deadline.IsZero() {
		if rem := o.deadline.Sub(now); !limited || rem < lim {
			lim, limited = rem, true
		}
	}
	return lim, limited
}

// excerpt keeps what a failed stage shows of its log: each line that says FAIL or panic with
// the lines after it (at most maxExcerpt lines in all), and the last tailLines lines.
type excerpt struct {
	fails []string
	after int // lines still to keep after the last match
	tail  []string
	lines int
}

const (
	maxExcerpt = 150
	tailLines  = 30
	afterFail  = 15
)

var failRE = regexp.MustCompile(`--- FAIL|panic:|FAIL`)

func (e *excerpt) add(line string) {
	e.lines++
	if failRE.MatchString(line) {
		e.after = afterFail + 1
	}
	if e.after > 0 && len(e.fails) < maxExcerpt {
		e.fails = append(e.fails, line)
		e.after--
	}
	e.tail = append(e.tail, line)
	if len(e.tail) > tailLines {
		e.tail = e.tail[1:]
	}
}

// console is the terminal side of a stage: whole lines, one writer at a time, and when the
// last one was written.
type console struct {
	mu   sync.Mutex
	w    io.Writer
	last time.Time
	said string // the stage's last line (for the still-running line)
}

func (c *console) println(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintln(c.w, s)
	c.last = time.Now()
}

func (c *console) heard(line string) {
	c.mu.Lock()
	c.said = line
	c.mu.Unlock()
}

// fmtDur is a stage's time as make test prints it: 45s, 3m29s.
func fmtDur(d time.Duration) string { return d.Round(time.Second).String() }

// runStage is -stage: it runs argv as the stage o.name and returns the exit status.
func runStage(o stageOptions, argv []string, out io.Writer) int {
	start := time.Now()
	con := &console{w: out, last: start}
	log, err := os.Create(o.log)
	if err != nil {
		fmt.Fprintln(out, "testreport:", err)
		return 2
	}
	defer log.Close()
	con.println(fmt.Sprintf("== %s (log: %s)", o.name, o.log))
	limit, limited := o.timeLimit(start)
	if limited && limit <= 0 {
		why := "not run: make test's time budget was spent before it started"
		con.println(fmt.Sprintf("FAIL %s: %s", o.name, why))
		appendResult(o.results, stageResult{Stage: o.name, Closing: why, Log: o.log})
		return 1
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	// Its own process group, so that a stage past its limit is stopped whole (make, go test,
	// the test binaries, QEMU).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(out, "testreport:", err)
		return 2
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		con.println(fmt.Sprintf("FAIL %s: %v", o.name, err))
		appendResult(o.results, stageResult{Stage: o.name, Closing: err.Error(), Log: o.log})
		return 1
	}
	pw.Close() // the child holds the write end now: EOF when it (and all it started) is done

	done := make(chan struct{})
	if o.quiet > 0 {
		go func() {
			t := time.NewTicker(min(o.quiet/4, time.Second))
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case now := <-t.C:
					con.mu.Lock()
					silent, said := now.Sub(con.last), con.said
					con.mu.Unlock()
					if silent >= o.quiet {
						last := "it has printed nothing yet"
						if said != "" {
							last = "its last line: " + clip(said, 100)
						}
						con.println(fmt.Sprintf("     %s: still running, %s so far; %s", o.name, fmtDur(now.Sub(start)), last))
					}
				}
			}
		}()
	}

	var stopped atomic.Bool
	if limited {
		go func() {
			select {
			case <-done:
				return
			case <-time.After(limit):
			case <-o.expire:
			}
			stopped.Store(true)
			con.println(fmt.Sprintf("     %s: stopped at its time limit (%s): SIGQUIT to all it runs (go test's binaries print their goroutines to the log)", o.name, fmtDur(limit)))
			pgid := cmd.Process.Pid
			syscall.Kill(-pgid, syscall.SIGQUIT)
			select {
			case <-done:
				return
			case <-time.After(o.grace):
			}
			syscall.Kill(-pgid, syscall.SIGKILL)
			// A process that left the group may still hold the pipe: stop reading it.
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				pr.Close()
			}
		}()
	}

	var ex excerpt
	var closing, lastProgress string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		ex.add(line)
		con.heard(line)
		text, isProgress := strings.CutPrefix(line, progressPrefix)
		switch {
		case o.all:
			con.println(line)
		case isProgress:
			con.println("     " + text)
		}
		if isProgress {
			lastProgress = text
		}
		if countsRE.MatchString(line) || strings.HasPrefix(line, "SKIP") {
			closing = strings.TrimSpace(text)
		}
	}
	pr.Close()
	err = cmd.Wait()
	close(done)

	r := stageResult{Stage: o.name, OK: err == nil && !stopped.Load(), Seconds: time.Since(start).Seconds(), Closing: closing, Log: o.log}
	if stopped.Load() {
		r.Closing = fmt.Sprintf("stopped at its time limit (%s)", fmtDur(limit))
		if closing != "" {
			r.Closing += "; " + closing
		} else if lastProgress != "" {
			r.Closing += "; its last line: " + lastProgress
		}
		if err == nil {
			err = errors.New("stopped at its time limit")
		}
	}
	if m := countsRE.FindStringSubmatch(closing); m != nil {
		r.Counted = true
		r.Passed, _ = strconv.Atoi(m[1])
		r.Failed, _ = strconv.Atoi(m[2])
		r.Skipped, _ = strconv.Atoi(m[3])
	}
	if r.Closing == "" {
		r.Closing = lastProgress
	}
	took := fmtDur(time.Since(start))
	if r.OK {
		con.println(fmt.Sprintf("ok   %s %s: %s (log: %s)", o.name, took, r.Closing, o.log))
	} else {
		var ee *exec.ExitError
		why := err.Error()
		if errors.As(err, &ee) {
			why = fmt.Sprintf("exit status %d", ee.ExitCode())
		}
		con.println(fmt.Sprintf("FAIL %s %s: %s (%s; log: %s)", o.name, took, orDash(r.Closing), why, o.log))
		if !o.all { // with -all its failures are on the console already
			var b strings.Builder
			if ex.lines <= tailLines {
				b.WriteString("     its log:\n") // all of it: the failures are in it
			} else {
				if len(ex.fails) > 0 {
					b.WriteString("     its failures:\n")
					for _, l := range ex.fails {
						b.WriteString("     " + l + "\n")
					}
				}
				b.WriteString("     the end of its log:\n")
			}
			for _, l := range ex.tail {
				b.WriteString("     " + l + "\n")
			}
			con.println(strings.TrimSuffix(b.String(), "\n"))
		}
	}
	if err := appendResult(o.results, r); err != nil {
		fmt.Fprintln(out, "testreport:", err)
		return 2
	}
	if !r.OK {
		return 1
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// appendResult adds r to the results file (nothing when path is "").
func appendResult(path string, r stageResult) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("results %s: %w", path, err)
	}
	return f.Close()
}

// summary is -summary: one line per stage of stages (its last result in the file), then
// the totals; 1 when a stage failed or has no result.
func summary(path string, stages []string, out io.Writer) int {
	results := map[string]stageResult{}
	if b, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var r stageResult
			if json.Unmarshal([]byte(l), &r) == nil && r.Stage != "" {
				results[r.Stage] = r
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(out, "testreport:", err)
		return 2
	}
	width := 0
	for _, s := range stages {
		width = max(width, len(s))
	}
	var failed []string
	var passed, fails, skipped int
	var total time.Duration
	fmt.Fprintln(out, "== summary")
	for _, s := range stages {
		r, ok := results[s]
		if !ok {
			failed = append(failed, s)
			fmt.Fprintf(out, "FAIL %-*s %7s  did not run: make %s failed before the stage started (see above)\n", width, s, "", s)
			continue
		}
		d := time.Duration(r.Seconds * float64(time.Second))
		total += d
		status := "ok  "
		if !r.OK {
			status = "FAIL"
			failed = append(failed, s)
		}
		line := fmt.Sprintf("%s %-*s %7s  %s", status, width, s, fmtDur(d), orDash(r.Closing))
		if !r.OK {
			line += " (log: " + r.Log + ")"
		}
		fmt.Fprintln(out, line)
		if r.Counted {
			passed, fails, skipped = passed+r.Passed, fails+r.Failed, skipped+r.Skipped
		}
	}
	verdict := "ok"
	if len(failed) > 0 {
		verdict = "FAIL (" + strings.Join(failed, ", ") + ")"
	}
	fmt.Fprintf(out, "make test: %s: %d of %d stages passed; tests %d passed, %d failed, %d skipped; %s in all\n",
		verdict, len(stages)-len(failed), len(stages), passed, fails, skipped, fmtDur(total))
	if len(failed) > 0 {
		return 1
	}
	return 0
}
