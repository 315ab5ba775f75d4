package tracer

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo"
)

func demoProgram(tb testing.TB, name string) string {
	tb.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		tb.Skip("gcc is not installed (make test installs it)")
	}
	p, err := demo.Program(name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// startJobN starts demo/c/job.c with n processes in its own process group and waits until
// all are running. The caller's cleanup kills them by pid.
func startJobN(tb testing.TB, n int) (pgid int, pids []int) {
	tb.Helper()
	cmd := exec.Command(demoProgram(tb, "job"), strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for len(pids) < n && sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "ready" {
			p, _ := strconv.Atoi(f[1])
			pids = append(pids, p)
		}
	}
	tb.Cleanup(func() {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	if len(pids) != n {
		tb.Fatalf("job started %d of %d processes", len(pids), n)
	}
	return cmd.Process.Pid, pids
}

// BenchmarkAttachDetach100 is the time to seize every thread of a 100-process job (a third
// of them with 3 threads) and let go of it again.
func BenchmarkAttachDetach100(b *testing.B) {
	pgid, _ := startJobN(b, 100)
	job := Job{Kind: JobPGID, ID: pgid, Spec: "pgid:" + strconv.Itoa(pgid)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr := New(Options{})
		res, err := tr.Attach(job)
		if err != nil || res.Processes != 100 {
			b.Fatalf("attach: %+v %v", res, err)
		}
		if err := tr.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTracingOverhead runs a CPU-bound 4-process job untraced and traced from birth
// (Launch) alternately in one run and reports traced/untraced wall time (goal <= 1.02).
func BenchmarkTracingOverhead(b *testing.B) {
	spin := demoProgram(b, "spin")
	const ranks, iter = 4, "300000000"
	var plain, traced time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var cmds []*exec.Cmd
		for r := 0; r < ranks; r++ {
			c := exec.Command(spin, iter)
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		for _, c := range cmds {
			c.Wait()
		}
		plain += time.Since(start)

		start = time.Now()
		tr := New(Options{})
		if _, err := tr.Launch(LaunchSpec{N: ranks, Argv: []string{spin, iter}}); err != nil {
			b.Fatal(err)
		}
		<-tr.JobDone()
		traced += time.Since(start)
		tr.Close()
	}
	b.ReportMetric(float64(traced)/float64(plain), "traced/untraced")
	b.ReportMetric(float64(plain.Milliseconds())/float64(b.N), "untraced-ms/op")
}
