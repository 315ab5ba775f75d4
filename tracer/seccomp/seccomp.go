package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Seccomp return actions (include/uapi/linux/seccomp.h), for filters tests and demos build. The kernel compares the action part
// as a signed 32-bit value and keeps the lowest across all filters (seccomp_run_filters), so
// KILL_PROCESS (0x80000000, negative) beats everything and ALLOW loses to everything.
const (
	RetKillProcess = 0x80000000
	RetKillThread  = 0x00000000
	RetTrap        = 0x00030000
	RetErrno       = 0x00050000
	RetUserNotif   = 0x7fc00000
	RetTrace       = 0x7ff00000
	RetLog         = 0x7ffc0000
	RetAllow       = 0x7fff0000
	retActionFull  = 0xffff0000
	retData        = 0x0000ffff
	maxErrno       = 4095 // include/linux/err.h MAX_ERRNO; __seccomp_filter caps ERRNO data at it
)

// The names Eval reports in Action.Action.
const (
	ActAllow       = "ALLOW"
	ActErrno       = "ERRNO"
	ActKillProcess = "KILL_PROCESS"
	ActKillThread  = "KILL_THREAD"
	ActTrap        = "TRAP"
	ActTrace       = "TRACE"
	ActLog         = "LOG"
	ActUserNotif   = "USER_NOTIF"
)

// Action is what A's filters decide for one syscall.
type Action struct {
	Action string // one of the Act* names
	Errno  int    // for ERRNO: the errno the syscall returns; for TRACE/TRAP: the 16-bit data
}

// String is "ALLOW" or "ERRNO(EPERM)".
func (a Action) String() string {
	if a.Action == ActErrno {
		return "ERRNO(" + ErrnoName(a.Errno) + ")"
	}
	return a.Action
}

// Kills says whether running the syscall would kill the task (KILL_*) or deliver SIGSYS
// (TRAP, whose default action is also fatal): an injected measurement must not run it.
func (a Action) Kills() bool {
	return a.Action == ActKillProcess || a.Action == ActKillThread || a.Action == ActTrap
}

// Runs says whether the syscall reaches its kernel implementation (ALLOW or LOG).
func (a Action) Runs() bool { return a.Action == ActAllow || a.Action == ActLog }

// ArchInfo is what the seccomp evaluation and the injection need to know about an
// architecture: the AUDIT_ARCH value the kernel puts in seccomp_data.arch and the syscall
// numbers of the calls crashtui injects.
type ArchInfo struct {
	Name                        string
	AuditArch                   uint32
	Kcmp, VMReadv, VMWritev     int
	Ptrace, Getpid, SeccompCall int
}

var arches = []ArchInfo{
	// arch/x86/entry/syscalls/syscall_64.tbl
	{Name: "amd64", AuditArch: unix.AUDIT_ARCH_X86_64, Kcmp: 312, VMReadv: 310, VMWritev: 311, Ptrace: 101, Getpid: 39, SeccompCall: 317},
	// include/uapi/asm-generic/unistd.h
	{Name: "arm64", AuditArch: unix.AUDIT_ARCH_AARCH64, Kcmp: 272, VMReadv: 270, VMWritev: 271, Ptrace: 117, Getpid: 172, SeccompCall: 277},
	// arch/powerpc/kernel/syscalls/syscall.tbl
	{Name: "ppc64le", AuditArch: unix.AUDIT_ARCH_PPC64LE, Kcmp: 354, VMReadv: 351, VMWritev: 352, Ptrace: 26, Getpid: 20, SeccompCall: 358},
}

// Arch returns the ArchInfo for a GOARCH name ("amd64") or a kernel/audit name ("x86_64").
func Arch(name string) (ArchInfo, error) {
	switch name {
	case "x86_64", "x86-64":
		name = "amd64"
	case "aarch64":
		name = "arm64"
	case "powerpc64le", "ppc64el":
		name = "ppc64le"
	}
	for _, a := range arches {
		if a.Name == name {
			return a, nil
		}
	}
	return ArchInfo{}, fmt.Errorf("arch %q: not supported (amd64, arm64, ppc64le)", name)
}

// sockFilterSize is sizeof(struct sock_filter): u16 code, u8 jt, u8 jf, u32 k.
const sockFilterSize = 8

// seccompDataSize is sizeof(struct seccomp_data): int nr; u32 arch; u64 ip; u64 args[6].
const seccompDataSize = 64

// FilterBytes encodes instructions as the raw struct sock_filter array the kernel uses (host
// byte order), the form PTRACE_SECCOMP_GET_FILTER returns and seccomp(2) accepts.
func FilterBytes(prog []bpf.RawInstruction) []byte {
	b := make([]byte, len(prog)*sockFilterSize)
	for i, ins := range prog {
		o := b[i*sockFilterSize:]
		binary.NativeEndian.PutUint16(o[0:], ins.Op)
		o[2], o[3] = ins.Jt, ins.Jf
		binary.NativeEndian.PutUint32(o[4:], ins.K)
	}
	return b
}

// ParseFilter decodes a raw sock_filter array.
func ParseFilter(b []byte) ([]bpf.RawInstruction, error) {
	if len(b) == 0 || len(b)%sockFilterSize != 0 {
		return nil, fmt.Errorf("parse seccomp filter: %d bytes is not a non-empty multiple of %d", len(b), sockFilterSize)
	}
	prog := make([]bpf.RawInstruction, len(b)/sockFilterSize)
	for i := range prog {
		o := b[i*sockFilterSize:]
		prog[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(o[0:]), Jt: o[2], Jf: o[3], K: binary.NativeEndian.Uint32(o[4:])}
	}
	return prog, nil
}

// DenyFilter builds the filter Docker/runc profiles amount to for the ptrace family without
// CAP_SYS_PTRACE: the listed syscalls return ret (e.g. RetErrno|EPERM via ErrnoRet), every
// other syscall is allowed, and a foreign architecture is killed (so that the numbers mean
// what they say).
func DenyFilter(arch ArchInfo, ret uint32, nrs ...int) ([]bpf.RawInstruction, error) {
	n := len(nrs)
	ins := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.AuditArch, SkipTrue: 1},
		bpf.RetConstant{Val: RetKillProcess},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	for i, nr := range nrs {
		// On a match jump to the deny return after the remaining tests and the allow.
		ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipTrue: uint8(n - i)})
	}
	ins = append(ins, bpf.RetConstant{Val: RetAllow}, bpf.RetConstant{Val: ret})
	return bpf.Assemble(ins)
}

// ErrnoRet is the SECCOMP_RET_ERRNO return value for errno e.
func ErrnoRet(e unix.Errno) uint32 { return RetErrno | uint32(e)&retData }

// KillRet is SECCOMP_RET_KILL_PROCESS.
const KillRet uint32 = RetKillProcess

// Data builds struct seccomp_data for (nr, arch, ip, args) in host byte order. ip is the
// instruction_pointer the kernel puts there: the address after the system call instruction
// (instruction_pointer(regs) at syscall entry: rip after syscall, pc after svc, nip after sc).
func Data(arch ArchInfo, nr int, ip uint64, args [6]uint64) [seccompDataSize]byte {
	var d [seccompDataSize]byte
	binary.NativeEndian.PutUint32(d[0:], uint32(int32(nr)))
	binary.NativeEndian.PutUint32(d[4:], arch.AuditArch)
	binary.NativeEndian.PutUint64(d[8:], ip)
	for i, a := range args {
		binary.NativeEndian.PutUint64(d[16+8*i:], a)
	}
	return d
}

// Eval runs a thread's filters (raw sock_filter arrays, newest first, the order of
// PTRACE_SECCOMP_GET_FILTER indices) on the seccomp_data of syscall nr made at ip with args,
// and combines the results as kernel/seccomp.c seccomp_run_filters does: the lowest action as
// a signed value wins, and on a tie the newest filter's data.
func Eval(filters [][]byte, arch string, nr int, ip uint64, args [6]uint64) (Action, error) {
	ai, err := Arch(arch)
	if err != nil {
		return Action{}, fmt.Errorf("eval seccomp: %w", err)
	}
	if len(filters) == 0 {
		return Action{Action: ActAllow}, nil
	}
	data := Data(ai, nr, ip, args)
	ret := uint32(RetAllow)
	for i, f := range filters {
		if len(f) == 0 || len(f)%sockFilterSize != 0 {
			return Action{}, fmt.Errorf("eval seccomp filter %d: %d bytes is not a non-empty multiple of %d", i, len(f), sockFilterSize)
		}
		r, err := runFilter(f, &data)
		if err != nil {
			return Action{}, fmt.Errorf("eval seccomp filter %d: %w", i, err)
		}
		if int32(r&retActionFull) < int32(ret&retActionFull) {
			ret = r
		}
	}
	return decodeRet(ret), nil
}

// decodeRet names a filter's return value. An action the kernel does not know is treated as
// KILL_PROCESS, as __seccomp_filter's default case does.
func decodeRet(r uint32) Action {
	data := int(r & retData)
	switch r & retActionFull {
	case RetAllow:
		return Action{Action: ActAllow}
	case RetErrno:
		return Action{Action: ActErrno, Errno: min(data, maxErrno)}
	case RetKillThread:
		return Action{Action: ActKillThread}
	case RetTrap:
		return Action{Action: ActTrap, Errno: data}
	case RetTrace:
		return Action{Action: ActTrace, Errno: data}
	case RetLog:
		return Action{Action: ActLog}
	case RetUserNotif:
		return Action{Action: ActUserNotif}
	}
	return Action{Action: ActKillProcess}
}

var errBadFilter = errors.New("invalid classic BPF")

// Classic BPF opcode fields (include/uapi/linux/filter.h, bpf_common.h).
const (
	clsLD, clsLDX, clsST, clsSTX, clsALU, clsJMP, clsRET, clsMISC = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
	sizeW                                                         = 0x00
	modeIMM, modeABS, modeIND, modeMEM, modeLEN                   = 0x00, 0x20, 0x40, 0x60, 0x80
	srcK, srcX                                                    = 0x00, 0x08
	rvalA                                                         = 0x10
	scratchSlots                                                  = 16
)

// runFilter is a classic BPF interpreter restricted to what seccomp_check_filter accepts
// (kernel/seccomp.c): 32-bit absolute loads from seccomp_data, no packet-indirect loads.
// Classic BPF only jumps forward, so the loop is bounded by the program length.
// It reads the raw sock_filter bytes in place so that evaluating a long profile for every
// pair of a large job allocates nothing.
func runFilter(prog []byte, data *[seccompDataSize]byte) (uint32, error) {
	var a, x uint32
	var mem [scratchSlots]uint32
	n := len(prog) / sockFilterSize
	for pc := 0; pc < n; pc++ {
		raw := prog[pc*sockFilterSize : pc*sockFilterSize+sockFilterSize]
		ins := bpf.RawInstruction{Op: binary.NativeEndian.Uint16(raw), Jt: raw[2], Jf: raw[3], K: binary.NativeEndian.Uint32(raw[4:])}
		k := ins.K
		switch ins.Op & 0x07 {
		case clsLD:
			switch ins.Op {
			case clsLD | sizeW | modeABS:
				if k%4 != 0 || k > seccompDataSize-4 {
					return 0, fmt.Errorf("pc %d: load at offset %d: %w", pc, k, errBadFilter)
				}
				a = binary.NativeEndian.Uint32(data[k:])
			case clsLD | sizeW | modeLEN:
				a = seccompDataSize
			case clsLD | modeIMM:
				a = k
			case clsLD | modeMEM:
				if k >= scratchSlots {
					return 0, fmt.Errorf("pc %d: scratch %d: %w", pc, k, errBadFilter)
				}
				a = mem[k]
			default:
				return 0, fmt.Errorf("pc %d: load op %#x: %w", pc, ins.Op, errBadFilter)
			}
		case clsLDX:
			switch ins.Op {
			case clsLDX | sizeW | modeLEN:
				x = seccompDataSize
			case clsLDX | modeIMM:
				x = k
			case clsLDX | modeMEM:
				if k >= scratchSlots {
					return 0, fmt.Errorf("pc %d: scratch %d: %w", pc, k, errBadFilter)
				}
				x = mem[k]
			default:
				return 0, fmt.Errorf("pc %d: ldx op %#x: %w", pc, ins.Op, errBadFilter)
			}
		case clsST, clsSTX:
			if ins.Op != clsST && ins.Op != clsSTX || k >= scratchSlots {
				return 0, fmt.Errorf("pc %d: store op %#x slot %d: %w", pc, ins.Op, k, errBadFilter)
			}
			if ins.Op == clsST {
				mem[k] = a
			} else {
				mem[k] = x
			}
		case clsALU:
			v := k
			if ins.Op&srcX != 0 {
				v = x
			}
			switch ins.Op & 0xf0 {
			case 0x00:
				a += v
			case 0x10:
				a -= v
			case 0x20:
				a *= v
			case 0x30:
				if v == 0 {
					return 0, nil // classic BPF: division by zero returns 0
				}
				a /= v
			case 0x40:
				a |= v
			case 0x50:
				a &= v
			case 0x60:
				a <<= v & 31
				if v >= 32 {
					a = 0
				}
			case 0x70:
				a >>= v & 31
				if v >= 32 {
					a = 0
				}
			case 0x80:
				a = -a
			case 0x90:
				if v == 0 {
					return 0, nil
				}
				a %= v
			case 0xa0:
				a ^= v
			default:
				return 0, fmt.Errorf("pc %d: alu op %#x: %w", pc, ins.Op, errBadFilter)
			}
		case clsJMP:
			v := k
			if ins.Op&srcX != 0 {
				v = x
			}
			var cond bool
			switch ins.Op & 0xf0 {
			case 0x00: // JA: 32-bit offset in k
				if uint64(pc)+1+uint64(k) > uint64(n) {
					return 0, fmt.Errorf("pc %d: jump past end: %w", pc, errBadFilter)
				}
				pc += int(k)
				continue
			case 0x10:
				cond = a == v
			case 0x20:
				cond = a > v
			case 0x30:
				cond = a >= v
			case 0x40:
				cond = a&v != 0
			default:
				return 0, fmt.Errorf("pc %d: jump op %#x: %w", pc, ins.Op, errBadFilter)
			}
			if cond {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case clsRET:
			switch ins.Op & 0x18 {
			case srcK:
				return k, nil
			case rvalA:
				return a, nil
			}
			return 0, fmt.Errorf("pc %d: ret op %#x: %w", pc, ins.Op, errBadFilter)
		case clsMISC:
			switch ins.Op & 0xf8 {
			case 0x00: // TAX
				x = a
			case 0x80: // TXA
				a = x
			default:
				return 0, fmt.Errorf("pc %d: misc op %#x: %w", pc, ins.Op, errBadFilter)
			}
		}
	}
	return 0, fmt.Errorf("filter falls off its end: %w", errBadFilter)
}

// ErrnoName is "EPERM" for 1, or "errno 4000" when unnamed.
func ErrnoName(n int) string {
	if s := unix.ErrnoName(unix.Errno(n)); s != "" {
		return s
	}
	return fmt.Sprintf("errno %d", n)
}
