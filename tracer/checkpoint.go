package tracer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
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
	Version int           `json:"version"`
	Time    time.Time     `json:"time"`
	Arch    string        `json:"arch"`
	Kernel  string        `json:"kernel"`
	Policy  string        `json:"policy"`
	Threads []ImageThread `json:"threads"`
}

// ImageThread is one thread of a CheckpointImage.
type ImageThread struct {
	PID int `json:"pid"`
	TID int `json:"tid"`
	// Stop is the ptrace-stop the thread was frozen in: "interrupt" (PTRACE_EVENT_STOP of
	// PTRACE_INTERRUPT or another event stop), "signal" (signal-delivery-stop, Signal held),
	// "group" (group-stop), "exit" (PTRACE_EVENT_EXIT).
	Stop    string `json:"stop"`
	Signal  string `json:"signal,omitempty"`
	Handler string `json:"handler"` // what the held signal does: arch.Handler, or "handler, SA_RESTART unknown" when rt_sigaction could not be run inside the process
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
// Handler column of kernel.md B.3, as the facts the thread event carries (views word them).
type Pending struct {
	Stop   sessions.StopKind
	Signal int // the held signal at a signal-delivery-stop, else 0
	// Disposition is what Signal does (signal-delivery-stop only).
	Disposition sessions.Disposition
	// Handler is what the held signal does. When HandlerKnown is false the signal is caught
	// but whether its handler has SA_RESTART could not be read (see readSigaction).
	Handler      arch.Handler
	HandlerKnown bool
	// Sigaction is what rt_sigaction inside the process returned for a caught Signal, or why
	// it did not run.
	Sigaction *sessions.Sigaction
}

// interruptPending is the Pending of a PTRACE_INTERRUPT stop: resumed with signal 0, so the
// kernel decides as with no handler (kernel.md B.3 "No handler").
var interruptPending = Pending{Stop: sessions.StopInterrupt, Handler: arch.NoHandler, HandlerKnown: true}

// handlerKind is p's Handler on the wire.
func (p Pending) handlerKind() sessions.HandlerKind {
	if !p.HandlerKnown {
		return sessions.HandlerUnknown
	}
	switch p.Handler {
	case arch.HandlerRestart:
		return sessions.HandlerRestart
	case arch.HandlerNoRestart:
		return sessions.HandlerNoRestart
	}
	return sessions.HandlerNone
}

// threadCapture is one thread of a checkpoint in progress.
type threadCapture struct {
	pid, tid int
	pending  Pending
	before   arch.Regs
	insn     []byte
	state    arch.RestartState
	ev       sessions.Thread
}

// Checkpoint simulates a checkpoint and restore of the whole job in place. It freezes every
// thread (PTRACE_INTERRUPT; threads already held by the tracer count as frozen), captures
// registers and restart state, emits one thread event per thread and returns them, writes a
// CheckpointImage (JSON) to image when it is not nil, then writes back what a restorer
// following policy writes (arch.ApplyPolicy; nothing for PolicyNone), records the registers
// read back after the write, and resumes every thread it froze. Threads it did not freeze (held
// for another reason) stay held. Wait statuses that arrive meanwhile are handled as usual.
//
// It returns the threads it could capture and an error naming what failed (threads that did
// not stop, registers that could not be read or written); it never leaves a thread stopped that
// it stopped.
func (t *Tracer) Checkpoint(policy arch.Policy, image io.Writer) ([]sessions.Thread, error) {
	switch policy {
	case arch.PolicyNone, arch.PolicyNaive, arch.PolicyCorrect, arch.PolicySCOnly:
	default:
		return nil, fmt.Errorf("checkpoint: unknown restore policy %q (want correct, naive, sc-only or none)", policy)
	}
	var out []sessions.Thread
	err := t.do(func() error {
		var err error
		out, err = t.checkpoint(policy, image)
		return err
	})
	return t.observeOutcomes(out), err
}

func (t *Tracer) checkpoint(policy arch.Policy, image io.Writer) ([]sessions.Thread, error) {
	if t.closing {
		return nil, errors.New("checkpoint: the tracer is detaching")
	}
	if len(t.tasks) == 0 {
		return nil, fmt.Errorf("checkpoint: %w (nothing attached)", ErrNoJob)
	}
	ours, freezeErr := t.freezeAll(freezeTimeout)
	defer t.thaw(ours)
	var errs []error
	if freezeErr != nil {
		errs = append(errs, freezeErr)
		t.emitErr(0, "checkpoint freeze", freezeErr)
	}

	held := make([]*task, 0, len(t.tasks))
	for _, tk := range t.tasks {
		if tk.stopped != running {
			held = append(held, tk)
		}
	}
	sort.Slice(held, func(i, j int) bool {
		if held[i].pid != held[j].pid {
			return held[i].pid < held[j].pid
		}
		return held[i].tid < held[j].tid
	})

	// Every held stop's Pending first: reading a handler's flags runs rt_sigaction inside
	// the process, and that must be over (registers put back) before anything is captured.
	pending := make([]Pending, len(held))
	flags := map[[2]int]sigactionResult{}
	for i, tk := range held {
		pending[i] = t.pendingOf(tk, flags)
	}

	caps := make([]*threadCapture, 0, len(held))
	for i, tk := range held {
		c, err := captureThread(tk.pid, tk.tid, pending[i])
		if err != nil {
			errs = append(errs, err)
			t.emitErr(tk.pid, "checkpoint capture", err)
			continue
		}
		caps = append(caps, c)
	}

	if image != nil {
		if err := writeImage(image, policy, caps); err != nil {
			errs = append(errs, err)
			t.emitErr(0, "checkpoint image", err)
		}
	}

	t.checkpointSeq++
	out := make([]sessions.Thread, 0, len(caps))
	for _, c := range caps {
		c.ev.Checkpoint, c.ev.Policy = t.checkpointSeq, string(policy)
		if err := c.apply(policy); err != nil {
			errs = append(errs, err)
			t.emitErr(c.pid, "checkpoint restore", err)
		}
		t.emit(c.ev)
		out = append(out, c.ev)
	}
	return out, errors.Join(errs...)
}

// freezeAll brings every thread of the job into a held ptrace-stop. It returns the tasks it
// made held (to resume in thaw); tasks another operation holds are left to it. Threads born
// during the freeze are frozen too (a few rounds).
func (t *Tracer) freezeAll(timeout time.Duration) (map[int]*task, error) {
	ours := map[int]*task{}
	for round := 0; round < 10; round++ {
		var fresh []*task
		for tid, tk := range t.tasks {
			if ours[tid] != nil || tk.want || (tk.exited && tk.stopped == running) {
				continue // an exited thread (past PTRACE_EVENT_EXIT) never stops again
			}
			ours[tid] = tk
			fresh = append(fresh, tk)
		}
		if len(fresh) == 0 {
			break
		}
		// PTRACE_INTERRUPT makes a thread blocked in a syscall leave it with its restart
		// code in the return register and report PTRACE_EVENT_STOP (kernel.md B.2); a
		// group-stopped (listening) thread re-reports its group-stop.
		if _, err := t.holdTasks(fresh, timeout, 0, "checkpoint"); err != nil {
			return ours, err
		}
	}
	return ours, nil
}

// thaw resumes the tasks freezeAll held, and stops wanting the ones that never stopped (their
// late PTRACE_EVENT_STOP is then resumed by handle).
func (t *Tracer) thaw(ours map[int]*task) {
	for tid, tk := range ours {
		if t.tasks[tid] != tk {
			continue // gone meanwhile
		}
		if tk.stopped == running {
			tk.want = false
			continue
		}
		t.resumeReported(tk, "checkpoint resume")
	}
}

// pendingOf says what resuming tk will do with its held stop. For a caught signal it reads
// the handler's SA_RESTART inside the process (once per process and signal: cache).
func (t *Tracer) pendingOf(tk *task, cache map[[2]int]sigactionResult) Pending {
	switch tk.stopped {
	case stopGroup:
		// The stop signal's action is stop: after SIGCONT the kernel decides as with no handler.
		return Pending{Stop: sessions.StopGroup, Handler: arch.NoHandler, HandlerKnown: true}
	case stopExit:
		// PTRACE_EVENT_EXIT: the thread never returns to user space.
		return Pending{Stop: sessions.StopExit, Handler: arch.NoHandler, HandlerKnown: true}
	case stopSignal:
		p := signalPending(tk.pid, tk.tid, tk.sig)
		if !p.HandlerKnown {
			key := [2]int{tk.pid, tk.sig}
			r, ok := cache[key]
			if !ok {
				r = t.readSigaction(tk, tk.sig)
				cache[key] = r
			}
			p = r.pending(p)
		}
		return p
	}
	return interruptPending
}

// signalPending is the Pending of a signal-delivery-stop holding sig, which the tracer
// re-injects on resume, from /proc alone.
//
// Whether a caught signal's handler has SA_RESTART is not in /proc (status has only SigCgt,
// SigIgn, SigBlk): the flags live in the kernel's k_sigaction and only rt_sigaction(sig, NULL,
// &old) called by the process itself returns them (CRIU runs it in its parasite). So for a
// caught signal the Pending says "unknown" here; pendingOf then runs that rt_sigaction inside
// the process (readSigaction) and, when it succeeds, makes the handler known.
//
// An ignored signal, and one whose default action is stop (once the thread continues) or
// ignore, leave the decision as with no handler; one whose default action kills means the
// syscall never returns.
func signalPending(pid, tid, sig int) Pending {
	p := Pending{Stop: sessions.StopSignal, Signal: sig, Handler: arch.NoHandler, HandlerKnown: true}
	si, err := getSiginfo(tid)
	if err != nil {
		si = siginfo{Signo: int32(sig)} // treat as user-sent: no forced default
	}
	switch signalDisposition(pid, tid, sig, si) {
	case dispIgnored:
		p.Disposition = sessions.DispIgnored
	case dispCaught:
		p.Disposition = sessions.DispCaught
		p.Handler, p.HandlerKnown = arch.HandlerRestart, false
	default:
		switch unix.Signal(sig) {
		case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
			p.Disposition = sessions.DispDefaultStop
		case unix.SIGCHLD, unix.SIGCONT, unix.SIGURG, unix.SIGWINCH:
			p.Disposition = sessions.DispDefaultIgnore
		default:
			p.Disposition = sessions.DispDefaultKill
		}
	}
	return p
}

// CheckpointStopped simulates the checkpoint and restore of one thread that the calling OS
// thread holds in a PTRACE_INTERRUPT stop (PTRACE_EVENT_STOP, no signal held): it captures the
// registers and restart state, writes back what a restorer following policy writes, and returns
// the thread event with the registers before and after. It does not resume the thread. It is
// the per-thread core of Tracer.Checkpoint, for callers that do their own ptrace (the ppc64le
// guest tests).
func CheckpointStopped(pid, tid int, policy arch.Policy) (sessions.Thread, error) {
	c, err := captureThread(pid, tid, interruptPending)
	if err != nil {
		return sessions.Thread{}, err
	}
	err = c.apply(policy)
	return c.ev, err
}

// captureThread reads tid's registers and the instruction before its pc and decodes the
// restart state. tid must be in a ptrace-stop of the calling thread.
func captureThread(pid, tid int, p Pending) (*threadCapture, error) {
	regs, err := getRegs(tid)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", tid, err)
	}
	c := &threadCapture{pid: pid, tid: tid, pending: p, before: regs}
	c.insn = restartInsn(tid, regs)
	c.state = arch.Decode(regs, c.insn)
	st := c.state
	ev := sessions.Thread{PID: pid, TID: tid, Arch: string(regs.Arch), PC: sessions.Hex(regs.PC()),
		InSyscall: st.InSyscall, Syscall: st.Syscall, Nr: st.Nr, Insn: st.Insn, Ret: st.Ret,
		Code: st.Code, Restore: string(st.Restore()), Before: regVals(regs),
		InsnBytes: hex.EncodeToString(c.insn), Stop: p.Stop, Disposition: p.Disposition,
		Handler: p.handlerKind(), Sigaction: p.Sigaction}
	if p.Signal != 0 {
		ev.Signal = signalName(p.Signal)
	}
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
	ev.OnResume = string(decideResume(st, p))
	c.ev = ev
	return c, nil
}

// decideResume returns what the kernel does with the interrupted syscall on resume, given the
// held stop: for a caught signal whose SA_RESTART is unknown, the action both cases agree on,
// else arch.ActUnknown.
func decideResume(st arch.RestartState, p Pending) arch.Action {
	if p.HandlerKnown {
		return st.OnResume(p.Handler)
	}
	if a, b := st.OnResume(arch.HandlerRestart), st.OnResume(arch.HandlerNoRestart); a == b {
		return a
	}
	return arch.ActUnknown
}

// apply writes arch.ApplyPolicy's registers (nothing for PolicyNone), reads them back into the
// event's After and checks that the kernel kept them.
func (c *threadCapture) apply(policy arch.Policy) error {
	want := arch.ApplyPolicy(c.before, c.state, policy)
	if policy != arch.PolicyNone {
		if err := setRegs(c.tid, want); err != nil {
			return fmt.Errorf("checkpoint %d: restore %s: %w", c.tid, policy, err)
		}
	}
	after, err := getRegs(c.tid)
	if err != nil {
		return fmt.Errorf("checkpoint %d: read back: %w", c.tid, err)
	}
	c.ev.After = regVals(after)
	c.ev.Applied = string(policy)
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

func imageHandlerLabel(p Pending) string {
	if !p.HandlerKnown {
		return "handler, SA_RESTART unknown"
	}
	return p.Handler.String()
}

// writeImage writes the checkpoint image: what was captured, before anything is written back.
func writeImage(w io.Writer, policy arch.Policy, caps []*threadCapture) error {
	img := CheckpointImage{Version: 1, Time: time.Now().UTC(), Arch: string(arch.Host()),
		Kernel: KernelRelease(), Policy: string(policy), Threads: []ImageThread{}}
	for _, c := range caps {
		it := ImageThread{PID: c.pid, TID: c.tid, Stop: string(c.pending.Stop), Handler: imageHandlerLabel(c.pending),
			InSyscall: c.ev.InSyscall, Syscall: c.ev.Syscall, Nr: c.ev.Nr, Args: c.ev.Args,
			Insn: c.ev.Insn, Trap: c.ev.Trap, Ret: c.ev.Ret, Code: c.ev.Code,
			AlreadyRestarted: c.state.AlreadyRestarted, OnResume: c.ev.OnResume, Restore: c.ev.Restore,
			Regs: c.ev.Before, RestoreRegs: regVals(arch.ApplyPolicy(c.before, c.state, policy))}
		if c.pending.Signal != 0 {
			it.Signal = signalName(c.pending.Signal)
		}
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

// KernelRelease is this machine's kernel release (uname -r), "" when uname fails: the one
// reader of it for checkpoint images, session headers and session events.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
