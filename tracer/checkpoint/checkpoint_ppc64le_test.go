package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
)

// TestPPC64LECheckpoint runs the whole simulated checkpoint (Checkpoints.Run: attach, freeze
// every thread, capture, image, apply, resume, detach) on the sc/scv helper on a real ppc64le
// kernel (the QEMU guests of make test-ppc64le). The helper is a Go program, so besides the
// thread blocked in the call its runtime threads are frozen and restored too; with the correct
// restore they all carry on. What the blocked thread's event says is checked against kernel.md
// §B.2, and what the program then sees against the policy:
//
//	           read (512)       nanosleep (516)
//	correct    1 byte read      EINTR (sc 4+SO, scv -4)
//	none       1 byte read      (covered by TestPPC64LERestart: it waits out the sleep)
//
// naive is left to TestPPC64LERestart, which restores only the blocked thread: leaking -512 into
// the Go runtime's own epoll/futex waits would make it throw, which says nothing about the
// checkpoint.
func TestPPC64LECheckpoint(t *testing.T) {
	scv := ppcExpectSCV(t)
	for _, c := range []ppcRestartCase{
		{"sc", "read", arch.ERESTARTSYS, 0xc00, 0x44000002},
		{"sc", "nanosleep", arch.ERESTART_RESTARTBLOCK, 0xc00, 0x44000002},
		{"scv", "read", arch.ERESTARTSYS, 0x3000, 0x44000001},
		{"scv", "nanosleep", arch.ERESTART_RESTARTBLOCK, 0x3000, 0x44000001},
	} {
		policies := []sessions.Policy{sessions.PolicyCorrect}
		if c.call == "read" {
			policies = append(policies, sessions.PolicyNone)
		}
		for _, p := range policies {
			t.Run(c.insn+"/"+c.call+"/"+string(p), func(t *testing.T) {
				if c.insn == "scv" && !scv {
					t.Skip("this CPU has no scv (TestPPC64LEScvProbe asserts that it raises SIGILL)")
				}
				testPPCCheckpoint(t, c, p)
			})
		}
	}
}

func testPPCCheckpoint(t *testing.T, c ppcRestartCase, p sessions.Policy) {
	h := startPPCHelper(t, c.insn, c.call, 3*time.Second)
	h.ready(t)
	pid := h.cmd.Process.Pid
	waitInSyscall(t, pid, h.tid, h.nr, h.arg0)

	tr := tracer.New(tracer.Options{})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	job, err := tracer.ParseJob("pid:" + strconv.Itoa(pid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Attach(job); err != nil {
		t.Fatalf("attach %d: %v", pid, err)
	}
	var img bytes.Buffer
	threads, err := New(tr).Run(p, &img)
	if err != nil {
		t.Fatalf("checkpoint %s: %v", p, err)
	}
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	th := threadByTID(t, threads, h.tid)
	t.Logf("thread %d: insn %s trap %v ret %d code %s on_resume %s restore %s applied %s (%d threads frozen)",
		th.TID, th.Insn, th.Trap, th.Ret, th.Code, th.OnResume, th.Restore, th.Applied, len(threads))
	wantRet := int64(c.errno)
	if c.insn == "scv" {
		wantRet = -wantRet
	}
	onResume, restore := arch.ActRestart, arch.ActRewind
	if c.errno == arch.ERESTART_RESTARTBLOCK {
		onResume, restore = arch.ActRestartSyscall, arch.ActEINTR
	}
	if th.Arch != "ppc64le" || !th.InSyscall || th.Insn != c.insn || th.Trap == nil || uint64(*th.Trap) != c.vec ||
		th.Syscall != c.call || th.Nr != h.nr || len(th.Args) == 0 || uint64(th.Args[0]) != h.arg0 || th.Ret != wantRet ||
		th.Code != arch.ErrnoName(c.errno) || th.OnResume != string(onResume) || th.Restore != string(restore) || th.Applied != p {
		t.Errorf("event %+v\nwant insn %s trap %#x syscall %s nr %d arg0 %#x ret %d code %s on_resume %s restore %s applied %s",
			*th, c.insn, c.vec, c.call, h.nr, h.arg0, wantRet, arch.ErrnoName(c.errno), onResume, restore, p)
	}
	regOf := func(rs []sessions.RegVal, name string) uint64 {
		for _, r := range rs {
			if r.Name == name {
				return uint64(r.Value)
			}
		}
		t.Fatalf("no register %q", name)
		return 0
	}
	nip, anip, ar3, atrap := regOf(th.Before, "nip"), regOf(th.After, "nip"), regOf(th.After, "r3"), regOf(th.After, "trap")
	switch {
	case p == sessions.PolicyNone:
		if anip != nip || atrap != c.vec {
			t.Errorf("none: nip %#x trap %#x after, want %#x %#x untouched", anip, atrap, nip, c.vec)
		}
	case restore == arch.ActRewind:
		if anip != nip-4 || ar3 != h.arg0 || atrap&^0x1f != 0 {
			t.Errorf("correct: nip %#x r3 %#x trap %#x after, want nip-4 %#x, r3 = orig_gpr3 %#x, trap vector 0", anip, ar3, atrap, nip-4, h.arg0)
		}
	default:
		if anip != nip || atrap&^0x1f != 0 {
			t.Errorf("correct (EINTR): nip %#x trap %#x after, want %#x and trap vector 0", anip, atrap, nip)
		}
	}
	var image CheckpointImage
	if err := json.Unmarshal(img.Bytes(), &image); err != nil {
		t.Fatalf("image: %v", err)
	}
	if image.Arch != "ppc64le" || image.Policy != p || len(image.Threads) != len(threads) {
		t.Errorf("image arch %q policy %q with %d threads, want ppc64le %s %d", image.Arch, image.Policy, len(image.Threads), p, len(threads))
	}

	if c.call == "read" {
		if _, err := h.pipeW.Write([]byte{'x'}); err != nil && !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write to helper pipe: %v", err)
		}
	}
	r3, so, b := h.result(t, true)
	wantR3, wantSO := ppcWantResult(c, p)
	if r3 != wantR3 || so != wantSO {
		t.Errorf("policy %s after the whole-process checkpoint: program saw r3=%d so=%d, want r3=%d so=%d", p, r3, so, wantR3, wantSO)
	}
	if c.call == "read" && wantR3 == 1 && b != 'x' {
		t.Errorf("read returned 1 but the byte is %d, want 'x'", b)
	}
}

// TestPPC64LECheckpointSignalFirst: a thread blocked in read (sc) when a caught SIGUSR1 (Go's
// handler: SA_RESTART) reaches it as the job is frozen gets the signal first: the checkpoint
// never holds it at the signal, and the read restarts under the handler's SA_RESTART and
// returns the byte written afterwards.
func TestPPC64LECheckpointSignalFirst(t *testing.T) {
	h := startPPCHelper(t, "sc", "read", time.Second, "-sigusr1")
	h.ready(t)
	pid := h.cmd.Process.Pid
	waitInSyscall(t, pid, h.tid, h.nr, h.arg0)
	tr := tracer.New(tracer.Options{})
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	job, _ := tracer.ParseJob("pid:" + strconv.Itoa(pid))
	if _, err := tr.Attach(job); err != nil {
		t.Fatalf("attach %d: %v", pid, err)
	}
	// The signal reaches the thread as the job is frozen: the engine delivers it first (as
	// CRIU's compel does), and the thread is frozen at an interrupt stop after its handler.
	if err := unix.Tgkill(pid, h.tid, unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	got, err := New(tr).Run(sessions.PolicyNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := tr.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, th := range got {
		if th.Stop == sessions.StopSignal || th.Signal != "" {
			t.Errorf("thread %d frozen at a signal (%q %q): a held signal lives only in crashtui", th.TID, th.Stop, th.Signal)
		}
	}
	if _, err := h.pipeW.Write([]byte{'x'}); err != nil {
		t.Fatalf("write to helper pipe: %v", err)
	}
	if r3, so, b := h.result(t, true); r3 != 1 || so != 0 || b != 'x' {
		t.Errorf("after the handler: r3=%d so=%d byte=%d, want the read restarted: 1, 0, 'x'", r3, so, b)
	}
}
