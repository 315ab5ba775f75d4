package stacks

import (
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// memBlock is the size and alignment of what blockMem copies at once: 4 KiB, a page or a
// part of one on every architecture, so a block read never spans two mappings.
const memBlock = 4096

// memBlocks bounds the blocks one walk keeps: a blocked thread's frames are nearly always
// in the first one or two above its stack pointer.
const memBlocks = 4

// blockMem serves one unwind's reads of a process's memory from 4 KiB blocks, each copied
// with one process_vm_readv the first time a read falls in it: a walk of a blocked thread
// asks for a word at a time, a dozen times, and each was a syscall of its own. A read the
// blocks cannot serve (one that crosses a block's end, one past memBlocks blocks, a block
// that cannot be read whole) goes to the process as before, with the same error. It holds
// what it copied only for the walk: readBlocked checks afterwards that the thread did not
// run meanwhile, which also says the copies were not stale.
type blockMem struct {
	pid  int
	live elfinfo.MemReader
	n    int // blocks in use
	base [memBlocks]uint64
	bad  [memBlocks]bool // the block could not be read whole
	data [memBlocks][memBlock]byte
}

// reset starts a walk of pid's memory.
func (b *blockMem) reset(pid int) {
	b.pid, b.live, b.n = pid, procfs.Reader(pid), 0
}

func (b *blockMem) read(addr uint64, buf []byte) error {
	base := addr &^ (memBlock - 1)
	if addr-base+uint64(len(buf)) > memBlock {
		return b.live(addr, buf)
	}
	i := 0
	for i < b.n && b.base[i] != base {
		i++
	}
	if i == b.n {
		if b.n == memBlocks {
			return b.live(addr, buf)
		}
		b.n++
		b.base[i] = base
		n, err := procfs.VMRead(b.pid, base, b.data[i][:])
		b.bad[i] = err != nil || n != memBlock
	}
	if b.bad[i] {
		return b.live(addr, buf)
	}
	copy(buf, b.data[i][addr-base:])
	return nil
}
