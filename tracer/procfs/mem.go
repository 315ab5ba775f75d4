package procfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/elfinfo"
)

// Memory of a process, read from outside without a ptrace stop.
//
// Every read of a tracee's memory but PTRACE_PEEKDATA goes through Mem.Read. It tries
// process_vm_readv first: one syscall, no stop needed, no page-fault side effects. It needs the
// same PTRACE_MODE_ATTACH_REALCREDS check as ptrace (mm/process_vm_access.c → mm_access) and
// fails on pages that are not readable (PROT_NONE guard pages, and execute-only text on arm64
// with FEAT_EPAN). Where it stops short, /proc/PID/mem is the fallback (Force): it goes through
// access_remote_vm with FOLL_FORCE, so it reads any mapped page, including unreadable ones,
// exactly like a debugger's PTRACE_PEEKDATA but in one call, and like the kernel's own core
// dumper.

// Mem reads the memory of the process PID. Without Force it reads with process_vm_readv only
// (the unwinder and stack sampling: a failed read ends a walk and should cost one syscall);
// with Force, what process_vm_readv cannot read is read through /proc/PID/mem, whose file is
// opened at the first need and kept until Close (a core reads every mapping through one).
type Mem struct {
	PID     int
	Force   bool
	file    *os.File
	openErr error
}

// Read reads up to len(buf) bytes at addr into buf and says how many it read from the start;
// a short read is an error naming how far each way got.
func (m *Mem) Read(addr uint64, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, err := VMRead(m.PID, addr, buf)
	if n == len(buf) {
		return n, nil
	}
	if err == nil {
		err = fmt.Errorf("short read %d of %d bytes", n, len(buf))
	}
	if !m.Force {
		return n, fmt.Errorf("process_vm_readv %d at %#x: %w", m.PID, addr, err)
	}
	// EFAULT (an unreadable page), EPERM under some LSMs, ENOSYS without
	// CONFIG_CROSS_MEMORY_ATTACH: the rest through /proc/PID/mem.
	n2, err2 := m.procRead(addr+uint64(n), buf[n:])
	if n+n2 == len(buf) {
		return len(buf), nil
	}
	if err2 == nil {
		err2 = fmt.Errorf("short read %d of %d bytes", n2, len(buf)-n)
	}
	return n + n2, fmt.Errorf("read memory of %d at %#x: process_vm_readv: %v; /proc/%d/mem: %w", m.PID, addr, err, m.PID, err2)
}

// ReadFull fills buf with the memory at addr (an elfinfo.MemReader).
func (m *Mem) ReadFull(addr uint64, buf []byte) error {
	_, err := m.Read(addr, buf)
	return err
}

// Open opens /proc/PID/mem for the fallback, once.
func (m *Mem) Open() error {
	if m.file == nil && m.openErr == nil {
		m.file, m.openErr = os.Open(Path(m.PID, "mem"))
	}
	return m.openErr
}

// Close closes /proc/PID/mem if Read opened it.
func (m *Mem) Close() {
	if m.file != nil {
		m.file.Close()
		m.file = nil
	}
}

func (m *Mem) procRead(addr uint64, buf []byte) (int, error) {
	if err := m.Open(); err != nil {
		return 0, err
	}
	// Addresses above 1<<63 (kernel space) do not fit ReadAt's int64 offset; no user mapping is
	// there.
	if addr > 1<<63-1 {
		return 0, unix.EIO
	}
	n, err := m.file.ReadAt(buf, int64(addr))
	if n == len(buf) {
		err = nil
	}
	return n, err
}

// VMRead is one process_vm_readv: a partial read (a later page unreadable) is n < len(buf)
// with no error.
func VMRead(pid int, addr uint64, buf []byte) (int, error) {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	for {
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err // n is the raw -1
		}
		return n, nil
	}
}

// ReadMem fills buf with the memory of pid at addr, through /proc/PID/mem where
// process_vm_readv cannot read.
func ReadMem(pid int, addr uint64, buf []byte) error {
	m := Mem{PID: pid, Force: true}
	defer m.Close()
	return m.ReadFull(addr, buf)
}

// Reader reads pid's memory with process_vm_readv only (no file descriptor, one syscall a
// read): for the unwinder, whose failed reads end a walk.
func Reader(pid int) elfinfo.MemReader {
	m := &Mem{PID: pid}
	return m.ReadFull
}
