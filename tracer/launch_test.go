package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/tracer/procfs"
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
			waited := make(chan struct{})
			go func() { cmd.Wait(); close(waited) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-waited })
			// The gate blocks in its read (of the pipe, which `<&3` puts on its stdin; the
			// stdin it was given, /dev/null, would not block): the command has not run.
			readNr, _ := arch.SyscallNumber(arch.Host(), "read")
			if !patience.Until(30*time.Second, time.Millisecond, func() bool {
				return procfs.ReadTaskSyscall(cmd.Process.Pid, cmd.Process.Pid).Nr == readNr
			}) {
				t.Fatal("the gate never blocked in its read")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran before its gate opened")
			}
			if c.line {
				if _, err := w.Write([]byte("\n")); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			select {
			case <-waited:
			case <-patience.After(30 * time.Second):
				t.Fatal("the gate did not end")
			}
			code := cmd.ProcessState.ExitCode()
			if code != c.wantExit {
				t.Errorf("the gate exited %d, want %d", code, c.wantExit)
			}
			if _, err := os.Stat(marker); (err == nil) != c.line {
				t.Errorf("the command ran: %v, want %v", err == nil, c.line)
			}
		})
	}
}
