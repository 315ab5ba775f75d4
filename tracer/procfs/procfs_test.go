package procfs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	s, err := ParseStat([]byte("42 (we(i)rd ) name) S 1 42 42 0 -1 4194560 0 0"))
	if err != nil || s.PID != 42 || s.Comm != "we(i)rd ) name" || s.State != 'S' || s.PPID != 1 || s.Pgrp != 42 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := ParseStat([]byte("garbage")); err == nil {
		t.Error("garbage parsed")
	}
	// A real line: every field ParseStat takes agrees with the fields counted out by hand.
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	s, err = ParseStat(b)
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	if err != nil || s.PID != os.Getpid() || s.PPID != os.Getppid() || string(s.State) != f[0] ||
		strconv.Itoa(s.Pgrp) != f[2] || strconv.Itoa(s.Session) != f[3] || strconv.FormatUint(s.Flags, 10) != f[6] || s.CPU != ut+st {
		t.Errorf("ParseStat(%q) = %+v, %v", b, s, err)
	}
}

// TestProcReaders checks the /proc readers against the os package's answers for
// this process and its threads, and for a child with a rank in its environment.
func TestProcReaders(t *testing.T) {
	self := os.Getpid()
	var want []int
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		want = append(want, n)
	}
	got := Tasks(self)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Tasks = %v, os.ReadDir = %v", got, want)
	}
	all, err := ScanStat(func(Stat) bool { return true })
	if err != nil || !slices.Contains(all, self) || !slices.Contains(all, 1) {
		t.Errorf("ScanStat: %d pids, self or 1 missing (%v)", len(all), err)
	}
	if exe, _ := os.Executable(); Exe(self) != exe {
		t.Errorf("Exe = %q, want %q", Exe(self), exe)
	}
	if !slices.Equal(Argv(self), os.Args) {
		t.Errorf("Argv = %q, want %q", Argv(self), os.Args)
	}
	if UID(self) != os.Geteuid() || GID(self) != os.Getegid() {
		t.Errorf("uid %d gid %d, want %d %d", UID(self), GID(self), os.Geteuid(), os.Getegid())
	}
	if c := Comm(self); c == "" || !strings.HasPrefix(filepath.Base(os.Args[0]), c) {
		t.Errorf("Comm = %q for %s", c, os.Args[0])
	}
	// A large environment, read whole: the rank is its last variable.
	child := exec.Command("sleep", "30")
	child.Env = []string{"PAD=" + strings.Repeat("x", 100<<10), "PMI_RANK=3", "SLURM_PROCID=9", "OMPI_COMM_WORLD_RANK=7"}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	// Until exec has set up the new stack the environment reads empty (env_start is 0).
	r := Rank(child.Process.Pid)
	for deadline := patience.New(5 * time.Second); r == sessions.NoRank && !deadline.Passed(); r = Rank(child.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	if r != 7 {
		t.Errorf("Rank = %d, want 7 (OMPI_COMM_WORLD_RANK comes before PMI_RANK and SLURM_PROCID)", r)
	}
	if sys := ReadTaskSyscall(child.Process.Pid, child.Process.Pid); sys.Gone {
		t.Errorf("ReadTaskSyscall of a live child: %+v", sys)
	}
	// Another user's process: its euid and egid, not the reader's.
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is missing")
	}
	other := exec.Command("setpriv", "--reuid", "1000", "--regid", "1001", "--clear-groups", "sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	for deadline := patience.New(5 * time.Second); Comm(other.Process.Pid) != "sleep" && !deadline.Passed(); {
		time.Sleep(time.Millisecond)
	}
	if u, g := UID(other.Process.Pid), GID(other.Process.Pid); u != 1000 || g != 1001 {
		t.Errorf("setpriv'd child: uid %d gid %d, want 1000 1001", u, g)
	}
	if sys := ReadTaskSyscall(1<<22+1, 1<<22+1); !sys.Gone || sys.InSyscall() {
		t.Errorf("ReadTaskSyscall of no process: %+v", sys)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0"))
	f.Add([]byte("1 ()) S"))
	f.Fuzz(func(t *testing.T, b []byte) { ParseStat(b) })
}

func TestRankFromEnviron(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want sessions.Rank
	}{
		{"A=1\x00CRASHTUI_RANK=3\x00", 3},
		{"OMPI_COMM_WORLD_RANK=5\x00SLURM_PROCID=9\x00", 5},
		{"PMIX_RANK=2\x00", 2},
		{"SLURM_PROCID=7", 7},
		{"PMI_RANK=x\x00", sessions.NoRank},
		{"", sessions.NoRank},
	} {
		if got := RankFromEnviron([]byte(tc.env)); got != tc.want {
			t.Errorf("%q: rank %d, want %d", tc.env, got, tc.want)
		}
	}
}

func FuzzReadProcSyscallLine(f *testing.F) {
	f.Add("running")
	f.Add("0 0x3 0x7ffd 0x1 0x0 0x0 0x0 0x7ffd0 0x7f00")
	f.Add("-1 0x7ffd 0x7f00")
	f.Fuzz(func(t *testing.T, s string) {
		if got := ParseTaskSyscall([]byte(s)); got.InSyscall() && got.Nr > 1<<60 {
			t.Fatalf("%q: nr %d", s, got.Nr)
		}
	})
}

// TestParseTaskSyscall reads the three shapes of fs/proc/base.c proc_pid_syscall.
func TestParseTaskSyscall(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Syscall
	}{
		{"running\n", Syscall{Nr: -2}},
		{"-1 0x7ffd1000 0x7f0000001234\n", Syscall{Nr: -1, SP: 0x7ffd1000, PC: 0x7f0000001234}},
		{"202 0x4000 0x80 0x0 0x0 0x0 0x0 0x7ffd2000 0x7f0000005678\n", Syscall{Nr: 202, Args: [6]uint64{0x4000, 0x80}, SP: 0x7ffd2000, PC: 0x7f0000005678}},
		{"garbage 1 2", Syscall{Nr: -2}},
		{"", Syscall{Nr: -2}},
	} {
		if got := ParseTaskSyscall([]byte(tc.line)); got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

// TestIsLeader: this process leads its group, each of its other threads (the Go runtime's)
// does not, and each answer agrees with /proc (IsThreadOf); a task that is gone cannot be
// told (the caller asks /proc).
func TestIsLeader(t *testing.T) {
	pid := os.Getpid()
	if leader, known := IsLeader(pid); !leader || !known {
		t.Errorf("IsLeader(%d), this process: %v %v, want a leader", pid, leader, known)
	}
	threads := 0
	for _, tid := range Tasks(pid) {
		if tid == pid {
			continue
		}
		threads++
		leader, known := IsLeader(tid)
		if leader || !known || !IsThreadOf(pid, tid) {
			t.Errorf("IsLeader(%d), a thread of %d: %v %v (IsThreadOf %v)", tid, pid, leader, known, IsThreadOf(pid, tid))
		}
	}
	if threads == 0 {
		t.Fatalf("no thread of %d but itself: %v", pid, Tasks(pid))
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, known := IsLeader(cmd.Process.Pid); known {
		t.Errorf("IsLeader(%d), reaped: known", cmd.Process.Pid)
	}
}

// ReadDirNumbers stops at a getdents that left room for another entry (dirFull): a /proc
// directory longer than its buffer must still be read whole. /proc/self/fd with 900 fds
// open is three buffers' worth; with 3 it is one short read.
func TestReadDirNumbersWhole(t *testing.T) {
	for _, extra := range []int{0, 900} {
		var fds []int
		for range extra {
			fd, err := unix.Dup(0)
			if err != nil {
				t.Fatal(err)
			}
			fds = append(fds, fd)
		}
		want, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		if err := ReadDirNumbers("/proc/self/fd", func(fd int) { seen[fd] = true }); err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
		// os.ReadDir's own fd is open while it reads, ReadDirNumbers' while it reads: each
		// list has the other's fd or not, and every other entry alike.
		if d := len(seen) - len(want); d < -1 || d > 1 || len(seen) < extra {
			t.Errorf("%d extra fds: ReadDirNumbers saw %d entries, os.ReadDir %d", extra, len(seen), len(want))
		}
		for _, fd := range fds {
			if !seen[fd] {
				t.Fatalf("%d extra fds: fd %d missing from ReadDirNumbers", extra, fd)
			}
		}
	}
}

// A getdents ends early, short of a full buffer, when a signal is pending for the reader
// (fs/readdir.c filldir64 stops after its first entry once signal_pending): a short read is
// not the end of the directory. Go's own SIGURG preemptions and crashtui's kick signal reach
// the loop's thread at any moment; a scan of /proc that trusted a short read missed a
// process of the job (make test: 99 of 100 attached). Here the reading thread is sent
// SIGURG (the runtime's own, harmless) without pause while it reads a directory of three
// buffers, many times: every read must be whole.
func TestReadDirNumbersUnderSignals(t *testing.T) {
	var fds []int
	for range 900 {
		fd, err := unix.Dup(0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	t.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	tids := make(chan int)
	stop := make(chan struct{})
	type result struct{ short, reads int }
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		r := result{}
		for ; r.reads < 300; r.reads++ {
			seen := 0
			if err := ReadDirNumbers("/proc/self/fd", func(int) { seen++ }); err != nil {
				t.Error(err)
				break
			}
			if seen < len(fds) {
				r.short++
			}
		}
		close(stop)
		done <- r
	}()
	tid, pid := <-tids, unix.Getpid()
	signals := 0
	for sent := false; !sent; {
		select {
		case <-stop:
			sent = true
		default:
			unix.Tgkill(pid, tid, unix.SIGURG)
			signals++
		}
	}
	r := <-done
	t.Logf("%d reads, %d signals sent", r.reads, signals)
	if r.short > 0 {
		t.Errorf("%d of %d reads missed fds while the reader was being signalled", r.short, r.reads)
	}
}
