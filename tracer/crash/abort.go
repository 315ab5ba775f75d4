package crash

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"

	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// libcPath returns the path of the C library mapped in maps ("" if none).
func libcPath(maps []elfinfo.Mapping) string {
	for _, m := range maps {
		if !m.IsFile() {
			continue
		}
		b := filepath.Base(m.Path)
		if b == "libc.so.6" || (strings.HasPrefix(b, "libc-") && strings.HasSuffix(b, ".so")) || b == "libc.so" {
			return m.Path
		}
	}
	return ""
}

// Bounds of glibc's struct abort_msg_s that Spindle accepts (kernel.md §C).
const (
	abortMsgMinSize = 4
	abortMsgMaxSize = 64 << 10
)

// abortMessage reads glibc's __abort_msg (GLIBC_PRIVATE; set by assert and __libc_message
// before abort): a pointer to struct abort_msg_s {unsigned size; char msg[];}.
func (c *Crashes) abortMessage(pid int, maps []elfinfo.Mapping, libc string) string {
	if libc == "" {
		return ""
	}
	addr, ok := c.resolver.Symbol(pid, maps, libc, "__abort_msg")
	if !ok {
		return ""
	}
	mem := procfs.Reader(pid)
	var p [8]byte
	if mem(addr, p[:]) != nil {
		return ""
	}
	ptr := binary.LittleEndian.Uint64(p[:])
	if ptr == 0 {
		return ""
	}
	var hdr [4]byte
	if mem(ptr, hdr[:]) != nil {
		return ""
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size <= abortMsgMinSize || size > abortMsgMaxSize {
		return ""
	}
	buf := make([]byte, 4+int(size)-4)
	copy(buf, hdr[:])
	// The message may end before the mapping does; read what is readable, page by page.
	got := 4
	for got < len(buf) {
		end := min(len(buf), int((ptr+uint64(got)+4096)&^4095-ptr))
		if mem(ptr+uint64(got), buf[got:end]) != nil {
			break
		}
		got = end
	}
	return parseAbortMsg(buf[:got])
}

// parseAbortMsg decodes struct abort_msg_s from tracee bytes: the text up to the first NUL,
// without trailing whitespace; "" when size is out of Spindle's bounds (4 < size <= 64 KiB).
func parseAbortMsg(b []byte) string {
	if len(b) < 4 {
		return ""
	}
	size := binary.LittleEndian.Uint32(b)
	if size <= abortMsgMinSize || size > abortMsgMaxSize {
		return ""
	}
	msg := b[4:]
	if int(size)-4 < len(msg) {
		msg = msg[:size-4]
	}
	if i := bytes.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimRight(strings.ToValidUTF8(string(msg), "?"), " \t\r\n")
}
