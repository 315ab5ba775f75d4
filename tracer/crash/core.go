package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
)

// coreStopTimeout bounds how long writing a core waits for each other thread to stop (one in
// uninterruptible sleep is dumped without its registers rather than holding up the job).
const coreStopTimeout = 500 * time.Millisecond

// writeCore writes the core of s's process, whose crashing thread sits in the
// signal-delivery-stop of its fatal signal, as CoresDir/core.<group>.<pid>: every thread's
// registers (the others are held meanwhile, interrupted whatever call they are in: the
// process is about to die anyway), siginfo, auxv, NT_FILE and every dumpable mapping.
func (c *Crashes) writeCore(l *tracer.Loop, s *tracer.SignalStop, p tracer.Process, cr *sessions.Crash, sig int, si tracer.Siginfo, regs arch.Regs) (string, error) {
	pid := s.PID()
	others := make([]int, 0, len(p.TIDs))
	for _, tid := range p.TIDs {
		if tid != s.TID() {
			others = append(others, tid)
		}
	}
	var path string
	err := l.Hold(others, tracer.HoldOptions{Timeout: coreStopTimeout, EINTR: tracer.InterruptBlocked}, func(h *tracer.Held) error {
		threads := []elfinfo.CoreThread{{TID: s.TID(), Regs: regs.Words, Signal: sig}}
		for _, th := range h.Threads {
			if r, err := th.Regs(); err == nil {
				threads = append(threads, elfinfo.CoreThread{TID: th.TID(), Regs: r.Words})
			}
		}
		maps, err := elfinfo.ReadMaps(pid)
		if err != nil {
			return fmt.Errorf("write core of %d: %w", pid, err)
		}
		auxv, _ := os.ReadFile(procfs.Path(pid, "auxv"))
		// Without smaps crashtui cannot tell which mappings are MADV_DONTDUMP: no core, rather
		// than one holding what the kernel's would leave out.
		smaps, err := elfinfo.ReadSmaps(pid)
		if err != nil {
			return fmt.Errorf("write core of %d: %w", pid, err)
		}
		// Every mapping is read in large chunks; the pages process_vm_readv cannot read through
		// /proc/PID/mem (FOLL_FORCE, like the kernel's own dumper), opened here once.
		mem := &procfs.Mem{PID: pid, Force: true}
		if err := mem.Open(); err != nil {
			return fmt.Errorf("write core of %d: %w", pid, err)
		}
		defer mem.Close()
		in := elfinfo.CoreInput{Arch: string(c.arch), PID: pid, PPID: p.PPID, UID: procfs.UID(pid),
			GID: procfs.GID(pid), Comm: procfs.Comm(pid), Args: strings.Join(p.Argv, " "), Signal: sig,
			SigCode: int(si.Code), SigAddr: si.Addr, SigErrno: int(si.Errno), Threads: threads, Maps: maps, Auxv: auxv,
			Filter: elfinfo.ReadCoreFilter(pid), Smaps: smaps, Mem: mem.ReadFull}
		path = filepath.Join(c.opts.CoresDir, "core."+strconv.Itoa(cr.Group)+"."+strconv.Itoa(pid))
		// Mode 0600, owned by crashtui's user (root), created O_EXCL|O_NOFOLLOW in a directory
		// checked again here (cmd checked it at flag time; it is re-walked for every core, so
		// a directory swapped meanwhile is refused, not written into).
		f, err := outfile.Create(path)
		if err != nil {
			return fmt.Errorf("write core of %d: %w", pid, err)
		}
		if err := elfinfo.WriteCore(f, in); err != nil {
			f.Abort()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write core of %d: %w", pid, err)
		}
		return nil
	})
	return path, err
}
