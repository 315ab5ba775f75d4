// Package viewtest builds realistic event streams for the tests of views and tui: a small MPI
// job with several ranks, three crash groups (one an assert abort), a handled fault, an access
// matrix with uid, seccomp and dumpable denials and a disagreement, and threads stopped in
// read, futex and nanosleep with restart decisions. It must not be imported by production code.
package viewtest

import (
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// T0 is the fixture's first timestamp.
var T0 = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// Events is the fixture job as the tracer would emit it.
func Events() []sessions.Event {
	var evs []sessions.Event
	t := T0
	add := func(d time.Duration, b sessions.Body) {
		t = t.Add(d)
		evs = append(evs, sessions.Event{Time: t, Body: b})
	}
	ms := time.Millisecond
	add(0, sessions.Session{Job: "pgid:4100", Mode: "attach", Arch: "amd64", Kernel: "6.8.0-49-generic", Version: "0.1.0"})
	add(ms, sessions.Process{PID: 4100, PPID: 4000, Rank: sessions.NoRank, Exe: "/usr/bin/mpirun", Comm: "mpirun",
		Argv: []string{"mpirun", "-np", "4", "./solver", "--grid", "64"}, UID: 1000, Threads: 3})
	for r := 0; r < 4; r++ {
		add(ms, sessions.Process{PID: 4101 + r, PPID: 4100, Rank: sessions.Rank(r), Exe: "/home/ada/solver", Comm: "solver",
			Argv: []string{"./solver", "--grid", "64"}, UID: 1000, Threads: 2})
		add(ms, sessions.Task{PID: 4101 + r, TID: 4201 + r})
	}
	// A setuid helper: another uid, and not dumpable.
	add(ms, sessions.Process{PID: 4110, PPID: 4100, Rank: sessions.NoRank, Exe: "/usr/libexec/job-helper", Comm: "job-helper",
		Argv: []string{"job-helper", "--watch"}, UID: 0, Threads: 1})

	// The access matrix: rank 3 runs under a seccomp filter, the helper is root and
	// non-dumpable, and rank 2 -> rank 1 was measured denied where /proc predicted yes.
	pids := []int{4100, 4101, 4102, 4103, 4104, 4110}
	var cells []sessions.Cell
	for _, a := range pids {
		for _, b := range pids {
			if a == b {
				continue
			}
			c := sessions.Cell{From: a, To: b, VMReadv: sessions.Check{Predicted: true, Measured: ptr(true)},
				Kcmp: sessions.Check{Predicted: true, Measured: ptr(true)}, OpenMPI: true}
			c.Rule = sessions.Rule{Row: sessions.RowSameIDs, Call: "process_vm_readv"}
			deny := func(reason sessions.Reason, rule sessions.Rule, errno string) {
				c.VMReadv = sessions.Check{Predicted: false, Measured: ptr(false), Errno: ptr(errno)}
				c.Kcmp = sessions.Check{Predicted: false, Measured: ptr(false), Errno: ptr(errno)}
				rule.Call = "process_vm_readv"
				c.OpenMPI, c.Reason, c.Rule = false, ptr(reason), rule
			}
			switch {
			case a == 4104:
				deny(sessions.ReasonSeccomp, sessions.Rule{Row: sessions.RowSeccompFilter, Action: "ERRNO(EPERM)"}, "EPERM")
			case b == 4110 && a != 4110:
				deny(sessions.ReasonUID, sessions.Rule{Row: sessions.RowIDs, AUID: 1000, AGID: 1000}, "EPERM")
			case a == 4110:
				deny(sessions.ReasonDumpable, sessions.Rule{Row: sessions.RowDumpable}, "EPERM")
			case a == 4103 && b == 4102:
				// Measured denied where /proc predicted yes: a disagreement no rule explains.
				c.VMReadv = sessions.Check{Predicted: true, Measured: ptr(false), Errno: ptr("EPERM")}
				c.OpenMPI = true
				c.Disagreements = []sessions.Disagreement{{Kind: sessions.DisagreeUnexplainedVMReadv}}
				c.Reason = ptr(sessions.ReasonYama)
			}
			cells = append(cells, c)
		}
	}
	add(10*ms, sessions.Matrix{PIDs: pids, Cells: cells, Measured: true})

	// Threads captured at a checkpoint, with the naive policy applied to the read.
	add(20*ms, sessions.Thread{PID: 4101, TID: 4101, Arch: "amd64", PC: 0x7f3a1c51a1e2, InSyscall: true, Syscall: "read", Nr: 0,
		Args: []sessions.Hex{3, 0x7ffd5a1c2000, 4096}, Insn: "syscall", Ret: -512, Code: "ERESTARTSYS",
		OnResume: "restart", Restore: "rewind", Applied: "naive",
		Before:  []sessions.RegVal{{Name: "rip", Value: 0x7f3a1c51a1e2}, {Name: "rax", Value: sessions.Hex(^uint64(511))}, {Name: "orig_rax", Value: 0}, {Name: "rdi", Value: 3}},
		After:   []sessions.RegVal{{Name: "rip", Value: 0x7f3a1c51a1e2}, {Name: "rax", Value: sessions.Hex(^uint64(511))}, {Name: "orig_rax", Value: sessions.Hex(^uint64(0))}, {Name: "rdi", Value: 3}},
		Outcome: "read returned -1 errno 512 (ERESTARTSYS leaked to user code)", OutcomeKind: sessions.OutcomeERESTARTLeaked, Returned: ptr(int64(-512)),
		Explain: "read(3) was interrupted by the checkpoint; the naive restore left rip after the syscall with rax=-512."})
	add(ms, sessions.Thread{PID: 4101, TID: 4201, Arch: "amd64", PC: 0x7f3a1c4910a9, InSyscall: true, Syscall: "futex", Nr: 202,
		Args: []sessions.Hex{0x55d0c0de1040, 0x80, 0}, Insn: "syscall", Ret: -512, Code: "ERESTARTSYS", OnResume: "restart", Restore: "rewind"})
	add(ms, sessions.Thread{PID: 4102, TID: 4102, Arch: "amd64", PC: 0x7f3a1c4e57fa, InSyscall: true, Syscall: "nanosleep", Nr: 35,
		Args: []sessions.Hex{0x7ffd5a1c1f00, 0x7ffd5a1c1f00}, Insn: "syscall", Ret: -516, Code: "ERESTART_RESTARTBLOCK",
		OnResume: "restart_syscall", Restore: "eintr"})
	add(ms, sessions.Thread{PID: 4103, TID: 4103, Arch: "amd64", PC: 0x55d0c0a01234, InSyscall: false, OnResume: "none", Restore: "none"})

	// Crashes: rank 1 and rank 2 fault at the same site (group 1), rank 0 asserts (group 2),
	// rank 3 divides by zero (group 3); rank 2 had a handled SIGBUS before.
	stack := []sessions.Frame{
		{PC: 0x7f3a1d201234, Module: "/home/ada/lib/libsolver.so", Offset: 0x1234, Function: "relax_cell", File: "solver/relax.c", Line: 88},
		{PC: 0x7f3a1d2019f0, Module: "/home/ada/lib/libsolver.so", Offset: 0x19f0, Function: "sweep", File: "solver/sweep.c", Line: 41},
		{PC: 0x55d0c0a01100, Module: "/home/ada/solver", Offset: 0x1100, Function: "main", File: "main.c", Line: 12},
	}
	add(200*ms, sessions.Handled{PID: 4103, TID: 4103, Rank: 2, Signal: "SIGBUS", Code: "BUS_ADRERR", Addr: 0x7f3a10000000,
		PC: 0x55d0c0a01300, Module: "/home/ada/solver", Offset: 0x1300, Function: "map_grow"})
	core := "/var/crash/core.solver.4102"
	add(300*ms, sessions.Crash{PID: 4102, TID: 4102, Rank: 1, Exe: "/home/ada/solver", Signal: "SIGSEGV", Code: "SEGV_MAPERR",
		Addr: 0x10, PC: 0x7f3a1d201234, Module: "/home/ada/lib/libsolver.so", Offset: 0x1234, Function: "relax_cell",
		File: "solver/relax.c", Line: 88, Key: "/home/ada/solver|/home/ada/lib/libsolver.so+0x1234", Representative: true,
		Stack: stack, Core: &core, Regs: map[string]sessions.Hex{"rip": 0x7f3a1d201234, "rsp": 0x7ffd5a1c1e80, "rax": 0x10, "rdi": 0x0, "r8": 0x40, "r10": 0x1}})
	add(5*ms, sessions.Crash{PID: 4103, TID: 4103, Rank: 2, Exe: "/home/ada/solver", Signal: "SIGSEGV", Code: "SEGV_MAPERR",
		Addr: 0x10, PC: 0x7f3a1d301234, Module: "/home/ada/lib/libsolver.so", Offset: 0x1234, Function: "relax_cell",
		Key: "/home/ada/solver|/home/ada/lib/libsolver.so+0x1234"})
	add(ms, sessions.Exit{PID: 4102, Signal: "SIGSEGV", CoreDumped: true})
	add(ms, sessions.Exit{PID: 4103, Signal: "SIGSEGV"})
	add(50*ms, sessions.Crash{PID: 4101, TID: 4101, Rank: 0, Exe: "/home/ada/solver", Signal: "SIGABRT", Code: "SI_TKILL", UserSent: true,
		PC: 0x7f3a1c4969fc, Module: "/usr/lib/x86_64-linux-gnu/libc.so.6", Offset: 0x969fc, Function: "__pthread_kill_implementation",
		AbortMessage: "solver: solver/halo.c:77: exchange_halo: Assertion `n == expected' failed.\n",
		Key:          "/home/ada/solver|abort:solver: solver/halo.c:77: exchange_halo: Assertion `n == expected' failed.\n", Representative: true,
		Core: ptr("/var/crash/core.solver.4101")})
	add(ms, sessions.Exit{PID: 4101, Signal: "SIGABRT", CoreDumped: true})
	add(40*ms, sessions.Crash{PID: 4104, TID: 4104, Rank: 3, Exe: "/home/ada/solver", Signal: "SIGFPE", Code: "FPE_INTDIV",
		PC: 0x55d0c0a01222, Addr: 0x55d0c0a01222, Module: "/home/ada/solver", Offset: 0x1222, Function: "normalize", Representative: true})
	add(ms, sessions.Exit{PID: 4104, Signal: "SIGFPE"})
	add(ms, sessions.Error{PID: 4110, Op: "seize", Message: "operation not permitted"})
	return evs
}

// State applies Events to a new State.
func State() *sessions.State {
	s := sessions.NewState()
	for _, e := range Events() {
		s.Apply(e)
	}
	return s
}

// Header is the recording header matching the fixture.
func Header() sessions.Header {
	return sessions.Header{Job: "pgid:4100", Arch: "amd64", Kernel: "6.8.0-49-generic", Start: T0}
}

// Big is a State of n processes with a full measured matrix: ranks in uid blocks of 64
// (cross-block pairs denied), every 100th rank under seccomp, for benchmarks.
func Big(n int) *sessions.State {
	s := sessions.NewState()
	s.Apply(sessions.Event{Time: T0, Body: sessions.Session{Job: "slurm:777", Mode: "attach", Arch: "amd64", Kernel: "6.8.0"}})
	pids := make([]int, n)
	for i := range pids {
		pids[i] = 10000 + i
		s.Apply(sessions.Event{Time: T0, Body: sessions.Process{PID: pids[i], PPID: 9999, Rank: sessions.Rank(i),
			Exe: "/apps/cfd", Comm: "cfd", Argv: []string{"cfd", "-i", "in.dat"}, UID: 1000 + i/64, Threads: 4}})
	}
	yes, no := ptr(true), ptr(false)
	uid, sec := ptr(sessions.ReasonUID), ptr(sessions.ReasonSeccomp)
	cells := make([]sessions.Cell, 0, n*n)
	for i, a := range pids {
		for j, b := range pids {
			c := sessions.Cell{From: a, To: b, VMReadv: sessions.Check{Predicted: true, Measured: yes},
				Kcmp: sessions.Check{Predicted: true, Measured: yes}, OpenMPI: true}
			switch {
			case i == j:
			case i%100 == 0:
				c.VMReadv, c.Kcmp, c.Reason = sessions.Check{Measured: no}, sessions.Check{Measured: no}, sec
			case i/64 != j/64:
				c.VMReadv, c.Kcmp, c.Reason = sessions.Check{Measured: no}, sessions.Check{Measured: no}, uid
			}
			cells = append(cells, c)
		}
	}
	s.Apply(sessions.Event{Time: T0.Add(time.Second), Body: sessions.Matrix{PIDs: pids, Cells: cells, Measured: true}})
	return s
}
