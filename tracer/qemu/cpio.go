package qemu

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// CPIOWriter writes a "newc" (SVR4, no CRC) cpio archive, the format the
// kernel's initramfs unpacker (init/initramfs.c) reads. The unpacker does not
// create parent directories, so callers add directory entries first.
type CPIOWriter struct {
	w      io.Writer
	ino    uint32
	off    int64
	closed bool
}

// Mode bits of the cpio c_mode field (same values as st_mode).
const (
	ModeDir  = 0o040000
	ModeReg  = 0o100000
	ModeChar = 0o020000
)

// NewCPIOWriter returns a writer that appends entries to w.
func NewCPIOWriter(w io.Writer) *CPIOWriter { return &CPIOWriter{w: w, ino: 1} }

// Dir adds a directory entry.
func (c *CPIOWriter) Dir(name string, perm uint32) error {
	return c.entry(name, ModeDir|perm, 2, 0, 0, nil)
}

// File adds a regular file with the given contents.
func (c *CPIOWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, ModeReg|perm, 1, 0, 0, data)
}

// CharDev adds a character device node (for example /dev/console 5:1, which
// the kernel opens before it runs /init).
func (c *CPIOWriter) CharDev(name string, perm, major, minor uint32) error {
	return c.entry(name, ModeChar|perm, 1, major, minor, nil)
}

// Close writes the TRAILER!!! entry. It does not close the underlying writer.
func (c *CPIOWriter) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.header("TRAILER!!!", 0, 1, 0, 0, 0, 0)
}

func (c *CPIOWriter) entry(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	if c.closed {
		return fmt.Errorf("cpio add %q: archive closed", name)
	}
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" || name == "." {
		return fmt.Errorf("cpio add %q: empty name", name)
	}
	if uint64(len(data)) > 0xffffffff {
		return fmt.Errorf("cpio add %q: %d bytes is too large for newc", name, len(data))
	}
	c.ino++
	if err := c.header(name, mode, nlink, uint32(len(data)), rmajor, rminor, c.ino); err != nil {
		return err
	}
	if err := c.write(data); err != nil {
		return fmt.Errorf("cpio add %q: %w", name, err)
	}
	return c.pad()
}

// header writes the 110-byte ASCII header, the NUL-terminated name and the
// padding that aligns the data to 4 bytes.
func (c *CPIOWriter) header(name string, mode, nlink, size, rmajor, rminor, ino uint32) error {
	h := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, rmajor, rminor, len(name)+1, 0)
	if err := c.write([]byte(h + name + "\x00")); err != nil {
		return fmt.Errorf("cpio header %q: %w", name, err)
	}
	return c.pad()
}

func (c *CPIOWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.off += int64(n)
	return err
}

func (c *CPIOWriter) pad() error {
	if r := c.off % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}
