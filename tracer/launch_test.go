package tracer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
)

// TestGateRunsOnlyOnItsLine runs a rank's gate as Launch starts it, its command creating a
// marker file: a line on descriptor 3 lets the command run; the pipe's end without one (what
// a rank sees when crashtui dies while launching, and the kernel lets go of it) makes the
// gate exit 125 without running it.
func TestGateRunsOnlyOnItsLine(t *testing.T) {
	for _, c := range []struct {
		name     string
		line     bool
		wantExit int
	}{{"line", true, 0}, {"pipe ends", false, 125}} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd := exec.Command("/bin/sh", "-c", gateScript, gateName, "/bin/sh", "-c", "echo > "+marker)
			cmd.ExtraFiles = []*os.File{r} // descriptor 3
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill(); <-done })
			// Until the gate opens, the command does not run, however long it is given.
			time.Sleep(100 * time.Millisecond)
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran before its gate opened")
			}
			if c.line {
				if _, err := w.Write([]byte("\n")); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			var err2 error
			select {
			case err2 = <-done:
				done <- err2 // for the cleanup
			case <-patience.After(30 * time.Second):
				t.Fatal("the gate did not end")
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(err2, &ee) {
				code = ee.ExitCode()
			} else if err2 != nil {
				t.Fatal(err2)
			}
			if code != c.wantExit {
				t.Errorf("the gate exited %d, want %d", code, c.wantExit)
			}
			if _, err := os.Stat(marker); (err == nil) != c.line {
				t.Errorf("the command ran: %v, want %v", err == nil, c.line)
			}
		})
	}
}
