package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tracer/tracertest"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// BenchmarkJobTime is what a user sees of crashtui's cost (issue 23 item 4): the job's own
// wall time (tracer/testdata/floor/events.c times its own loop of N signals, thread
// creations or fork+execs) run by crashtui as a user runs it, against the same job under the
// floor tracer (floor.c: the minimal C tracer of the same design), and alone, interleaved in
// the same rounds. The figure of merit is crashtui's added time per event over the floor's
// (goal ≤ 1.3), for `run --json` (matrix and sampling off, their --json defaults), `run --json
// --matrix measure --sample-every 5s` (what the TUI runs), and the TUI itself in a pty. Beside
// it, the context switches each tracer adds per event (rusage, over the job alone's): a
// tracer's thread woken on a CPU the job needs; and the CPU time the job itself adds (events.c
// reports its own and its children's beside its wall time): what of the added time is the job
// running slower, not waiting at its stops.
func BenchmarkJobTime(b *testing.B) {
	needRoot(b)
	floor, events := tracertest.FloorPrograms(b)
	dir := b.TempDir()
	elapsed, outPath := filepath.Join(dir, "elapsed"), filepath.Join(dir, "out")
	modes := []string{"plain", "floor", "json", "json-live", "tui"}
	for _, kind := range []struct {
		name string
		n    int
	}{{"signal", 5000}, {"thread", 2000}, {"fork", 300}} {
		b.Run(kind.name, func(b *testing.B) {
			job := []string{events, kind.name, strconv.Itoa(kind.n), elapsed}
			// switches are the context switches of the last run of each mode (its process and
			// every one it reaped: the job's too), from wait4's rusage.
			switches := map[string]int64{}
			run := func(mode string) jobTimes {
				os.Remove(elapsed)
				var cmd *exec.Cmd
				switch mode {
				case "plain":
					cmd = exec.Command(job[0], job[1:]...)
				case "floor":
					cmd = exec.Command(floor, job...)
				case "json":
					cmd = exec.Command(crashtuiBin, append([]string{"run", "--json", "--"}, job...)...)
				case "json-live":
					cmd = exec.Command(crashtuiBin, append([]string{"run", "--json", "--matrix", "measure", "--sample-every", "5s", "--"}, job...)...)
				case "tui":
					return runInTUI(b, job, elapsed)
				}
				// Its output goes to a file, as `crashtui run --json > file` writes it: a pipe
				// read here would wake this process (Go's scheduler, beside the job's CPUs)
				// for every write crashtui makes.
				out, err := os.Create(outPath)
				if err != nil {
					b.Fatal(err)
				}
				cmd.Stdout, cmd.Stderr = out, out
				err = cmd.Run()
				out.Close()
				if err != nil {
					said, _ := os.ReadFile(outPath)
					b.Fatalf("%s: %v\n%s", mode, err, said[max(0, len(said)-4096):])
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				switches[mode] = ru.Nvcsw + ru.Nivcsw
				return readElapsed(b, elapsed, mode, func() string {
					said, _ := os.ReadFile(outPath)
					return string(said[max(0, len(said)-4096):])
				})
			}
			// Each round runs every mode three times, interleaved, and keeps each mode's least
			// (a busy machine only ever adds time); the ratios are taken round by round, both
			// sides under the same load, and their medians reported.
			ratios := map[string][]float64{}
			modeAdded := map[string][]float64{} // µs a mode adds per event, round by round
			var floorAdded []float64
			added := map[string][]float64{}    // context switches per event over the job's own
			cpuAdded := map[string][]float64{} // µs of the job's own CPU per event over its own
			for round := 0; round < b.N*3; round++ {
				best := map[string]jobTimes{}
				for i := 0; i < 3; i++ {
					for _, m := range modes {
						if d := run(m); best[m].wall == 0 || d.wall < best[m].wall {
							best[m] = d
						}
					}
				}
				for _, m := range []string{"floor", "json", "json-live"} {
					added[m] = append(added[m], float64(switches[m]-switches["plain"])/float64(kind.n))
				}
				for _, m := range modes[1:] {
					cpuAdded[m] = append(cpuAdded[m], float64(best[m].cpu-best["plain"].cpu)/float64(kind.n)/1000)
				}
				fl := float64(best["floor"].wall-best["plain"].wall) / float64(kind.n)
				floorAdded = append(floorAdded, fl/1000)
				for _, m := range modes[2:] {
					ct := float64(best[m].wall-best["plain"].wall) / float64(kind.n)
					ratios[m] = append(ratios[m], ct/fl)
					modeAdded[m] = append(modeAdded[m], ct/1000)
				}
			}
			b.ReportMetric(medianOf(floorAdded), "floor-us/event")
			for _, m := range modes[2:] {
				b.ReportMetric(medianOf(ratios[m]), m+"/floor")
				b.ReportMetric(medianOf(modeAdded[m]), m+"-us/event")
			}
			for _, m := range []string{"floor", "json", "json-live"} {
				b.ReportMetric(medianOf(added[m]), m+"-switches/event")
			}
			for _, m := range modes[1:] {
				b.ReportMetric(medianOf(cpuAdded[m]), m+"-cpu-us/event")
			}
		})
	}
}

// runInTUI runs the job under `crashtui run` in its TUI (the default: matrix measured, stacks
// sampled every 5 s) in an 80×24 pty, waits for the job to have written its time, ends it, and
// returns the job's time. The pty's output is drained, not emulated, as sshd drains it for
// the terminal on a user's own machine: json's output is read by this process as well, and
// x/vt's emulator beside the job took a third as much CPU as crashtui's TUI itself (100 ms
// against 280 for a fork ×300), a cost of the terminal, not of crashtui.
func runInTUI(b *testing.B, job []string, elapsed string) jobTimes {
	scr := tuitest.OpenRemote(b, 80, 24)
	cmd := exec.Command(crashtuiBin, append([]string{"run", "--"}, job...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ended := false
	defer func() {
		if !ended { // the job failed: its crashtui goes too
			cmd.Process.Kill()
			<-done
		}
	}()
	// The job times itself: how soon this poll sees its time changes nothing measured, and a
	// slow poll wakes this process (beside the job's CPUs) less.
	for deadline := patience.New(120 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(elapsed); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if deadline.Passed() {
			b.Fatalf("the job never finished under the TUI; its output's end: %q", scr.Tail())
		}
	}
	// SIGTERM ends it as q then y would (detach, exit 0), whatever the screen is doing: keys
	// need the TUI reading the terminal, and a failure to end fails the run instead of being
	// killed unseen.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		ended = true
		if err != nil {
			b.Fatalf("crashtui's TUI, told to end by SIGTERM: %v; its output's end: %q", err, scr.Tail())
		}
	case <-patience.After(30 * time.Second):
		b.Fatalf("crashtui's TUI did not end within 30 s of SIGTERM; its output's end: %q", scr.Tail())
	}
	return readElapsed(b, elapsed, "tui", scr.Tail)
}

// jobTimes is what events.c says of one run of its workload: its wall time, and the CPU time
// it and its children spent over it.
type jobTimes struct{ wall, cpu time.Duration }

// readElapsed reads the times the job wrote to path under mode; said is what its tracer
// said (crashtui's summary tells how the job ended), for a failure's message.
func readElapsed(b *testing.B, path, mode string, said func() string) jobTimes {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("%s: the job wrote no time: %v; its tracer's output's end:\n%s", mode, err, said())
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		b.Fatalf("the job's times %q: want its wall and CPU time", raw)
	}
	var ns [2]int64
	for i := range f {
		if ns[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			b.Fatalf("the job's times %q: %v", raw, err)
		}
	}
	return jobTimes{wall: time.Duration(ns[0]), cpu: time.Duration(ns[1])}
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkQuitUnderForkChurn is issue 22's seventh item measured: crashtui attach --json
// of a job of 1000 sleeping processes and 20 that fork a child every 2 ms, then SIGINT: the
// time until crashtui has detached and exited (goal: within 1 s), beside the same quit of
// the 1000 sleepers alone, in the same run.
func BenchmarkQuitUnderForkChurn(b *testing.B) {
	needRoot(b)
	forker := buildC(b, "forker")
	quit := func(churn bool) time.Duration {
		sh := exec.Command("sh", "-c", `for i in $(seq 1000); do sleep 1000 & done; `+
			`if [ "$1" = 1 ]; then for i in $(seq 20); do "$2" "$3/count$i" >/dev/null & done; fi; wait`, "sh", map[bool]string{true: "1", false: "0"}[churn], forker, b.TempDir())
		sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := sh.Start(); err != nil {
			b.Fatal(err)
		}
		pgid := sh.Process.Pid
		defer func() {
			for _, pid := range pgroupPIDs(pgid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			sh.Wait()
		}()
		want := 1001
		if churn {
			want += 20
		}
		for dl := patience.New(60 * time.Second); len(pgroupPIDs(pgid)) < want; time.Sleep(20 * time.Millisecond) {
			if dl.Passed() {
				b.Fatalf("%d of %d processes started", len(pgroupPIDs(pgid)), want)
			}
		}
		c := startCrashtui(b, "attach", "--json", "pgid:"+strconv.Itoa(pgid))
		c.waitFor(b, "the job attached", 120*time.Second, func(evs []event) bool { return count(evs, "process") >= want })
		start := time.Now()
		c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-patience.After(120 * time.Second):
			b.Fatal("crashtui did not exit after SIGINT")
		}
		c.cmd.Wait()
		return time.Since(start)
	}
	var churned, calm []float64
	for i := 0; i < b.N; i++ {
		calm = append(calm, float64(quit(false).Microseconds())/1000)
		churned = append(churned, float64(quit(true).Microseconds())/1000)
	}
	b.ReportMetric(medianOf(churned), "quit-ms-forking")
	b.ReportMetric(medianOf(calm), "quit-ms-sleeping")
}
