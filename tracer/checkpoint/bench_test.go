package checkpoint

import (
	"bytes"
	"testing"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
)

// BenchmarkCheckpointNone measures one simulated checkpoint of a 10-thread process (freeze,
// capture, image, read back, resume) with the restore that changes nothing.
func BenchmarkCheckpointNone(b *testing.B) {
	p, tr := attachRestart(b)
	c := New(tr)
	var img bytes.Buffer
	b.ResetTimer()
	// The freeze-capture-apply-resume cycle the job feels (Checkpoint then waits outcomeDelay
	// before it looks at what each thread did; that wait stops nothing and is not timed here).
	for i := 0; i < b.N; i++ {
		img.Reset()
		var th []sessions.Thread
		err := tr.Do(func(l *tracer.Loop) error {
			var err error
			th, err = c.run(l, nil, "none", &img)
			return err
		})
		if err != nil || len(th) != len(p.Threads) {
			b.Fatalf("checkpoint: %d threads, %v", len(th), err)
		}
	}
}
