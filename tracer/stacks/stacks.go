package stacks

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// Options configure Sample.
type Options struct {
	// Seq numbers the sample (every process's Sample event carries it); 0 takes the next
	// number of the feature's own count.
	Seq int
	// MaxFrames bounds each thread's stack (0: 64).
	MaxFrames int
	// HoldTimeout bounds how long one process may take to stop (0: 20 ms); a thread that has
	// not stopped by then is reported from /proc alone.
	HoldTimeout time.Duration
}

// Stats is what one Sample call did, for benchmarks.
type Stats struct {
	Processes, Threads int
	// LongestHold is the longest time any one process was held stopped.
	LongestHold time.Duration
}

// Stacks is the stack sampling feature of one engine.
type Stacks struct {
	e        *tracer.Tracer
	resolver *elfinfo.Resolver
	// Owned by the loop thread.
	seq  int               // the last sample's number
	bufs [][]byte          // the stack copies, reused (snapshotStack)
	blk  blockMem          // a blocked thread's walk's memory (readBlocked)
	maps map[int]mapsCache // each process's mappings between samples
	gos  goSampler         // the goroutines of Go processes (goroutines.go)
	mu   sync.Mutex        // one Sample at a time
}

// New makes the stack sampling feature for e; resolver symbolizes (shared with the crash
// feature; nil makes one).
func New(e *tracer.Tracer, resolver *elfinfo.Resolver) *Stacks {
	if resolver == nil {
		resolver = elfinfo.NewResolver()
	}
	return &Stacks{e: e, resolver: resolver, maps: map[int]mapsCache{},
		gos: goSampler{reader: elfinfo.NewGoReader(), notGo: map[int]int{}}}
}

// Sample takes one sample of every thread of the job: one process at a time (never the whole
// job at once) it holds the process's threads, reads their registers and a copy of the top of
// each stack, lets them go, then unwinds, and emits a Sample event for the process. A thread
// blocked in a call that an interrupt would make fail with EINTR (epoll_wait, semop, a socket
// call: tracer.EINTRCall) is not stopped: its pc and sp come from /proc/TID/syscall, which the
// kernel fills for a blocked thread. A thread in a job-control stop stays stopped; a vfork
// parent, which cannot stop, is read from /proc too.
func (s *Stacks) Sample(o Options) ([]sessions.Sample, Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sessions.Sample
	var st Stats
	s.loadJobLines()
	err := s.e.Do(func(l *tracer.Loop) error {
		if l.Closing() {
			return errors.New("stacks: the tracer is detaching")
		}
		if l.Tasks() == 0 {
			return tracer.ErrNoJob
		}
		if o.Seq <= 0 {
			o.Seq = s.seq + 1
		}
		s.seq = max(s.seq, o.Seq)
		if o.MaxFrames <= 0 {
			o.MaxFrames = 64
		}
		if o.HoldTimeout <= 0 {
			o.HoldTimeout = 20 * time.Millisecond
		}
		procs := l.Processes()
		live := map[int]bool{}
		var again []int // processes with a thread that did not stop in time
		keep := func(p tracer.Process, smp sessions.Sample) {
			smp.Exe, smp.PPID = p.Exe, p.PPID
			st.Processes++
			st.Threads += len(smp.Threads)
			l.Emit(smp)
			s.queueGoroutines(p, smp)
			out = append(out, smp)
		}
		for _, pp := range procs {
			live[pp.PID] = true
			p, ok := l.Process(pp.PID)
			if !ok {
				continue // ended while an earlier one was sampled
			}
			smp, held := s.sampleProc(l, p, o)
			st.LongestHold = max(st.LongestHold, held)
			if late(smp) {
				again = append(again, pp.PID)
				continue
			}
			keep(p, smp)
		}
		// Once more at the end of the round: a busy thread on a loaded machine may reach its
		// stop only after its turn (its interrupt was pending all along), and a sample
		// without it reads as no progress known.
		for _, pid := range again {
			p, ok := l.Process(pid)
			if !ok {
				continue
			}
			smp, held := s.sampleProc(l, p, o)
			st.LongestHold = max(st.LongestHold, held)
			keep(p, smp)
		}
		for pid := range s.maps {
			if !live[pid] {
				delete(s.maps, pid)
			}
		}
		return nil
	})
	if err == nil {
		s.readGoroutines(o) // after every process was let go, off the loop
	}
	return out, st, err
}

// loadJobLines loads, off the loop, the line tables of the modules the job maps executable
// that are not loaded yet: unwinding a sample on the loop would otherwise load them there the
// first time (hundreds of milliseconds for a libc), with every tracee and request waiting.
func (s *Stacks) loadJobLines() {
	var jobs []*elfinfo.LinesJob
	if s.e.Do(func(l *tracer.Loop) error {
		for _, p := range l.Processes() {
			maps, _ := s.stackMaps(p, false)
			s.resolver.WantLines(p.PID, maps)
		}
		jobs = s.resolver.PendingLines()
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
	if len(jobs) > 0 && s.e.Do(func(l *tracer.Loop) error {
		for _, j := range jobs {
			s.resolver.Install(j)
		}
		return nil
	}) != nil {
		for _, j := range jobs {
			j.Close()
		}
	}
}

// sampleProc holds p's threads, copies what unwinding needs, lets go and unwinds. It
// returns the sample and how long the process was held.
func (s *Stacks) sampleProc(l *tracer.Loop, p tracer.Process, o Options) (sessions.Sample, time.Duration) {
	a := arch.Host()
	smp := sessions.Sample{Seq: o.Seq, PID: p.PID, Rank: p.Rank}
	type th struct {
		tid   int
		state byte
		cpu   uint64
		run   uint64 // ns on a CPU (schedstat)
		sys   procfs.Syscall
		note  string
		read  []elfinfo.Frame // unwound without stopping it
	}
	ths := make([]*th, 0, len(p.TIDs))
	var hold []int
	var maps []elfinfo.Mapping
	for _, tid := range p.TIDs {
		x := &th{tid: tid}
		if st, err := procfs.ReadTaskStat(p.PID, tid); err == nil {
			x.state, x.cpu = st.State, st.CPU
		}
		if x.state == 't' {
			// A traced thread's stop is 't' whoever caused it. The job's own (SIGSTOP, ^Z)
			// is stopped; any other is crashtui's (a signal on its way to a handler, an
			// interrupt not yet reported), and the thread was running when it came.
			x.state = 'R'
			if th, ok := l.Thread(tid); ok && th.JobStopped() {
				x.state = 'T'
			}
		}
		sched, _ := procfs.ReadTaskSchedstat(p.PID, tid)
		x.run = sched.RunNS
		if x.state == 'Z' || x.state == 'X' {
			continue
		}
		x.sys = procfs.ReadTaskSyscall(p.PID, tid)
		ths = append(ths, x)
		if x.sys.InSyscall() && procfs.InVforkCall(a, p.PID, x.sys) {
			x.note = "a vfork parent cannot stop"
			continue
		}
		if maps == nil {
			maps, _ = s.stackMaps(p, false)
		}
		if f, ok := s.readBlocked(p.PID, tid, x.state, x.sys, sched, maps, o); ok {
			x.read = f
			continue
		}
		hold = append(hold, tid)
	}

	// While held: registers and a copy of the top of each stack, nothing else. Unwinding and
	// symbols (which may load a module's DWARF for the first time) wait until it runs again.
	type capture struct {
		ts             sessions.ThreadSample
		pc, sp, fp, lr uint64
		stack          []byte
	}
	caps := map[int]*capture{}
	start := time.Now()
	var held time.Duration
	l.Hold(hold, tracer.HoldOptions{Timeout: o.HoldTimeout}, func(h *tracer.Held) error {
		for i, t := range h.Threads {
			c := &capture{}
			regs, err := t.Regs()
			if err != nil {
				c.ts.Note = "registers: " + err.Error()
			} else {
				c.pc, c.sp, c.fp, c.lr = regs.UnwindRegs()
				s.keepRegs(t.TID(), regs)
				c.stack = s.snapshotStack(p.PID, c.sp, i)
				c.ts.Held = true
			}
			caps[t.TID()] = c
		}
		for _, late := range h.Late {
			if late.Why == tracer.LateEINTR {
				caps[late.TID] = &capture{ts: sessions.ThreadSample{Note: late.Syscall + " would return EINTR if interrupted"}}
			}
		}
		if len(h.Threads) > 0 {
			held = time.Since(start)
		}
		return nil
	})

	for _, x := range ths {
		c := caps[x.tid]
		if c == nil {
			c = &capture{}
		}
		c.ts.TID, c.ts.State, c.ts.CPU, c.ts.RunNS = x.tid, string(rune(x.state)), x.cpu, x.run
		c.ts.Syscall = l.CallName(x.tid, x.sys) // never crashtui's own restart_syscall
		if x.read != nil {
			c.ts.Frames, c.ts.Unstopped = elfinfo.SessionFrames(x.read), true
			smp.Unstopped++
			smp.Threads = append(smp.Threads, c.ts)
			continue
		}
		if c.ts.Held {
			smp.Stopped++
		}
		if !c.ts.Held {
			if x.sys.Nr >= -1 && x.sys.PC != 0 {
				c.pc, c.sp = x.sys.PC, x.sys.SP
				if c.ts.Note == "" {
					c.ts.Note = x.note
				}
			} else if c.ts.Note == "" {
				c.ts.Note = "did not stop within " + o.HoldTimeout.String()
				if x.note != "" {
					c.ts.Note = x.note
				}
			}
		}
		if c.pc != 0 {
			mem := snapshotReader(p.PID, c.sp, c.stack)
			unwind := func(maps []elfinfo.Mapping) []elfinfo.Frame {
				return s.resolver.Unwind(p.PID, maps, c.pc, c.sp, c.fp, c.lr, string(a), mem, o.MaxFrames)
			}
			maps, fresh := s.stackMaps(p, false)
			frames := unwind(maps)
			if !fresh && !allMapped(frames) {
				maps, _ = s.stackMaps(p, true) // something was mapped since: read them again
				frames = unwind(maps)
			}
			c.ts.Frames = elfinfo.SessionFrames(frames)
		}
		smp.Threads = append(smp.Threads, c.ts)
	}
	smp.HeldUS = int(held / time.Microsecond)
	return smp, held
}

// readBlocked unwinds thread tid without stopping it when the kernel shows it blocked in a
// syscall (state S or D, its user pc and sp in /proc/TID/syscall) and CFI alone, from those
// two registers, reaches the stack's end (issue 24 item 3). It is only trusted when the
// thread did not run while it was read: the same count of times put on a CPU (schedstat's
// third field, counted at every switch to the thread) after the walk as before sys was read,
// so sys and the stack are what the thread left when it blocked. Otherwise (running, a frame-pointer
// CFA, a leaf's return address in a register, woken meanwhile) it says no, and the thread is
// stopped and read as before.
func (s *Stacks) readBlocked(pid, tid int, state byte, sys procfs.Syscall, before procfs.Schedstat, maps []elfinfo.Mapping, o Options) ([]elfinfo.Frame, bool) {
	if (state != 'S' && state != 'D') || !sys.InSyscall() || sys.PC == 0 || sys.SP == 0 || before.Slices == 0 || len(maps) == 0 {
		return nil, false
	}
	s.blk.reset(pid)
	frames, complete := s.resolver.UnwindBlocked(pid, maps, sys.PC, sys.SP, string(arch.Host()), s.blk.read, o.MaxFrames)
	if !complete || len(frames) == 0 {
		return nil, false
	}
	if after, ok := procfs.ReadTaskSchedstat(pid, tid); !ok || after.Slices != before.Slices {
		return nil, false // it ran: what was read may be half old, half new
	}
	return frames, true
}

// late says whether a thread of smp did not stop in time, and so has no stack.
func late(smp sessions.Sample) bool {
	for _, t := range smp.Threads {
		if len(t.Frames) == 0 && strings.HasPrefix(t.Note, "did not stop within") {
			return true
		}
	}
	return false
}

// stackSnapshot is how much of a stack is copied while its thread is held: enough for the
// frames of most programs; deeper frames are read live after the thread runs again.
const stackSnapshot = 16 << 10

// snapshotStack copies the top of the stack at sp (up to stackSnapshot bytes, less where the
// stack mapping ends first) into the i-th of buffers reused from process to process (a fresh
// 16 kB per thread per sample made the garbage collector pause the loop mid-hold).
func (s *Stacks) snapshotStack(pid int, sp uint64, i int) []byte {
	for len(s.bufs) <= i {
		s.bufs = append(s.bufs, make([]byte, stackSnapshot))
	}
	buf := s.bufs[i]
	mem := procfs.Mem{PID: pid}
	for n := len(buf); n >= 512; n /= 2 {
		// A short read is the stack mapping's end: keep what was read.
		if got, _ := mem.Read(sp, buf[:n]); got > 0 {
			return buf[:got]
		}
	}
	return nil
}

// snapshotReader serves reads inside the copied stack from the copy, others from the
// process itself.
func snapshotReader(pid int, sp uint64, stack []byte) elfinfo.MemReader {
	live := procfs.Reader(pid)
	return func(addr uint64, buf []byte) error {
		if addr >= sp && addr-sp+uint64(len(buf)) <= uint64(len(stack)) {
			copy(buf, stack[addr-sp:])
			return nil
		}
		return live(addr, buf)
	}
}

// mapsCache is a process's /proc/PID/maps as last read for sampling, in one generation.
type mapsCache struct {
	maps []elfinfo.Mapping
	gen  int
	at   time.Time
}

// mapsMaxAge bounds how long sampling trusts a process's cached maps.
const mapsMaxAge = 10 * time.Second

// stackMaps returns p's mappings, cached between samples (for one exec generation, and at
// most mapsMaxAge), read afresh when reread is set; fresh says they were just read.
func (s *Stacks) stackMaps(p tracer.Process, reread bool) (maps []elfinfo.Mapping, fresh bool) {
	if c, ok := s.maps[p.PID]; ok && !reread && c.gen == p.Gen && time.Since(c.at) < mapsMaxAge {
		return c.maps, false
	}
	maps, err := elfinfo.ReadMaps(p.PID)
	if err != nil {
		delete(s.maps, p.PID)
		return nil, true
	}
	s.maps[p.PID] = mapsCache{maps: maps, gen: p.Gen, at: time.Now()}
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
