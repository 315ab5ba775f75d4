//go:build linux

// Command crashprog is the guest helper of TestCrashGo: a Go program that faults the way the
// crash tests need on any architecture, without a C compiler in the guest.
//
//	crashprog segv     SIGSEGV back to SIG_DFL (raw rt_sigaction), then a nil dereference in
//	                   crashHere: the kernel kills it at one site on every architecture
//	crashprog recover  a nil dereference that Go's own SIGSEGV handler turns into a panic,
//	                   recovered: a handled fault; the program goes on and prints "recovered"
//	crashprog wait     SIGSEGV back to SIG_DFL, then waits to be killed from outside
//	crashprog hang     for TestStacksGo: a goroutine spins in spin, main blocks in a raw
//	                   read of stdin in blockRead (it keeps its thread, in the kernel)
//
// Each prints "ready PID" and then waits for a line on stdin before faulting; it exits 0
// at EOF (recover: after printing "recovered").
package main

import (
	"bufio"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// kernelSigaction is struct sigaction as rt_sigaction takes it (handler, flags, restorer,
// mask): the same layout on amd64, arm64 and ppc64le.
type kernelSigaction struct {
	handler, flags, restorer, mask uint64
}

func defaultSEGV() {
	var sa kernelSigaction // SIG_DFL
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); e != 0 {
		fmt.Fprintln(os.Stderr, "crashprog: rt_sigaction:", e)
		os.Exit(2)
	}
}

//lint:ignore U1000 the crash writes it, so the load is not optimised away
var sink int

//go:noinline
func crashHere(p *int) { sink = *p }

//lint:ignore U1000 the spin loop writes it, so the loop is not optimised away
var spun uint64

//go:noinline
func spin() {
	for i := uint64(0); ; i++ {
		spun += i * i
	}
}

//go:noinline
func blockRead() {
	var b [64]byte
	for {
		if n, err := syscall.Read(0, b[:]); n <= 0 && err != syscall.EINTR {
			os.Exit(0)
		}
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crashprog segv|recover|wait|hang")
		os.Exit(2)
	}
	mode := os.Args[1]
	if mode == "segv" || mode == "wait" {
		defaultSEGV()
	}
	if mode == "hang" {
		go spin()
		fmt.Printf("ready %d\n", os.Getpid())
		blockRead()
	}
	fmt.Printf("ready %d\n", os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return
	}
	switch mode {
	case "segv":
		crashHere(nil)
	case "recover":
		func() {
			defer func() { recover() }()
			crashHere(nil)
		}()
		fmt.Println("recovered")
	}
	for in.Scan() {
	}
}
