package tracer

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Memory of a tracee through ptrace (every other read is procfs.Mem: process_vm_readv and
// /proc/PID/mem). peekWord/pokeWord are PTRACE_PEEKDATA/POKEDATA: they need tid in a
// ptrace-stop of the calling thread, and pokeWord is the only way to write to read-only text
// (an injection's guard) without mprotect, because the kernel breaks COW with FOLL_FORCE.

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
