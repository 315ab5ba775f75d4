package tracer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/crashtui/crashtui/sessions"
	"golang.org/x/sys/unix"
)

// ErrNoCommand means the command to run does not exist or is not executable (bad usage,
// unlike a failure to trace what was started).
var ErrNoCommand = errors.New("no such command")

// LaunchSpec describes `crashtui run`.
type LaunchSpec struct {
	N      int
	Argv   []string
	Env    []string // extra environment for every rank
	Stdout *os.File // ranks' stdout and stderr (nil: /dev/null)
	Stderr *os.File
	// RankOutput, when set, gives each rank its own file for both stdout and stderr (run's
	// Output tab tells the ranks apart by it); Launch closes it (done) once the rank has it.
	// The ranks write the file themselves, so they never depend on crashtui reading it.
	RankOutput func(rank int) (f *os.File, done io.Closer, err error)
	// RaiseCoreLimit raises each rank's soft RLIMIT_CORE to its hard limit before its exec
	// (cores were asked for: --cores, --dedup-kernel-cores).
	RaiseCoreLimit bool
}

// gateName is the gate shell's $0: a process whose argv[3] it is has not reached its command.
const gateName = "crashtui-rank"

// gateScript is each rank's gate: it runs the command once crashtui writes a line to its
// descriptor 3, and exits (125) without running it if the pipe ends first: crashtui failed or
// was killed while it launched the ranks (a -n 4096 launch takes a while), and the kernel
// let go of those it had seized. Nothing crashtui launches runs untraced.
const gateScript = `read _ <&3 || exit 125; exec 3<&-; exec "$@"`

// Launch starts N ranks of Argv in their own process group, traced from their first
// instruction: each rank is a /bin/sh that waits at its gate (a pipe), is seized, then execs
// the command, so the exec itself is a traced event and a rank that crashes at once is still
// caught. The gates open once every rank is seized. It returns the process group id.
func (t *Tracer) Launch(spec LaunchSpec) (int, error) {
	if spec.N <= 0 {
		spec.N = 1
	}
	if len(spec.Argv) == 0 {
		return 0, errors.New("run: no command")
	}
	if _, err := exec.LookPath(spec.Argv[0]); err != nil {
		return 0, fmt.Errorf("run: %w: %w", ErrNoCommand, err)
	}
	pgid := 0
	var started []int
	err := t.do(func() error {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer null.Close()
		out, errw := spec.Stdout, spec.Stderr
		if out == nil {
			out = null
		}
		if errw == nil {
			errw = null
		}
		var gates []*os.File
		defer func() {
			for _, g := range gates {
				g.Close() // the pipe's end: a rank still at its gate exits
			}
		}()
		for i := 0; i < spec.N; i++ {
			r, w, err := os.Pipe()
			if err != nil {
				return err
			}
			argv := append([]string{"/bin/sh", "-c", gateScript, gateName}, spec.Argv...)
			env := append(os.Environ(), spec.Env...)
			env = append(env, "CRASHTUI_RANK="+strconv.Itoa(i), "CRASHTUI_SIZE="+strconv.Itoa(spec.N))
			rout, rerr := out, errw
			var own *os.File
			var done io.Closer
			if spec.RankOutput != nil {
				if own, done, err = spec.RankOutput(i); err != nil {
					r.Close()
					w.Close()
					for _, pid := range started {
						unix.Kill(pid, unix.SIGKILL) // still at their gates
					}
					return fmt.Errorf("run rank %d: output: %w", i, err)
				}
				rout, rerr = own, own
			}
			attr := &os.ProcAttr{Env: env, Files: []*os.File{null, rout, rerr, r},
				Sys: &unix.SysProcAttr{Setpgid: true, Pgid: pgid}}
			p, err := os.StartProcess("/bin/sh", argv, attr)
			r.Close()
			if done != nil {
				done.Close()
			}
			if err != nil {
				w.Close()
				return fmt.Errorf("run rank %d: %w", i, err)
			}
			gates = append(gates, w)
			started = append(started, p.Pid)
			if pgid == 0 {
				pgid = p.Pid
			}
			if err := ptraceSeize(p.Pid); err != nil {
				// Never let a rank run untraced: end every rank started so far while they are
				// still waiting at their gates.
				for _, pid := range started {
					unix.Kill(pid, unix.SIGKILL)
				}
				return fmt.Errorf("run rank %d: seize %d: %w", i, p.Pid, err)
			}
			if spec.RaiseCoreLimit {
				// Cores were asked for: as `ulimit -c unlimited` before mpirun would, so the
				// default soft limit 0 of most shells does not leave --cores with nothing.
				// Before the exec; a limit the program sets itself is still honoured.
				if err := raiseCoreLimit(p.Pid); err != nil {
					t.emitErr(p.Pid, "raise core limit", err)
				}
			}
			t.addTask(p.Pid, p.Pid)
			pr := t.procs[p.Pid]
			pr.launched, pr.rank = true, sessions.Rank(i)
		}
		// Every rank is seized: a line at each gate lets it run its command. A rank whose line
		// cannot be written sees its pipe end (the deferred Close) and exits: it is told, and
		// the others run.
		for i, g := range gates {
			if _, err := g.Write([]byte("\n")); err != nil {
				t.emitErr(started[i], "open its gate", fmt.Errorf("rank %d never ran its command: %w", i, err))
			}
		}
		return nil
	})
	return pgid, err
}

// LostPrivileges is what the kernel will not grant a program exec'd under crashtui's ptrace:
// a traced exec keeps the caller's ids and capabilities unless the tracer has CAP_SYS_PTRACE
// (fs/exec.c LSM_UNSAFE_PTRACE, security/commoncap.c cap_bprm_creds_from_file with
// ptracer_capable), so a setuid, setgid or file-capability program runs unprivileged.
type LostPrivileges struct {
	Path           string
	Setuid, Setgid bool
	UID, GID       int // the file's owner and group: the ids setuid and setgid would give
	Caps           bool
}

// Any reports whether anything is lost.
func (l LostPrivileges) Any() bool { return l.Setuid || l.Setgid || l.Caps }

// PrivilegesLost says what running the program at path under crashtui's ptrace (run) loses,
// nothing when crashtui has CAP_SYS_PTRACE (root) or the program gains nothing by its exec:
// no setuid bit to another uid, no setgid bit (with group execute) to another gid, no
// security.capability, a nosuid mount (bprm_fill_uid: mnt_may_suid), or a script (whose bits
// the kernel never honours).
func PrivilegesLost(path string) LostPrivileges {
	l := LostPrivileges{Path: path}
	if hasPtraceCap() {
		return l
	}
	f, err := os.Open(path)
	if err != nil {
		return l
	}
	defer f.Close()
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Fstat(int(f.Fd()), &st) != nil || unix.Fstatfs(int(f.Fd()), &fs) != nil || fs.Flags&unix.ST_NOSUID != 0 {
		return l
	}
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && string(magic[:]) == "#!" {
		return l
	}
	l.UID, l.GID = int(st.Uid), int(st.Gid)
	l.Setuid = st.Mode&unix.S_ISUID != 0 && l.UID != os.Geteuid()
	l.Setgid = st.Mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP && l.GID != os.Getegid()
	_, err = unix.Fgetxattr(int(f.Fd()), "security.capability", nil)
	l.Caps = err == nil
	return l
}

// hasPtraceCap says whether crashtui's effective capabilities include CAP_SYS_PTRACE.
func hasPtraceCap() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return os.Geteuid() == 0
	}
	return data[unix.CAP_SYS_PTRACE/32].Effective&(1<<(unix.CAP_SYS_PTRACE%32)) != 0
}

// SignalJob sends sig to every traced process, by pid. run and demo use it to end the ranks
// they started; attach never does.
func (t *Tracer) SignalJob(sig unix.Signal) error {
	return t.do(func() error {
		for pid := range t.procs {
			if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("signal %d: %w", pid, err)
			}
		}
		return nil
	})
}

// SignalProcess sends sig to one traced process by pid, with kill(2) as kill -SIG PID does:
// the TUI's K. A pid the tracer does not hold (it ended, was let go, or was never in the job)
// is refused: a traced process that exits is not reaped by its parent before the tracer has
// waited for it, so while it is in t.procs its pid cannot belong to anyone else. The signal
// reaches the process as any other does: crashtui re-injects it at its signal-delivery-stop,
// and a SIGSTOP's group-stop is kept with PTRACE_LISTEN.
func (t *Tracer) SignalProcess(pid int, sig unix.Signal) error {
	return t.do(func() error {
		if t.procs[pid] == nil {
			return fmt.Errorf("signal %d: not a traced process (it ended or was let go)", pid)
		}
		if err := unix.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
		return nil
	})
}

// raiseCoreLimit raises pid's soft RLIMIT_CORE to its hard limit (ulimit -c unlimited, or as
// far as the hard limit lets an unprivileged shell go).
func raiseCoreLimit(pid int) error {
	var lim unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, nil, &lim); err != nil {
		return fmt.Errorf("prlimit %d RLIMIT_CORE: %w", pid, err)
	}
	if lim.Cur >= lim.Max {
		return nil
	}
	lim.Cur = lim.Max
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, &lim, nil); err != nil {
		return fmt.Errorf("prlimit %d RLIMIT_CORE %d: %w", pid, lim.Max, err)
	}
	return nil
}
