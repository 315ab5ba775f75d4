package tracer

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"

	"github.com/crashtui/crashtui/demo/restart/restarttest"
	"github.com/crashtui/crashtui/elfinfo"
)

// TestMemHelpers reads and writes the memory of a real stopped thread with every helper and
// checks they agree: the syscall instruction before the pc of a thread blocked in read, and a
// stack word written with POKEDATA and put back.
func TestMemHelpers(t *testing.T) {
	needAMD64(t)
	p, tr := attachRestart(t)
	tid := p.TID(t, "read")
	err := tr.do(func() error {
		tk := tr.tasks[tid]
		if err := tr.stopTask(tk, 5*time.Second); err != nil {
			return err
		}
		defer tr.resume(tk)
		regs, err := getRegs(tid)
		if err != nil {
			return err
		}
		pc := regs.PC()
		want := []byte{0x0f, 0x05} // syscall: the thread is stopped right after it

		var viaVM, viaProc, viaMem, viaReader, viaPeek [2]byte
		if n, err := vmRead(p.PID, pc-2, viaVM[:]); err != nil || n != 2 {
			t.Errorf("process_vm_readv: %d, %v", n, err)
		}
		forced := &traceeMem{pid: p.PID, force: true}
		defer forced.close()
		if n, err := forced.procRead(pc-2, viaProc[:]); err != nil || n != 2 {
			t.Errorf("/proc/PID/mem: %d, %v", n, err)
		}
		if err := readMem(p.PID, pc-2, viaMem[:]); err != nil {
			t.Errorf("readMem: %v", err)
		}
		if err := vmReader(p.PID)(pc-2, viaReader[:]); err != nil {
			t.Errorf("vmReader: %v", err)
		}
		if err := peekBytes(tid, pc-2, viaPeek[:]); err != nil {
			t.Errorf("peekBytes: %v", err)
		}
		for name, got := range map[string][2]byte{"process_vm_readv": viaVM, "/proc/PID/mem": viaProc, "readMem": viaMem, "vmReader": viaReader, "peekBytes": viaPeek} {
			if !bytes.Equal(got[:], want) {
				t.Errorf("%s at rip-2: % x, want % x", name, got, want)
			}
		}

		// A stack word: flip it with POKEDATA, see it through every reader, put it back.
		sp := regs.SP() &^ 7
		orig, err := peekWord(tid, sp)
		if err != nil {
			return err
		}
		if err := pokeWord(tid, sp, ^orig); err != nil {
			return err
		}
		var b [8]byte
		if err := readMem(p.PID, sp, b[:]); err != nil || binary.LittleEndian.Uint64(b[:]) != ^orig {
			t.Errorf("after poke: readMem %x, %v; want %x", b, err, ^orig)
		}
		if w, err := peekWord(tid, sp); err != nil || w != ^orig {
			t.Errorf("after poke: peekWord %#x, %v; want %#x", w, err, ^orig)
		}
		if err := pokeWord(tid, sp, orig); err != nil {
			return err
		}
		if w, _ := peekWord(tid, sp); w != orig {
			t.Errorf("stack word not restored: %#x, want %#x", w, orig)
		}

		// Nothing is mapped at page 0: both ways fail and the error names both.
		if err := readMem(p.PID, 0, b[:]); err == nil || !strings.Contains(err.Error(), "process_vm_readv") || !strings.Contains(err.Error(), "/proc/") {
			t.Errorf("readMem at 0: %v, want an error naming both ways", err)
		}
		if err := vmReader(p.PID)(0, b[:]); err == nil || !strings.Contains(err.Error(), "process_vm_readv") {
			t.Errorf("vmReader at 0: %v, want a process_vm_readv error", err)
		}

		// A PROT_NONE page (a thread stack's guard): process_vm_readv cannot read it, the
		// fallback can (FOLL_FORCE), and a read that starts in readable memory just before
		// it is completed there.
		maps, err := elfinfo.ReadMaps(p.PID)
		if err != nil {
			return err
		}
		var guard *elfinfo.Mapping
		for i, m := range maps {
			if m.Perms == "---p" && i > 0 && maps[i-1].End == m.Start && strings.HasPrefix(maps[i-1].Perms, "r") {
				guard = &maps[i]
				break
			}
		}
		if guard == nil {
			t.Logf("no PROT_NONE mapping after a readable one in %d", p.PID)
		} else {
			if n, err := vmRead(p.PID, guard.Start, b[:]); err == nil {
				t.Errorf("process_vm_readv read %d bytes of PROT_NONE %#x", n, guard.Start)
			}
			if err := vmReader(p.PID)(guard.Start, b[:]); err == nil {
				t.Errorf("vmReader read PROT_NONE %#x", guard.Start)
			}
			var across [16]byte
			if n, err := forced.read(guard.Start-8, across[:]); err != nil || n != len(across) {
				t.Errorf("forced read across %#x into PROT_NONE: %d, %v", guard.Start, n, err)
			}
			if err := readMem(p.PID, guard.Start, b[:]); err != nil {
				t.Errorf("readMem of PROT_NONE %#x: %v", guard.Start, err)
			}
		}
		if _, err := peekWord(tid, 0); err == nil {
			t.Error("peekWord at 0 succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	assertUntraced(t, p)
	p.Go(t)
	if rest := p.Rest(t, 30*time.Second); rest[len(rest)-1] != "verdict ok" {
		t.Fatalf("the program after the memory tests: %q", rest)
	}
}

// BenchmarkCheckpointNone measures one simulated checkpoint of a 10-thread process (freeze,
// capture, image, read back, resume) with the restore that changes nothing.
func BenchmarkCheckpointNone(b *testing.B) {
	p, tr := attachRestart(b)
	var img bytes.Buffer
	b.ResetTimer()
	// The freeze-capture-apply-resume cycle the job feels (Checkpoint then waits outcomeDelay
	// before it looks at what each thread did; that wait stops nothing and is not timed here).
	for i := 0; i < b.N; i++ {
		img.Reset()
		var th []sessions.Thread
		err := tr.do(func() error {
			var err error
			th, err = tr.checkpoint("none", &img)
			return err
		})
		if err != nil || len(th) != len(p.Threads) {
			b.Fatalf("checkpoint: %d threads, %v", len(th), err)
		}
	}
}

// attachRestart starts demo/restart (threads blocked in read, futex, nanosleep, poll…) and
// attaches a Tracer to it; both end at cleanup.
func attachRestart(tb testing.TB) (*restarttest.Proc, *Tracer) {
	tb.Helper()
	p := restarttest.Start(tb, restarttest.Build(tb))
	tr := New(Options{})
	tb.Cleanup(func() { tr.Close() })
	job, _ := ParseJob("pid:" + strconv.Itoa(p.PID))
	if _, err := tr.Attach(job); err != nil {
		tb.Fatal(err)
	}
	return p, tr
}
