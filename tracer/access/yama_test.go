package access

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/access/peertest"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
	"github.com/crashtui/crashtui/views"
	"golang.org/x/sys/unix"
)

const yamaKnob = "/proc/sys/kernel/yama/ptrace_scope"

// peerBinary is demo/access/peer: the one a QEMU guest image carries (CRASHTUI_PEER), or one
// built now.
func peerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CRASHTUI_PEER"); p != "" {
		return p
	}
	return peertest.Build(t)
}

// TestYamaMeasured measures the matrix of a job under Yama's ptrace_scope 0, 1 and 2 on a
// kernel that has Yama (this machine's does not; make test-arm64 runs it inside Debian's arm64
// kernel, which does). The job is four uid-65534 processes without capabilities in one
// process group: a, its child c, b, and d, which called PR_SET_PTRACER_ANY as Open MPI's
// smsc/cma does (invisible in /proc: predicted refused under scope 1, measured allowed, and
// said why). Yama governs ATTACH-mode checks only, so
// process_vm_readv is refused where the scope says (1: unless the target descends from the
// reader; 2: always, without CAP_SYS_PTRACE) while kcmp, a READ-mode check, always passes;
// crashtui's prediction must say the same with reason "yama", and warn that Open MPI's kcmp
// pre-check would pass where CMA then fails.
func TestYamaMeasured(t *testing.T) {
	inGuest := os.Getenv("CRASHTUI_GUEST_CPU") != ""
	orig, err := os.ReadFile(yamaKnob)
	if err != nil {
		if inGuest {
			t.Fatalf("the guest kernel has no Yama: %v", err)
		}
		t.Skipf("this kernel has no Yama (%v); make test-arm64 runs this test in Debian's arm64 kernel, which has it", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it writes kernel.yama.ptrace_scope and starts processes as uid 65534")
	}
	if strings.TrimSpace(string(orig)) == "3" {
		t.Skip("ptrace_scope is 3 here: it cannot be lowered until reboot")
	}
	t.Cleanup(func() { os.WriteFile(yamaKnob, orig, 0) })
	sys := ReadSystem()
	if sys.KcmpBuilt == nil || !*sys.KcmpBuilt || sys.CMABuilt == nil || !*sys.CMABuilt {
		t.Fatalf("kcmp or process_vm_readv missing from a kernel that has Yama: %+v", sys)
	}

	bin := peerBinary(t)
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	a := peertest.Start(t, bin, "a", []string{"-spawn"}, nobody, 0)
	line, err := a.Out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "child" {
		t.Fatalf("peer a -spawn said %q (%v), want \"child PID ADDR\"", line, err)
	}
	c, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Kill(c, unix.SIGKILL) }) // it also exits when a does
	b := peertest.Start(t, bin, "b", nil, nobody, a.PID)
	d := peertest.Start(t, bin, "d", []string{"-ptracer-any"}, nobody, a.PID)
	names := map[int]string{a.PID: "a", c: "c", b.PID: "b", d.PID: "d"}

	log := &tracertest.EventLog{}
	tr, res := measureAttach(t, "pgid:"+strconv.Itoa(a.PID), log)
	defer func() {
		if t.Failed() {
			for _, e := range log.Events() {
				switch b := e.Body.(type) {
				case sessions.Error, sessions.Crash, sessions.Exit, sessions.Handled:
					t.Logf("tracer %s event: %+v", e.Kind(), b)
				}
			}
		}
	}()
	if res.Processes != 4 {
		t.Fatalf("attached %d processes, want a, c, b and d", res.Processes)
	}
	scopes := []int{0, 1, 2}
	if inGuest {
		// 3 cannot be lowered until reboot: only in the throw-away guest, and last.
		scopes = append(scopes, 3)
	}
	for _, scope := range scopes {
		t.Run(fmt.Sprintf("ptrace_scope=%d", scope), func(t *testing.T) {
			if err := os.WriteFile(yamaKnob, []byte(strconv.Itoa(scope)), 0); err != nil {
				t.Fatal(err)
			}
			m, _, err := New(tr).Matrix(true)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Cells) != 12 || !m.Measured {
				t.Fatalf("%d cells, measured %v", len(m.Cells), m.Measured)
			}
			for _, cell := range m.Cells {
				name := names[cell.From] + "->" + names[cell.To]
				// d called PR_SET_PTRACER_ANY, which /proc cannot show: scope 1 is predicted
				// to refuse reading it, and the measurement says why it did not.
				exception := scope == 1 && names[cell.To] == "d"
				vm := scope == 0 || (scope == 1 && name == "a->c") || exception // 2, 3: never
				predicted := vm && !exception
				reason := sessions.Reason("")
				if !predicted {
					reason = ReasonYama
				}
				got := sessions.Reason("")
				if cell.Reason != nil {
					got = *cell.Reason
				}
				why, disagree := views.CellWhy(&cell), views.CellDisagree(&cell)
				if got != reason {
					t.Errorf("%s: reason %q, want %q (%s)", name, got, reason, why)
				}
				if cell.VMReadv.Predicted != predicted || measureWord(cell.VMReadv) != okOr(vm, "EPERM") {
					t.Errorf("%s: process_vm_readv predicted %v measured %s, want predicted %v measured %s", name, cell.VMReadv.Predicted, measureWord(cell.VMReadv), predicted, okOr(vm, "EPERM"))
				}
				if !cell.Kcmp.Predicted || measureWord(cell.Kcmp) != "OK" {
					t.Errorf("%s: kcmp predicted %v measured %s, want OK (READ mode: Yama does not apply)", name, cell.Kcmp.Predicted, measureWord(cell.Kcmp))
				}
				// The trap Open MPI falls into: its kcmp pre-check passes, CMA then fails.
				const trap = "Open MPI would use CMA (kcmp passes) but process_vm_readv fails"
				switch {
				case strings.Contains(disagree, "unexplained"):
					t.Errorf("%s: unexplained disagreement %q", name, disagree)
				case exception:
					if !strings.Contains(disagree, "PR_SET_PTRACER") || strings.Contains(disagree, trap) {
						t.Errorf("%s: disagreement %q, want the PR_SET_PTRACER exception and no CMA warning", name, disagree)
					}
				case vm != (disagree == "") || (!vm && !strings.Contains(disagree, trap)):
					t.Errorf("%s: disagreement %q; want none when allowed, else Open MPI's trap", name, disagree)
				}
				if !predicted && !(strings.Contains(why, fmt.Sprintf("ptrace_scope=%d", scope)) && strings.Contains(why, "Fix:")) {
					t.Errorf("%s: explanation does not name ptrace_scope=%d and a fix: %s", name, scope, why)
				}
			}
		})
	}
	if !inGuest {
		return
	}
	// Under scope 3 crashtui itself cannot attach, even as root; the threads it already
	// traced stay traced (Yama checks attach only, as the measurement above just showed).
	job, _ := tracer.ParseJob("pid:" + strconv.Itoa(b.PID))
	start := time.Now()
	if err := tr.Close(); err != nil { // b must be free to be seized, were it not for Yama
		t.Errorf("close after %v: %v", time.Since(start), err)
	}
	if _, tp := procfs.TaskStatus(b.PID); tp != 0 {
		t.Fatalf("b (pid %d) still traced by %d after Close", b.PID, tp)
	}
	// Only now: a second tracer.Tracer in this process while the first traces the test's own
	// children could be on the thread that forked them, and would then be handed the
	// first one's stops (see the package doc).
	tr3 := tracer.New(tracer.Options{})
	t.Cleanup(func() { tr3.Close() })
	if res, err := tr3.Attach(job); err == nil || !strings.Contains(err.Error(), "Yama ptrace_scope=3 forbids every ptrace attach") {
		t.Errorf("attach under ptrace_scope=3: %v (%+v), want an error that names Yama's scope 3", err, res)
	}
}

func okOr(ok bool, errno string) string {
	if ok {
		return "OK"
	}
	return errno
}
