package checkpoint

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// The simulated checkpoint (issue 5, seed 002, kernel.md §B): freeze every thread of the job,
// capture its registers and restart state, optionally write a checkpoint image, then write back
// in place what a restorer following the chosen policy would write, and let the job run, so the
// consequence of the policy is visible in the real program.

// freezeTimeout bounds how long Checkpoint waits for the threads of a job to stop. A thread in
// uninterruptible sleep (D) stops only when it leaves it.
const freezeTimeout = 3 * time.Second

// CheckpointImage is the JSON checkpoint image Checkpoint writes: what a checkpointer would
// dump for every thread, and what a restorer with Policy would write back.
type CheckpointImage struct {
	Version int             `json:"version"`
	Time    time.Time       `json:"time"`
	Arch    string          `json:"arch"`
	Kernel  string          `json:"kernel"`
	Policy  sessions.Policy `json:"policy"`
	Threads []ImageThread   `json:"threads"`
}

// ImageThread is one thread of a CheckpointImage.
type ImageThread struct {
	PID int `json:"pid"`
	TID int `json:"tid"`
	// Stop is the ptrace-stop the thread was frozen in: "interrupt" (PTRACE_EVENT_STOP of
	// PTRACE_INTERRUPT or another event stop), "group" (group-stop), "exit"
	// (PTRACE_EVENT_EXIT); never a signal-delivery-stop (Pending).
	Stop    string `json:"stop"`
	Handler string `json:"handler"` // how the kernel's restart logic sees the stop: arch.Handler (always "no handler")
	// InsnBytes are the bytes arch.Decode read (amd64 rip-2, ppc64le nip-4, arm64 pc), hex.
	InsnBytes        string            `json:"insn_bytes,omitempty"`
	InSyscall        bool              `json:"in_syscall"`
	Syscall          string            `json:"syscall,omitempty"`
	Nr               int               `json:"nr"`
	Args             []sessions.Hex    `json:"args,omitempty"`
	Insn             string            `json:"insn,omitempty"`
	Trap             *sessions.Hex     `json:"trap,omitempty"`
	Ret              int64             `json:"ret"`
	Code             string            `json:"code,omitempty"`
	AlreadyRestarted bool              `json:"already_restarted,omitempty"`
	OnResume         string            `json:"on_resume"`
	Restore          string            `json:"restore"`
	Regs             []sessions.RegVal `json:"regs"`
	// RestoreRegs are the registers a restorer following the image's policy writes back
	// (arch.ApplyPolicy): the decision, concretely.
	RestoreRegs []sessions.RegVal `json:"restore_regs"`
}

// Pending describes what will happen to a frozen thread's held stop when it is resumed: the
// Handler column of kernel.md B.3. No thread is ever frozen at a signal-delivery-stop (the
// engine delivers a signal that arrives first, then holds the thread at its interrupt, as
// CRIU's compel does), so every frozen thread resumes with signal 0 and the kernel decides as
// with no handler (kernel.md B.3 "No handler"): only the stop differs.
type Pending struct {
	Stop sessions.StopKind
}

// interruptPending is the Pending of a PTRACE_INTERRUPT stop.
var interruptPending = Pending{Stop: sessions.StopInterrupt}

// threadCapture is one thread of a checkpoint in progress.
type threadCapture struct {
	pid, tid int
	pending  Pending
	before   arch.Regs
	insn     []byte
	state    arch.RestartState
	ev       sessions.Thread
	th       regsIO
}

// Checkpoints is the simulated checkpoint feature of one engine.
type Checkpoints struct {
	e   *tracer.Tracer
	seq int // the last checkpoint's number (the loop thread's)
}

// New makes the checkpoint feature for e.
func New(e *tracer.Tracer) *Checkpoints { return &Checkpoints{e: e} }

// Run simulates a checkpoint and restore of the whole job in place. It freezes every thread
// (Loop.HoldJob: a signal that arrives first is delivered first, as CRIU's compel does; a
// thread blocked in a call that an interrupt would make fail with EINTR is not frozen, and its
// event says so), captures registers and restart state, emits one thread event per thread and
// returns them, writes a CheckpointImage (JSON) to image when it is not nil, then writes back
// what a restorer following policy writes (arch.ApplyPolicy; nothing for PolicyNone), records
// the registers read back after the write, and lets every thread go. Wait statuses that
// arrive meanwhile are handled as usual.
//
// It returns the threads it captured and an error naming what failed (threads that did not
// stop, registers that could not be read or written); it never leaves a thread stopped.
func (c *Checkpoints) Run(policy sessions.Policy, image io.Writer) ([]sessions.Thread, error) {
	return c.RunOf(nil, policy, image)
}

// RunOf is Run for the processes pids of the job only (nil: all of them): the others are
// neither frozen nor written back. A second crashtui asks for that when its JOB is part of
// the job this one holds (cmd/crashtui's control socket).
func (c *Checkpoints) RunOf(pids []int, policy sessions.Policy, image io.Writer) ([]sessions.Thread, error) {
	if !policy.Valid() {
		return nil, fmt.Errorf("checkpoint: unknown restore policy %q (want %s)", policy, sessions.PolicyList())
	}
	var out []sessions.Thread
	err := c.e.Do(func(l *tracer.Loop) error {
		var err error
		out, err = c.run(l, pids, policy, image)
		return err
	})
	return c.observeOutcomes(out), err
}

func (c *Checkpoints) run(l *tracer.Loop, pids []int, policy sessions.Policy, image io.Writer) ([]sessions.Thread, error) {
	if l.Closing() {
		return nil, errors.New("checkpoint: the tracer is detaching")
	}
	if l.Tasks() == 0 {
		return nil, fmt.Errorf("checkpoint: %w (nothing attached)", tracer.ErrNoJob)
	}
	var out []sessions.Thread
	err := l.HoldJob(tracer.HoldOptions{Timeout: freezeTimeout, PIDs: pids}, func(h *tracer.Held) error {
		var errs []error
		caps := make([]*threadCapture, 0, len(h.Threads))
		for _, th := range h.Threads {
			cp, err := captureThread(th.PID(), th.TID(), th, pendingOf(th))
			if err != nil {
				errs = append(errs, err)
				l.EmitErr(th.PID(), "checkpoint capture", err)
				continue
			}
			caps = append(caps, cp)
		}
		var unfrozen []sessions.Thread
		for _, late := range h.Late {
			th, ok := unfrozenThread(l, late)
			if !ok {
				continue
			}
			unfrozen = append(unfrozen, th)
			if late.Why != tracer.LateEINTR {
				err := fmt.Errorf("checkpoint: thread %s", late)
				errs = append(errs, err)
				l.EmitErr(th.PID, "checkpoint freeze", err)
			}
		}
		if image != nil {
			if err := writeImage(image, policy, caps); err != nil {
				errs = append(errs, err)
				l.EmitErr(0, "checkpoint image", err)
			}
		}
		c.seq++
		for _, cp := range caps {
			cp.ev.Checkpoint, cp.ev.Policy = c.seq, policy
			if err := cp.apply(policy); err != nil {
				errs = append(errs, err)
				l.EmitErr(cp.pid, "checkpoint restore", err)
			}
			l.Emit(cp.ev)
			out = append(out, cp.ev)
		}
		for _, th := range unfrozen {
			th.Checkpoint, th.Policy = c.seq, policy
			l.Emit(th)
			out = append(out, th)
		}
		return errors.Join(errs...)
	})
	return out, err
}

// unfrozenThread is the event of a thread the freeze left running: where /proc says it is.
func unfrozenThread(l *tracer.Loop, late tracer.Late) (sessions.Thread, bool) {
	th, ok := l.Thread(late.TID)
	if !ok {
		return sessions.Thread{}, false
	}
	ev := sessions.Thread{PID: th.PID(), TID: th.TID(), Arch: string(arch.Host()), Stop: sessions.StopNone,
		OnResume: string(arch.ActUnknown), Restore: string(arch.ActUnknown)}
	switch late.Why {
	case tracer.LateEINTR:
		ev.Unfrozen = sessions.UnfrozenEINTR
	case tracer.LateVfork:
		ev.Unfrozen = sessions.UnfrozenVfork
	case tracer.LateExited:
		return sessions.Thread{}, false
	default:
		ev.Unfrozen = sessions.UnfrozenTimeout
	}
	if sys := procfs.ReadTaskSyscall(th.PID(), th.TID()); sys.InSyscall() {
		ev.InSyscall, ev.Nr = true, sys.Nr
		ev.Syscall = arch.SyscallName(arch.Host(), sys.Nr)
		ev.PC = sessions.Hex(sys.PC)
	}
	return ev, true
}

// pendingOf says what resuming a held thread will do with its stop (Pending).
func pendingOf(th tracer.Thread) Pending {
	switch th.Stop() {
	case tracer.StopGroup:
		// The stop signal's action is stop: after SIGCONT the kernel decides as with no handler.
		return Pending{Stop: sessions.StopGroup}
	case tracer.StopExit:
		// PTRACE_EVENT_EXIT: the thread never returns to user space.
		return Pending{Stop: sessions.StopExit}
	}
	return interruptPending
}

// CheckpointStopped simulates the checkpoint and restore of one thread that the calling OS
// thread holds in a PTRACE_INTERRUPT stop (PTRACE_EVENT_STOP, no signal held): it captures the
// registers and restart state, writes back what a restorer following policy writes, and returns
// the thread event with the registers before and after. It does not resume the thread. It is
// the per-thread core of Checkpoints.Run, for callers that do their own ptrace (the ppc64le
// guest tests).
func CheckpointStopped(pid, tid int, policy sessions.Policy) (sessions.Thread, error) {
	c, err := captureThread(pid, tid, tracer.RawThread{PID: pid, TID: tid}, interruptPending)
	if err != nil {
		return sessions.Thread{}, err
	}
	err = c.apply(policy)
	return c.ev, err
}

// regsIO is a stopped thread's registers: a held tracer.Thread, or a tracer.RawThread.
type regsIO interface {
	Regs() (arch.Regs, error)
	SetRegs(arch.Regs) error
	RestartInsn(arch.Regs) []byte
}

// captureThread reads tid's registers and the instruction before its pc and decodes the
// restart state.
func captureThread(pid, tid int, th regsIO, p Pending) (*threadCapture, error) {
	regs, err := th.Regs()
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", tid, err)
	}
	c := &threadCapture{pid: pid, tid: tid, th: th, pending: p, before: regs}
	c.insn = th.RestartInsn(regs)
	c.state = arch.Decode(regs, c.insn)
	st := c.state
	ev := sessions.Thread{PID: pid, TID: tid, Arch: string(regs.Arch), PC: sessions.Hex(regs.PC()),
		InSyscall: st.InSyscall, Syscall: st.Syscall, Nr: st.Nr, Insn: st.Insn, Ret: st.Ret,
		Code: st.Code, Restore: string(st.Restore()), Before: regVals(regs),
		InsnBytes: hex.EncodeToString(c.insn), Stop: p.Stop, Handler: sessions.HandlerNone}
	if st.InSyscall {
		ev.Args = make([]sessions.Hex, len(st.Args))
		for i, a := range st.Args {
			ev.Args[i] = sessions.Hex(a)
		}
	}
	if regs.Arch == arch.PPC64LE {
		tr := sessions.Hex(st.Trap)
		ev.Trap = &tr
	}
	ev.OnResume = string(st.OnResume(arch.NoHandler))
	c.ev = ev
	return c, nil
}

// apply writes arch.ApplyPolicy's registers (nothing for PolicyNone), reads them back into the
// event's After and checks that the kernel kept them.
func (c *threadCapture) apply(policy sessions.Policy) error {
	want := arch.ApplyPolicy(c.before, c.state, policy)
	if policy != sessions.PolicyNone {
		if err := c.th.SetRegs(want); err != nil {
			return fmt.Errorf("checkpoint %d: restore %s: %w", c.tid, policy, err)
		}
	}
	after, err := c.th.Regs()
	if err != nil {
		return fmt.Errorf("checkpoint %d: read back: %w", c.tid, err)
	}
	c.ev.After = regVals(after)
	c.ev.Applied = policy
	if diff := regsDiff(want, after); diff != "" {
		return fmt.Errorf("checkpoint %d: restore %s: registers read back differ from those written: %s", c.tid, policy, diff)
	}
	return nil
}

// regsDiff names the words of got that differ from want, within the bits PTRACE_SETREGS
// stores (arch.WritableMask: on ppc64le the kernel keeps its own trap flag bits, and never takes
// softe, dar, dsisr or result; amd64 eflags only FLAG_MASK).
func regsDiff(want, got arch.Regs) string {
	var d []string
	for i := 0; i < len(want.Words) && i < len(got.Words); i++ {
		m := arch.WritableMask(want.Arch, i)
		w, g := want.Words[i]&m, got.Words[i]&m
		name := arch.RegName(want.Arch, i)
		if w != g {
			d = append(d, fmt.Sprintf("%s=%#x (wrote %#x)", name, got.Words[i], want.Words[i]))
		}
	}
	if len(want.Words) != len(got.Words) {
		d = append(d, fmt.Sprintf("%d words (wrote %d)", len(got.Words), len(want.Words)))
	}
	return strings.Join(d, ", ")
}

func regVals(r arch.Regs) []sessions.RegVal {
	named := r.Named()
	out := make([]sessions.RegVal, len(named))
	for i, n := range named {
		out[i] = sessions.RegVal{Name: n.Name, Value: sessions.Hex(n.Value)}
	}
	return out
}

// writeImage writes the checkpoint image: what was captured, before anything is written back.
func writeImage(w io.Writer, policy sessions.Policy, caps []*threadCapture) error {
	img := CheckpointImage{Version: 1, Time: time.Now().UTC(), Arch: string(arch.Host()),
		Kernel: tracer.KernelRelease(), Policy: policy, Threads: []ImageThread{}}
	for _, c := range caps {
		it := ImageThread{PID: c.pid, TID: c.tid, Stop: string(c.pending.Stop), Handler: arch.NoHandler.String(),
			InSyscall: c.ev.InSyscall, Syscall: c.ev.Syscall, Nr: c.ev.Nr, Args: c.ev.Args,
			Insn: c.ev.Insn, Trap: c.ev.Trap, Ret: c.ev.Ret, Code: c.ev.Code,
			AlreadyRestarted: c.state.AlreadyRestarted, OnResume: c.ev.OnResume, Restore: c.ev.Restore,
			Regs: c.ev.Before, RestoreRegs: regVals(arch.ApplyPolicy(c.before, c.state, policy))}
		it.InsnBytes = c.ev.InsnBytes
		img.Threads = append(img.Threads, it)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(img); err != nil {
		return fmt.Errorf("write checkpoint image: %w", err)
	}
	return nil
}
