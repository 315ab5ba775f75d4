package access

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/access/peertest"
	"github.com/crashtui/crashtui/tracer/seccomp"
)

// peer is one running demo/access/peer process and what ReadProc saw of it.
type peer struct {
	*peertest.Peer
	name string
	proc Proc
}

// probe asks the peer to run kcmp and process_vm_readv towards pid from inside itself.
func (p *peer) probe(t *testing.T, pid int, addr uint64) (kcmp, vm string) {
	t.Helper()
	line := p.Probe(t, pid, addr)
	if _, err := fmt.Sscanf(line, "kcmp=%s vm=%s", &kcmp, &vm); err != nil {
		t.Fatalf("%s: probe answer %q: %v", p.name, line, err)
	}
	return kcmp, vm
}

type role struct {
	name  string
	args  []string
	attr  *syscall.SysProcAttr
	setup func(*Proc)
}

func startPeer(t *testing.T, bin string, r role) *peer {
	t.Helper()
	p := &peer{Peer: peertest.Start(t, bin, r.name, r.args, r.attr, peertest.NoGroup), name: r.name}
	var err error
	if p.proc, err = ReadProc(p.PID); err != nil {
		t.Fatal(err)
	}
	if r.setup != nil {
		r.setup(&p.proc)
	}
	return p
}

// TestGroundTruth starts one process per situation of kernel.md A.3 and checks, for every
// ordered pair, that Predict matches what the kernel answers to kcmp and process_vm_readv
// run from inside A, and that the reason is the expected rule.
func TestGroundTruth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (other uids, namespaces, seccomp), running as uid", os.Geteuid())
	}
	sys := ReadSystem()
	if sys.Yama > 0 {
		t.Skipf("Yama ptrace_scope=%d would add its own denials; this test expects no Yama", sys.Yama)
	}
	if sys.KcmpBuilt == nil || !*sys.KcmpBuilt || sys.CMABuilt == nil || !*sys.CMABuilt {
		t.Skip("kcmp or process_vm_readv not built into this kernel")
	}
	bin := peertest.Build(t)
	ai, err := seccomp.Arch(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	roles := []role{
		{name: "root"},
		{name: "nobody", attr: &syscall.SysProcAttr{Credential: nobody}},
		{name: "seccomp", args: []string{"-seccomp"}, setup: func(p *Proc) {
			// What the tracer reads with PTRACE_SECCOMP_GET_FILTER: the peer's filter.
			p.Filters = [][]byte{peerFilter(t, ai)}
		}},
		{name: "nodump", args: []string{"-nodump"}, attr: &syscall.SysProcAttr{Credential: nobody}},
		{name: "userns", attr: &syscall.SysProcAttr{
			// Credential makes the child setuid(0)/setgid(0) inside the namespace after the
			// maps are written; without it the child keeps the creator's kuid 0.
			Credential:  &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
		}},
		// A user namespace entered without setuid inside it: the process keeps the creator's
		// kuid 0 (shown as 65534 inside) and exec gives it no capabilities (commoncap
		// handle_privileged_root compares with the namespace's root, kuid 65534).
		{name: "userns0", attr: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
		}},
		{name: "pidns", attr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}},
		{name: "nocaps", args: []string{"-dropcaps"}},
		{name: "noeff", args: []string{"-noeff"}},
	}
	// Expected reason for A (row) reading B (column), "" = allowed. Derived from A.3 by hand:
	// nobody and nodump share uid 65534 with userns's mapped root; userns's namespace is
	// owned by root (the test created it), which gives nocaps (euid 0, no capabilities)
	// CAP_SYS_PTRACE inside it (cap_capable's owner rule).
	want := map[string]map[string]string{
		"root":    {"nobody": "", "seccomp": "", "nodump": "", "userns": "", "userns0": "", "pidns": "", "nocaps": "", "noeff": ""},
		"nobody":  {"root": "uid", "seccomp": "uid", "nodump": "dumpable", "userns": "userns", "userns0": "uid", "pidns": "uid", "nocaps": "uid", "noeff": "uid"},
		"seccomp": {"root": "seccomp", "nobody": "seccomp", "nodump": "seccomp", "userns": "seccomp", "userns0": "seccomp", "pidns": "seccomp", "nocaps": "seccomp", "noeff": "seccomp"},
		"nodump":  {"root": "uid", "nobody": "", "seccomp": "uid", "userns": "userns", "userns0": "uid", "pidns": "uid", "nocaps": "uid", "noeff": "uid"},
		"userns":  {"root": "userns", "nobody": "userns", "seccomp": "userns", "nodump": "dumpable", "userns0": "userns", "pidns": "userns", "nocaps": "userns", "noeff": "userns"},
		"userns0": {"root": "userns", "nobody": "uid", "seccomp": "userns", "nodump": "uid", "userns": "uid", "pidns": "userns", "nocaps": "userns", "noeff": "userns"},
		"pidns":   {"root": "pidns", "nobody": "pidns", "seccomp": "pidns", "nodump": "pidns", "userns": "pidns", "userns0": "pidns", "nocaps": "pidns", "noeff": "pidns"},
		"nocaps":  {"root": "capabilities", "nobody": "uid", "seccomp": "capabilities", "nodump": "uid", "userns": "", "userns0": "", "pidns": "capabilities", "noeff": "capabilities"},
		// noeff keeps CapPrm: cap_ptrace_access_check compares CapPrm under REALCREDS, so
		// equal ids suffice, while a uid mismatch needs CAP_SYS_PTRACE in CapEff. The
		// namespace owner rule needs no capability at all.
		"noeff": {"root": "", "nobody": "uid", "seccomp": "", "nodump": "uid", "userns": "", "userns0": "", "pidns": "", "nocaps": ""},
	}

	peers := make([]*peer, len(roles))
	for i, r := range roles {
		peers[i] = startPeer(t, bin, r)
	}
	byName := map[string]*peer{}
	for _, p := range peers {
		byName[p.name] = p
	}
	checkFacts(t, byName)

	for _, a := range peers {
		for _, b := range peers {
			if a == b {
				continue
			}
			name := a.name + "->" + b.name
			pid, visible := PIDIn(a.proc, b.proc)
			if !visible {
				pid = b.proc.PID // what a rank would try: a number that names nothing (or something else) there
			}
			kc, vm := a.probe(t, pid, b.proc.ReadableAddr)
			v := Predict(sys, a.proc, b.proc)
			got := fmt.Sprintf("kcmp=%s vm=%s reason=%q", okName(v.Kcmp, v.KcmpErrno), okName(v.VMReadv, v.VMErrno), v.Reason)
			truth := fmt.Sprintf("kcmp=%s vm=%s reason=%q", kc, vm, want[a.name][b.name])
			if got != truth {
				t.Errorf("%s: predicted %s, kernel and expected rule say %s\n\texplain: %s", name, got, truth, explainOf(a.proc, b.proc, v))
			}
			if why := explainOf(a.proc, b.proc, v); v.Reason != "" && !strings.Contains(why, "Fix:") {
				t.Errorf("%s: explanation without a fix: %s", name, why)
			}
		}
	}

	// The same with the filter unread (a tracer without CAP_SYS_ADMIN): the prediction falls
	// back to the container-profile assumption and says so.
	s := byName["seccomp"].proc
	s.Filters = nil
	if v := Predict(sys, s, byName["root"].proc); v.Kcmp || v.KcmpErrno != "EPERM" || v.Reason != ReasonSeccomp || !uncertain(v, UncertainFilters) {
		t.Errorf("seccomp with unread filter: %+v", v)
	}
}

// checkFacts asserts what ReadProc saw for each situation, so that a wrong /proc reading is
// reported as such and not as a wrong rule.
func checkFacts(t *testing.T, p map[string]*peer) {
	t.Helper()
	if s := p["seccomp"].proc; s.Seccomp != 2 || s.SeccompFilters != 1 {
		t.Errorf("seccomp peer: Seccomp %d filters %d", s.Seccomp, s.SeccompFilters)
	}
	if d := p["nodump"].proc; d.Dumpable != DumpableNo || d.DumpOwnerUID != 0 {
		t.Errorf("nodump peer: %v, status owned by %d", d.Dumpable, d.DumpOwnerUID)
	}
	if n := p["nobody"].proc; n.Dumpable != DumpableYes || n.UID != [4]uint32{65534, 65534, 65534, 65534} || n.CapEff != 0 {
		t.Errorf("nobody peer: %v uid %v caps %#x", n.Dumpable, n.UID, n.CapEff)
	}
	if u := p["userns"].proc; len(u.UserNS) != 2 || u.UserNS[0].OwnerUID != 0 || u.RootUID != 65534 || u.UID[0] != 65534 {
		t.Errorf("userns peer: chain %v root %d uid %v", u.UserNS, u.RootUID, u.UID)
	}
	if u := p["userns0"].proc; len(u.UserNS) != 2 || u.UID[0] != 0 || u.CapEff != 0 {
		t.Errorf("userns0 peer: chain %v uid %v caps %#x", u.UserNS, u.UID, u.CapEff)
	}
	if q := p["pidns"].proc; len(q.NSpid) != 2 || q.NSpid[1] != 1 || len(q.PidNS) != 2 {
		t.Errorf("pidns peer: NSpid %v chain %v", q.NSpid, q.PidNS)
	}
	if c := p["nocaps"].proc; c.CapEff != 0 || c.CapPrm != 0 || c.UID[0] != 0 {
		t.Errorf("nocaps peer: caps %#x/%#x uid %v", c.CapPrm, c.CapEff, c.UID)
	}
	if c := p["noeff"].proc; c.CapEff != 0 || c.CapPrm == 0 {
		t.Errorf("noeff peer: caps %#x/%#x", c.CapPrm, c.CapEff)
	}
	for name, q := range p {
		if q.proc.ReadableAddr == 0 {
			t.Errorf("%s peer: no readable address in maps", name)
		}
	}
}

func okName(ok bool, errno string) string {
	if ok {
		return "OK"
	}
	return errno
}

// TestGroundTruthZombie checks row 3 with a real zombie: kcmp still compares (>= 0) while
// process_vm_readv finds no mm (ESRCH), and Open MPI would therefore use CMA that fails.
func TestGroundTruthZombie(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, running as uid", os.Geteuid())
	}
	sys := ReadSystem()
	if sys.KcmpBuilt == nil || !*sys.KcmpBuilt {
		t.Skip("kcmp not built into this kernel")
	}
	bin := peertest.Build(t)
	a := startPeer(t, bin, role{name: "root"})

	z := exec.Command(bin, "-bad-flag") // exits at once with status 2
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	zpid := z.Process.Pid
	t.Cleanup(func() { _ = z.Wait() }) // reaps it
	var info unix.Siginfo
	// WNOWAIT: wait for the exit but leave the zombie in place.
	if err := unix.Waitid(unix.P_PID, zpid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	b, err := ReadProc(zpid)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Exited() || b.HasMM {
		t.Fatalf("zombie: State %c HasMM %v", b.State, b.HasMM)
	}
	kc, vm := a.probe(t, zpid, 0x10000)
	v := Predict(sys, a.proc, b)
	got := fmt.Sprintf("kcmp=%s vm=%s reason=%s", okName(v.Kcmp, v.KcmpErrno), okName(v.VMReadv, v.VMErrno), v.Reason)
	if want := fmt.Sprintf("kcmp=%s vm=%s reason=exited", kc, vm); got != want {
		t.Errorf("predicted %s, kernel says %s", got, want)
	}
	if d := verdictDisagree(a.proc, b, v); !v.OpenMPI || !strings.HasPrefix(d, "Open MPI would use CMA") {
		t.Errorf("Open MPI would use CMA on a zombie (kcmp passes): OpenMPI %v Disagree %q", v.OpenMPI, d)
	}
}

// TestGroundTruthSeccompKill checks that EvalSeccomp's KILL verdict (the reason the tracer
// must not inject) is what the kernel does: the peer dies of SIGSYS when it runs kcmp.
func TestGroundTruthSeccompKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, running as uid", os.Geteuid())
	}
	ai, err := seccomp.Arch(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	sys := ReadSystem()
	bin := peertest.Build(t)
	b := startPeer(t, bin, role{name: "root"})
	a := startPeer(t, bin, role{name: "killer", args: []string{"-seccomp-kill"}})
	prog, err := seccomp.DenyFilter(ai, seccomp.KillRet, ai.Kcmp)
	if err != nil {
		t.Fatal(err)
	}
	a.proc.Filters = [][]byte{seccomp.FilterBytes(prog)}
	vmAct, kcAct, known := SeccompFor(sys, a.proc, b.proc)
	if !known || !kcAct.Kills() || vmAct.Action != seccomp.ActAllow {
		t.Fatalf("SeccompFor: vm %v kcmp %v known %v; want ALLOW, KILL_PROCESS", vmAct, kcAct, known)
	}
	if v := Predict(sys, a.proc, b.proc); v.Kcmp || v.KcmpErrno != "SIGSYS" || !v.VMReadv || v.Reason != ReasonSeccomp {
		t.Errorf("Predict: %+v", v)
	}
	// Now let the kernel show it: the probe's kcmp kills the peer.
	fmt.Fprintf(a.In, "probe %d %#x\n", b.proc.PID, b.proc.ReadableAddr)
	err = a.Cmd.Wait()
	ws, ok := a.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Errorf("peer under a KILL filter ran kcmp: %v, want death by SIGSYS", err)
	}
}

// peerFilter is the filter demo/access/peer installs with -seccomp.
func peerFilter(t testing.TB, ai seccomp.ArchInfo) []byte {
	t.Helper()
	prog, err := seccomp.DenyFilter(ai, seccomp.ErrnoRet(unix.EPERM), ai.VMReadv, ai.VMWritev, ai.Kcmp, ai.Ptrace)
	if err != nil {
		t.Fatal(err)
	}
	return seccomp.FilterBytes(prog)
}
