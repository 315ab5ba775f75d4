package crash

import (
	"runtime"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
)

// A crash is told at its signal-delivery-stop from the symbol tables alone (crashState.quick):
// a libc's DWARF takes hundreds of milliseconds to load, which the crashing process and every
// crash behind it would wait for. The line tables are loaded on other goroutines, installed on
// the loop, and every crash told meanwhile is told again with its lines (sessions.CrashLines).

// maxAwaiting bounds the crashes kept for amendment while line tables load: in a storm the
// rest keep the symbol-table names (their sites and groups are the same).
const maxAwaiting = 512

// awaitingCrash is a crash told before its lines: as last told, and what it was unwound from.
type awaitingCrash struct {
	cr sessions.Crash
	u  *unwound
}

// loadLines starts loading the line tables the last crash's description left pending and
// keeps cr (unwound from u) to be amended when they come.
func (c *Crashes) loadLines(l *tracer.Loop, cr sessions.Crash, u *unwound) {
	t := l.Tracer()
	for _, j := range c.resolver.PendingLines() {
		c.loading++
		go func(j *elfinfo.LinesJob) {
			// At the lowest priority, on a thread of its own that ends with it: the job's
			// processes, and the crashes still to come, go first.
			runtime.LockOSThread()
			unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
			j.Load()
			if t.Do(func(l *tracer.Loop) error { c.installLines(l, j); return nil }) != nil {
				j.Close() // the tracer has stopped: nothing will read it
			}
		}(j)
	}
	switch {
	case u == nil:
	case c.loading > 0:
		if len(c.awaiting) < maxAwaiting {
			c.awaiting = append(c.awaiting, &awaitingCrash{cr: cr, u: u})
		}
	default:
		// Its lines came meanwhile (a handled fault described earlier, the lines loaded for a
		// stack sample since): tell them now.
		if cl, ok := c.relines(&awaitingCrash{cr: cr, u: u}); ok {
			l.Emit(cl)
		}
	}
}

// installLines puts a loaded line table in place and amends the crashes waiting for it.
func (c *Crashes) installLines(l *tracer.Loop, j *elfinfo.LinesJob) {
	c.loading--
	if c.resolver.Install(j) && !l.Closing() {
		for _, a := range c.awaiting {
			if cl, ok := c.relines(a); ok {
				l.Emit(cl)
			}
		}
	}
	if c.loading == 0 {
		c.awaiting = nil
	}
}

// relines looks a told crash's frames up again and says whether anything about them changed
// since it was last told; what it tells becomes the crash as last told.
func (c *Crashes) relines(a *awaitingCrash) (sessions.CrashLines, bool) {
	frames := c.quick.Relocate(a.cr.PID, a.u.maps, a.u.frames)
	site := frames[a.u.site]
	l := sessions.CrashLines{PID: a.cr.PID, TID: a.cr.TID, Key: a.cr.Key, Function: site.Function,
		File: site.File, Line: site.Line, Stack: elfinfo.SessionFrames(frames)}
	changed := !slices.Equal(l.Stack, a.cr.Stack) || l.Function != a.cr.Function || l.File != a.cr.File || l.Line != a.cr.Line
	a.cr.Function, a.cr.File, a.cr.Line, a.cr.Stack = l.Function, l.File, l.Line, l.Stack
	return l, changed
}
