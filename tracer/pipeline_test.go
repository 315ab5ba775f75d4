package tracer

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// pipeHolder starts a sleep whose descriptor 3 is f (and whose stdio is /dev/null), reaped at
// cleanup.
func pipeHolder(t testing.TB, f *os.File, extra int) int {
	t.Helper()
	c := exec.Command("sleep", "600")
	c.ExtraFiles = []*os.File{f}
	for i := 0; i < extra; i++ {
		c.ExtraFiles = append(c.ExtraFiles, f)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c.Process.Pid
}

// holdsPipe names a process that holds the other end of one of crashtui's stream pipes, by
// the pipe's inode and the way the process opened it: the reader of crashtui's stdout, not
// another writer to it, and not a process with a pipe of its own.
func TestHoldsPipeFindsThePipelinesOtherEnd(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(w.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	ours := map[uint64]streamPipe{st.Ino: {"stdout", syscall.O_RDONLY}} // as if w were crashtui's stdout
	reader, writer := pipeHolder(t, r, 0), pipeHolder(t, w, 0)
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	other := pipeHolder(t, r2, 0)
	if why := holdsPipe(reader, ours); !strings.Contains(why, "other end of crashtui's stdout pipe") {
		t.Errorf("the pipe's reader: %q, want it named as the other end of crashtui's stdout", why)
	}
	if why := holdsPipe(writer, ours); why != "" {
		t.Errorf("another writer to the pipe: %q, want nothing (it shares crashtui's stdout, it does not read it)", why)
	}
	if why := holdsPipe(other, ours); why != "" {
		t.Errorf("a process with a pipe of its own: %q, want nothing", why)
	}
	if why := holdsPipe(reader, nil); why != "" {
		t.Errorf("no pipes of crashtui's: %q, want nothing", why)
	}
}

// BenchmarkHoldsPipe is the pipeline check of attach (when crashtui's stdio is a pipe, as
// under go test or | jq) for 200 processes of 13 descriptors each, none of which holds
// crashtui's pipe: every descriptor is looked at.
func BenchmarkHoldsPipe(b *testing.B) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ours := map[uint64]streamPipe{1: {"stdout", syscall.O_RDONLY}} // no process holds inode 1
	var pids []int
	for i := 0; i < 200; i++ {
		pids = append(pids, pipeHolder(b, r, 9))
	}
	b.ResetTimer()
	for range b.N {
		for _, p := range pids {
			if why := holdsPipe(p, ours); why != "" {
				b.Fatal(why)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pids))/1000, "us/process")
}
