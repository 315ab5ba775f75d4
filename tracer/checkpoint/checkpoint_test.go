package checkpoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/demo/restart/restarttest"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// Tests of the simulated checkpoint on real threads (amd64): demo/restart/restart.c blocks
// threads in read, futex, nanosleep and poll, with and without handlers and SA_RESTART; the
// tracer freezes them with PTRACE_INTERRUPT, and what the kernel left in the registers, what
// crashtui decides, and what the program then sees are asserted.

// ckptWant is what a thread of restart.c must look like at a PTRACE_INTERRUPT stop on amd64.
type ckptWant struct {
	syscall  string
	errno    int    // the restart code in rax (negated)
	code     string // its name
	onResume arch.Action
	restore  arch.Action
}

// restartCases are the threads of restart.c. The codes come from the kernel: pipe_read and an
// untimed futex_wait return -ERESTARTSYS, do_sys_poll -ERESTARTNOHAND, which ppoll(2) returns
// as it is while poll(2) always turns it into a restart block (fs/select.c, even with no
// timeout), as hrtimer_nanosleep and a timed futex_wait do.
var restartCases = map[string]ckptWant{
	"main":        {"read", 512, "ERESTARTSYS", arch.ActRestart, arch.ActRewind},
	"read":        {"read", 512, "ERESTARTSYS", arch.ActRestart, arch.ActRewind},
	"read-sa":     {"read", 512, "ERESTARTSYS", arch.ActRestart, arch.ActRewind},
	"read-nosa":   {"read", 512, "ERESTARTSYS", arch.ActRestart, arch.ActRewind},
	"futex":       {"futex", 512, "ERESTARTSYS", arch.ActRestart, arch.ActRewind},
	"futex-timed": {"futex", 516, "ERESTART_RESTARTBLOCK", arch.ActRestartSyscall, arch.ActEINTR},
	"nanosleep":   {"nanosleep", 516, "ERESTART_RESTARTBLOCK", arch.ActRestartSyscall, arch.ActEINTR},
	"ppoll":       {"ppoll", 514, "ERESTARTNOHAND", arch.ActRestart, arch.ActRewind},
	"ppoll-sa":    {"ppoll", 514, "ERESTARTNOHAND", arch.ActRestart, arch.ActRewind},
	"poll":        {"poll", 516, "ERESTART_RESTARTBLOCK", arch.ActRestartSyscall, arch.ActEINTR},
}

func reg(t *testing.T, rs []sessions.RegVal, name string) uint64 {
	t.Helper()
	for _, r := range rs {
		if r.Name == name {
			return uint64(r.Value)
		}
	}
	t.Fatalf("no register %q in %v", name, rs)
	return 0
}

// attachAndCheckpoint attaches a new tracer.Tracer to p, checkpoints with policy and detaches. It
// returns the threads (by tid), the image and the event log, and checks that nothing is left
// stopped or traced.
func attachAndCheckpoint(t *testing.T, p *restarttest.Proc, policy sessions.Policy) (map[int]sessions.Thread, CheckpointImage, *tracertest.EventLog) {
	t.Helper()
	log := &tracertest.EventLog{}
	tr := tracer.New(tracer.Options{Emit: log.Emit})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	job, err := tracer.ParseJob("pid:" + strconv.Itoa(p.PID))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Attach(job)
	if err != nil {
		t.Fatalf("attach %d: %v", p.PID, err)
	}
	if res.Threads != len(p.Threads) {
		t.Fatalf("attached %d threads, the program has %d", res.Threads, len(p.Threads))
	}
	var img bytes.Buffer
	got, err := New(tr).Run(policy, &img)
	if err != nil {
		t.Fatalf("checkpoint %s: %v (errors %v)", policy, err, tracertest.Of[sessions.Error](log))
	}
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	assertUntraced(t, p)

	byTID := map[int]sessions.Thread{}
	for _, th := range got {
		byTID[th.TID] = th
	}
	if len(byTID) != len(p.Threads) {
		t.Fatalf("checkpoint returned %d threads, want %d", len(byTID), len(p.Threads))
	}
	// One event per thread when the policy is applied, and a second one once its outcome
	// is known: the last event of each thread is what Checkpoint returned.
	last := map[int]sessions.Thread{}
	for _, e := range tracertest.Of[sessions.Thread](log) {
		last[e.TID] = e
	}
	if len(last) != len(got) {
		t.Fatalf("emitted thread events for %d threads, returned %d", len(last), len(got))
	}
	for tid, e := range last {
		if g := byTID[tid]; !reflect.DeepEqual(g, e) {
			t.Errorf("last event for %d differs from the returned one: %+v vs %+v", tid, e, g)
		}
		if e.Explain != "" || e.Outcome != "" {
			t.Errorf("thread %d: the tracer wrote sentences (explain %q, outcome %q): views write them", tid, e.Explain, e.Outcome)
		}
	}
	var image CheckpointImage
	if err := json.Unmarshal(img.Bytes(), &image); err != nil {
		t.Fatalf("checkpoint image: %v\n%s", err, img.String())
	}
	return byTID, image, log
}

// assertUntraced: after Close no thread is in a tracing stop and nobody traces the process.
func assertUntraced(t *testing.T, p *restarttest.Proc) {
	t.Helper()
	states, tracer := p.ThreadStates(t)
	if tracer != 0 {
		t.Errorf("TracerPid %d after Close, want 0", tracer)
	}
	for tid, st := range states {
		if st == "t" { // tracing stop; "T" (job control) is the job's own business
			t.Errorf("thread %d left in a tracing stop after Close", tid)
		}
	}
}

// checkThreads asserts every thread's restart state and decision, and the registers after the
// policy was applied.
func checkThreads(t *testing.T, p *restarttest.Proc, got map[int]sessions.Thread, image CheckpointImage, policy sessions.Policy) {
	t.Helper()
	if image.Policy != policy || image.Arch != "amd64" || len(image.Threads) != len(p.Threads) {
		t.Errorf("image: policy %q arch %q with %d threads, want %q amd64 %d", image.Policy, image.Arch, len(image.Threads), policy, len(p.Threads))
	}
	imgByTID := map[int]ImageThread{}
	for _, it := range image.Threads {
		imgByTID[it.TID] = it
	}
	for _, th := range p.Threads {
		w, ok := restartCases[th.Name]
		if !ok {
			t.Fatalf("no expectation for thread %q", th.Name)
		}
		g, ok := got[th.TID]
		if !ok {
			t.Errorf("%s (%d): not captured", th.Name, th.TID)
			continue
		}
		name := fmt.Sprintf("%s (%d)", th.Name, th.TID)
		if g.PID != p.PID || g.Arch != "amd64" || !g.InSyscall || g.Syscall != w.syscall || g.Nr != th.Nr || g.Insn != "syscall" {
			t.Errorf("%s: pid %d arch %q in_syscall %v syscall %q nr %d insn %q; want pid %d amd64 true %q %d syscall",
				name, g.PID, g.Arch, g.InSyscall, g.Syscall, g.Nr, g.Insn, p.PID, w.syscall, th.Nr)
		}
		if g.Ret != int64(-w.errno) || g.Code != w.code {
			t.Errorf("%s: ret %d code %q, want %d %q", name, g.Ret, g.Code, -w.errno, w.code)
		}
		if g.OnResume != string(w.onResume) || g.Restore != string(w.restore) || g.Applied != policy {
			t.Errorf("%s: on_resume %q restore %q applied %q, want %q %q %q", name, g.OnResume, g.Restore, g.Applied, w.onResume, w.restore, policy)
		}
		// The facts of a PTRACE_INTERRUPT stop, and all that views need to word the
		// decision: decoding the registers and the instruction bytes the event carries gives
		// back the same restart state and decision.
		if g.Stop != sessions.StopInterrupt || g.Handler != sessions.HandlerNone || g.Signal != "" || g.Sigaction != nil || g.InsnBytes != "0f05" {
			t.Errorf("%s: stop %q handler %q signal %q sigaction %+v insn_bytes %q; want an interrupt stop, no handler, syscall's 0f05",
				name, g.Stop, g.Handler, g.Signal, g.Sigaction, g.InsnBytes)
		}
		if st := decodeAgain(t, g); st.Code != g.Code || st.Nr != g.Nr || string(st.OnResume(arch.NoHandler)) != g.OnResume || string(st.Restore()) != g.Restore {
			t.Errorf("%s: decoded again from the event: code %q nr %d on_resume %s restore %s; the event says %q %d %s %s",
				name, st.Code, st.Nr, st.OnResume(arch.NoHandler), st.Restore(), g.Code, g.Nr, g.OnResume, g.Restore)
		}
		// The registers the kernel reported agree with the event.
		rip, rax, orig := reg(t, g.Before, "rip"), reg(t, g.Before, "rax"), reg(t, g.Before, "orig_rax")
		if uint64(g.PC) != rip || int64(rax) != g.Ret || int(orig) != th.Nr {
			t.Errorf("%s: before rip %#x rax %d orig_rax %d; event pc %#x ret %d nr %d", name, rip, int64(rax), int64(orig), g.PC, g.Ret, th.Nr)
		}
		if len(g.Args) != 6 || uint64(g.Args[0]) != reg(t, g.Before, "rdi") {
			t.Errorf("%s: args %v, want 6 starting with rdi", name, g.Args)
		}
		// What was written back, as read back from the kernel.
		arip, arax, aorig := reg(t, g.After, "rip"), reg(t, g.After, "rax"), reg(t, g.After, "orig_rax")
		switch policy {
		case sessions.PolicyNone:
			for i := range g.Before {
				if g.Before[i] != g.After[i] {
					t.Errorf("%s: none changed %s from %#x to %#x", name, g.Before[i].Name, g.Before[i].Value, g.After[i].Value)
				}
			}
		case sessions.PolicyNaive:
			if arip != rip || arax != rax || int64(aorig) != -1 {
				t.Errorf("%s: naive wrote rip %#x rax %d orig_rax %d, want rip %#x rax %d orig_rax -1", name, arip, int64(arax), int64(aorig), rip, int64(rax))
			}
		case sessions.PolicyCorrect:
			wantRIP, wantRAX := rip-2, orig // rewind and restore the syscall number (CRIU compel_get_task_regs)
			if w.restore == arch.ActEINTR {
				wantRIP, wantRAX = rip, ^uint64(3) // -EINTR: restart_block cannot be carried over
			}
			if arip != wantRIP || arax != wantRAX || int64(aorig) != -1 {
				t.Errorf("%s: correct wrote rip %#x rax %d orig_rax %d, want rip %#x rax %d orig_rax -1", name, arip, int64(arax), int64(aorig), wantRIP, int64(wantRAX))
			}
		}
		it, ok := imgByTID[th.TID]
		if !ok {
			t.Errorf("%s: not in the image", name)
			continue
		}
		if it.Stop != "interrupt" || it.Handler != arch.NoHandler.String() || it.Code != w.code || it.Syscall != w.syscall ||
			it.InsnBytes != "0f05" || reg(t, it.Regs, "rax") != rax || len(it.RestoreRegs) != len(g.After) {
			t.Errorf("%s: image thread %+v", name, it)
		}
		for i := range it.RestoreRegs {
			if it.RestoreRegs[i] != g.After[i] {
				t.Errorf("%s: image restore_regs %s=%#x, the kernel read back %#x", name, it.RestoreRegs[i].Name, it.RestoreRegs[i].Value, g.After[i].Value)
			}
		}
	}
}

func TestCheckpointCorrect(t *testing.T) {
	tracertest.NeedAMD64(t)
	p := restarttest.Start(t, restarttest.Build(t))
	got, image, _ := attachAndCheckpoint(t, p, sessions.PolicyCorrect)
	checkThreads(t, p, got, image, sessions.PolicyCorrect)

	// A restart block cannot be restored, so those three return EINTR right away, before the
	// program is told to go: what they would see after a real restore. Nothing else returns.
	early := map[string]bool{"futex-timed": true, "nanosleep": true, "poll": true}
	for len(early) > 0 {
		r := p.Result(t, 20*time.Second)
		if !early[r.Name] || r.Ret != -1 || r.Errno != 4 || !r.OK {
			t.Fatalf("before go: %+v; want one of %v returning EINTR", r, early)
		}
		delete(early, r.Name)
	}
	p.Go(t)
	rest := p.Rest(t, 30*time.Second)
	results := map[string]restarttest.Result{}
	for _, l := range rest[:len(rest)-1] {
		r, err := restarttest.ParseResult(l)
		if err != nil {
			t.Fatal(err)
		}
		results[r.Name] = r
	}
	if v := rest[len(rest)-1]; v != "verdict ok" {
		t.Fatalf("after correct: %q, output %q", v, rest)
	}
	// The rewound calls ran again and completed as if never stopped.
	if r := results["read"]; r.Ret != 1 {
		t.Errorf("read after correct restore: %+v, want 1 byte", r)
	}
	if r := results["read-sa"]; r.Ret != 1 {
		t.Errorf("read-sa after correct restore: %+v, want 1 byte (SA_RESTART restarted it after the handler)", r)
	}
	if r := results["ppoll"]; r.Ret != 1 {
		t.Errorf("ppoll after correct restore: %+v, want 1 ready fd", r)
	}
	if r := results["futex"]; !(r.Ret == 0 || r.Errno == 11) {
		t.Errorf("futex after correct restore: %+v, want 0 or EAGAIN", r)
	}
}

func TestCheckpointNaive(t *testing.T) {
	tracertest.NeedAMD64(t)
	p := restarttest.Start(t, restarttest.Build(t))
	got, image, _ := attachAndCheckpoint(t, p, sessions.PolicyNaive)
	checkThreads(t, p, got, image, sessions.PolicyNaive)

	// Seed 002 reproduced: with the kernel's restart cancelled and the return register left
	// alone, every interrupted call returns its kernel-internal code to user code at once.
	want := map[string]int{}
	for _, th := range p.Threads {
		want[th.Name] = restartCases[th.Name].errno
	}
	for len(want) > 0 {
		r := p.Result(t, 20*time.Second)
		e, ok := want[r.Name]
		if !ok || r.Ret != -1 || r.Errno != e || r.OK {
			t.Fatalf("after naive restore: %+v; want the leaked code of one of %v", r, want)
		}
		delete(want, r.Name)
	}
	p.Go(t)
	rest := p.Rest(t, 30*time.Second)
	if len(rest) != 1 || rest[0] != fmt.Sprintf("verdict bad=%d", len(p.Threads)) {
		t.Fatalf("after naive: %q, want verdict bad=%d", rest, len(p.Threads))
	}
}

func TestCheckpointNone(t *testing.T) {
	tracertest.NeedAMD64(t)
	p := restarttest.Start(t, restarttest.Build(t))
	got, image, _ := attachAndCheckpoint(t, p, sessions.PolicyNone)
	checkThreads(t, p, got, image, sessions.PolicyNone)

	p.Go(t)
	rest := p.Rest(t, 30*time.Second)
	if v := rest[len(rest)-1]; v != "verdict ok" {
		t.Fatalf("after none: %q, output %q", v, rest)
	}
	results := map[string]restarttest.Result{}
	for _, l := range rest[:len(rest)-1] {
		r, err := restarttest.ParseResult(l)
		if err != nil {
			t.Fatal(err)
		}
		results[r.Name] = r
	}
	// The kernel restarted everything itself: the restart blocks too (restart_syscall), so the
	// poll and the timed futex kept waiting and completed normally instead of returning EINTR.
	for name, want := range map[string]int64{"read": 1, "read-sa": 1, "ppoll": 1, "poll": 1} {
		if r := results[name]; r.Ret != want {
			t.Errorf("%s after none: %+v, want ret %d", name, r, want)
		}
	}
	for _, name := range []string{"futex", "futex-timed"} {
		if r := results[name]; !(r.Ret == 0 || r.Errno == 11) {
			t.Errorf("%s after none: %+v, want 0 or EAGAIN (woken, not interrupted)", name, r)
		}
	}
	if r := results["nanosleep"]; r.Errno != 4 {
		t.Errorf("nanosleep after none: %+v, want EINTR from the SIGUSR1 handler", r)
	}
}

// TestCheckpointSemWaitNaive reproduces the seed's exact symptom: glibc's sem_wait gets
// ERESTARTSYS from the futex and aborts.
func TestCheckpointSemWaitNaive(t *testing.T) {
	tracertest.NeedAMD64(t)
	bin := restarttest.Build(t)
	p := restarttest.Start(t, bin, "sem")
	got, _, _ := attachAndCheckpoint(t, p, sessions.PolicyNaive)
	if th := got[p.TID(t, "sem_wait")]; th.Syscall != "futex" || th.Code != "ERESTARTSYS" || th.Restore != "rewind" {
		t.Fatalf("sem_wait thread: %+v", th)
	}
	p.WaitExit(t, 20*time.Second)
	const msg = "The futex facility returned an unexpected error code."
	if e := p.StderrAll(t, 10*time.Second); !strings.Contains(e, msg) {
		t.Fatalf("stderr %q does not contain glibc's %q", e, msg)
	}

	// The same with the correct restore: sem_wait simply waits on.
	p = restarttest.Start(t, bin, "sem")
	attachAndCheckpoint(t, p, sessions.PolicyCorrect)
	p.Go(t)
	if rest := p.Rest(t, 30*time.Second); len(rest) != 2 || rest[0] != fmt.Sprintf("result name=sem_wait tid=%d ret=0 errno=0 ok=1", p.TID(t, "sem_wait")) || rest[1] != "verdict ok" {
		t.Fatalf("sem after correct: %q", rest)
	}
}

// TestCheckpointStoppedMatchesTracer: CheckpointStopped (the per-thread core the ppc64le guest
// tests call with their own ptrace) and Checkpoints.Run agree. It runs the core on the tracer
// thread through t.do, where the threads are held.
func TestCheckpointStoppedMatchesTracer(t *testing.T) {
	tracertest.NeedAMD64(t)
	p, tr := attachRestart(t)
	tid := p.TID(t, "nanosleep")
	var th sessions.Thread
	err := tr.Do(func(l *tracer.Loop) error {
		return l.Hold([]int{tid}, tracer.HoldOptions{Timeout: tracertest.Wait(5 * time.Second), AtInterrupt: true}, func(h *tracer.Held) error {
			if err := h.LateErr("hold"); err != nil {
				return err
			}
			var err error
			th, err = CheckpointStopped(p.PID, tid, sessions.PolicyCorrect)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if th.Syscall != "nanosleep" || th.Code != "ERESTART_RESTARTBLOCK" || th.OnResume != "restart_syscall" || th.Restore != "eintr" || th.Applied != "correct" || int64(reg(t, th.After, "rax")) != -4 {
		t.Fatalf("CheckpointStopped: %+v", th)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	assertUntraced(t, p)
	if r := p.Result(t, 20*time.Second); r.Name != "nanosleep" || r.Errno != 4 {
		t.Fatalf("after CheckpointStopped correct: %+v, want nanosleep EINTR", r)
	}
}

// TestCheckpointSignalsDeliveredFirst: a signal that reaches a thread while the job is frozen is
// delivered first, as CRIU's compel_wait_task does, and the thread is then frozen at its
// interrupt stop: no thread is ever held with a signal only crashtui knows of (kernel.md D.3).
// The program confirms every handler ran as the kernel decided with it: read-sa restarts and
// reads the handler's byte (SA_RESTART), read-nosa and nanosleep get EINTR.
func TestCheckpointSignalsDeliveredFirst(t *testing.T) {
	tracertest.NeedAMD64(t)
	p, tr := attachRestart(t)
	sigs := map[string]unix.Signal{"read-sa": unix.SIGUSR1, "read-nosa": unix.SIGUSR2, "nanosleep": unix.SIGUSR1}
	for name, sig := range sigs {
		if err := unix.Tgkill(p.PID, p.TID(t, name), sig); err != nil {
			t.Fatal(err)
		}
	}
	got, err := New(tr).Run(sessions.PolicyNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range got {
		if th.Stop == sessions.StopSignal || th.Signal != "" {
			t.Errorf("thread %d (%s) frozen at a signal (%q %q): a held signal lives only in crashtui", th.TID, nameOf(p, th.TID), th.Stop, th.Signal)
		}
	}
	want := map[string][2]int64{"read-sa": {1, 0}, "read-nosa": {-1, 4}, "nanosleep": {-1, 4}}
	for len(want) > 0 {
		r := p.Result(t, tracertest.Wait(20*time.Second))
		w, ok := want[r.Name]
		if !ok || r.Ret != w[0] || r.Errno != int(w[1]) {
			t.Fatalf("after the signals: %+v, want one of %v", r, want)
		}
		delete(want, r.Name)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	assertUntraced(t, p)
	p.Go(t)
	if rest := p.Rest(t, tracertest.Wait(30*time.Second)); rest[len(rest)-1] != "verdict ok" {
		t.Fatalf("after the signals: %q", rest)
	}
}

// decodeAgain decodes th's restart state from the registers and instruction bytes the event
// carries, as views do to word it.
func decodeAgain(t *testing.T, th sessions.Thread) arch.RestartState {
	t.Helper()
	a := arch.Arch(th.Arch)
	regs := arch.Regs{Arch: a, Words: make([]uint64, arch.NumWords(a))}
	for i := range regs.Words {
		regs.Words[i] = reg(t, th.Before, arch.RegName(a, i))
	}
	insn, err := hex.DecodeString(th.InsnBytes)
	if err != nil {
		t.Fatalf("thread %d: insn_bytes %q: %v", th.TID, th.InsnBytes, err)
	}
	return arch.Decode(regs, insn)
}

func nameOf(p *restarttest.Proc, tid int) string {
	for _, th := range p.Threads {
		if th.TID == tid {
			return th.Name
		}
	}
	return ""
}

// TestCheckpointGroupStopped: a job stopped by SIGSTOP is checkpointed where it stands (its
// threads are in a group-stop, restart state intact) and stays stopped afterwards: job control
// is unchanged. After SIGCONT the kernel restarts every call as with no handler.
func TestCheckpointGroupStopped(t *testing.T) {
	tracertest.NeedAMD64(t)
	p := restarttest.Start(t, restarttest.Build(t))
	if err := unix.Kill(p.PID, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStates(t, p, "T")
	got, image, _ := attachAndCheckpoint(t, p, sessions.PolicyNone)
	checkThreadsStop(t, image, "group")
	for _, th := range got {
		if w := restartCases[nameOf(p, th.TID)]; th.Code != w.code || th.OnResume != string(w.onResume) {
			t.Errorf("%s (%d) in a group-stop: code %q on_resume %q, want %q %q", nameOf(p, th.TID), th.TID, th.Code, th.OnResume, w.code, w.onResume)
		}
		if th.Stop != sessions.StopGroup || th.Handler != sessions.HandlerNone || th.Signal != "" {
			t.Errorf("%d: stop %q handler %q signal %q, want a group-stop deciding as with no handler", th.TID, th.Stop, th.Handler, th.Signal)
		}
	}
	// Still stopped by job control after crashtui let go (attachAndCheckpoint checked that
	// nobody traces it and no thread is in a tracing stop). PTRACE_DETACH wakes a group-stopped
	// thread, which then re-enters the group stop (kernel/ptrace.c __ptrace_unlink): a thread
	// may be seen running for an instant, so wait for every one to be back in T.
	waitStates(t, p, "T")
	if err := unix.Kill(p.PID, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	p.Go(t)
	if rest := p.Rest(t, 30*time.Second); rest[len(rest)-1] != "verdict ok" {
		t.Fatalf("after SIGCONT: %q", rest)
	}
}

func checkThreadsStop(t *testing.T, image CheckpointImage, stop string) {
	t.Helper()
	for _, it := range image.Threads {
		if it.Stop != stop || it.Handler != arch.NoHandler.String() {
			t.Errorf("image thread %d: stop %q handler %q, want %q, no handler", it.TID, it.Stop, it.Handler, stop)
		}
	}
}

// waitStates waits until every thread of p is in state st. tracer.Job-control stops of a process
// that is not our child have no event to wait on, so this polls /proc.
func waitStates(t *testing.T, p *restarttest.Proc, st string) {
	t.Helper()
	deadline := patience.New(20 * time.Second)
	for {
		states, _ := p.ThreadStates(t)
		all := len(states) > 0
		for _, s := range states {
			all = all && s == st
		}
		if all {
			return
		}
		if deadline.Passed() {
			t.Fatalf("threads never all reached state %s: %v", st, states)
		}
		time.Sleep(time.Millisecond)
	}
}

// attachRestart starts demo/restart/restart.c and attaches a Tracer to it.
func attachRestart(tb testing.TB) (*restarttest.Proc, *tracer.Tracer) {
	tb.Helper()
	p := restarttest.Start(tb, restarttest.Build(tb))
	return p, tracertest.Attach(tb, tracer.Options{}, tracertest.PID(tb, p.PID))
}
