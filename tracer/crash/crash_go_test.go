package crash

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestCrashGo: crash sites and handled faults of a Go program on whichever architecture runs
// it (the QEMU stages run it on real arm64 and ppc64le kernels; the C crash suite, cross-built
// on the host, runs there too: TestGuestCrashSuite): two processes fault at one site with SIGSEGV back at SIG_DFL,
// one faults inside Go's own SIGSEGV handler's reach and recovers (a handled fault, as a
// JVM safepoint is), and one is killed with SIGSEGV from outside. crashtui writes one core per
// group, for the architecture it runs on.
func TestCrashGo(t *testing.T) {
	bin := tracertest.GuestProgram(t, "CRASHTUI_CRASHPROG", "crashprog")
	type proc struct {
		*tracertest.Piped
		mode string
	}
	tracertest.AllowCores(t)
	var procs []*proc
	pgid := 0
	for _, mode := range []string{"segv", "segv", "recover", "wait"} {
		p := &proc{tracertest.StartPiped(t, pgid, bin, mode), mode}
		if pgid == 0 {
			pgid = p.PID
		}
		procs = append(procs, p)
	}
	// In a QEMU guest (throw-away: core_pattern may be changed) one more crashprog, not
	// traced, lets the kernel write its own core at the same site, to compare with ours.
	var kcore string
	var untraced *proc
	if os.Getenv("CRASHTUI_GUEST_CPU") != "" {
		if err := os.WriteFile("/proc/sys/kernel/core_pattern", []byte("/tmp/kcore.%p"), 0); err != nil {
			t.Fatal(err)
		}
		untraced = &proc{tracertest.StartPiped(t, 0, bin, "segv"), "segv"}
		if err := unix.Prlimit(untraced.PID, unix.RLIMIT_CORE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil); err != nil {
			t.Fatal(err)
		}
		io.WriteString(untraced.In, "go\n")
		untraced.Cmd.Wait()
		kcore = "/tmp/kcore." + strconv.Itoa(untraced.PID)
	}

	log := &tracertest.EventLog{}
	cores := t.TempDir()
	tr := tracer.New(tracer.Options{Emit: log.Emit, Watcher: New(Options{CoresDir: cores})})
	t.Cleanup(func() { tr.Close() })
	job, _ := tracer.ParseJob("pgid:" + strconv.Itoa(pgid))
	if res, err := tr.Attach(job); err != nil || res.Processes != len(procs) {
		t.Fatalf("attach: %+v %v", res, err)
	}
	for _, p := range procs {
		if p.mode == "wait" {
			if err := unix.Kill(p.PID, unix.SIGSEGV); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := io.WriteString(p.In, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		if p.mode == "recover" {
			if l := p.Line(t); l != "recovered" {
				t.Errorf("recover: %q, want \"recovered\": the handled fault did not let it go on", l)
			}
			p.In.Close() // it exits 0 at EOF
		}
	}
	select {
	case <-tr.JobDone():
	case <-patience.After(60 * time.Second):
		t.Fatal("the job did not end")
	}

	mode := map[int]string{}
	for _, p := range procs {
		mode[p.PID] = p.mode
	}
	crashes := map[string][]sessions.Crash{}
	handled := map[string]int{}
	exits := map[string][]string{}
	for _, e := range log.Events() {
		switch b := e.Body.(type) {
		case sessions.Crash:
			crashes[mode[b.PID]] = append(crashes[mode[b.PID]], b)
		case sessions.Handled:
			handled[mode[b.PID]]++
		case sessions.Exit:
			how := b.Signal
			if b.Code != nil {
				how = "exit " + strconv.Itoa(*b.Code)
			}
			exits[mode[b.PID]] = append(exits[mode[b.PID]], how)
		case sessions.Error:
			t.Errorf("tracer error: %+v", b)
		}
	}
	for m, cs := range crashes {
		for _, c := range cs {
			t.Logf("%s: pid %d %s %s key %s group %d representative %v", m, c.PID, c.Signal, c.Code, c.Key, c.Group, c.Representative)
		}
	}
	t.Logf("handled %v exits %v", handled, exits)
	segv := crashes["segv"]
	if len(segv) != 2 || segv[0].Key != segv[1].Key || segv[0].Group != segv[1].Group ||
		segv[0].Representative == segv[1].Representative {
		t.Fatalf("segv crashes %+v: want two at one key and group, one representative", segv)
	}
	for _, c := range segv {
		if c.Signal != "SIGSEGV" || c.Code != "SEGV_MAPERR" || c.Addr != 0 || c.UserSent ||
			c.Module != bin || !strings.Contains(c.Key, bin) {
			t.Errorf("segv crash %+v: want SIGSEGV SEGV_MAPERR at address 0 in %s", c, bin)
		}
	}
	if w := crashes["wait"]; len(w) != 1 || !w[0].UserSent || w[0].Signal != "SIGSEGV" || w[0].Group == segv[0].Group {
		t.Errorf("killed from outside: %+v, want one user-sent SIGSEGV in a group of its own", w)
	}
	if len(crashes["recover"]) != 0 || handled["recover"] == 0 {
		t.Errorf("recover: %d crashes and %d handled faults, want 0 and at least 1", len(crashes["recover"]), handled["recover"])
	}
	// One core per group, written by crashtui for its representative, for this architecture.
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "ppc64le": elf.EM_PPC64}[runtime.GOARCH]
	for _, c := range append(segv, crashes["wait"]...) {
		if !c.Representative {
			if c.Core != nil {
				t.Errorf("pid %d is no representative but has core %s", c.PID, *c.Core)
			}
			continue
		}
		if c.Core == nil {
			t.Errorf("representative %d has no core", c.PID)
			continue
		}
		f, err := elf.Open(*c.Core)
		if err != nil {
			t.Errorf("core of %d: %v", c.PID, err)
			continue
		}
		notes, loads := 0, 0
		for _, p := range f.Progs {
			switch p.Type {
			case elf.PT_NOTE:
				notes++
			case elf.PT_LOAD:
				loads++
			}
		}
		if f.Type != elf.ET_CORE || f.Machine != machine || notes != 1 || loads == 0 {
			t.Errorf("core of %d: type %v machine %v, %d notes, %d loads; want an %v core", c.PID, f.Type, f.Machine, notes, loads, machine)
		}
		f.Close()
	}
	if kcore != "" {
		// The kernel's core of the same crash site: the crashing thread's NT_PRSTATUS has the
		// size of ours and the pc at the same place (pr_reg at 112; rip, pc or nip).
		pcIndex := map[string]int{"amd64": 16, "arm64": 32, "ppc64le": 32}[runtime.GOARCH]
		var rep sessions.Crash
		for _, c := range segv {
			if c.Representative {
				rep = c
			}
		}
		kn, kpc := prstatusPC(t, kcore, pcIndex)
		on, opc := prstatusPC(t, *rep.Core, pcIndex)
		t.Logf("NT_PRSTATUS: kernel %d bytes pc %#x, crashtui %d bytes pc %#x (crash pc %#x)", kn, kpc, on, opc, uint64(rep.PC))
		if kn != on || kpc != uint64(rep.PC) || opc != uint64(rep.PC) {
			t.Errorf("crashtui's core disagrees with the kernel's: NT_PRSTATUS %d vs %d bytes, pc %#x vs %#x (crash pc %#x)", on, kn, opc, kpc, uint64(rep.PC))
		}
	}
	if ents, _ := os.ReadDir(cores); len(ents) != 2 {
		t.Errorf("%d files in the cores directory, want one per group (2)", len(ents))
	}

	want := map[string]string{"segv": "SIGSEGV SIGSEGV", "wait": "SIGSEGV", "recover": "exit 0"}
	for m, w := range want {
		if got := strings.Join(exits[m], " "); got != w {
			t.Errorf("%s exits: %q, want %q", m, got, w)
		}
	}
}

// prstatusPC returns the size of the first NT_PRSTATUS note of an ELF core (the crashing
// thread) and the register at pcIndex of its pr_reg (offset 112 in elf_prstatus on the
// 64-bit architectures).
func prstatusPC(t *testing.T, path string, pcIndex int) (int, uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("core %s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			t.Fatalf("core %s notes: %v", path, err)
		}
		for len(b) >= 12 {
			namesz, descsz, typ := le32(b), le32(b[4:]), le32(b[8:])
			off := 12 + (namesz+3)&^3
			if off+descsz > len(b) {
				break
			}
			desc := b[off : off+descsz]
			if typ == 1 && 112+8*pcIndex+8 <= len(desc) { // NT_PRSTATUS
				return descsz, uint64(le32(desc[112+8*pcIndex:])) | uint64(le32(desc[116+8*pcIndex:]))<<32
			}
			b = b[off+(descsz+3)&^3:]
		}
	}
	t.Fatalf("core %s: no NT_PRSTATUS", path)
	return 0, 0
}

func le32(b []byte) int {
	return int(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

// TestCrashRepresentativeHonoursCoreLimit: with --cores, a process that set its own
// RLIMIT_CORE to 0 never gets a core, even when it crashes first at its site: the group's
// representative, and its only core, is the first member whose limit allows one. Without
// --cores or dedup, no crashing process's limit is touched.
func TestCrashRepresentativeHonoursCoreLimit(t *testing.T) {
	bin := tracertest.GuestProgram(t, "CRASHTUI_CRASHPROG", "crashprog")
	tracertest.AllowCores(t)
	t.Chdir(t.TempDir())
	var ps []*tracertest.Piped
	pgid := 0
	for range 3 {
		p := tracertest.StartPiped(t, pgid, bin, "segv")
		if pgid == 0 {
			pgid = p.PID
		}
		ps = append(ps, p)
	}
	// The first to crash refused cores itself.
	if err := unix.Prlimit(ps[0].PID, unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}, nil); err != nil {
		t.Fatal(err)
	}
	log := &tracertest.EventLog{}
	cores := t.TempDir()
	tr := tracer.New(tracer.Options{Emit: log.Emit, Watcher: New(Options{CoresDir: cores})})
	t.Cleanup(func() { tr.Close() })
	job, _ := tracer.ParseJob("pgid:" + strconv.Itoa(pgid))
	if _, err := tr.Attach(job); err != nil {
		t.Fatal(err)
	}
	crashed := func(pid int) bool {
		for _, e := range log.Events() {
			if c, ok := e.Body.(sessions.Crash); ok && c.PID == pid {
				return true
			}
		}
		return false
	}
	for _, p := range ps {
		io.WriteString(p.In, "go\n")
		for deadline := time.Now().Add(10 * time.Second); !crashed(p.PID) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	select {
	case <-tr.JobDone():
	case <-patience.After(30 * time.Second):
		t.Fatal("the job did not end")
	}
	rep := map[int]sessions.Crash{}
	for _, e := range log.Events() {
		if c, ok := e.Body.(sessions.Crash); ok {
			rep[c.PID] = c
		}
	}
	if c := rep[ps[0].PID]; c.Representative || c.Core != nil {
		t.Errorf("pid %d (RLIMIT_CORE 0, first to crash): representative %v, core %v; want neither", c.PID, c.Representative, c.Core)
	}
	if c := rep[ps[1].PID]; !c.Representative || c.Core == nil {
		t.Errorf("pid %d (the first member that allows a core): representative %v, core %v; want both", c.PID, c.Representative, c.Core)
	}
	if c := rep[ps[2].PID]; c.Representative || c.Core != nil {
		t.Errorf("pid %d: representative %v, core %v; want neither", c.PID, c.Representative, c.Core)
	}
	if ents, _ := os.ReadDir(cores); len(ents) != 1 {
		t.Errorf("%d cores written, want 1", len(ents))
	}
}

// TestCoreNoLargerThanKernels: crashtui's core of a crashing C program is no larger than the
// core the kernel writes for the same program under the same coredump_filter (before, file
// mappings were written whole: 24% larger), and gdb still shows the crash site.
func TestCoreNoLargerThanKernels(t *testing.T) {
	if pat, err := os.ReadFile("/proc/sys/kernel/core_pattern"); err != nil || strings.TrimSpace(string(pat)) != "core" {
		t.Skipf("core_pattern is %q, not \"core\": the kernel's core cannot be found to compare (this machine's setting, left alone)", pat)
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid"); strings.TrimSpace(string(b)) != "0" {
		t.Skip("core_uses_pid is set: the kernel's core has another name")
	}
	tracertest.AllowCores(t)
	segv := tracertest.DemoProgram(t, "segv")
	dir := t.TempDir()
	kernel := exec.Command(segv)
	kernel.Dir = dir
	if err := kernel.Run(); err == nil {
		t.Fatal("segv did not crash")
	}
	kst, err := os.Stat(filepath.Join(dir, "core"))
	if err != nil {
		t.Fatalf("the kernel wrote no core: %v", err)
	}
	cores := t.TempDir()
	tr := tracer.New(tracer.Options{Watcher: New(Options{CoresDir: cores})})
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Launch(tracer.LaunchSpec{N: 1, Argv: []string{segv}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.JobDone():
	case <-patience.After(30 * time.Second):
		t.Fatal("segv did not end")
	}
	ents, _ := os.ReadDir(cores)
	if len(ents) != 1 {
		t.Fatalf("%d cores from crashtui, want 1", len(ents))
	}
	ours := filepath.Join(cores, ents[0].Name())
	ost, _ := os.Stat(ours)
	t.Logf("core sizes: crashtui %d, kernel %d (ratio %.3f)", ost.Size(), kst.Size(), float64(ost.Size())/float64(kst.Size()))
	if ost.Size() > kst.Size() {
		t.Errorf("crashtui's core is %d bytes, the kernel's %d", ost.Size(), kst.Size())
	}
	if gdb, err := exec.LookPath("gdb"); err == nil {
		out, _ := exec.Command(gdb, "-batch", "-ex", "bt 1", segv, ours).CombinedOutput()
		if !strings.Contains(string(out), "crash_here") {
			t.Errorf("gdb on crashtui's core does not show crash_here:\n%s", out)
		}
	}
}

// TestCrashHandlerThatNeverRepairs: a handler that returns without repairing its fault (a
// safepoint handler that does not unprotect, on a read, a write and a load spanning two pages;
// a SIGBUS handler that does not extend the file) would loop forever: fault, handler, the same
// fault. By Spindle's rule, once the handler has failed the fault is delivered as if no handler
// were installed: the process dies of it, and the crash says so (unrepaired, tried once). With
// LeaveUnrepaired the process is left looping as it would without crashtui, and the crash is
// reported after maxHandlerTries.
func TestCrashHandlerThatNeverRepairs(t *testing.T) {
	bin := tracertest.DemoProgram(t, "loophandler")
	for _, leave := range []bool{false, true} {
		for _, c := range []struct{ mode, sig string }{{"read", "SIGSEGV"}, {"write", "SIGSEGV"}, {"span", "SIGSEGV"}, {"sigbus", "SIGBUS"}} {
			name := c.mode
			if leave {
				name += "/leave"
			}
			t.Run(name, func(t *testing.T) {
				crashes := make(chan sessions.Crash, 4)
				exits := make(chan sessions.Exit, 4)
				tr := tracer.New(tracer.Options{Watcher: New(Options{LeaveUnrepaired: leave}), Emit: func(e sessions.Event) {
					switch b := e.Body.(type) {
					case sessions.Crash:
						crashes <- b
					case sessions.Exit:
						exits <- b
					}
				}})
				t.Cleanup(func() {
					tr.SignalJob(unix.SIGKILL)
					<-tr.JobDone()
					tr.Close()
				})
				if _, err := tr.Launch(tracer.LaunchSpec{N: 1, Argv: []string{bin, c.mode}}); err != nil {
					t.Fatal(err)
				}
				var cr sessions.Crash
				select {
				case cr = <-crashes:
				case <-time.After(tracertest.Wait(10 * tracertest.RaceSlowdown * time.Second)):
					t.Fatal("no crash reported: the handler's loop went unnoticed")
				}
				if cr.Signal != c.sig || !cr.Representative || cr.UserSent {
					t.Errorf("crash %s (%s) representative %v user-sent %v; want %s", cr.Signal, cr.Code, cr.Representative, cr.UserSent, c.sig)
				}
				if !leave {
					if !cr.Unrepaired || cr.HandlerTries != 1 {
						t.Errorf("crash unrepaired %v after %d tries; want delivered unhandled after the handler's first failure", cr.Unrepaired, cr.HandlerTries)
					}
					select {
					case ex := <-exits:
						if ex.Signal != c.sig {
							t.Errorf("the process ended with %+v, want death by %s as without its handler", ex, c.sig)
						}
					case <-time.After(tracertest.Wait(10 * time.Second)):
						t.Fatal("the process did not die of its unrepaired fault")
					}
					return
				}
				if cr.Unrepaired || cr.HandlerTries != maxHandlerTries {
					t.Errorf("crash unrepaired %v after %d tries; want left alone, reported after %d", cr.Unrepaired, cr.HandlerTries, maxHandlerTries)
				}
				// Still looping, as without crashtui: running, not stopped, not dead.
				time.Sleep(100 * time.Millisecond)
				if st, err := procfs.ReadStat(cr.PID); err != nil || (st.State != 'R' && st.State != 'S' && st.State != 't') {
					t.Errorf("after the verdict the process is %q (%v), want it still looping", string(st.State), err)
				}
				select {
				case more := <-crashes:
					t.Errorf("a second crash event for the same loop: %+v", more)
				case <-time.After(200 * time.Millisecond):
				}
			})
		}
	}
}

// TestCrashInInlinedFunction: a crash in code inlined into its caller is named after the
// inlined function (DWARF DW_TAG_inlined_subroutine), as gdb's innermost frame is, not after
// the function it was inlined into. The crash is told at once from the symbol table (the
// function the code is really in, no line) and amended when the DWARF, loaded off the loop,
// arrives: the crash as sessions.State holds it has the inlined function and its line.
func TestCrashInInlinedFunction(t *testing.T) {
	bin := tracertest.DemoProgram(t, "inlined")
	events := make(chan sessions.Event, 16)
	tr := tracer.New(tracer.Options{Watcher: New(Options{}), Emit: func(e sessions.Event) {
		switch e.Body.(type) {
		case sessions.Crash, sessions.CrashLines:
			events <- e
		}
	}})
	t.Cleanup(func() { tr.Close() })
	t.Chdir(t.TempDir())
	if _, err := tr.Launch(tracer.LaunchSpec{N: 1, Argv: []string{bin}}); err != nil {
		t.Fatal(err)
	}
	st := sessions.NewState()
	timeout := time.After(10 * tracertest.RaceSlowdown * time.Second)
	for {
		select {
		case e := <-events:
			st.Apply(e)
			if cr, ok := e.Body.(sessions.Crash); ok && (cr.Function != "main" || cr.File != "") {
				t.Errorf("crash told as %q at %s:%d; want main, the symbol the code is in, without a line until the DWARF is loaded", cr.Function, cr.File, cr.Line)
			}
		case <-timeout:
			t.Fatal("no crash, or no amendment with its lines")
		}
		if len(st.Groups) == 0 || len(st.Groups[0].Members) == 0 {
			continue
		}
		g := st.Groups[0]
		cr := g.Members[0].Crash
		if cr.File == "" {
			continue
		}
		if cr.Function != "read_cell" || !strings.HasSuffix(cr.File, "inlined.c") || cr.Line != 7 {
			t.Errorf("crash in %q at %s:%d, want read_cell at inlined.c:7 (gdb's innermost frame)", cr.Function, cr.File, cr.Line)
		}
		if len(cr.Stack) < 2 || cr.Stack[0].Function != "read_cell" || !cr.Stack[0].Inlined || cr.Stack[1].Function != "main" {
			t.Errorf("frames %+v, want read_cell inlined into main", cr.Stack)
		}
		if g.Function != "read_cell" || len(g.Stack) == 0 || g.Stack[0].Function != "read_cell" {
			t.Errorf("group named %q with stack %+v, want read_cell", g.Function, g.Stack)
		}
		return
	}
}

// TestSentSignalsAreNotFaults: a process that raises SIGTRAP at itself and queues signals to
// its own handlers (demo/c/victim.c's signaller, every 2 ms) has no fault to judge: no
// handled event, no crash, and each handler runs (the victim reports a SIGTRAP whose handler
// did not run as it happens).
func TestSentSignalsAreNotFaults(t *testing.T) {
	bin := tracertest.DemoProgram(t, "victim")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var handled, crashes int
	var mu sync.Mutex
	tr := tracer.New(tracer.Options{Watcher: New(Options{}), Emit: func(e sessions.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Body.(type) {
		case sessions.Handled:
			handled++
		case sessions.Crash:
			crashes++
		}
	}})
	t.Cleanup(func() {
		tr.SignalJob(unix.SIGKILL)
		<-tr.JobDone()
		tr.Close()
	})
	_, err = tr.Launch(tracer.LaunchSpec{N: 1, Argv: []string{bin, "1"}, Stdout: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(r)
	pid := 0
	for pid == 0 && sc.Scan() {
		fmt.Sscanf(sc.Text(), "ready %d", &pid)
	}
	if pid == 0 {
		t.Fatal("the victim never said it was ready")
	}
	// Reports until the handler has seen enough SIGTRAPs since the first: each report counts
	// them. However slowly a busy machine runs the signaller (a fixed 300 ms once saw 8).
	report := func() int {
		unix.Kill(pid, unix.SIGUSR2)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "bad ") {
				t.Errorf("victim: %s", l)
			}
			var p, n int
			var bad, loops int64
			if _, err := fmt.Sscanf(l, "report %d traps=%d bad=%d loops=%d", &p, &n, &bad, &loops); err == nil {
				return n
			}
		}
		t.Fatalf("the victim stopped reporting: %v", sc.Err())
		return 0
	}
	const enough = 100
	first, last := report(), 0
	for deadline := time.Now().Add(2 * time.Minute); ; {
		time.Sleep(100 * time.Millisecond)
		if last = report(); last-first >= enough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d SIGTRAPs in 2 minutes, want %d: the test proves nothing", last-first, enough)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if handled != 0 || crashes != 0 {
		t.Errorf("%d handled events and %d crashes for %d signals the process sent itself, want none", handled, crashes, last)
	}
}
