package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// Raw syscalls in sys_ppc64le.s. They return r3 and the whole CR register.
func scSyscall(nr, a1, a2, a3 uintptr) (r3, cr uintptr)
func scvSyscall(nr, a1, a2, a3 uintptr) (r3, cr uintptr)

// Linux ppc64 syscall numbers (arch/powerpc/kernel/syscalls/syscall.tbl).
const (
	sysRead      = 3
	sysGetpid    = 20
	sysNanosleep = 162
)

// Globals so the kernel-visible addresses stay valid and fixed while the
// thread is stopped and restarted.
var (
	buf [1]byte
	req syscall.Timespec
)

func init() {
	// Keep main on the initial thread so that the blocked thread is tid == pid.
	runtime.LockOSThread()
}

func main() {
	insn := flag.String("insn", "sc", "syscall instruction: sc or scv")
	call := flag.String("call", "read", "read (one byte from fd 3), nanosleep or getpid")
	sleep := flag.Duration("sleep", 2*time.Second, "nanosleep duration")
	notify := flag.Bool("sigusr1", false, "install a Go handler for SIGUSR1 (SA_RESTART, like every Go handler)")
	flag.Parse()
	if *notify {
		signal.Notify(make(chan os.Signal, 8), syscall.SIGUSR1)
	}

	var nr, a1, a2, a3 uintptr
	switch *call {
	case "read":
		nr, a1, a2, a3 = sysRead, 3, uintptr(unsafe.Pointer(&buf[0])), 1
	case "nanosleep":
		req = syscall.NsecToTimespec(sleep.Nanoseconds())
		nr, a1 = sysNanosleep, uintptr(unsafe.Pointer(&req))
	case "getpid":
		nr = sysGetpid
	default:
		fmt.Fprintf(os.Stderr, "scvprog: unknown -call %q\n", *call)
		os.Exit(2)
	}
	f := scSyscall
	switch *insn {
	case "sc":
	case "scv":
		f = scvSyscall
	default:
		fmt.Fprintf(os.Stderr, "scvprog: unknown -insn %q\n", *insn)
		os.Exit(2)
	}
	fmt.Printf("ready tid=%d nr=%d a1=%#x\n", syscall.Gettid(), nr, a1)
	r3, cr := f(nr, a1, a2, a3)
	so := 0
	if cr&0x10000000 != 0 { // CR0.SO: the sc error flag
		so = 1
	}
	fmt.Printf("result r3=%d so=%d cr=%#x byte=%d\n", int64(r3), so, cr, buf[0])
}
