package stacks

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestBlockMem reads a real process's memory (this one's: process_vm_readv of itself is the
// same syscall) through blockMem and directly, and they agree: words inside a block, reads
// that cross a block's end, more blocks than it keeps, the last word of a mapping, and reads
// into the unmapped page after it (they fail, as a direct read does).
func TestBlockMem(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 8*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	for i := range mem {
		mem[i] = byte(i*7 + i>>12)
	}
	// The last page unmapped: a block there cannot be read.
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&mem[7*page])), uintptr(page), 0); e != 0 {
		t.Fatal(e)
	}
	mem = mem[:7*page]
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	end := base + uint64(len(mem))

	var b blockMem
	b.reset(os.Getpid())
	check := func(addr uint64, n int) {
		t.Helper()
		got := make([]byte, n)
		err := b.read(addr, got)
		if addr+uint64(n) > end {
			if err == nil {
				t.Errorf("read of %d bytes at end%+d: no error, want the direct read's", n, int64(addr-end))
			}
			return
		}
		if err != nil {
			t.Fatalf("read of %d bytes at base+%#x: %v", n, addr-base, err)
		}
		if want := mem[addr-base : addr-base+uint64(n)]; !bytes.Equal(got, want) {
			t.Errorf("read of %d bytes at base+%#x: %x, want %x", n, addr-base, got, want)
		}
	}
	for off := uint64(0); off < 6*memBlock; off += 1000 {
		check(base+off, 8) // a word in one block, a new block every few reads
	}
	check(base+memBlock-4, 8)    // across a block's end
	check(base+2*memBlock-1, 16) // again, a block already kept
	check(base+memBlock, memBlock)
	check(end-8, 8)  // the mapping's last word
	check(end-4, 8)  // across the mapping's end
	check(end+16, 8) // unmapped
	if b.n != memBlocks {
		t.Errorf("%d blocks kept, want the bound %d", b.n, memBlocks)
	}
}
