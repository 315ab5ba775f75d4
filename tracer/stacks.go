package tracer

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
)

// SampleOptions configure SampleStacks.
type SampleOptions struct {
	// Seq numbers the sample (every process's Sample event carries it); 0 takes the next
	// number of the tracer's own count.
	Seq int
	// MaxFrames bounds each thread's stack (0: 64).
	MaxFrames int
	// HoldTimeout bounds how long one process may take to stop (0: 20 ms); a thread that has
	// not stopped by then is reported from /proc alone.
	HoldTimeout time.Duration
}

// SampleStats is what one SampleStacks call did, for benchmarks.
type SampleStats struct {
	Processes, Threads int
	// LongestHold is the longest time any one process was held stopped.
	LongestHold time.Duration
}

// SampleStacks takes one sample of every thread of the job: one process at a time (never the
// whole job at once) it interrupts the process's threads, reads their registers, unwinds
// their stacks and resumes them at once, then emits a Sample event for the process. A thread
// blocked in a call that an interrupt would make fail with EINTR (epoll_wait, semop,
// sigtimedwait, io_getevents: signal(7) says they are never restarted) is not stopped: its
// pc and sp come from /proc/TID/syscall, which the kernel fills for a blocked thread. A
// thread in a job-control stop stays stopped (its group-stop is re-reported and then listened
// to again); a vfork parent, which cannot stop, is read from /proc too.
func (t *Tracer) SampleStacks(o SampleOptions) ([]sessions.Sample, SampleStats, error) {
	var out []sessions.Sample
	var st SampleStats
	t.loadJobLines()
	err := t.do(func() error {
		if t.closing {
			return errors.New("stacks: the tracer is detaching")
		}
		if len(t.tasks) == 0 {
			return ErrNoJob
		}
		if o.Seq <= 0 {
			o.Seq = t.sampleSeq + 1
		}
		t.sampleSeq = max(t.sampleSeq, o.Seq)
		if o.MaxFrames <= 0 {
			o.MaxFrames = 64
		}
		if o.HoldTimeout <= 0 {
			o.HoldTimeout = 20 * time.Millisecond
		}
		pids := make([]int, 0, len(t.procs))
		for pid, p := range t.procs {
			if p.announced {
				pids = append(pids, pid)
			}
		}
		slices.Sort(pids)
		for _, pid := range pids {
			p := t.procs[pid]
			if p == nil {
				continue // ended while an earlier one was sampled
			}
			s, held := t.sampleProc(p, o)
			st.Processes++
			st.Threads += len(s.Threads)
			st.LongestHold = max(st.LongestHold, held)
			t.emit(s)
			out = append(out, s)
		}
		return nil
	})
	return out, st, err
}

// loadJobLines loads, off the loop, the line tables of the modules the job maps executable
// that are not loaded yet: unwinding a sample on the loop would otherwise load them there the
// first time (hundreds of milliseconds for a libc), with every tracee and request waiting.
func (t *Tracer) loadJobLines() {
	var jobs []*elfinfo.LinesJob
	if t.do(func() error {
		for pid, p := range t.procs {
			if p.announced {
				maps, _ := t.stackMaps(pid, false)
				t.crash.resolver.WantLines(pid, maps)
			}
		}
		jobs = t.crash.resolver.PendingLines()
		return nil
	}) != nil {
		return
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); j.Load() }()
	}
	wg.Wait()
	if len(jobs) > 0 && t.do(func() error {
		for _, j := range jobs {
			t.crash.resolver.Install(j)
		}
		return nil
	}) != nil {
		for _, j := range jobs {
			j.Close()
		}
	}
}

// noInterrupt are the calls that a PTRACE_INTERRUPT ends with EINTR whatever the handler
// (signal(7), "interfaces that are never restarted" and "can fail with EINTR after a stop"),
// measured for epoll_wait on this kernel: sampling must not stop a thread blocked in one.
var noInterrupt = map[string]bool{
	"epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true,
	"io_getevents": true, "io_pgetevents": true,
	"semop": true, "semtimedop": true,
	"rt_sigtimedwait": true,
}

// sampleProc holds p's threads, unwinds them and lets go. It returns the sample and how long
// the process was held.
func (t *Tracer) sampleProc(p *proc, o SampleOptions) (sessions.Sample, time.Duration) {
	a := t.crash.arch
	s := sessions.Sample{Seq: o.Seq, PID: p.pid, Rank: p.rank}
	type th struct {
		tk    *task
		state byte
		cpu   uint64
		sys   taskSys
		ours  bool // we interrupted it and must resume it
		proc  bool // read from /proc only (not stopped)
		note  string
	}
	tids := make([]int, 0, len(p.tasks))
	for tid := range p.tasks {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	ths := make([]*th, 0, len(tids))
	for _, tid := range tids {
		tk := p.tasks[tid]
		if tk.exited && tk.stopped == running {
			continue // past PTRACE_EVENT_EXIT: never stops again
		}
		x := &th{tk: tk}
		if st, err := readTaskStat(p.pid, tid); err == nil {
			x.state, x.cpu = st.state, st.cpu
		}
		if x.state == 'Z' || x.state == 'X' {
			continue
		}
		x.sys = readTaskSyscall(p.pid, tid)
		if x.sys.nr >= 0 && tk.stopped == running {
			name := arch.SyscallName(a, x.sys.nr)
			switch {
			case noInterrupt[name]:
				x.proc, x.note = true, name+" would return EINTR if interrupted"
			case inVforkCall(a, p.pid, x.sys):
				x.proc, x.note = true, "a vfork parent cannot stop"
			}
		}
		ths = append(ths, x)
	}

	start := time.Now()
	var wait []*th
	for _, x := range ths {
		if x.proc || x.tk.stopped != running || x.tk.want {
			continue // read from /proc, or already held (by another operation, or a signal)
		}
		x.tk.want, x.ours = true, true
		if err := ptraceInterrupt(x.tk.tid); err != nil {
			x.tk.want, x.ours = false, false
			x.proc = true
			continue
		}
		wait = append(wait, x)
	}
	// Almost every thread stops within microseconds: reap each one's status directly, then
	// fall back to the loop's pump for the slow ones. The spinning as a whole stays within the
	// hold timeout, whatever a yield costs on a busy machine.
	spinUntil := start.Add(o.HoldTimeout)
	for _, x := range wait {
		tk := x.tk
		for spin := 0; tk.stopped == running && t.tasks[tk.tid] == tk && (spin < 20 || time.Now().Before(spinUntil)); spin++ {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(tk.tid, &ws, unix.WALL|unix.WNOTHREAD|unix.WNOHANG, nil)
			if err == nil && pid == tk.tid {
				t.handle(waitResult{pid: pid, ws: ws})
				break
			}
			if err != nil && err != unix.EINTR {
				break
			}
			if spin > 20 {
				// Let the tracee have the CPU to reach its stop (a time.Sleep here lasts a
				// millisecond: Go's timers wake through epoll's millisecond timeout).
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
	late := func() bool {
		for _, x := range wait {
			if x.tk.stopped == running && t.tasks[x.tk.tid] == x.tk {
				return false
			}
		}
		return true
	}
	if !late() {
		t.pump(late, o.HoldTimeout, "")
	}

	// While held: registers and a copy of the top of each stack, nothing else. Unwinding and
	// symbols (which may load a module's DWARF for the first time) wait until it runs again.
	type capture struct {
		ts             sessions.ThreadSample
		pc, sp, fp, lr uint64
		stack          []byte
	}
	caps := make([]capture, 0, len(ths))
	for _, x := range ths {
		tk := x.tk
		if t.tasks[tk.tid] != tk {
			continue // it ended while held
		}
		c := capture{ts: sessions.ThreadSample{TID: tk.tid, State: string(rune(x.state)), CPU: x.cpu}}
		if x.sys.nr >= 0 {
			c.ts.Syscall = arch.SyscallName(a, x.sys.nr)
			if c.ts.Syscall == "" {
				c.ts.Syscall = "#" + strconv.Itoa(x.sys.nr)
			}
		}
		switch {
		case tk.stopped != running:
			regs, err := rawRegs(tk.tid, a)
			if err != nil {
				c.ts.Note = "registers: " + err.Error()
				break
			}
			u := unwindRegsOf(regs)
			c.pc, c.sp, c.fp, c.lr = u.pc, u.sp, u.fp, u.lr
			c.stack = t.snapshotStack(p.pid, c.sp, len(caps))
			c.ts.Held = true
		case x.sys.nr >= -1 && x.sys.pc != 0:
			c.pc, c.sp = x.sys.pc, x.sys.sp
			c.ts.Note = x.note
		default:
			c.ts.Note = "did not stop within " + o.HoldTimeout.String()
			if x.note != "" {
				c.ts.Note = x.note
			}
		}
		caps = append(caps, c)
	}
	// Let go of what we stopped, at once (a group-stopped thread is listened to again, so it
	// stays stopped); a thread that has not stopped yet is resumed by handle when it does.
	for _, x := range wait {
		if t.tasks[x.tk.tid] != x.tk {
			continue
		}
		if x.tk.stopped == running {
			x.tk.want = false
			continue
		}
		t.resumeReported(x.tk, "stacks resume")
	}
	held := time.Duration(0)
	if len(wait) > 0 {
		held = time.Since(start)
	}

	for _, c := range caps {
		if c.pc != 0 {
			mem := snapshotReader(p.pid, c.sp, c.stack)
			unwind := func(maps []elfinfo.Mapping) []elfinfo.Frame {
				return t.crash.resolver.Unwind(p.pid, maps, c.pc, c.sp, c.fp, c.lr, string(a), mem, o.MaxFrames)
			}
			maps, fresh := t.stackMaps(p.pid, false)
			frames := unwind(maps)
			if !fresh && !allMapped(frames) {
				maps, _ = t.stackMaps(p.pid, true) // something was mapped since: read them again
				frames = unwind(maps)
			}
			c.ts.Frames = stackFrames(frames)
		}
		s.Threads = append(s.Threads, c.ts)
	}
	s.HeldUS = int(held / time.Microsecond)
	return s, held
}

// stackSnapshot is how much of a stack is copied while its thread is held: enough for the
// frames of most programs; deeper frames are read live after the thread runs again.
const stackSnapshot = 16 << 10

// snapshotStack copies the top of the stack at sp (up to stackSnapshot bytes, less where the
// stack mapping ends first) into the i-th of buffers reused from process to process (a fresh
// 16 kB per thread per sample made the garbage collector pause the loop mid-hold).
func (t *Tracer) snapshotStack(pid int, sp uint64, i int) []byte {
	for len(t.stackBufs) <= i {
		t.stackBufs = append(t.stackBufs, make([]byte, stackSnapshot))
	}
	buf := t.stackBufs[i]
	mem := traceeMem{pid: pid}
	for n := len(buf); n >= 512; n /= 2 {
		// A short read is the stack mapping's end: keep what was read.
		if got, _ := mem.read(sp, buf[:n]); got > 0 {
			return buf[:got]
		}
	}
	return nil
}

// snapshotReader serves reads inside the copied stack from the copy, others from the
// process itself.
func snapshotReader(pid int, sp uint64, stack []byte) elfinfo.MemReader {
	live := vmReader(pid)
	return func(addr uint64, buf []byte) error {
		if addr >= sp && addr-sp+uint64(len(buf)) <= uint64(len(stack)) {
			copy(buf, stack[addr-sp:])
			return nil
		}
		return live(addr, buf)
	}
}

// mapsCache is a process's /proc/PID/maps as last read for sampling.
type mapsCache struct {
	maps []elfinfo.Mapping
	at   time.Time
}

// mapsMaxAge bounds how long sampling trusts a process's cached maps.
const mapsMaxAge = 10 * time.Second

// stackMaps returns pid's mappings, cached between samples (dropped at exec and exit, and
// after mapsMaxAge), read afresh when reread is set; fresh says they were just read.
func (t *Tracer) stackMaps(pid int, reread bool) (maps []elfinfo.Mapping, fresh bool) {
	if t.mapsCache == nil {
		t.mapsCache = map[int]mapsCache{}
	}
	if c, ok := t.mapsCache[pid]; ok && !reread && time.Since(c.at) < mapsMaxAge {
		return c.maps, false
	}
	maps, err := elfinfo.ReadMaps(pid)
	if err != nil {
		delete(t.mapsCache, pid)
		return nil, true
	}
	t.mapsCache[pid] = mapsCache{maps: maps, at: time.Now()}
	return maps, true
}

// allMapped says whether every frame's pc was found in a mapping.
func allMapped(frames []elfinfo.Frame) bool {
	for _, f := range frames {
		if f.Module == "" {
			return false
		}
	}
	return true
}
