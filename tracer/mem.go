package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/elfinfo"
)

// Memory of a tracee, read and written from outside.
//
// Every read of a tracee's memory but PTRACE_PEEKDATA goes through traceeMem.read. It tries
// process_vm_readv first: one syscall, no stop needed, no page-fault side effects. It needs the
// same PTRACE_MODE_ATTACH_REALCREDS check as ptrace (mm/process_vm_access.c → mm_access) and
// fails on pages that are not readable (PROT_NONE guard pages, and execute-only text on arm64
// with FEAT_EPAN). Where it stops short, /proc/PID/mem is the fallback (force): it goes through
// access_remote_vm with FOLL_FORCE, so it reads any mapped page, including unreadable ones,
// exactly like a debugger's PTRACE_PEEKDATA but in one call, and like the kernel's own core
// dumper.
//
// peekWord/pokeWord are PTRACE_PEEKDATA/POKEDATA: they need tid in a ptrace-stop of the calling
// thread, and pokeWord is the only way to write to read-only text (an injection's guard) without
// mprotect, because the kernel breaks COW with FOLL_FORCE.

// traceeMem reads the memory of the process pid. Without force it reads with process_vm_readv
// only (the unwinder and stack sampling: a failed read ends a walk and should cost one
// syscall); with force, what process_vm_readv cannot read is read through /proc/PID/mem, whose
// file is opened at the first need and kept until close (a core reads every mapping through
// one).
type traceeMem struct {
	pid     int
	force   bool
	file    *os.File
	openErr error
}

// read reads up to len(buf) bytes at addr into buf and says how many it read from the start;
// a short read is an error naming how far each way got.
func (m *traceeMem) read(addr uint64, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, err := vmRead(m.pid, addr, buf)
	if n == len(buf) {
		return n, nil
	}
	if err == nil {
		err = fmt.Errorf("short read %d of %d bytes", n, len(buf))
	}
	if !m.force {
		return n, fmt.Errorf("process_vm_readv %d at %#x: %w", m.pid, addr, err)
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
	return n + n2, fmt.Errorf("read memory of %d at %#x: process_vm_readv: %v; /proc/%d/mem: %w", m.pid, addr, err, m.pid, err2)
}

// readFull fills buf with the memory at addr (an elfinfo.MemReader).
func (m *traceeMem) readFull(addr uint64, buf []byte) error {
	_, err := m.read(addr, buf)
	return err
}

// open opens /proc/PID/mem for the fallback, once.
func (m *traceeMem) open() error {
	if m.file == nil && m.openErr == nil {
		m.file, m.openErr = os.Open(procPath(m.pid, "mem"))
	}
	return m.openErr
}

func (m *traceeMem) close() {
	if m.file != nil {
		m.file.Close()
		m.file = nil
	}
}

func (m *traceeMem) procRead(addr uint64, buf []byte) (int, error) {
	if err := m.open(); err != nil {
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

// vmRead is one process_vm_readv: a partial read (a later page unreadable) is n < len(buf)
// with no error.
func vmRead(pid int, addr uint64, buf []byte) (int, error) {
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

// readMem fills buf with the memory of pid at addr, through /proc/PID/mem where
// process_vm_readv cannot read.
func readMem(pid int, addr uint64, buf []byte) error {
	m := traceeMem{pid: pid, force: true}
	defer m.close()
	return m.readFull(addr, buf)
}

// vmReader reads pid's memory with process_vm_readv only (no file descriptor, one syscall a
// read): for the unwinder, whose failed reads end a walk.
func vmReader(pid int) elfinfo.MemReader {
	m := &traceeMem{pid: pid}
	return m.readFull
}

// peekWord reads the 8-byte word at addr of tid with PTRACE_PEEKDATA. tid must be in a
// ptrace-stop of the calling thread.
func peekWord(tid int, addr uint64) (uint64, error) {
	var b [8]byte
	// unix.PtracePeekData does PTRACE_PEEKDATA word by word and copies into b; it handles the
	// libc-style return value (the raw syscall stores the word at data).
	n, err := unix.PtracePeekData(tid, uintptr(addr), b[:])
	if err != nil {
		return 0, fmt.Errorf("peekdata %d at %#x: %w", tid, addr, err)
	}
	if n != len(b) {
		return 0, fmt.Errorf("peekdata %d at %#x: short read %d", tid, addr, n)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// pokeWord writes the 8-byte word v at addr of tid with PTRACE_POKEDATA (which also writes
// read-only text: the kernel breaks COW under FOLL_FORCE). tid must be in a ptrace-stop of the
// calling thread. All three architectures crashtui supports are little-endian.
func pokeWord(tid int, addr uint64, v uint64) error {
	if err := ptrace(unix.PTRACE_POKEDATA, tid, uintptr(addr), uintptr(v)); err != nil {
		return fmt.Errorf("pokedata %d at %#x: %w", tid, addr, err)
	}
	return nil
}

// peekBytes reads len(buf) bytes at addr of tid, word by word with PTRACE_PEEKDATA (aligned
// down, so it never reads past the page that holds the last byte more than needed).
func peekBytes(tid int, addr uint64, buf []byte) error {
	start := addr &^ 7
	end := addr + uint64(len(buf))
	var w [8]byte
	for a := start; a < end; a += 8 {
		v, err := peekWord(tid, a)
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(w[:], v)
		for i := 0; i < 8; i++ {
			if p := a + uint64(i); p >= addr && p < end {
				buf[p-addr] = w[i]
			}
		}
	}
	return nil
}

// pokeBytes writes b at addr of tid with PTRACE_POKEDATA, whole words (the bytes around b in
// its first and last word are read first and written back as they were). PTRACE_POKEDATA
// writes read-only text too (FOLL_FORCE: the process gets a private copy of the page) and,
// unlike /proc/PID/mem, is allowed to the tracer under any Yama ptrace_scope. tid must be in
// a ptrace-stop of the calling thread.
func pokeBytes(tid int, addr uint64, b []byte) error {
	start, end := addr&^7, (addr+uint64(len(b))+7)&^7
	buf := make([]byte, end-start)
	if start != addr || end != addr+uint64(len(b)) {
		if err := peekBytes(tid, start, buf); err != nil {
			return err
		}
	}
	copy(buf[addr-start:], b)
	for i := 0; i < len(buf); i += 8 {
		if err := pokeWord(tid, start+uint64(i), binary.LittleEndian.Uint64(buf[i:])); err != nil {
			return err
		}
	}
	return nil
}
