package access

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/access/peertest"
	"github.com/crashtui/crashtui/demo/patience"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
	"github.com/crashtui/crashtui/views"
)

// Real-process tests of the measured access matrix (kernel.md §A.5, issue 4's acceptance):
// peers in different identities measured by injection and checked against what each peer's
// own kcmp/process_vm_readv returns; injection leaving no trace; a real Open MPI job under a
// container-like seccomp filter.
//
// Every process here is a child of the test goroutine, not of the tracer's locked thread:
// the tracer waits with __WNOTHREAD, so the test keeps its children's exit statuses.

// measureBuildC compiles demo/access/REL (a C file) with cc into a world-readable directory.
func measureBuildC(t *testing.T, cc, rel string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("%s is not installed (make test installs it)", cc)
	}
	src := filepath.Join(tracertest.ModuleRoot(), "demo", "access", rel)
	bin := filepath.Join(peertest.Dir(t), strings.TrimSuffix(filepath.Base(rel), ".c"))
	args := append([]string{"-O1", "-pthread", "-o", bin, src}, flags...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, rel, err, out)
	}
	return bin
}

// mpeer is one running demo/access/peer and what ReadProc saw of it.
type mpeer struct {
	*peertest.Peer
	name string
	pid  int // as the test (the init PID namespace) names it
	proc Proc
}

// startMeasurePeer starts a peer with attr (plus the process group pgid; 0 makes it a leader)
// and waits for its "ready" line. Cleanup kills it by pid and reaps it.
func startMeasurePeer(t *testing.T, bin, name string, args []string, attr *syscall.SysProcAttr, pgid int) *mpeer {
	t.Helper()
	pp := peertest.Start(t, bin, name, args, attr, pgid)
	p := &mpeer{Peer: pp, name: name, pid: pp.PID}
	var err error
	if p.proc, err = ReadProc(p.PID); err != nil {
		t.Fatal(err)
	}
	return p
}

func measureAttach(t *testing.T, spec string, log *tracertest.EventLog) (*tracer.Tracer, tracer.AttachResult) {
	t.Helper()
	opts := tracer.Options{}
	if log != nil {
		opts.Emit = log.Emit
	}
	tr := tracer.New(opts)
	t.Cleanup(func() { tr.Close() })
	job, err := tracer.ParseJob(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Attach(job)
	if err != nil {
		t.Fatalf("attach %s: %v", spec, err)
	}
	return tr, res
}

func measureNeedKernel(t *testing.T) System {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (other uids, namespaces, PTRACE_SECCOMP_GET_FILTER), running as uid", os.Geteuid())
	}
	sys := ReadSystem()
	if sys.KcmpBuilt == nil || !*sys.KcmpBuilt || sys.CMABuilt == nil || !*sys.CMABuilt {
		t.Skip("kcmp or process_vm_readv is not built into this kernel")
	}
	return sys
}

// word is how a probe line names one result: OK or the errno name.
func measureWord(c sessions.Check) string {
	if c.Measured == nil {
		return "unmeasured"
	}
	if *c.Measured {
		return "OK"
	}
	if c.Errno == nil {
		return "denied-without-errno"
	}
	return *c.Errno
}

// TestMatrixMeasuredMatchesKernel measures a job of six peers in six identities (root, uid
// 65534, a container-like seccomp EPERM filter, non-dumpable, a new user namespace, a new
// PID namespace) and checks every ordered pair: predicted and measured values, errno and
// reason against the rule each pair must hit (A.3; with Yama's rows where the host has Yama),
// and the measured values against what the peer itself gets from kcmp and process_vm_readv.
func TestMatrixMeasuredMatchesKernel(t *testing.T) {
	sys := measureNeedKernel(t)
	bin := peertest.Build(t)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	type role struct {
		name string
		args []string
		attr *syscall.SysProcAttr
	}
	roles := []role{
		// The PID-namespace peer leads the process group: a child in a new PID namespace
		// cannot name an outside group in setpgid.
		{name: "pidns", attr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}},
		{name: "root"},
		{name: "nobody", attr: &syscall.SysProcAttr{Credential: nobody}},
		{name: "seccomp", args: []string{"-seccomp"}},
		{name: "nodump", args: []string{"-nodump"}, attr: &syscall.SysProcAttr{Credential: nobody}},
		{name: "userns", attr: &syscall.SysProcAttr{
			Credential:  &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
		}},
	}
	// Reason for A (row) reading B (column), "" = allowed, by A.3 (first failing row wins),
	// without Yama (its rows are applied below where /proc/sys/kernel/yama exists):
	// nobody and nodump are uid 65534 like userns's mapped root, but userns is another user
	// namespace whose owner (root) they are not; root owns it, so root may read it.
	want := map[string]map[string]sessions.Reason{
		"root":    {"pidns": "", "nobody": "", "seccomp": "", "nodump": "", "userns": ""},
		"nobody":  {"pidns": "uid", "root": "uid", "seccomp": "uid", "nodump": "dumpable", "userns": "userns"},
		"seccomp": {"pidns": "seccomp", "root": "seccomp", "nobody": "seccomp", "nodump": "seccomp", "userns": "seccomp"},
		"nodump":  {"pidns": "uid", "root": "uid", "nobody": "", "seccomp": "uid", "userns": "userns"},
		"userns":  {"pidns": "userns", "root": "userns", "nobody": "userns", "seccomp": "userns", "nodump": "dumpable"},
		"pidns":   {"root": "pidns", "nobody": "pidns", "seccomp": "pidns", "nodump": "pidns", "userns": "pidns"},
	}

	byPID := map[int]*mpeer{}
	pgid := 0
	for _, r := range roles {
		p := startMeasurePeer(t, bin, r.name, r.args, r.attr, pgid)
		if pgid == 0 {
			pgid = p.PID
		}
		byPID[p.PID] = p
	}
	if s := byPID[pgid]; s.name != "pidns" || len(s.proc.NSpid) != 2 {
		t.Fatalf("pidns peer: NSpid %v", s.proc.NSpid)
	}

	log := &tracertest.EventLog{}
	tr, res := measureAttach(t, "pgid:"+strconv.Itoa(pgid), log)
	if res.Processes != len(roles) {
		t.Fatalf("attached %d processes, want %d (refused: %v)", res.Processes, len(roles), res.Refused)
	}

	m, st, err := New(tr).Matrix(true)
	if err != nil {
		t.Fatal(err)
	}
	wantPIDs := slices.Sorted(func(yield func(int) bool) {
		for pid := range byPID {
			if !yield(pid) {
				return
			}
		}
	})
	if !slices.Equal(m.PIDs, wantPIDs) || len(m.Cells) != len(roles)*(len(roles)-1) || !m.Measured {
		t.Fatalf("matrix: pids %v (want %v), %d cells, measured %v", m.PIDs, wantPIDs, len(m.Cells), m.Measured)
	}
	// Every call is injected but the seccomp peer's, whose filter returns EPERM for both: the
	// gate injects nothing a thread's filter does not allow (kernel.md D.1). 2 per other pair.
	fromSeccomp := len(roles) - 1
	if want := 2 * (len(m.Cells) - fromSeccomp); st.Injections != want || st.LongestStop <= 0 || st.Measure <= 0 {
		t.Errorf("stats %+v, want %d injections", st, want)
	}

	for _, c := range m.Cells {
		a, b := byPID[c.From], byPID[c.To]
		if a == nil || b == nil {
			t.Fatalf("cell %d->%d names a process the test did not start", c.From, c.To)
		}
		name := a.name + "->" + b.name
		reason := want[a.name][b.name]
		errno := "EPERM"
		switch reason {
		case "":
			errno = "OK"
		case ReasonPidNS:
			errno = "ESRCH"
		}
		vmWant, kcWant := errno, errno
		if reason == "" && sys.Yama > 0 && !(sys.Yama < 3 && a.name == "root") {
			// Rows 9-10: Yama refuses the ATTACH-mode process_vm_readv (no peer descends
			// from another; only root holds CAP_SYS_PTRACE), never the READ-mode kcmp.
			reason, vmWant = ReasonYama, "EPERM"
		}
		gotReason := sessions.Reason("")
		if c.Reason != nil {
			gotReason = *c.Reason
		}
		if gotReason != reason {
			t.Errorf("%s: reason %q, want %q (%s)", name, gotReason, reason, views.CellWhy(&c))
		}
		for _, ch := range []struct {
			call, want string
			c          sessions.Check
		}{{"vm_readv", vmWant, c.VMReadv}, {"kcmp", kcWant, c.Kcmp}} {
			if ch.c.Predicted != (ch.want == "OK") {
				t.Errorf("%s: %s predicted %v, want %s", name, ch.call, ch.c.Predicted, ch.want)
			}
			if a.name == "seccomp" {
				// Not run: the filter of the thread that would run it says ERRNO(EPERM).
				if nr := ch.c.NotRun; ch.c.Measured != nil || nr == nil || nr.Why != sessions.NotRunSeccomp || nr.Action != "ERRNO(EPERM)" || nr.TID != a.PID {
					t.Errorf("%s: %s measured %v not-run %+v, want not run: thread %d's filter returns ERRNO(EPERM)", name, ch.call, ch.c.Measured, nr, a.PID)
				}
				if ch.c.Errno == nil || *ch.c.Errno != ch.want {
					t.Errorf("%s: %s predicted errno %v, want %s", name, ch.call, ch.c.Errno, ch.want)
				}
				continue
			}
			if got := measureWord(ch.c); got != ch.want {
				t.Errorf("%s: %s measured %s, want %s", name, ch.call, got, ch.want)
			}
		}
		if d := disagreeOf(c); strings.Contains(d, "unexplained") {
			t.Errorf("%s: prediction and measurement disagree: %s", name, d)
		}
		if why := views.CellWhy(&c); reason != "" && !strings.Contains(why, "Fix:") {
			t.Errorf("%s: explanation without a fix: %s", name, why)
		}
		// A.4: Open MPI uses CMA when the user namespaces match and kcmp passes (and, in
		// this prediction, the pid it would name is B).
		sameNS := a.proc.UserNS[0].Inode == b.proc.UserNS[0].Inode && a.proc.PidNS[0] == b.proc.PidNS[0]
		if wantMPI := sameNS && kcWant == "OK"; c.OpenMPI != wantMPI {
			t.Errorf("%s: openmpi %v, want %v", name, c.OpenMPI, wantMPI)
		}

		// Ground truth: the same two calls made by A itself, with B's pid as A names it
		// (for an invisible B, the number the test knows, which names nothing in A's namespace).
		pid, visible := PIDIn(a.proc, b.proc)
		if !visible {
			pid = b.PID
		}
		truth := a.Probe(t, pid, b.proc.ReadableAddr)
		got := "kcmp=" + measureWord(c.Kcmp) + " vm=" + measureWord(c.VMReadv)
		if a.name == "seccomp" {
			got = "kcmp=" + *c.Kcmp.Errno + " vm=" + *c.VMReadv.Errno // predicted: not run
		}
		if got != truth {
			t.Errorf("%s: measured %s, the process itself gets %s", name, got, truth)
		}
	}

	// Without measuring: the same predictions, nothing measured.
	p, _, err := New(tr).Matrix(false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Measured || len(p.Cells) != len(m.Cells) {
		t.Fatalf("Matrix(false): measured %v, %d cells", p.Measured, len(p.Cells))
	}
	for i, c := range p.Cells {
		if c.VMReadv.Measured != nil || c.Kcmp.Measured != nil {
			t.Errorf("Matrix(false) %d->%d: measured %v/%v, want nil", c.From, c.To, c.VMReadv.Measured, c.Kcmp.Measured)
		}
		if mc := m.Cells[i]; c.From != mc.From || c.To != mc.To || c.VMReadv.Predicted != mc.VMReadv.Predicted || c.Kcmp.Predicted != mc.Kcmp.Predicted {
			t.Errorf("Matrix(false) %d->%d predicts differently from Matrix(true)", c.From, c.To)
		}
	}
	if ms := tracertest.Of[sessions.Matrix](log); len(ms) != 2 || !ms[0].Measured || ms[1].Measured {
		t.Errorf("emitted %d matrix events, want the measured one then the predicted one", len(ms))
	}
}

// TestMatrixNeverKills measures a job in which one process runs under a seccomp filter that
// kills on kcmp (kernel.md A.5: never let a measurement kill A): the tracer reads the filter,
// does not inject kcmp there (the cell keeps the predicted SIGSYS, unmeasured), still
// measures process_vm_readv, and the process lives on.
func TestMatrixNeverKills(t *testing.T) {
	measureNeedKernel(t)
	bin := peertest.Build(t)
	root := startMeasurePeer(t, bin, "root", nil, nil, 0)
	killer := startMeasurePeer(t, bin, "killer", []string{"-seccomp-kill"}, nil, root.PID)
	tr, _ := measureAttach(t, "pgid:"+strconv.Itoa(root.PID), nil)
	m, st, err := New(tr).Matrix(true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Injections != 3 {
		t.Errorf("%d injections, want 3 (all but kcmp inside the killer)", st.Injections)
	}
	for _, c := range m.Cells {
		got := fmt.Sprintf("vm %v/%s kcmp %v/%s", c.VMReadv.Predicted, measureWord(c.VMReadv), c.Kcmp.Predicted, measureWord(c.Kcmp))
		want := "vm true/OK kcmp true/OK"
		if c.From == killer.PID {
			want = "vm true/OK kcmp false/unmeasured"
			if c.Kcmp.Errno == nil || *c.Kcmp.Errno != "SIGSYS" || c.Reason == nil || *c.Reason != ReasonSeccomp {
				t.Errorf("killer -> root: kcmp errno %v reason %v, want SIGSYS, seccomp", c.Kcmp.Errno, c.Reason)
			}
		}
		if got != want {
			t.Errorf("%d -> %d: %s, want %s", c.From, c.To, got, want)
		}
	}
	// Alive and still serving: an unknown command gets its error line (a probe would run
	// kcmp itself and die of SIGSYS).
	if err := syscall.Kill(killer.PID, 0); err != nil {
		t.Fatalf("the killer peer is gone: %v", err)
	}
	if st, _ := procfs.ReadStat(killer.PID); st.State == 'Z' || st.State == 'X' || st.State == 0 {
		t.Fatalf("the killer peer died during measurement (state %c)", st.State)
	}
	fmt.Fprintln(killer.In, "nonsense")
	if line, err := killer.Out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "error unknown command") {
		t.Errorf("the killer peer does not answer: %q %v", line, err)
	}
}

// ---- injection leaves no trace ----

// measureQuiet is a running demo/access/quiet/quiet.c.
type measureQuiet struct{ *tracertest.Piped }

func measureStartQuiet(t *testing.T, bin string, pgid int) *measureQuiet {
	t.Helper()
	q := &measureQuiet{tracertest.StartPiped(t, pgid, bin)}
	q.waitInRead(t)
	return q
}

func (q *measureQuiet) ask(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := fmt.Fprintln(q.In, cmd); err != nil {
		t.Fatal(err)
	}
	return q.Line(t)
}

// waitInRead waits until the main thread sits in read(2) on its pipe: /proc/PID/syscall
// names the syscall a blocked thread is in. There is no event for "has blocked", so this
// polls (a few milliseconds at most).
func (q *measureQuiet) waitInRead(t *testing.T) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/syscall", q.PID, q.PID)
	deadline := patience.New(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if f := strings.Fields(string(b)); len(f) > 0 && f[0] == strconv.Itoa(unix.SYS_READ) {
			return
		}
		if deadline.Passed() {
			t.Fatalf("quiet %d never blocked in read: %q", q.PID, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// sigBlk is the thread's blocked signal mask as /proc shows it.
func measureSigBlk(t *testing.T, pid, tid int) string {
	t.Helper()
	v := procfs.StatusField(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid), "SigBlk")
	if v == "" {
		t.Fatalf("no SigBlk for %d/%d", pid, tid)
	}
	return v
}

// measureRegsAtInterrupt stops tid with PTRACE_INTERRUPT (as Matrix does), reads its registers and
// lets it go again.
func measureRegsAtInterrupt(t *testing.T, tr *tracer.Tracer, tid int) []uint64 {
	t.Helper()
	var words []uint64
	err := tr.Do(func(l *tracer.Loop) error {
		if th, ok := l.Thread(tid); !ok || th.State() != "running" {
			return fmt.Errorf("thread %d is not traced, or already held", tid)
		}
		return l.Hold([]int{tid}, tracer.HoldOptions{Timeout: tracertest.Wait(5 * time.Second)}, func(h *tracer.Held) error {
			if err := h.LateErr("hold"); err != nil {
				return err
			}
			r, err := h.Threads[0].Regs()
			words = r.Words
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return words
}

// TestInjectionLeavesNoTrace measures the matrix of a two-process job 1000 times (4000
// injected syscalls into each main thread, each blocked in read(2) on a pipe) and checks
// that each thread keeps its registers, its signal mask, the memory around and below its
// stack pointer (where the scratch iovecs go) and its heap, and that the interrupted read
// is restarted and completes with the byte written afterwards (not EINTR, not -512).
func TestInjectionLeavesNoTrace(t *testing.T) {
	measureNeedKernel(t)
	bin := measureBuildC(t, "gcc", "quiet/quiet.c")
	a := measureStartQuiet(t, bin, 0)
	b := measureStartQuiet(t, bin, a.PID)
	qs := []*measureQuiet{a, b}

	tr, res := measureAttach(t, "pgid:"+strconv.Itoa(a.PID), nil)
	if res.Processes != 2 {
		t.Fatalf("attached %d processes", res.Processes)
	}
	type snapshot struct {
		regs   []uint64
		sigblk string
		sum    string
	}
	snap := func(q *measureQuiet) snapshot {
		return snapshot{regs: measureRegsAtInterrupt(t, tr, q.PID), sigblk: measureSigBlk(t, q.PID, q.PID), sum: q.ask(t, "sum")}
	}
	before := []snapshot{snap(a), snap(b)}
	for i, s := range before {
		// The mask quiet.c sets: SIGUSR1 (10), SIGWINCH (28) and SIGRTMIN+3 (glibc's SIGRTMIN
		// is 34, so 37): bits 9, 27 and 36.
		if s.sigblk != "0000001008000200" {
			t.Fatalf("quiet %d starts with SigBlk %s", qs[i].PID, s.sigblk)
		}
	}

	const rounds = 1000
	var longest time.Duration
	for i := 0; i < rounds; i++ {
		m, st, err := New(tr).Matrix(true)
		if err != nil {
			t.Fatal(err)
		}
		if st.Injections != 4 || len(m.Cells) != 2 || !matrixMeasuredOK(m.Cells[0]) || !matrixMeasuredOK(m.Cells[1]) {
			t.Fatalf("round %d: %d injections, cells %+v", i, st.Injections, m.Cells)
		}
		longest = max(longest, st.LongestStop)
	}
	t.Logf("%d measurements of a 2-process job; longest stop %v", rounds, longest)

	for i, q := range qs {
		after := snap(q)
		if !slices.Equal(after.regs, before[i].regs) {
			t.Errorf("quiet %d: registers changed: %v", q.PID, measureWordDiff(before[i].regs, after.regs))
		}
		if after.sigblk != before[i].sigblk {
			t.Errorf("quiet %d: SigBlk %s, was %s", q.PID, after.sigblk, before[i].sigblk)
		}
		if after.sum != before[i].sum {
			t.Errorf("quiet %d: stack/heap checksum %s, was %s", q.PID, after.sum, before[i].sum)
		}
	}
	// Still traced: the restarted reads complete with the bytes written now.
	for i, q := range qs {
		if got, want := q.ask(t, fmt.Sprintf("write %d", 42+i)), fmt.Sprintf("read ret=1 errno=0 byte=%d", 42+i); got != want {
			t.Errorf("quiet %d: %q, want %q", q.PID, got, want)
		}
	}
}

func measureWordDiff(a, b []uint64) string {
	var d []string
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			d = append(d, fmt.Sprintf("word %d: %#x -> %#x", i, a[i], b[i]))
		}
	}
	if len(a) != len(b) {
		d = append(d, fmt.Sprintf("%d words -> %d", len(a), len(b)))
	}
	return strings.Join(d, ", ")
}

// ---- a real Open MPI job ----

// measureOMPIArgs says how to make two local ranks use shared memory with CMA single copy, and how
// to make Open MPI say what the kernel answered: Open MPI 5 has the smsc framework (smsc/cma
// pre-checks with kcmp), Open MPI 4 has btl/vader with single_copy_mechanism cma (it calls
// process_vm_readv and prints "Read -1, expected N, errno = E" on failure).
func measureOMPIArgs(t *testing.T) (args []string, smsc bool) {
	t.Helper()
	out, err := exec.Command("ompi_info", "--parsable").Output()
	if err != nil {
		t.Skipf("ompi_info: %v (install Debian's openmpi-bin)", err)
	}
	s := string(out)
	switch {
	case strings.Contains(s, "mca:smsc:cma:"):
		return []string{"--mca", "btl", "self,sm", "--mca", "smsc", "cma", "--mca", "smsc_base_verbose", "100"}, true
	case strings.Contains(s, "mca:btl:vader:"):
		return []string{"--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "cma", "--mca", "btl_base_verbose", "1"}, false
	}
	t.Skip("this Open MPI has neither smsc/cma nor btl/vader")
	return nil, false
}

// measureMPIRun is a running mpirun (started through peer exec, with or without the filter).
type measureMPIRun struct {
	cmd    *exec.Cmd
	lines  chan string
	output []string
	ranks  map[int]int // rank -> pid
}

func measureStartMPI(t *testing.T, peer, prog, gate string, ompi []string, seccomp bool) *measureMPIRun {
	t.Helper()
	argv := []string{}
	if seccomp {
		argv = append(argv, "-seccomp")
	}
	argv = append(argv, "exec", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2")
	argv = append(argv, ompi...)
	argv = append(argv, prog, gate)
	r := &measureMPIRun{cmd: exec.Command(peer, argv...), lines: make(chan string, 256), ranks: map[int]int{}}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = pw, pw
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	mpirun := r.cmd.Process.Pid
	t.Cleanup(func() {
		// mpirun and its ranks, each by pid (the ranks were started by the mpirun we started).
		for _, pid := range r.ranks {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(mpirun, syscall.SIGKILL)
		r.cmd.Wait()
		pr.Close()
	})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	rankLine := regexp.MustCompile(`^rank (\d) pid (\d+) size 2$`)
	deadline := patience.After(60 * time.Second)
	for len(r.ranks) < 2 {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("mpirun ended before both ranks started:\n%s", strings.Join(r.output, "\n"))
			}
			r.output = append(r.output, l)
			if m := rankLine.FindStringSubmatch(l); m != nil {
				rank, _ := strconv.Atoi(m[1])
				pid, _ := strconv.Atoi(m[2])
				r.ranks[rank] = pid
			}
		case <-deadline:
			t.Fatalf("ranks did not start:\n%s", strings.Join(r.output, "\n"))
		}
	}
	return r
}

// finish collects the rest of the output until mpirun exits.
func (r *measureMPIRun) finish(t *testing.T) (string, error) {
	t.Helper()
	deadline := patience.After(90 * time.Second)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				return strings.Join(r.output, "\n"), r.cmd.Wait()
			}
			r.output = append(r.output, l)
		case <-deadline:
			t.Fatalf("mpirun did not finish:\n%s", strings.Join(r.output, "\n"))
		}
	}
}

// TestMatrixOpenMPI runs a real two-rank Open MPI job whose ranks swap a 4 MiB message over
// shared memory with CMA single copy. Started under the container-like seccomp filter
// (peer -seccomp exec mpirun ...), crashtui's measured matrix must say process_vm_readv
// denied by seccomp (EPERM) for both rank pairs, and the ranks themselves must hit EPERM
// when they try; without the filter the pairs are allowed and no rank reports an error.
func TestMatrixOpenMPI(t *testing.T) {
	sys := measureNeedKernel(t)
	if sys.Yama > 0 {
		t.Skipf("Yama ptrace_scope=%d: this test expects process_vm_readv between same-user ranks to work without the filter", sys.Yama)
	}
	for _, tool := range []string{"mpirun", "mpicc", "ompi_info"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: needs Debian packages openmpi-bin and libopenmpi-dev (make test installs them)", tool)
		}
	}
	ompi, smsc := measureOMPIArgs(t)
	peer := peertest.Build(t)
	prog := measureBuildC(t, "mpicc", "mpi/cma.c")

	for _, seccomp := range []bool{true, false} {
		t.Run(map[bool]string{true: "seccomp", false: "nofilter"}[seccomp], func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			if err := unix.Mkfifo(gate, 0o600); err != nil {
				t.Fatal(err)
			}
			// Held read-write: the ranks' open(O_RDONLY) returns at once and they block in
			// read(2) until the test writes one byte each.
			g, err := os.OpenFile(gate, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			run := measureStartMPI(t, peer, prog, gate, ompi, seccomp)
			mpirun := run.cmd.Process.Pid

			tr, res := measureAttach(t, "pid:"+strconv.Itoa(mpirun), nil)
			if res.Processes < 3 {
				t.Fatalf("attached %d processes (mpirun and 2 ranks expected)", res.Processes)
			}
			m, _, err := New(tr).Matrix(true)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Fatalf("detach: %v", err)
			}
			cells := map[[2]int]sessions.Cell{}
			for _, c := range m.Cells {
				cells[[2]int{c.From, c.To}] = c
			}
			for _, pair := range [][2]int{{0, 1}, {1, 0}} {
				a, b := run.ranks[pair[0]], run.ranks[pair[1]]
				c, ok := cells[[2]int{a, b}]
				if !ok {
					t.Fatalf("no cell for rank %d (pid %d) -> rank %d (pid %d); pids %v", pair[0], a, pair[1], b, m.PIDs)
				}
				name := fmt.Sprintf("rank %d -> rank %d", pair[0], pair[1])
				reason := sessions.Reason("")
				if c.Reason != nil {
					reason = *c.Reason
				}
				got := fmt.Sprintf("vm_readv predicted %v measured %s, kcmp measured %s, reason %q, openmpi %v",
					c.VMReadv.Predicted, measureWord(c.VMReadv), measureWord(c.Kcmp), reason, c.OpenMPI)
				want := "vm_readv predicted true measured OK, kcmp measured OK, reason \"\", openmpi true"
				if seccomp {
					// The rank's filter returns EPERM for both calls: not injected (the gate
					// runs nothing a thread's filter does not allow), predicted EPERM, as Open
					// MPI's own "Read -1, ... errno = 1" confirms below.
					want = "vm_readv predicted false measured unmeasured, kcmp measured unmeasured, reason \"seccomp\", openmpi false"
					if nr := c.VMReadv.NotRun; nr == nil || nr.Why != sessions.NotRunSeccomp || nr.Action != "ERRNO(EPERM)" {
						t.Errorf("%s: process_vm_readv not-run %+v, want the filter's ERRNO(EPERM)", name, nr)
					}
				}
				if got != want {
					t.Errorf("%s: %s\n\twant %s\n\texplain: %s", name, got, want, views.CellWhy(&c))
				}
			}

			// Let the ranks swap their message and read what Open MPI itself said.
			if _, err := g.Write([]byte{'g', 'g'}); err != nil {
				t.Fatal(err)
			}
			out, err := run.finish(t)
			t.Logf("Open MPI output:\n%s", out)
			for rank := range 2 {
				if !strings.Contains(out, fmt.Sprintf("rank %d exchange ok", rank)) {
					t.Errorf("rank %d did not complete its exchange (mpirun: %v)", rank, err)
				}
			}
			// The ranks' own view of process_vm_readv/kcmp, one line per rank that tried.
			var denied *regexp.Regexp
			if smsc {
				denied = regexp.MustCompile(`(?m)^\[[^\]]*:0*(\d+)\] .*(CAP_SYS_PTRACE|process_vm_readv).*(errno[ =:]+1\b|Operation not permitted)`)
			} else {
				denied = regexp.MustCompile(`(?m)^\[[^\]]*:0*(\d+)\] Read -1, expected \d+, errno = (\d+)$`)
			}
			hit := map[int]bool{}
			for _, mm := range denied.FindAllStringSubmatch(out, -1) {
				pid, _ := strconv.Atoi(mm[1])
				hit[pid] = true
				if !smsc && mm[2] != strconv.Itoa(int(unix.EPERM)) {
					t.Errorf("a rank's process_vm_readv failed with errno %s, the matrix says EPERM: %s", mm[2], mm[0])
				}
			}
			for rank, pid := range run.ranks {
				if seccomp && !hit[pid] {
					t.Errorf("rank %d (pid %d) did not report the EPERM the matrix predicts", rank, pid)
				}
				if !seccomp && hit[pid] {
					t.Errorf("rank %d (pid %d) was refused CMA without a filter", rank, pid)
				}
			}
		})
	}
}

// TestMatrixOneProcess: a job of one process has no pair: Matrix(true) holds and injects
// nothing there (a static binary with no room for a guard near its pc made it fail for
// nothing) and reports no error.
func TestMatrixOneProcess(t *testing.T) {
	measureNeedKernel(t)
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	log := &tracertest.EventLog{}
	tr, _ := measureAttach(t, "pid:"+strconv.Itoa(cmd.Process.Pid), log)
	m, st, err := New(tr).Matrix(true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Injections != 0 || st.LongestStop != 0 || len(m.Cells) != 0 || len(m.PIDs) != 1 {
		t.Errorf("one process: %d injections, held %v, %d cells, pids %v", st.Injections, st.LongestStop, len(m.Cells), m.PIDs)
	}
	if errs := tracertest.Of[sessions.Error](log); len(errs) > 0 {
		t.Errorf("errors for a one-process matrix: %+v", errs)
	}
}
