package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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
	ours := map[fileID]streamPipe{idOf(t, w): {"stdout", syscall.O_RDONLY}} // as if w were crashtui's stdout
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

// idOf is f's device and inode, as ownPipes keys crashtui's streams.
func idOf(t testing.TB, f *os.File) fileID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return fileID{st.Dev, st.Ino}
}

// A named FIFO as crashtui's stdout (crashtui attach --json > /tmp/fifo): the process reading
// it is found as a pipe's reader is, and one that only writes to it is not.
func TestHoldsPipeFindsAFIFOsReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ourEnd, err := os.OpenFile(path, os.O_RDWR, 0) // never blocks: as crashtui's stdout
	if err != nil {
		t.Fatal(err)
	}
	defer ourEnd.Close()
	rd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	wr, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	ours := map[fileID]streamPipe{idOf(t, ourEnd): {"stdout", syscall.O_RDONLY}}
	if why := holdsPipe(pipeHolder(t, rd, 0), ours); !strings.Contains(why, "other end of crashtui's stdout pipe") {
		t.Errorf("the FIFO's reader: %q, want it named as the other end of crashtui's stdout", why)
	}
	if why := holdsPipe(pipeHolder(t, wr, 0), ours); why != "" {
		t.Errorf("another writer to the FIFO: %q, want nothing", why)
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
	ours := map[fileID]streamPipe{{0, 1}: {"stdout", syscall.O_RDONLY}} // no process holds device 0's inode 1
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
