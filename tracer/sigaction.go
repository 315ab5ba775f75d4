package tracer

import (
	"encoding/binary"
	"fmt"

	"github.com/crashtui/crashtui/arch"
)

// saRestart is SA_RESTART on amd64, arm64 and ppc64le alike.
const saRestart = 0x10000000

// sigactionResult is what rt_sigaction(sig, NULL, &old) returned inside a process.
type sigactionResult struct {
	handler, flags uint64
	tid            int // the thread it ran in
	err            error
}

// readSigaction runs rt_sigaction(sig, NULL, &old, 8) inside held's process, which is frozen,
// and returns the handler and flags. Signal dispositions are per process, so it prefers a
// sibling held at an interrupt stop over held itself, whose restart is being decided; it uses
// held (at its signal-delivery-stop, whose signal and siginfo the injection keeps) only when
// no sibling is usable. The 32-byte kernel sigaction (handler, flags, restorer, mask: the
// same layout on the three architectures) lives below the red zone and is put back.
func (t *Tracer) readSigaction(held *task, sig int) sigactionResult {
	p := t.procs[held.pid]
	if p == nil {
		return sigactionResult{err: fmt.Errorf("process %d is gone", held.pid)}
	}
	var tk *task
	for _, c := range p.tasks {
		if canInject(c) && (tk == nil || c.tid < tk.tid) {
			tk = c
		}
	}
	if tk == nil {
		return sigactionResult{err: fmt.Errorf("every thread of %d is held at a signal; code is run only in a thread held at an interrupt stop, which a crashtui that died could leave exactly as it was", held.pid)}
	}
	r := sigactionResult{tid: tk.tid}
	b, err := t.injectWithScratch(tk, "rt_sigaction", 32, nil, func(addr uint64) []uint64 {
		return []uint64{uint64(sig), 0, addr, 8}
	})
	if err != nil {
		r.err = err
		return r
	}
	r.handler = binary.LittleEndian.Uint64(b[0:])
	r.flags = binary.LittleEndian.Uint64(b[8:])
	return r
}

// pending completes p (a caught signal, handler unknown) with what rt_sigaction returned.
func (r sigactionResult) pending(p Pending) Pending {
	name := signalName(p.Signal)
	if r.err != nil {
		p.Why += fmt.Sprintf(" (Running rt_sigaction inside the process to read it failed: %v.)", r.err)
		return p
	}
	switch r.handler {
	case 0, 1: // SIG_DFL, SIG_IGN: the handler went away since /proc was read
		p.Why += fmt.Sprintf(" (rt_sigaction inside the process, thread %d, now returns SIG_%s: the handler was just removed.)", r.tid, map[uint64]string{0: "DFL", 1: "IGN"}[r.handler])
		return p
	}
	p.HandlerKnown = true
	if r.flags&saRestart != 0 {
		p.Handler = arch.HandlerRestart
		p.Why = fmt.Sprintf("%s is caught by a handler with SA_RESTART (flags %#x, read with rt_sigaction inside the process, thread %d).", name, r.flags, r.tid)
	} else {
		p.Handler = arch.HandlerNoRestart
		p.Why = fmt.Sprintf("%s is caught by a handler without SA_RESTART (flags %#x, read with rt_sigaction inside the process, thread %d).", name, r.flags, r.tid)
	}
	return p
}
