package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// Raw syscall in sys_arm64.s: x8 = nr, x0..x2 = args, svc #0, returns x0.
func svcSyscall(nr, a1, a2, a3 uintptr) (x0 uintptr)

// svcAddr returns the address of the svc instruction in svcSyscall.
func svcAddr() uintptr

// Linux arm64 syscall numbers (include/uapi/asm-generic/unistd.h).
const (
	sysRead      = 63
	sysNanosleep = 101
	sysGetpid    = 172
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
	call := flag.String("call", "read", "read (one byte from fd 3), nanosleep or getpid")
	sleep := flag.Duration("sleep", 2*time.Second, "nanosleep duration")
	flag.Parse()

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
		fmt.Fprintf(os.Stderr, "svcprog: unknown -call %q\n", *call)
		os.Exit(2)
	}
	fmt.Printf("ready tid=%d nr=%d a1=%#x svc=%#x\n", syscall.Gettid(), nr, a1, svcAddr())
	x0 := svcSyscall(nr, a1, a2, a3)
	fmt.Printf("result x0=%d byte=%d\n", int64(x0), buf[0])
}
