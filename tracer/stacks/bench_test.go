package stacks

import (
	"bufio"
	"os/exec"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// startHangN starts n processes of demo/c/hang (rank 1: blocked in a barrier) with threads
// threads each, from one shell in its own process group, and waits until all are blocked.
func startHangN(tb testing.TB, n, threads int) tracer.Job {
	tb.Helper()
	bin := tracertest.DemoProgram(tb, "hang")
	script := "for i in $(seq " + strconv.Itoa(n) + "); do CRASHTUI_RANK=1 THREADS=" + strconv.Itoa(threads) + " " + bin + " & done; wait"
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pgid := cmd.Process.Pid
	tb.Cleanup(func() {
		// The shell's children are ours too: end each by pid, then the shell.
		for _, pid := range tracertest.PgroupMembers(pgid) {
			if pid != pgid {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		syscall.Kill(pgid, syscall.SIGKILL)
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for got := 0; got < n; got++ {
		if !sc.Scan() {
			tb.Fatalf("only %d of %d processes started", got, n)
		}
	}
	time.Sleep(200 * time.Millisecond) // from "ready" into the futex
	return tracer.Job{Kind: tracer.JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}
}

// benchStacks reports one warm sample of every thread of the job: its wall time, and the
// longest time any process was held.
func benchStacks(b *testing.B, n, threads int) {
	job := startHangN(b, n, threads)
	tr := tracer.New(tracer.Options{})
	sampler := New(tr, nil)
	b.Cleanup(func() { tr.Close() })
	if _, err := tr.Attach(job); err != nil {
		b.Fatal(err)
	}
	cold := time.Now()
	if _, _, err := sampler.Sample(Options{Seq: 1}); err != nil { // loads the modules once
		b.Fatal(err)
	}
	coldMS := float64(time.Since(cold).Microseconds()) / 1000
	var longest time.Duration
	var holds []int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ss, st, err := sampler.Sample(Options{Seq: i + 2})
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range ss {
			holds = append(holds, s.HeldUS)
		}
		if st.Processes != n+1 || st.Threads != n*threads+1 {
			b.Fatalf("sampled %d processes %d threads, want %d and %d", st.Processes, st.Threads, n+1, n*threads+1)
		}
		longest = max(longest, st.LongestHold)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/sample")
	b.StopTimer()
	sort.Ints(holds)
	if euStack, err := exec.LookPath("eu-stack"); err == nil {
		// The floor of a stack tool: elfutils' eu-stack run for each process in turn, as a
		// script would, over the first 50 (time per process, the same run).
		pids := tracertest.PgroupMembers(job.ID)
		if len(pids) > 50 {
			pids = pids[:50]
		}
		start := time.Now()
		for _, pid := range pids {
			exec.Command(euStack, "-p", strconv.Itoa(pid)).Run()
		}
		per := float64(time.Since(start).Microseconds()) / 1000 / float64(len(pids))
		ours := float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N) / float64(n+1)
		b.ReportMetric(per, "eu-stack-ms/process")
		b.ReportMetric(per/ours, "eu-stack/crashtui")
	}
	b.ReportMetric(coldMS, "first-sample-ms")
	b.ReportMetric(float64(holds[len(holds)*99/100])/1000, "p99-hold-ms")
	b.ReportMetric(float64(longest.Microseconds())/1000, "longest-hold-ms")
}

// BenchmarkStacks1000 samples 1000 single-threaded processes (goal: < 150 ms, each process
// held < 1 ms), beside an eu-stack loop (make bench installs elfutils). Their threads are
// blocked in a futex, so they are read without being stopped (held 0); a process that must be
// stopped is held only while its registers and stack top are copied, the longest hold set by
// the scheduler (a tracee waiting for a CPU to reach its stop), p99 by crashtui.
func BenchmarkStacks1000(b *testing.B) { benchStacks(b, 1000, 1) }

// BenchmarkStacks100x10 samples 100 processes of 10 threads (goal: < 100 ms).
func BenchmarkStacks100x10(b *testing.B) { benchStacks(b, 100, 10) }
