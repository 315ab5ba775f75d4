package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
)

// coreStopTimeout bounds how long writing a core waits for each other thread to stop (one in
// uninterruptible sleep is dumped without its registers rather than holding up the job).
const coreStopTimeout = 500 * time.Millisecond

// writeCore writes the core of tk's process, which sits in the signal-delivery-stop of its
// fatal signal, as CoresDir/core.<group>.<pid>: every thread's registers (the others are
// stopped with PTRACE_INTERRUPT and let go afterwards; the process is about to die anyway),
// siginfo, auxv, NT_FILE and every dumpable mapping, read through traceeMem.
func (t *Tracer) writeCore(tk *task, cr *sessions.Crash, sig int, si siginfo, regs arch.Regs) (string, error) {
	c := t.crash
	p := t.procs[tk.pid]
	if p == nil {
		return "", fmt.Errorf("write core of %d: process gone", tk.pid)
	}
	c.coring[tk.pid] = nil
	var held []*task
	defer func() {
		held = append(held, c.coring[tk.pid]...)
		delete(c.coring, tk.pid)
		for _, o := range held {
			if t.tasks[o.tid] == o {
				t.resumeReported(o, "core resume")
			}
		}
	}()
	threads := []elfinfo.CoreThread{{TID: tk.tid, Regs: regs.Words, Signal: sig}}
	tids := make([]int, 0, len(p.tasks))
	for tid := range p.tasks {
		if tid != tk.tid {
			tids = append(tids, tid)
		}
	}
	sort.Ints(tids)
	// The running ones are stopped all at once; one that does not stop in time is dumped
	// without its registers.
	var stop []*task
	for _, tid := range tids {
		if o := t.tasks[tid]; o != nil && o.stopped == running && !o.exited {
			stop = append(stop, o)
		}
	}
	t.holdTasks(stop, coreStopTimeout, 0, "core")
	for _, o := range stop {
		if t.tasks[o.tid] == o && o.stopped != running {
			held = append(held, o)
		}
	}
	for _, tid := range tids {
		o := t.tasks[tid]
		if o == nil || o.stopped == running {
			continue
		}
		r, err := rawRegs(tid, c.arch)
		if err != nil {
			continue
		}
		threads = append(threads, elfinfo.CoreThread{TID: tid, Regs: r.Words})
	}
	maps, err := elfinfo.ReadMaps(tk.pid)
	if err != nil {
		return "", fmt.Errorf("write core of %d: %w", tk.pid, err)
	}
	auxv, _ := os.ReadFile(procPath(tk.pid, "auxv"))
	// Without smaps crashtui cannot tell which mappings are MADV_DONTDUMP: no core, rather
	// than one holding what the kernel's would leave out.
	smaps, err := elfinfo.ReadSmaps(tk.pid)
	if err != nil {
		return "", fmt.Errorf("write core of %d: %w", tk.pid, err)
	}
	// Every mapping is read in large chunks; the pages process_vm_readv cannot read through
	// /proc/PID/mem (FOLL_FORCE, like the kernel's own dumper), opened here once.
	mem := &traceeMem{pid: tk.pid, force: true}
	if err := mem.open(); err != nil {
		return "", fmt.Errorf("write core of %d: %w", tk.pid, err)
	}
	defer mem.close()
	in := elfinfo.CoreInput{Arch: string(c.arch), PID: tk.pid, PPID: p.ppid, UID: readUID(tk.pid),
		GID: readGID(tk.pid), Comm: readComm(tk.pid), Args: strings.Join(p.argv, " "), Signal: sig,
		SigCode: int(si.Code), SigAddr: si.Addr, SigErrno: int(si.Errno), Threads: threads, Maps: maps, Auxv: auxv,
		Filter: elfinfo.ReadCoreFilter(tk.pid), Smaps: smaps, Mem: mem.readFull}
	path := filepath.Join(c.opts.CoresDir, "core."+strconv.Itoa(cr.Group)+"."+strconv.Itoa(tk.pid))
	// Mode 0600, owned by crashtui's user (root), created O_EXCL|O_NOFOLLOW in a directory
	// checked again here (cmd checked it at flag time; it is re-walked for every core, so a
	// directory swapped meanwhile is refused, not written into).
	f, err := outfile.Create(path)
	if err != nil {
		return "", fmt.Errorf("write core of %d: %w", tk.pid, err)
	}
	if err := elfinfo.WriteCore(f, in); err != nil {
		f.Abort()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write core of %d: %w", tk.pid, err)
	}
	return path, nil
}
