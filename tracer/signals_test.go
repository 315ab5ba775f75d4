package tracer

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDecodeSiginfo(t *testing.T) {
	b := make([]byte, 128)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(unix.SIGSEGV))
	le.PutUint32(b[8:], 2) // SEGV_ACCERR
	le.PutUint64(b[16:], 0x7fff1234)
	si := decodeSiginfo(b)
	if si.Signo != int32(unix.SIGSEGV) || si.Code != 2 || si.Addr != 0x7fff1234 || si.UserSent() {
		t.Errorf("fault: %+v", si)
	}
	le.PutUint32(b[8:], uint32(0xfffffffa)) // SI_TKILL (-6)
	le.PutUint32(b[16:], 4242)              // si_pid
	le.PutUint32(b[20:], 1000)              // si_uid
	si = decodeSiginfo(b)
	if !si.UserSent() || si.PID != 4242 || si.UID != 1000 || SigCodeName(int(unix.SIGSEGV), si.Code) != "SI_TKILL" {
		t.Errorf("tkill: %+v", si)
	}
}

func TestDecodeSyscallInfo(t *testing.T) {
	b := make([]byte, 88)
	b[0] = unix.PTRACE_SYSCALL_INFO_ENTRY
	binary.LittleEndian.PutUint64(b[8:], 0x401000)
	binary.LittleEndian.PutUint64(b[16:], 0x7ffc0000)
	binary.LittleEndian.PutUint64(b[24:], 15)
	si := decodeSyscallInfo(b)
	if si.Op != unix.PTRACE_SYSCALL_INFO_ENTRY || si.IP != 0x401000 || si.SP != 0x7ffc0000 || si.Nr != 15 {
		t.Errorf("%+v", si)
	}
	if decodeSyscallInfo(b[:10]).Op != 0 {
		t.Error("a short buffer must decode as op NONE")
	}
}
