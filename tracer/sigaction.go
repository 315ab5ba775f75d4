package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

// saRestart is SA_RESTART on amd64, arm64 and ppc64le alike.
const saRestart = sessions.SARestart

// errAllHeld: rt_sigaction is not run in a process whose every thread is held at a signal.
var errAllHeld = errors.New("every thread is held at a signal")

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
//
// When every thread of the process is held at a signal it runs nothing (errAllHeld): code is
// run only in a thread held at an interrupt stop, which a crashtui that died could leave
// exactly as it was (doc.go).
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
		return sigactionResult{err: errAllHeld}
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

// pending completes p (a caught signal, handler unknown) with what rt_sigaction returned. A
// handler of SIG_DFL or SIG_IGN means it went away since /proc was read: still unknown.
func (r sigactionResult) pending(p Pending) Pending {
	switch {
	case errors.Is(r.err, errAllHeld):
		p.Sigaction = &sessions.Sigaction{AllHeld: true}
		return p
	case r.err != nil:
		p.Sigaction = &sessions.Sigaction{TID: r.tid, Error: r.err.Error()}
		return p
	}
	h, f := sessions.Hex(r.handler), sessions.Hex(r.flags)
	p.Sigaction = &sessions.Sigaction{TID: r.tid, Handler: &h, Flags: &f}
	if r.handler == 0 || r.handler == 1 { // SIG_DFL, SIG_IGN
		return p
	}
	p.HandlerKnown = true
	if r.flags&saRestart != 0 {
		p.Handler = arch.HandlerRestart
	} else {
		p.Handler = arch.HandlerNoRestart
	}
	return p
}
