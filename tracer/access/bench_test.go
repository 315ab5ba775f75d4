package access

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/crashtui/crashtui/tracer/seccomp"
	"golang.org/x/sys/unix"
)

// benchProcs is a 64-rank job with the variety PredictAll meets: two uids, a seccomp
// profile on a quarter of the ranks, non-dumpable ranks, a child user and PID namespace.
func benchProcs(b *testing.B) []Proc {
	ai, _ := seccomp.Arch("amd64")
	prog, err := seccomp.DenyFilter(ai, seccomp.ErrnoRet(unix.EPERM), ai.VMReadv, ai.VMWritev, ai.Kcmp, ai.Ptrace)
	if err != nil {
		b.Fatal(err)
	}
	filter := seccomp.FilterBytes(prog)
	procs := make([]Proc, 64)
	for i := range procs {
		p := fixture(1000+i, uint32(1000+i%2), 999, 1)
		switch i % 8 {
		case 1, 5:
			p.Seccomp, p.SeccompFilters, p.Filters = 2, 1, [][]byte{filter}
		case 2:
			p.Dumpable = DumpableNo
		case 3:
			p.UserNS = []UserNS{{Inode: 101}, {Inode: 100}}
		case 4:
			p.PidNS, p.NSpid = []uint64{201, 200}, []int{p.PID, i}
		}
		procs[i] = p
	}
	return procs
}

// BenchmarkPredictAll64 is the 4032 ordered pairs of a 64-process job (goal: well under
// 50 ms per matrix).
func BenchmarkPredictAll64(b *testing.B) {
	procs := benchProcs(b)
	sys := sysYama(1)
	b.ReportAllocs()
	for b.Loop() {
		m := PredictAll(sys, procs)
		if len(m.Cells) != 64*63 {
			b.Fatal(len(m.Cells))
		}
	}
}

// BenchmarkReadProc64 is a whole refresh: /proc for 64 real processes, then PredictAll.
func BenchmarkReadProc64(b *testing.B) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		b.Skip("needs sleep(1) to start 64 processes:", err)
	}
	pids := make([]int, 64)
	for i := range pids {
		cmd := exec.Command(sleep, "600")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pid := cmd.Process.Pid
		pids[i] = pid
		b.Cleanup(func() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // only the processes this benchmark started
			_ = cmd.Wait()
		})
	}
	sys := ReadSystem()
	b.ReportAllocs()
	for b.Loop() {
		procs, errs := ReadProcs(pids)
		if len(errs) > 0 || len(procs) != len(pids) {
			b.Fatal(errs)
		}
		_ = PredictAll(sys, procs)
	}
}
