package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// stackImage, at a real exec stop (a child started with PTRACE_TRACEME stops with SIGTRAP
// once execve has built its new stack, before its first instruction), says what /proc says
// of the new program (argv, comm, rank, uid) where the stack says it all, and declines (ok
// false, /proc is read instead) where it does not: a secure exec, a file executed by its
// /dev/fd name, an environment larger than what one read takes.
func TestStackImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (make test runs as root): the secure exec case execs a set-user-ID file")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	long := filepath.Join(dir, "a-program-name-longer-than-comm")
	if err := os.Symlink(sleep, long); err != nil {
		t.Fatal(err)
	}
	// A set-user-ID copy of sleep owned by nobody: its exec is secure (AT_SECURE).
	suid := filepath.Join(dir, "suid-sleep")
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suid, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(suid, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Open(sleep)
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()

	base := []string{"PATH=/usr/bin:/bin"}
	for _, c := range []struct {
		name  string
		path  string
		argv  []string
		env   []string
		files []*os.File
		ok    bool
		rank  sessions.Rank
	}{
		{"plain", sleep, []string{"sleep", "600", "", "two words"}, append(base, "OMPI_COMM_WORLD_RANK=5", "PMIX_RANK=9"), nil, true, 5},
		{"no rank", sleep, []string{"sleep", "600"}, base, nil, true, sessions.NoRank},
		{"no environment", sleep, []string{"sleep", "600"}, []string{}, nil, true, sessions.NoRank},
		{"long name", long, []string{"x", "600"}, append(base, "CRASHTUI_RANK=3"), nil, true, 3},
		{"secure", suid, []string{"suid-sleep", "600"}, append(base, "CRASHTUI_RANK=4"), nil, false, 4},
		{"by descriptor", "/dev/fd/3", []string{"sleep", "600"}, append(base, "CRASHTUI_RANK=6"), []*os.File{self}, false, 6},
		{"big environment", sleep, []string{"sleep", "600"}, append(base, "BIG="+strings.Repeat("x", execStackSpan), "CRASHTUI_RANK=7"), nil, false, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.LockOSThread() // the thread that starts a PTRACE_TRACEME child is its tracer
			defer runtime.UnlockOSThread()
			cmd := &exec.Cmd{Path: c.path, Args: c.argv, Env: c.env, ExtraFiles: c.files,
				SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Setpgid: true}}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			t.Cleanup(func() {
				syscall.Kill(pid, syscall.SIGKILL)
				cmd.Wait()
			})
			var ws unix.WaitStatus
			if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
				t.Fatalf("wait for the exec stop: %v %v", ws, err)
			}
			img, ok := stackImage(pid, make([]byte, execStackSpan))
			if ok != c.ok {
				t.Fatalf("stackImage ok = %v, want %v (%+v)", ok, c.ok, img)
			}
			want := image{comm: procfs.Comm(pid), argv: procfs.Argv(pid), uid: procfs.UID(pid), rank: procfs.Rank(pid)}
			if want.rank != c.rank {
				t.Fatalf("/proc says rank %v, want %v: the case is not what it says", want.rank, c.rank)
			}
			if !ok {
				return
			}
			if img.comm != want.comm || img.uid != want.uid || img.rank != want.rank || !slices.Equal(img.argv, want.argv) {
				t.Errorf("from the stack %+v, /proc says %+v", img, want)
			}
			if img.exe != c.path { // what onExec keeps if /proc/PID/exe is gone when it looks
				t.Errorf("from the stack exe %q, want the name execve was given, %q", img.exe, c.path)
			}
		})
	}
}
