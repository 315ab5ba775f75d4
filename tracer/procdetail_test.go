package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
)

// ReadProcDetail on a real process: sleep, started with a known command line, in a known
// directory, with a pipe open on fd 3; /proc says all of it, and its one thread sleeps in
// clock_nanosleep (nanosleep on older libcs).
func TestReadProcDetail(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd := exec.Command("sleep", "1000")
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	var d sessions.ProcDetail
	deadline := patience.New(20 * time.Second)
	for {
		d, err = ReadProcDetail(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		// Until sleep has exec'd and gone to sleep (the fork's child runs Go's code first).
		// The state too: /proc is read file by file, and a thread seen in its syscall may
		// show R in a status read a moment before it blocked.
		if len(d.Threads) == 1 && strings.Contains(d.Threads[0].Syscall, "nanosleep") && slices.Equal(d.Cmdline, []string{"sleep", "1000"}) &&
			strings.HasPrefix(d.State, "S") && d.Threads[0].State == "S" {
			break
		}
		if deadline.Passed() {
			t.Fatalf("sleep never showed asleep in its syscall: %+v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d.Cwd != dir {
		t.Errorf("cwd %q, want %q", d.Cwd, dir)
	}
	if filepath.Base(d.Exe) != "sleep" || !strings.HasPrefix(d.State, "S") || d.PPID != os.Getpid() {
		t.Errorf("exe %q state %q ppid %d", d.Exe, d.State, d.PPID)
	}
	if d.Threads[0].TID != cmd.Process.Pid || d.Threads[0].State != "S" || d.Threads[0].Comm != "sleep" {
		t.Errorf("thread %+v", d.Threads[0])
	}
	pipe := false
	for _, f := range d.FDs {
		if f.FD == 3 && strings.HasPrefix(f.Target, "pipe:[") {
			pipe = true
		}
	}
	if !pipe || d.NFDs < 4 {
		t.Errorf("fds %+v (%d): want the pipe on 3", d.FDs, d.NFDs)
	}
	files := false
	for _, l := range d.Limits {
		if l.Name == "Max open files" && l.Soft != "" && l.Hard != "" && l.Units == "files" {
			files = true
		}
	}
	if !files {
		t.Errorf("limits %+v: no Max open files", d.Limits)
	}
	if d.Maps.Mappings == 0 || !slices.Contains(d.Maps.Files, d.Exe) || d.Maps.StackKB == 0 || d.Maps.ExecKB == 0 {
		t.Errorf("maps %+v", d.Maps)
	}
	if d.Seccomp != 0 || len(d.Cgroups) == 0 || d.UIDs[0] != os.Getuid() {
		t.Errorf("seccomp %d cgroups %v uids %v", d.Seccomp, d.Cgroups, d.UIDs)
	}
	if len(d.Unread) > 0 {
		t.Errorf("unread: %v", d.Unread)
	}

	cmd.Process.Kill()
	cmd.Wait()
	if _, err := ReadProcDetail(cmd.Process.Pid); err == nil {
		t.Error("a reaped process has a detail")
	}
}

// The /proc parsers take whatever a file holds (a comm with ") " in it, a truncated line)
// without panicking.
func FuzzProcDetailParsers(f *testing.F) {
	f.Add([]byte("Name:\tsleep\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\nSeccomp:\t2\nVmRSS:\t  1234 kB\n"))
	f.Add([]byte("Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 1048576              files     \n"))
	f.Add([]byte("55d0c0a00000-55d0c0a01000 r-xp 00000000 08:01 1234 /usr/bin/sleep\n7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"))
	f.Add([]byte("1 (a) b) S 0 1"))
	f.Add([]byte("230 0x0 0x1 0x2 0x3 0x4 0x5 0x7ffd 0x7f00"))
	f.Add([]byte("a\x00b\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d sessions.ProcDetail
		parseDetailStatus(b, &d)
		parseLimits(b)
		parseMapsSummary(b)
		statState(b)
		syscallOf(b)
		splitCmdline(b)
	})
}
