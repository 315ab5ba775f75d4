package stacks

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// The goroutines of the job's Go processes, with each stack sample (issue 24 item 7). For a
// Go program the threads say little (most are the runtime's, idle in its scheduler); the
// goroutines parked on a channel, a select or a mutex are where it is. The runtime keeps them
// in its memory (runtime.allgs, each parked one's pc and sp in g.sched), so they are read
// from there with process_vm_readv after the process's threads were let go: a sample holds a
// Go process no longer than any other. Only the registers of the threads that were stopped
// are kept while they are held: they say which goroutine runs on which thread.

// goSampler is the goroutine part of the feature; owned by the loop thread but reader.
type goSampler struct {
	reader *elfinfo.GoReader // safe for concurrent use
	regs   []elfinfo.ThreadRegs
	queue  []*goProc
	// notGo are the processes found not to be Go programs, by pid: the exec generation
	// in which they were not.
	notGo map[int]int
}

// goProc is one process whose goroutines are read after the round.
type goProc struct {
	pid, gen int
	maps     []elfinfo.Mapping
	threads  []elfinfo.ThreadRegs     // of the threads that were stopped, as they were then
	frames   map[int][]sessions.Frame // each thread's stack in the sample
	out      sessions.Goroutines
	notGo    bool
	gone     bool
}

// keepRegs keeps the registers of a thread held for the sample (the hold's only addition).
func (s *Stacks) keepRegs(tid int, regs arch.Regs) {
	s.gos.regs = append(s.gos.regs, elfinfo.ThreadRegs{TID: tid, Regs: slices.Clone(regs.Words)})
}

// queueGoroutines puts process p, just sampled (smp), in the queue of processes whose
// goroutines are read after the round, unless it is known not to be a Go program.
func (s *Stacks) queueGoroutines(p tracer.Process, smp sessions.Sample) {
	regs := s.gos.regs
	s.gos.regs = nil
	if gen, ok := s.gos.notGo[p.PID]; ok && gen == p.Gen {
		return
	}
	maps, _ := s.stackMaps(p, false)
	if len(maps) == 0 {
		return
	}
	frames := make(map[int][]sessions.Frame, len(smp.Threads))
	for _, t := range smp.Threads {
		frames[t.TID] = t.Frames
	}
	s.gos.queue = append(s.gos.queue, &goProc{pid: p.PID, gen: p.Gen, maps: maps, threads: regs, frames: frames,
		out: sessions.Goroutines{Seq: smp.Seq, PID: p.PID, Rank: p.Rank}})
}

// readGoroutines reads the goroutines of the queued processes off the loop (a program's
// first read loads its DWARF), a few processes at a time, and emits a Goroutines event for
// each Go process still there. Not Go programs are remembered as such.
func (s *Stacks) readGoroutines(o Options) {
	q := s.gos.queue
	s.gos.queue = nil
	if len(q) == 0 {
		return
	}
	work := make(chan *goProc)
	var wg sync.WaitGroup
	for range min(len(q), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				s.readGo(g, o.MaxFrames)
			}
		}()
	}
	for _, g := range q {
		work <- g
	}
	close(work)
	wg.Wait()
	s.e.Do(func(l *tracer.Loop) error {
		live := map[int]bool{}
		for _, p := range l.Processes() {
			live[p.PID] = true
		}
		for pid := range s.gos.notGo {
			if !live[pid] {
				delete(s.gos.notGo, pid)
			}
		}
		for _, g := range q {
			p, ok := l.Process(g.pid)
			switch {
			case !ok || p.Gen != g.gen || g.gone:
				// Ended or exec'd meanwhile: what was read is no one's now.
			case g.notGo:
				s.gos.notGo[g.pid] = g.gen
			default:
				l.Emit(g.out)
			}
		}
		return nil
	})
}

// readGo reads one process's goroutines.
func (s *Stacks) readGo(g *goProc, maxFrames int) {
	exe := "/proc/" + strconv.Itoa(g.pid) + "/exe"
	gs, err := s.gos.reader.Goroutines(g.pid, exe, g.maps, procfs.Reader(g.pid), g.threads, maxFrames)
	switch {
	case errors.Is(err, elfinfo.ErrNotGo):
		g.notGo = true
	case err != nil:
		if _, serr := procfs.ReadTaskStat(g.pid, g.pid); serr != nil {
			g.gone = true
			return
		}
		g.out.Note = err.Error()
	default:
		g.out.Goroutines = goroutineSamples(gs, g.frames)
	}
}

// goroutineSamples are the goroutines as the event says them. A goroutine running on a
// thread that was stopped takes that thread's stack from the sample: it was read from the
// registers and the stack's copy taken while the thread was held, and crosses a signal frame
// (a goroutine preempted by the runtime's SIGURG), where an unwind from the same registers
// now would read a stack that has moved on since.
func goroutineSamples(gs []elfinfo.Goroutine, threads map[int][]sessions.Frame) []sessions.GoroutineSample {
	out := make([]sessions.GoroutineSample, 0, len(gs))
	for _, g := range gs {
		x := sessions.GoroutineSample{ID: g.ID, Status: g.Status, WaitReason: g.WaitReason, TID: g.TID,
			System: g.System, Frames: elfinfo.SessionFrames(g.Frames), Note: g.Err}
		if fr := threads[g.TID]; g.TID != 0 && len(fr) > 0 && fr[len(fr)-1].Function == "runtime.goexit" {
			x.Frames, x.Note = fr, ""
		} else if g.TID != 0 && len(x.Frames) > 0 && (x.Frames[len(x.Frames)-1].Function != "runtime.goexit" || hasSignalFrame(g.Frames)) {
			// Every goroutine's stack ends at runtime.goexit. A running one whose thread's
			// registers lead elsewhere was caught between a signal and its handler (ppc64le's
			// vDSO trampoline, before its bctrl): those frames are not the goroutine's. Nor
			// are the reader's when they cross a signal frame: past it, it lost the code the
			// signal interrupted (arm64, a spinner in the runtime's preemption: sigtramp, the
			// signal frame, then runtime.goexit, main.spin gone).
			x.Frames, x.Note = nil, "its thread was stopped where its stack does not lead to the goroutine's (a signal on its way to its handler)"
		}
		// The main goroutine's go statement is the runtime's bootstrap (rt0_go's newproc):
		// Go's own traceback names none for goroutine 1, nor does this.
		if c := g.CreatedBy; g.ID != 1 && (c.Module != "" || c.Function != "") {
			x.CreatedBy = &sessions.Frame{Module: c.Module, Offset: sessions.Hex(c.Offset), Function: c.Function,
				File: c.File, Line: c.Line}
		}
		out = append(out, x)
	}
	return out
}

// hasSignalFrame says a frame of fs is a kernel signal frame.
func hasSignalFrame(fs []elfinfo.Frame) bool {
	for _, f := range fs {
		if f.Signal {
			return true
		}
	}
	return false
}
