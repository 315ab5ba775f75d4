package tracer

import (
	"runtime"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
)

// A crash is told at its signal-delivery-stop from the symbol tables alone (crashState.quick):
// a libc's DWARF takes hundreds of milliseconds to load, which the crashing process and every
// crash behind it would wait for. The line tables are loaded on other goroutines, installed on
// the loop, and every crash told meanwhile is told again with its lines (sessions.CrashLines).

// maxAwaiting bounds the crashes kept for amendment while line tables load: in a storm the
// rest keep the symbol-table names (their sites and groups are the same).
const maxAwaiting = 512

// loadLines starts loading the line tables the last crash's description left pending and,
// while any load is under way, keeps cr to be amended.
func (t *Tracer) loadLines(cr sessions.Crash) {
	c := t.crash
	for _, j := range c.resolver.PendingLines() {
		c.loading++
		go func(j *elfinfo.LinesJob) {
			// At the lowest priority, on a thread of its own that ends with it: the job's
			// processes, and the crashes still to come, go first.
			runtime.LockOSThread()
			unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
			j.Load()
			if t.do(func() error { t.installLines(j); return nil }) != nil {
				c.resolver.Install(j) // the tracer has stopped: nothing reads it; close it
			}
		}(j)
	}
	if c.loading > 0 && len(c.awaiting) < maxAwaiting {
		c.awaiting = append(c.awaiting, cr)
	}
}

// installLines puts a loaded line table in place and amends the crashes waiting for it.
func (t *Tracer) installLines(j *elfinfo.LinesJob) {
	c := t.crash
	c.loading--
	changed := c.resolver.Install(j)
	if changed && !t.closing {
		for _, cr := range c.awaiting {
			if a, ok := c.relines(cr); ok {
				t.emit(a)
			}
		}
	}
	if c.loading == 0 {
		c.awaiting = nil
	}
}

// relines looks a told crash's frames up again; it says whether anything about them changed.
func (c *crashState) relines(cr sessions.Crash) (sessions.CrashLines, bool) {
	// The physical frames: the first, and each after the last of an inlined run.
	var frames []elfinfo.Frame
	for i, f := range cr.Stack {
		if i > 0 && cr.Stack[i-1].Inlined {
			continue
		}
		loc, ok := c.quick.Lookup(f.Module, uint64(f.Offset), len(frames) > 0)
		if !ok {
			loc = elfinfo.Location{Module: f.Module, Offset: uint64(f.Offset), Function: f.Function, FuncOff: uint64(f.FuncOff)}
		}
		frames = append(frames, elfinfo.Frame{PC: uint64(f.PC), Location: loc})
	}
	stack := stackFrames(frames)
	a := sessions.CrashLines{PID: cr.PID, TID: cr.TID, Key: cr.Key, Function: cr.Function, File: cr.File, Line: cr.Line, Stack: stack}
	for _, f := range frames {
		if f.Module == cr.Module && f.Offset == uint64(cr.Offset) {
			a.Function, a.File, a.Line = f.Function, f.File, f.Line
			break
		}
	}
	return a, !slices.Equal(stack, cr.Stack) || a.Function != cr.Function || a.File != cr.File || a.Line != cr.Line
}
