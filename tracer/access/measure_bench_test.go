package access

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// matrixBenchJob attaches a tracer.Tracer to a 64-process demo/c/job.c (4032 ordered pairs).
func matrixBenchJob(b *testing.B) (*tracer.Tracer, int) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root (PTRACE_SECCOMP_GET_FILTER and attaching), running as uid", os.Geteuid())
	}
	const n = 64
	pgid, _ := tracertest.StartJobN(b, n)
	tr := tracer.New(tracer.Options{})
	b.Cleanup(func() { tr.Close() })
	job, err := tracer.ParseJob("pgid:" + strconv.Itoa(pgid))
	if err != nil {
		b.Fatal(err)
	}
	if res, err := tr.Attach(job); err != nil || res.Processes != n {
		b.Fatalf("attach: %d processes, %v", res.Processes, err)
	}
	return tr, n
}

// BenchmarkMatrixPredict64 is the prediction of all 4032 pairs of a 64-process job from /proc
// (kernel.md A.3; goal < 50 ms), as Matrix(false) does it: /proc reads included.
// predict-ms is the rule table alone (PredictAll).
func BenchmarkMatrixPredict64(b *testing.B) {
	tr, n := matrixBenchJob(b)
	var predict time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, st, err := New(tr).Matrix(false)
		if err != nil || len(m.Cells) != n*(n-1) {
			b.Fatalf("matrix: %d cells, %v", len(m.Cells), err)
		}
		predict += st.Predict
	}
	b.ReportMetric(float64(predict.Microseconds())/1e3/float64(b.N), "predict-ms")
	b.ReportMetric(float64(n*(n-1)), "pairs")
}

// BenchmarkMatrixMeasure64 measures all 4032 pairs by injecting kcmp and process_vm_readv
// inside each process, one stopped at a time (A.5; goal < 2 s). longest-stop-ms is the longest
// time one process was held stopped (MatrixStats.LongestStop).
func BenchmarkMatrixMeasure64(b *testing.B) {
	tr, n := matrixBenchJob(b)
	var longest time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, st, err := New(tr).Matrix(true)
		if err != nil || len(m.Cells) != n*(n-1) || !m.Measured {
			b.Fatalf("matrix: %d cells measured %v, %v", len(m.Cells), m.Measured, err)
		}
		if want := 2 * n * (n - 1); st.Injections != want {
			b.Fatalf("%d injections, want %d", st.Injections, want)
		}
		for _, c := range m.Cells {
			if !matrixMeasuredOK(c) {
				b.Fatalf("%d->%d not measured allowed: %+v", c.From, c.To, c)
			}
		}
		longest = max(longest, st.LongestStop)
	}
	b.ReportMetric(float64(longest.Microseconds())/1e3, "longest-stop-ms")
	b.ReportMetric(float64(n*(n-1)), "pairs")
}

// matrixMeasuredOK: both calls were run and allowed (every process of job.c is the same root).
func matrixMeasuredOK(c sessions.Cell) bool {
	return c.VMReadv.Measured != nil && *c.VMReadv.Measured && c.Kcmp.Measured != nil && *c.Kcmp.Measured
}
