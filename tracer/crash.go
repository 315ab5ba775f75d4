package tracer

import (
	"encoding/binary"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
)

// GroupBy says how crashes are grouped.
type GroupBy string

const (
	// GroupBySite keys a crash by exe|module+offset (Spindle's key) or its abort message.
	GroupBySite GroupBy = "site"
	// GroupByStack splits a site by its top StackKeyFrames symbolized frames (ABRT's duphash):
	// one faulting pc in memcpy can be many bugs. The stack hash is part of the key.
	GroupByStack GroupBy = "stack"
)

// DefaultStackKeyFrames is how many frames GroupByStack hashes unless told otherwise.
const DefaultStackKeyFrames = 3

// defaultMaxFrames bounds the unwound stack carried in a crash event.
const defaultMaxFrames = 32

// CrashOptions configure crash handling.
type CrashOptions struct {
	// Symbolize adds function, file and line to crash events (they are always added; kept
	// for callers that set it).
	Symbolize bool
	// GroupBy is GroupBySite ("" means site) or GroupByStack.
	GroupBy GroupBy
	// StackKeyFrames is the number of frames in a GroupByStack key (0: DefaultStackKeyFrames).
	StackKeyFrames int
	// MaxFrames bounds Crash.Stack (0: 32).
	MaxFrames int
	// CoresDir, when set, makes crashtui write each group representative's core itself as
	// CoresDir/core.<group>.<pid> and suppress the kernel's cores for every crashing process.
	CoresDir string
	// DedupKernelCores sets RLIMIT_CORE to 0 for every crashing process but each group's
	// representative, so the kernel writes one core per site. Without it (and without
	// CoresDir) crashtui never touches a process's core limit.
	DedupKernelCores bool
	// CrashLog receives one CSV record per crash: rank,pid,group,representative,signal,site.
	// The caller writes the header and closes it.
	CrashLog io.Writer
}

// CrashStats are counters for benchmarks and the end of a run.
type CrashStats struct {
	Crashes, Handled, Groups int
	// First is the first fatal signal-delivery-stop, Last the last group decision.
	First, Last time.Time
	// Decide is the time each crash took from its signal-delivery-stop to its decision (key,
	// group, prlimit, log; core writing excluded), in order.
	Decide []time.Duration
	// Cores is the time spent writing cores.
	Cores time.Duration
}

// crashGroup is the tracer's view of a group: the State reducer numbers groups the same way
// (first-seen order), so ids agree.
type crashGroup struct {
	id    int
	rep   int
	count int
	core  *string
}

// crashState is the tracer's crash bookkeeping (owned by the loop goroutine).
type crashState struct {
	opts     CrashOptions
	resolver *elfinfo.Resolver
	// quick is resolver without DWARF loading: a crash is told from the symbol tables at once
	// and amended (CrashLines) when the line tables, loaded off the loop, arrive (lines.go).
	quick    *elfinfo.Resolver
	loading  int              // line-table loads under way
	awaiting []*awaitingCrash // crashes told while loads were under way, to be amended
	groups   map[string]*crashGroup
	ngroups  int
	crashed  map[int]bool    // pid: its crash is decided (the first faulting thread wins)
	coring   map[int][]*task // pid: a core is being written; threads that stop meanwhile are held
	faults   map[int]*fault  // tid: a caught fault being judged
	sysgood  map[int]bool    // tid: PTRACE_O_TRACESYSGOOD is set (syscall-stops are SIGTRAP|0x80)
	busy     bool            // a crash is being decided (injecting, writing a core)
	deferred []*task         // fatal stops held while busy
	log      *csv.Writer
	stats    CrashStats
	arch     arch.Arch
	sigret   int // rt_sigreturn's number on this arch
}

func newCrashState(o *CrashOptions) *crashState {
	c := &crashState{resolver: elfinfo.NewResolver(), groups: map[string]*crashGroup{},
		crashed: map[int]bool{}, coring: map[int][]*task{}, faults: map[int]*fault{}, sysgood: map[int]bool{}, arch: arch.Host(), sigret: -1}
	c.quick = c.resolver.Deferred()
	if o != nil {
		c.opts = *o
	}
	if c.opts.GroupBy == "" {
		c.opts.GroupBy = GroupBySite
	}
	if c.opts.StackKeyFrames <= 0 {
		c.opts.StackKeyFrames = DefaultStackKeyFrames
	}
	if c.opts.MaxFrames <= 0 {
		c.opts.MaxFrames = defaultMaxFrames
	}
	if c.opts.MaxFrames < c.opts.StackKeyFrames {
		c.opts.MaxFrames = c.opts.StackKeyFrames
	}
	if c.opts.CrashLog != nil {
		c.log = csv.NewWriter(c.opts.CrashLog)
	}
	if nr, ok := arch.SyscallNumber(c.arch, "rt_sigreturn"); ok {
		c.sigret = nr
	}
	return c
}

// CrashStats returns a copy of the crash counters.
func (t *Tracer) CrashStats() CrashStats {
	var s CrashStats
	t.do(func() error {
		s = t.crash.stats
		s.Decide = append([]time.Duration(nil), s.Decide...)
		return nil
	})
	return s
}

// fatalSignals are the signals whose default action dumps core and that a crash handler
// (Spindle, kernel.md §C) watches. SIGTRAP counts unless crashtui caused it.
var fatalSignals = map[int]bool{
	int(unix.SIGSEGV): true, int(unix.SIGBUS): true, int(unix.SIGFPE): true,
	int(unix.SIGILL): true, int(unix.SIGABRT): true, int(unix.SIGSYS): true, int(unix.SIGTRAP): true,
}

// siginfo is the part of siginfo_t a crash needs.
type siginfo struct {
	Signo, Errno, Code int32
	Addr               uint64 // si_addr for faults
	PID, UID           int32  // sender for si_code <= 0
}

// decodeSiginfo reads the 128-byte siginfo_t of a 64-bit arch.
func decodeSiginfo(buf []byte) siginfo {
	le := binary.LittleEndian
	si := siginfo{Signo: int32(le.Uint32(buf[0:])), Errno: int32(le.Uint32(buf[4:])), Code: int32(le.Uint32(buf[8:]))}
	si.Addr = le.Uint64(buf[16:])
	si.PID, si.UID = int32(le.Uint32(buf[16:])), int32(le.Uint32(buf[20:]))
	return si
}

// userSent is true for kill/tkill/sigqueue (si_code <= 0, include/uapi/asm-generic/siginfo.h).
func (si siginfo) userSent() bool { return si.Code <= 0 }

// disposition says what the kernel will do with sig for thread tid when it is re-injected.
type disposition int

const (
	dispDefault disposition = iota // default action: for the fatal set, die (and dump core)
	dispCaught                     // a handler runs
	dispIgnored                    // discarded
)

func signalDisposition(pid, tid, sig int, si siginfo) disposition {
	bit := uint64(1) << (sig - 1)
	blk, ign, cgt := sigMasks(pid, tid)
	caught, ignored, blocked := cgt&bit != 0, ign&bit != 0, blk&bit != 0
	// A synchronous fault that is blocked or ignored is forced to SIG_DFL
	// (kernel/signal.c force_sig_info_to_task): it kills.
	if !si.userSent() && (blocked || ignored) {
		return dispDefault
	}
	switch {
	case ignored:
		return dispIgnored
	case caught:
		return dispCaught
	}
	return dispDefault
}

// rawRegs reads the thread's registers as arch.Regs (getRegs: the words of unix.PtraceRegs).
func rawRegs(tid int, a arch.Arch) (arch.Regs, error) {
	r, err := getRegs(tid)
	if err == nil && r.Arch != a {
		return r, fmt.Errorf("getregs %d: %s registers, want %s", tid, r.Arch, a)
	}
	return r, err
}

// onSignal runs at every signal-delivery-stop that is not crashtui's own (and, for threads
// whose caught fault is being judged, at their syscall-stops and single-step traps).
func (t *Tracer) onSignal(tk *task, sig int) {
	c := t.crash
	if f := c.faults[tk.tid]; f != nil && f.watched() {
		if t.watchStop(tk, f, sig) {
			return
		}
	}
	if sig == sigSyscallStop {
		// A syscall-stop (PTRACE_O_TRACESYSGOOD) of a thread no longer followed: not a
		// signal; resume it without one.
		tk.sig, tk.stopped = 0, stopEvent
		return
	}
	if _, ok := c.coring[tk.pid]; ok {
		// Its process is being dumped: hold the thread until the core is written (its
		// signal is re-injected then; the process dies anyway).
		tk.want = true
		c.coring[tk.pid] = append(c.coring[tk.pid], tk)
		return
	}
	if !fatalSignals[sig] {
		return
	}
	if c.busy {
		// Another crash is being decided and its waits (an injected prlimit64, stopping
		// threads for a core) brought this one: decide it afterwards, so events, group ids
		// and the crash log keep decision order.
		tk.want = true
		c.deferred = append(c.deferred, tk)
		return
	}
	si, err := getSiginfo(tk.tid)
	if err != nil {
		return
	}
	switch signalDisposition(tk.pid, tk.tid, sig, si) {
	case dispIgnored:
		return
	case dispCaught:
		t.deliverCaught(tk, sig, si)
		return
	}
	if c.crashed[tk.pid] || t.procs[tk.pid] == nil {
		return // another thread's fault already decided this process's fate
	}
	start := time.Now()
	regs, err := rawRegs(tk.tid, c.arch)
	if err != nil {
		t.emitErr(tk.pid, "crash registers", err)
		return
	}
	var cr sessions.Crash
	var u *unwound
	if f := c.faults[tk.tid]; f != nil && (f.same(sig, si, regs.PC()) || (si.userSent() && int(si.PID) == tk.pid)) {
		// The handler re-raised, or the fault came back with the default action: the crash
		// belongs to the original site (kernel.md §C).
		cr, u = f.crash, f.unwound
		cr.Signal, cr.Code, cr.UserSent = signalName(sig), sigCodeName(sig, si.Code), si.userSent()
		cr.PC = sessions.Hex(regs.PC())
		cr.Regs = namedRegs(regs)
	} else {
		if f != nil && f.returned {
			t.emitHandled(f) // the thread went on past its old fault: that one was repaired
		}
		cr, u = t.describe(tk, sig, si, regs)
	}
	delete(c.faults, tk.tid)
	t.decide(tk, &cr, u, sig, si, regs, start)
}

// unwound is what a crash was described from, kept while its modules' lines are pending so
// that the crash can be told again with them (lines.go).
type unwound struct {
	maps   []elfinfo.Mapping
	frames []elfinfo.Frame
	site   int // the frame the site is
}

// describe builds the crash record of a fatal or caught signal at tk's current state: the
// site (module + link-time offset, or the abort message), the stack, the registers and the key.
// The unwound frames come back too when some of their lines are still to be loaded.
func (t *Tracer) describe(tk *task, sig int, si siginfo, regs arch.Regs) (sessions.Crash, *unwound) {
	c := t.crash
	p := t.procs[tk.pid]
	pc := regs.PC()
	cr := sessions.Crash{PID: tk.pid, TID: tk.tid, Rank: sessions.NoRank, Signal: signalName(sig),
		Code: sigCodeName(sig, si.Code), Addr: sessions.Hex(si.Addr), PC: sessions.Hex(pc),
		UserSent: si.userSent(), Regs: namedRegs(regs)}
	if p != nil {
		cr.Rank, cr.Exe = p.rank, p.exe
	}
	if si.userSent() {
		cr.Addr = 0
	}
	maps, err := elfinfo.ReadMaps(tk.pid)
	if err != nil {
		t.emitErr(tk.pid, "crash maps", err)
		cr.Module, cr.Offset = "", sessions.Hex(pc)
		cr.Key = sessions.SiteKey(cr)
		return cr, nil
	}
	u := unwindRegsOf(regs)
	frames := c.quick.Unwind(tk.pid, maps, pc, u.sp, u.fp, u.lr, string(c.arch), vmReader(tk.pid), c.opts.MaxFrames)
	if len(frames) == 0 {
		frames = []elfinfo.Frame{{PC: pc, Location: c.quick.Locate(tk.pid, maps, pc)}}
	}
	cr.Stack = stackFrames(frames)
	siteAt := 0
	if sig == int(unix.SIGABRT) {
		libc := libcPath(maps)
		cr.AbortMessage = t.abortMessage(tk.pid, maps, libc)
		if cr.AbortMessage == "" {
			// No message: every abort would share raise's pc inside libc; key by the first
			// frame outside libc (its caller).
			for i, f := range frames[1:] {
				if f.Module != "" && f.Module != libc {
					siteAt = i + 1
					break
				}
			}
		}
	}
	site := frames[siteAt].Location
	cr.Module, cr.Offset, cr.Function, cr.File, cr.Line = site.Module, sessions.Hex(site.Offset), site.Function, site.File, site.Line
	cr.Key = crashKey(cr, c.opts.GroupBy, stackHash(frames, c.opts.StackKeyFrames))
	cr.Disasm = disasmAround(tk.pid, c.arch, pc, frames[0].Function != "", frames[0].FuncOff)
	for _, f := range frames {
		if f.LinesPending {
			return cr, &unwound{maps: maps, frames: frames, site: siteAt}
		}
	}
	return cr, nil
}

// disasmAround decodes the code around pc: from the start of its function when the symbol is
// known (x86 instructions only line up when decoded from a boundary), else from pc itself.
// It keeps a few instructions before the fault and a few after.
func disasmAround(pid int, a arch.Arch, pc uint64, known bool, funcOff uint64) []sessions.Insn {
	const before, after, maxBack = 8, 6, 1024
	start := pc
	if known && funcOff <= maxBack {
		start = pc - funcOff
	} else if a != arch.AMD64 {
		start = pc - 4*before // fixed-size instructions: any aligned start works
	}
	code := make([]byte, pc-start+16*after)
	if err := readMem(pid, start, code); err != nil {
		// The tail may cross into an unmapped page: retry with just up to the fault.
		code = code[:pc-start+16]
		if err := readMem(pid, start, code); err != nil {
			return nil
		}
	}
	insts := arch.Disasm(a, code, start, 4096)
	at := -1
	for i, in := range insts {
		if in.PC == pc {
			at = i
			break
		}
	}
	if at < 0 {
		return nil // pc is not on a decoded boundary: showing misaligned code would mislead
	}
	lo, hi := max(0, at-before), min(len(insts), at+after+1)
	out := make([]sessions.Insn, 0, hi-lo)
	for _, in := range insts[lo:hi] {
		out = append(out, sessions.Insn{PC: sessions.Hex(in.PC), Bytes: hex.EncodeToString(in.Bytes),
			Text: in.Text, Fault: in.PC == pc})
	}
	return out
}

// crashKey is exe|module+offset or exe|abort:message (sessions.SiteKey, Spindle's key), plus
// "|stack:<hash>" (stackHash) when grouping by stack.
func crashKey(cr sessions.Crash, by GroupBy, hash string) string {
	cr.Key = ""
	key := sessions.SiteKey(cr)
	if by == GroupByStack {
		key += "|stack:" + hash
	}
	return key
}

// stackHash hashes the top n frames by their ELF symbol (module+offset where there is none),
// so that rebuilt binaries with the same call path hash alike only when their names match.
// The symbol tables answer the same with or without DWARF loaded, and a frame is one frame
// whatever was inlined into it: a crash told before its lines keys like one told after.
func stackHash(frames []elfinfo.Frame, n int) string {
	h := fnv.New64a()
	for i, f := range frames {
		if i >= n {
			break
		}
		if f.Symbol != "" {
			fmt.Fprintf(h, "%s|%s\n", sessions.ModuleBase(f.Module), f.Symbol)
		} else {
			fmt.Fprintf(h, "%s+%#x\n", sessions.ModuleBase(f.Module), f.Offset)
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

func stackFrames(frames []elfinfo.Frame) []sessions.Frame {
	out := make([]sessions.Frame, 0, len(frames))
	for _, f := range frames {
		fr := sessions.Frame{PC: sessions.Hex(f.PC), Module: f.Module, Offset: sessions.Hex(f.Offset),
			Function: f.Function, File: f.File, Line: f.Line}
		if f.Function != "" {
			fr.FuncOff = sessions.Hex(f.FuncOff)
		}
		// Code inlined into its callers: one frame per function, as gdb shows them (the
		// callers' call lines are not in crashtui's tables: file and line stay empty). An
		// alias of the same code (__libc_read inlined into __libc_read) is not a frame.
		var names []string
		prev := fr.Function
		for _, n := range f.InlinedInto {
			if n != prev {
				names = append(names, n)
				prev = n
			}
		}
		fr.Inlined = len(names) > 0
		out = append(out, fr)
		for i, name := range names {
			out = append(out, sessions.Frame{PC: fr.PC, Module: fr.Module, Offset: fr.Offset,
				Function: name, Inlined: i < len(names)-1})
		}
	}
	return out
}

func namedRegs(r arch.Regs) map[string]sessions.Hex {
	m := make(map[string]sessions.Hex, len(r.Words))
	for _, nr := range r.Named() {
		m[nr.Name] = sessions.Hex(nr.Value)
	}
	return m
}

// decide groups a fatal crash, applies Spindle's core policy and emits the crash event, all
// before the caller re-injects the signal (by PTRACE_EVENT_EXIT the kernel has already dumped).
func (t *Tracer) decide(tk *task, cr *sessions.Crash, u *unwound, sig int, si siginfo, regs arch.Regs, start time.Time) {
	c := t.crash
	c.crashed[tk.pid] = true
	if c.stats.First.IsZero() {
		c.stats.First = start
	}
	g := c.groups[cr.Key]
	if g == nil {
		c.ngroups++
		g = &crashGroup{id: c.ngroups}
		c.groups[cr.Key] = g
	}
	// The representative is the first member whose core can be had: when cores are
	// crashtui's or deduplicated, a process that set its own RLIMIT_CORE to 0, or that is
	// not dumpable, never gets one. Until one is found, each member says why.
	limiting := c.opts.CoresDir != "" || c.opts.DedupKernelCores
	if g.rep == 0 {
		if limiting {
			cr.NoCore = coreBlocked(tk.pid, c.opts.CoresDir != "")
		}
		if cr.NoCore == "" {
			g.rep = tk.pid
			cr.Representative = true
		}
	}
	g.count++
	cr.Group = g.id
	// Injection and core writing pump other wait statuses: crashes they bring are decided
	// afterwards, so events, group ids and the crash log keep decision order.
	c.busy = true
	defer t.runDeferred()
	if c.opts.CoresDir != "" || (c.opts.DedupKernelCores && !cr.Representative) {
		// Spindle, asked for: before a non-representative's fatal signal proceeds,
		// RLIMIT_CORE = 0, so the kernel writes at most one core per site; with --cores,
		// none at all (crashtui writes the representative's). Otherwise the job's own
		// core behaviour is left exactly as it was.
		if err := t.limitCore(tk); err != nil {
			t.emitErr(tk.pid, "limit core", err)
		}
	}
	c.stats.Decide = append(c.stats.Decide, time.Since(start))
	if cr.Representative && c.opts.CoresDir != "" {
		cs := time.Now()
		path, err := t.writeCore(tk, cr, sig, si, regs)
		c.stats.Cores += time.Since(cs)
		if err != nil {
			t.emitErr(tk.pid, "write core", err)
			cr.NoCore = sessions.NoCoreWriteFailed
		} else {
			cr.Core, g.core = &path, &path
		}
	}
	if c.log != nil {
		// The key is "EXE|SITE": the exe may itself contain '|', so cut it off whole.
		site := strings.TrimPrefix(cr.Key, cr.Exe+"|")
		c.log.Write([]string{cr.Rank.String(), strconv.Itoa(cr.PID), strconv.Itoa(cr.Group),
			strconv.FormatBool(cr.Representative), cr.Signal, sessions.CSVCell(site)})
		c.log.Flush()
	}
	c.stats.Crashes++
	c.stats.Groups = c.ngroups
	c.stats.Last = time.Now()
	t.emit(*cr)
	t.loadLines(*cr, u)
	c.busy = false
}

// runDeferred decides the crashes held while a core was being written, in arrival order.
func (t *Tracer) runDeferred() {
	c := t.crash
	for len(c.deferred) > 0 && !c.busy {
		tk := c.deferred[0]
		c.deferred = c.deferred[1:]
		if t.tasks[tk.tid] != tk {
			continue
		}
		if tk.stopped != stopSignal {
			if tk.stopped != running {
				t.resumeReported(tk, "crash resume") // no longer a signal to decide: do not leave it held
			}
			continue
		}
		tk.want = false
		t.onSignal(tk, tk.sig)
		if !tk.want && tk.stopped != running {
			t.resumeReported(tk, "crash resume")
		}
	}
}

// onExit is called when a process is gone.
func (c *crashState) onExit(t *Tracer, p *proc, ws unix.WaitStatus) {
	delete(c.crashed, p.pid)
	delete(c.coring, p.pid)
	for tid := range c.sysgood {
		if t.tasks[tid] == nil {
			delete(c.sysgood, tid) // tids are reused: a new thread starts without the option
		}
	}
	for tid, f := range c.faults {
		if f.pid != p.pid {
			continue
		}
		delete(c.faults, tid)
		// A fault whose handler returned and whose process did not die of that signal was
		// handled. One still inside its handler (the handler exited the process) is neither.
		if f.returned && !(ws.Signaled() && int(ws.Signal()) == f.sig) {
			t.emitHandled(f)
		}
	}
}

// sigCodeName names si_code for the fatal signals (include/uapi/asm-generic/siginfo.h).
func sigCodeName(sig int, code int32) string {
	switch code {
	case 0:
		return "SI_USER"
	case -1:
		return "SI_QUEUE"
	case -6:
		return "SI_TKILL"
	case 0x80:
		return "SI_KERNEL"
	}
	names := map[int][]string{
		int(unix.SIGSEGV): {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR"},
		int(unix.SIGBUS):  {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"},
		int(unix.SIGFPE):  {"FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", "FPE_FLTUNK", "FPE_CONDTRAP"},
		int(unix.SIGILL):  {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"},
		int(unix.SIGTRAP): {"TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF"},
		int(unix.SIGSYS):  {"SYS_SECCOMP", "SYS_USER_DISPATCH"},
	}
	if n := names[sig]; code >= 1 && int(code) <= len(n) {
		return n[code-1]
	}
	return fmt.Sprintf("code %d", code)
}
