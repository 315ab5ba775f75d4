package tracer

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// Auxiliary vector entries the exec stop's stack read uses (include/uapi/linux/auxvec.h).
const (
	atNull   = 0
	atEUID   = 12
	atSecure = 23
	atExecFn = 31
)

// execStackSpan is how much of a new stack the exec stop reads, from its stack pointer up:
// the pointers (argc, argv, envp, auxv) and then the strings they point to, up to the stack's
// top (a partial read ends there). A program whose arguments and environment do not fit is
// read from /proc instead.
const execStackSpan = 32 << 10

// stackImage reads what an exec'd program's new stack says of it, at its exec stop, before
// it runs a single instruction: its argv, its rank (from its environment), its uid and its
// comm. fs/binfmt_elf.c create_elf_tables lays the stack out from the stack pointer up:
// argc, argv[argc], NULL, envp[], NULL, then the auxiliary vector's (type, value) pairs to
// AT_NULL; the strings lie above them, argv's then envp's (what /proc/PID/cmdline and environ
// read, mm->arg_start to env_end), and the file name execve was given (AT_EXECFN) at the top.
// One register read and one process_vm_readv, against five /proc files of a process fresh
// from its exec (whose /proc entries the kernel makes on their first look) read beside the
// program's own start. ok is false where the stack does not say it all (a secure exec, whose
// uid /proc tells as the kernel sees it; a file executed by descriptor, whose comm the kernel
// takes from the file; a layout that does not parse or does not fit): then /proc is read.
func stackImage(tid int, buf []byte) (img image, ok bool) {
	regs, err := getRegs(tid)
	if err != nil {
		return image{}, false
	}
	sp := regs.SP()
	n, err := procfs.VMRead(tid, sp, buf)
	if err != nil || n < 8 {
		return image{}, false
	}
	buf = buf[:n]
	le := binary.LittleEndian
	words := n / 8
	word := func(i int) (uint64, bool) {
		if i < 0 || i >= words {
			return 0, false
		}
		return le.Uint64(buf[i*8:]), true
	}
	// str is the NUL-ended string at addr, if it lies whole in what was read.
	str := func(addr uint64) ([]byte, bool) {
		if addr < sp || addr-sp >= uint64(n) {
			return nil, false
		}
		s := buf[addr-sp:]
		end := bytes.IndexByte(s, 0)
		if end < 0 {
			return nil, false
		}
		return s[:end], true
	}
	argc, ok := word(0)
	if !ok || argc > uint64(words) {
		return image{}, false
	}
	img.argv = make([]string, 0, argc)
	for i := 1; i <= int(argc); i++ {
		p, ok := word(i)
		if !ok {
			return image{}, false
		}
		s, ok := str(p)
		if !ok {
			return image{}, false
		}
		img.argv = append(img.argv, string(s))
	}
	if end, ok := word(int(argc) + 1); !ok || end != 0 {
		return image{}, false
	}
	// The environment: its strings are one NUL-separated block, from the first to the end
	// of the last.
	i := int(argc) + 2
	var envStart, envEnd uint64
	for ; ; i++ {
		p, ok := word(i)
		if !ok {
			return image{}, false
		}
		if p == 0 {
			break
		}
		s, ok := str(p)
		if !ok {
			return image{}, false
		}
		if envStart == 0 {
			envStart = p
		}
		envEnd = p + uint64(len(s)) + 1
	}
	img.rank = sessions.NoRank
	if envStart != 0 {
		img.rank = procfs.RankFromEnviron(buf[envStart-sp : envEnd-sp])
	}
	var euid, secure, execfn uint64
	haveEUID := false
	for i++; ; i += 2 {
		typ, ok1 := word(i)
		val, ok2 := word(i + 1)
		if !ok1 || !ok2 {
			return image{}, false
		}
		switch typ {
		case atNull:
			goto done
		case atEUID:
			euid, haveEUID = val, true
		case atSecure:
			secure = val
		case atExecFn:
			execfn = val
		}
	}
done:
	fn, ok := str(execfn)
	if !ok || !haveEUID || secure != 0 || strings.HasPrefix(string(fn), "/dev/fd/") {
		return image{}, false
	}
	// exe is the file name as execve was given it, until /proc/PID/exe gives its path
	// (onExec); the kernel names the task after its last element, cut to TASK_COMM_LEN-1
	// bytes (fs/exec.c begin_new_exec).
	img.exe = string(fn)
	if j := bytes.LastIndexByte(fn, '/'); j >= 0 {
		fn = fn[j+1:]
	}
	img.comm = string(fn[:min(len(fn), 15)])
	img.uid = int(euid)
	return img, true
}
