// Command peer is a test and demo process for crashtui's access matrix (kernel.md §A). It
// puts itself into one of the situations the matrix must explain — a seccomp filter like a
// container profile's, non-dumpable, no capabilities — and then, on request, runs
// kcmp(getpid(), PEER, KCMP_VM, 0, 0) and a 1-byte process_vm_readv of PEER's memory from
// inside itself, printing the errno names. That is the ground truth for the ordered pair
// (this process reads PEER) as the kernel sees it, without any injection.
//
// Other identities (another uid, a new user or PID namespace) are given by whoever starts
// it (SysProcAttr.Credential, Cloneflags with uid maps), because a multithreaded Go process
// can no longer unshare a user namespace.
//
//	peer [-seccomp] [-seccomp-kill] [-nodump] [-dropcaps|-noeff] [-ptracer-any] [-name COMM]  serve: prints "ready PID ADDR",
//	        then answers each stdin line "probe PID ADDR" with "kcmp=OK|ERRNO vm=OK|ERRNO";
//	        exits at EOF or "exit"
//	peer -spawn [...]  as serve, but first starts a copy of itself (same flags, no -spawn) as
//	        its child and, after its own ready line, prints "child PID ADDR" for it (Yama's
//	        ptrace_scope=1 lets a process read its descendants only); the child exits with it
//	peer probe PID ADDR                                     one probe, then exit
//	peer [-seccomp] [-nodump] [-dropcaps|-noeff] exec PROG [ARGS...]
//	        set itself up the same way, then execve PROG: the filter (with NO_NEW_PRIVS), the
//	        capabilities and the exec'd program's children inherit it, as under a container
//	        runtime (used to start mpirun under the seccomp filter)
//
// It must be built with CGO_ENABLED=0 for -dropcaps (syscall.AllThreadsSyscall).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/crashtui/crashtui/tracer/seccomp"
	"golang.org/x/sys/unix"
)

// target is memory a peer can read from us: its address is printed at startup.
var target = [64]byte{1, 2, 3}

func main() {
	seccomp := flag.Bool("seccomp", false, "install a filter returning EPERM for process_vm_readv/writev, kcmp, ptrace (a container profile without CAP_SYS_PTRACE)")
	seccompKill := flag.Bool("seccomp-kill", false, "install a filter that kills the process on kcmp")
	nodump := flag.Bool("nodump", false, "prctl(PR_SET_DUMPABLE, 0)")
	dropcaps := flag.Bool("dropcaps", false, "clear the effective, permitted and inheritable capability sets of all threads")
	name := flag.String("name", "", "set the process name (comm) to this, e.g. one with escape sequences, as prctl(PR_SET_NAME) would for the main thread")
	noeff := flag.Bool("noeff", false, "clear only the effective capability set (permitted stays): REALCREDS checks use CapPrm, capable() uses CapEff")
	ptracerAny := flag.Bool("ptracer-any", false, "prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), as Open MPI's smsc/cma does: Yama's ptrace_scope=1 then lets any process of the same user read this one")
	spawn := flag.Bool("spawn", false, "start a copy of this peer as a child and print \"child PID ADDR\" after the ready line")
	flag.Parse()

	if flag.NArg() == 3 && flag.Arg(0) == "probe" {
		pid, err1 := strconv.Atoi(flag.Arg(1))
		addr, err2 := strconv.ParseUint(flag.Arg(2), 0, 64)
		if err1 != nil || err2 != nil {
			fatal("usage: peer probe PID ADDR")
		}
		fmt.Println(probe(pid, uintptr(addr)))
		return
	}
	execArgv := []string(nil)
	if flag.NArg() >= 2 && flag.Arg(0) == "exec" {
		execArgv = flag.Args()[1:]
	} else if flag.NArg() != 0 {
		fatal("usage: peer [-seccomp] [-seccomp-kill] [-nodump] [-dropcaps] [exec PROG ARGS...] | peer probe PID ADDR")
	}

	if *name != "" {
		// /proc/self/comm names the thread-group leader whichever thread writes it
		// (fs/proc/base.c comm_write → set_task_comm), unlike PR_SET_NAME, which renames the
		// calling thread, and Go's main goroutine may run on any thread.
		if err := os.WriteFile("/proc/self/comm", []byte(*name), 0); err != nil {
			fatal("name: %v", err)
		}
	}
	if *dropcaps || *noeff {
		if err := dropCaps(*noeff); err != nil {
			fatal("dropcaps: %v", err)
		}
	}
	if *nodump {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			fatal("PR_SET_DUMPABLE: %v", err)
		}
	}
	if *ptracerAny {
		// EINVAL when Yama is not built in: nothing to make an exception from.
		if err := unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0); err != nil && err != unix.EINVAL {
			fatal("PR_SET_PTRACER: %v", err)
		}
	}
	if *seccomp || *seccompKill {
		if err := installFilter(*seccompKill); err != nil {
			fatal("seccomp: %v", err)
		}
	}

	if execArgv != nil {
		prog, err := exec.LookPath(execArgv[0])
		if err != nil {
			fatal("exec: %v", err)
		}
		// The filter and NO_NEW_PRIVS survive execve and are inherited by every child (kernel/
		// seccomp.c); dumpability is reset by execve (fs/exec.c begin_new_exec) and root
		// regains its capabilities, so only -seccomp is meaningful here.
		fatal("exec %s: %v", prog, syscall.Exec(prog, execArgv, os.Environ()))
	}
	child := ""
	if *spawn {
		var err error
		if child, err = spawnChild(); err != nil {
			fatal("spawn: %v", err)
		}
	}
	fmt.Printf("ready %d %#x\n", os.Getpid(), uintptr(unsafe.Pointer(&target[0])))
	if child != "" {
		fmt.Println("child " + child)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "exit":
			return
		case len(f) == 3 && f[0] == "probe":
			pid, err1 := strconv.Atoi(f[1])
			addr, err2 := strconv.ParseUint(f[2], 0, 64)
			if err1 != nil || err2 != nil {
				fmt.Println("error bad probe line")
				continue
			}
			fmt.Println(probe(pid, uintptr(addr)))
		default:
			fmt.Println("error unknown command")
		}
	}
	runtime.KeepAlive(&target)
}

// childStdin is the spawned child's stdin: it reaches EOF, and the child exits, when this
// process does.
//
//lint:ignore U1000 written once and kept: a collected pipe would be closed by its finalizer
var childStdin io.WriteCloser

// spawnChild starts this program again, with the same arguments less -spawn, as a child
// whose stdin is a pipe this process holds (it exits when this one does), and returns the
// "PID ADDR" of its ready line.
func spawnChild() (string, error) {
	var args []string
	for _, a := range os.Args[1:] {
		if a != "-spawn" && a != "--spawn" {
			args = append(args, a)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	childStdin = in // referenced for this process's lifetime: a collected pipe would close
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		return "", fmt.Errorf("child said %q: %v", line, err)
	}
	return rest, nil
}

// probe runs the two checks of kernel.md A.2 from inside this process.
func probe(pid int, addr uintptr) string {
	kc := "OK"
	// kcmp(getpid(), pid, KCMP_VM, 0, 0): the call Open MPI's smsc/cma makes.
	if _, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(os.Getpid()), uintptr(pid), 1 /* KCMP_VM */, 0, 0, 0); e != 0 {
		kc = unix.ErrnoName(e)
	}
	var buf [1]byte
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(1)
	remote := []unix.RemoteIovec{{Base: addr, Len: 1}}
	vm := "OK"
	if _, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil {
		vm = unix.ErrnoName(err.(unix.Errno))
	}
	return "kcmp=" + kc + " vm=" + vm
}

// installFilter installs the filter with SECCOMP_FILTER_FLAG_TSYNC so that every Go thread
// runs it (seccomp filters are per thread), after PR_SET_NO_NEW_PRIVS as an unprivileged
// container runtime would.
func installFilter(kill bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ai, err := seccomp.Arch(runtime.GOARCH)
	if err != nil {
		return err
	}
	ret, nrs := seccomp.ErrnoRet(unix.EPERM), []int{ai.VMReadv, ai.VMWritev, ai.Kcmp, ai.Ptrace}
	if kill {
		ret, nrs = seccomp.KillRet, []int{ai.Kcmp}
	}
	prog, err := seccomp.DenyFilter(ai, ret, nrs...)
	if err != nil {
		return err
	}
	sf := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		sf[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fp := unix.SockFprog{Len: uint16(len(sf)), Filter: &sf[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fp)))
	if e != 0 {
		return e
	}
	if r != 0 {
		return fmt.Errorf("thread %d could not be synchronised", r)
	}
	runtime.KeepAlive(sf)
	return nil
}

// dropCaps clears the capability sets on every thread (capset is per thread); with
// keepPermitted only the effective set.
func dropCaps(keepPermitted bool) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if keepPermitted {
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
		for i := range data {
			data[i].Effective = 0
		}
	}
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if e != 0 {
		return e
	}
	return nil
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peer: "+format+"\n", args...)
	os.Exit(2)
}
