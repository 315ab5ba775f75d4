package crash

import (
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
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

// Options configure crash handling.
type Options struct {
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
	// LeaveUnrepaired keeps a fault whose handler returns without repairing it as it is: the
	// process takes it again and again, as it would without crashtui, and the crash is
	// reported after maxHandlerTries. Without it (Spindle's rule) such a fault is delivered as
	// if no handler were installed once the handler has failed: the process dies of it.
	LeaveUnrepaired bool
	// Resolver symbolizes (shared with stack sampling: nil makes one).
	Resolver *elfinfo.Resolver
}

// Stats are counters for benchmarks and the end of a run.
type Stats struct {
	Crashes, Handled, Groups int
	// First is the first fatal signal-delivery-stop, Last the last group decision.
	First, Last time.Time
	// Decide is the time each crash took from its signal-delivery-stop to its decision (key,
	// group, prlimit, log; core writing excluded), in order.
	Decide []time.Duration
	// Cores is the time spent writing cores.
	Cores time.Duration
}

// group is one crash group of this host, as the feature decides it: its number (Crash.Group,
// the first-seen order of its Key) and its representative (Crash.Representative), both
// decided here because the core policy needs them before the signal goes on. This is the one
// place they are decided: sessions.State takes them from the crash events.
type group struct {
	id  int
	rep int // the representative's pid; 0 while no member could have a core
}

// Crashes is the crash feature: the engine's Watcher. It catches every fatal signal at its
// signal-delivery-stop, keys it by crash site, groups it, applies Spindle's core policy
// (one core per site) and tells the crash, all before the signal goes on; it delivers a
// caught fault and follows the thread through its handler to tell a repaired (handled) fault
// from one that is not. Its fields are the loop thread's but stats (mu).
type Crashes struct {
	opts     Options
	resolver *elfinfo.Resolver
	// quick is resolver without DWARF loading: a crash is told from the symbol tables at once
	// and amended (CrashLines) when the line tables, loaded off the loop, arrive (lines.go).
	quick    *elfinfo.Resolver
	loading  int              // line-table loads under way
	awaiting []*awaitingCrash // crashes told while loads were under way, to be amended
	groups   map[string]*group
	ngroups  int
	crashed  map[int]bool   // pid: its crash is decided (the first faulting thread wins)
	faults   map[int]*fault // tid: a caught fault being judged
	log      *csv.Writer
	arch     arch.Arch
	sigret   int // rt_sigreturn's number on this arch

	mu    sync.Mutex
	stats Stats
}

// New makes the crash feature; give it to the engine as its Watcher (tracer.Options).
func New(o Options) *Crashes {
	c := &Crashes{opts: o, groups: map[string]*group{}, crashed: map[int]bool{}, faults: map[int]*fault{},
		arch: arch.Host(), sigret: -1, resolver: o.Resolver}
	if c.resolver == nil {
		c.resolver = elfinfo.NewResolver()
	}
	c.quick = c.resolver.Deferred()
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

// Stats returns a copy of the crash counters.
func (c *Crashes) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Decide = append([]time.Duration(nil), s.Decide...)
	return s
}

// fatalSignals are the signals whose default action dumps core and that a crash handler
// (Spindle, kernel.md §C) watches. SIGTRAP counts unless crashtui caused it.
var fatalSignals = map[int]bool{
	int(unix.SIGSEGV): true, int(unix.SIGBUS): true, int(unix.SIGFPE): true,
	int(unix.SIGILL): true, int(unix.SIGABRT): true, int(unix.SIGSYS): true, int(unix.SIGTRAP): true,
}

// disposition says what the kernel will do with sig for thread tid when it is delivered.
type disposition int

const (
	dispDefault disposition = iota // default action: for the fatal set, die (and dump core)
	dispCaught                     // a handler runs
	dispIgnored                    // discarded
)

func signalDisposition(pid, tid, sig int, si tracer.Siginfo) disposition {
	bit := uint64(1) << (sig - 1)
	blk, ign, cgt := procfs.SigMasks(pid, tid)
	caught, ignored, blocked := cgt&bit != 0, ign&bit != 0, blk&bit != 0
	// A synchronous fault that is blocked or ignored is forced to SIG_DFL
	// (kernel/signal.c force_sig_info_to_task): it kills.
	if !si.UserSent() && (blocked || ignored) {
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

// Signal is the Watcher's: every signal-delivery-stop. The stop's signal stays the kernel's
// while it decides (the engine has not consumed it).
func (c *Crashes) Signal(l *tracer.Loop, s *tracer.SignalStop) {
	sig := s.Sig
	if f := c.faults[s.TID()]; f != nil && f.watched() {
		if c.watchSignal(l, s, f) {
			return
		}
	}
	if !fatalSignals[sig] {
		return // delivered
	}
	si, err := s.Siginfo()
	if err != nil {
		return
	}
	switch signalDisposition(s.PID(), s.TID(), sig, si) {
	case dispIgnored:
		return
	case dispCaught:
		if f := c.faults[s.TID()]; si.UserSent() && (f == nil || !f.watched()) {
			// Sent with kill, tgkill or sigqueue (a raise(SIGTRAP), a profiler's signal) to a
			// handler: not a fault, nothing for the handler to repair. Delivered, not
			// followed: judging it would trace each such signal syscall by syscall.
			return
		}
		c.deliverCaught(l, s, si)
		return
	}
	if c.crashed[s.PID()] {
		return // another thread's fault already decided this process's fate
	}
	p, ok := l.Process(s.PID())
	if !ok {
		return
	}
	start := time.Now()
	regs, err := s.Regs()
	if err != nil {
		l.EmitErr(s.PID(), "crash registers", err)
		return
	}
	var cr sessions.Crash
	var u *unwound
	if f := c.faults[s.TID()]; f != nil && (f.same(sig, si, regs.PC()) || (si.UserSent() && int(si.PID) == s.PID())) {
		// The handler re-raised, or the fault came back with the default action (its handler
		// failed and crashtui delivered it as if there were none): the crash belongs to the
		// original site (kernel.md §C).
		cr, u = f.crash, f.unwound
		cr.Signal, cr.Code, cr.UserSent = tracer.SignalName(sig), tracer.SigCodeName(sig, si.Code), si.UserSent()
		cr.PC = sessions.Hex(regs.PC())
		cr.Regs = namedRegs(regs)
		cr.HandlerTries = f.tries
		cr.Unrepaired = f.unhandled
	} else {
		if f != nil && f.returned {
			c.emitHandled(l, f) // the thread went on past its old fault: that one was repaired
		}
		cr, u = c.describe(s.Thread, p, sig, si, regs)
	}
	delete(c.faults, s.TID())
	c.decide(l, s, p, &cr, u, sig, si, regs, start)
	s.Unfollow()
}

// TaskGone is the Watcher's: a thread that died is no longer followed (tids are reused).
func (c *Crashes) TaskGone(l *tracer.Loop, pid, tid int) {
	if f := c.faults[tid]; f != nil && f.pid == pid && !f.returned {
		delete(c.faults, tid)
	}
}

// ProcessGone is the Watcher's: a process ended.
func (c *Crashes) ProcessGone(l *tracer.Loop, pid int, ws unix.WaitStatus) {
	delete(c.crashed, pid)
	for tid, f := range c.faults {
		if f.pid != pid {
			continue
		}
		delete(c.faults, tid)
		// A fault whose handler returned and whose process did not die of that signal was
		// handled. One still inside its handler (the handler exited the process) is neither.
		if f.returned && !(ws.Signaled() && int(ws.Signal()) == f.sig) {
			c.emitHandled(l, f)
		}
	}
}

// unwound is what a crash was described from, kept while its modules' lines are pending so
// that the crash can be told again with them (lines.go).
type unwound struct {
	maps   []elfinfo.Mapping
	frames []elfinfo.Frame
	site   int // the frame the site is
}

// describe builds the crash record of a fatal or caught signal at th's current state: the
// site (module + link-time offset, or the abort message), the stack, the registers and the key.
// The unwound frames come back too when some of their lines are still to be loaded.
func (c *Crashes) describe(th tracer.Thread, p tracer.Process, sig int, si tracer.Siginfo, regs arch.Regs) (sessions.Crash, *unwound) {
	pid := th.PID()
	pc := regs.PC()
	cr := sessions.Crash{PID: pid, TID: th.TID(), Rank: p.Rank, Exe: p.Exe, Signal: tracer.SignalName(sig),
		Code: tracer.SigCodeName(sig, si.Code), Addr: sessions.Hex(si.Addr), PC: sessions.Hex(pc),
		UserSent: si.UserSent(), Regs: namedRegs(regs)}
	if si.UserSent() {
		cr.Addr = 0
	}
	maps, err := elfinfo.ReadMaps(pid)
	if err != nil {
		cr.Module, cr.Offset = "", sessions.Hex(pc)
		cr.Key = sessions.SiteKey(cr)
		return cr, nil
	}
	_, sp, fp, lr := regs.UnwindRegs()
	frames := c.quick.Unwind(pid, maps, pc, sp, fp, lr, string(c.arch), procfs.Reader(pid), c.opts.MaxFrames)
	if len(frames) == 0 {
		frames = []elfinfo.Frame{{PC: pc, Location: c.quick.Locate(pid, maps, pc)}}
	}
	cr.Stack = elfinfo.SessionFrames(frames)
	siteAt := 0
	if sig == int(unix.SIGABRT) {
		libc := libcPath(maps)
		cr.AbortMessage = c.abortMessage(pid, maps, libc)
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
	cr.Disasm = disasmAround(pid, c.arch, pc, frames[0].Function != "", frames[0].FuncOff)
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
	if err := procfs.ReadMem(pid, start, code); err != nil {
		// The tail may cross into an unmapped page: retry with just up to the fault.
		code = code[:pc-start+16]
		if err := procfs.ReadMem(pid, start, code); err != nil {
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

func namedRegs(r arch.Regs) map[string]sessions.Hex {
	m := make(map[string]sessions.Hex, len(r.Words))
	for _, nr := range r.Named() {
		m[nr.Name] = sessions.Hex(nr.Value)
	}
	return m
}

// decide groups a fatal crash, applies Spindle's core policy and emits the crash event, all
// before the signal proceeds (by PTRACE_EVENT_EXIT the kernel has already dumped). It runs in
// the Signal callback: whatever it waits for (the other threads, for a core) is waited for
// alone, so no other crash is decided in the middle of this one.
func (c *Crashes) decide(l *tracer.Loop, s *tracer.SignalStop, p tracer.Process, cr *sessions.Crash, u *unwound, sig int, si tracer.Siginfo, regs arch.Regs, start time.Time) {
	pid := s.PID()
	c.crashed[pid] = true
	g := c.groups[cr.Key]
	if g == nil {
		c.ngroups++
		g = &group{id: c.ngroups}
		c.groups[cr.Key] = g
	}
	// The representative is the first member whose core can be had: when cores are
	// crashtui's or deduplicated, a process that set its own RLIMIT_CORE to 0, or that is
	// not dumpable, never gets one. Until one is found, each member says why.
	limiting := c.opts.CoresDir != "" || c.opts.DedupKernelCores
	if g.rep == 0 {
		if limiting {
			cr.NoCore = coreBlocked(pid, c.opts.CoresDir != "")
		}
		if cr.NoCore == "" {
			g.rep = pid
			cr.Representative = true
		}
	}
	cr.Group = g.id
	if c.opts.CoresDir != "" || (c.opts.DedupKernelCores && !cr.Representative) {
		// Spindle, asked for: before a non-representative's fatal signal proceeds,
		// RLIMIT_CORE = 0, so the kernel writes at most one core per site; with --cores,
		// none at all (crashtui writes the representative's). Otherwise the job's own
		// core behaviour is left exactly as it was.
		if err := limitCore(pid); err != nil {
			l.EmitErr(pid, "limit core", err)
		}
	}
	decided := time.Since(start)
	var coring time.Duration
	if cr.Representative && c.opts.CoresDir != "" {
		cs := time.Now()
		path, err := c.writeCore(l, s, p, cr, sig, si, regs)
		coring = time.Since(cs)
		if err != nil {
			l.EmitErr(pid, "write core", err)
			cr.NoCore = sessions.NoCoreWriteFailed
		} else {
			cr.Core = &path
		}
	}
	if c.log != nil {
		// The key is "EXE|SITE": the exe may itself contain '|', so cut it off whole.
		site := strings.TrimPrefix(cr.Key, cr.Exe+"|")
		c.log.Write([]string{cr.Rank.String(), strconv.Itoa(cr.PID), strconv.Itoa(cr.Group),
			strconv.FormatBool(cr.Representative), cr.Signal, sessions.CSVCell(site)})
		c.log.Flush()
	}
	c.mu.Lock()
	if c.stats.First.IsZero() {
		c.stats.First = start
	}
	c.stats.Decide = append(c.stats.Decide, decided)
	c.stats.Cores += coring
	c.stats.Crashes++
	c.stats.Groups = c.ngroups
	c.stats.Last = time.Now()
	c.mu.Unlock()
	l.Emit(*cr)
	c.loadLines(l, *cr, u)
}
