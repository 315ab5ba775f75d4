package peertest

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestStartProbe starts a peer in a new process group and one in the test's group, and has
// each probe the other: the ready line names the pid the test sees (no PID namespace here)
// and readable memory, and the kernel's answer for same-uid peers is OK for both calls.
func TestStartProbe(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) != "0" {
		t.Skipf("Yama ptrace_scope=%s would refuse process_vm_readv between sibling peers; this test expects no Yama", strings.TrimSpace(string(b)))
	}
	bin := Build(t)
	a := Start(t, bin, "leader", nil, nil, 0)
	b := Start(t, bin, "plain", nil, nil, NoGroup)
	for _, p := range []*Peer{a, b} {
		if p.SelfPID != p.PID || p.Addr == 0 {
			t.Errorf("%s: ready pid %d addr %#x, started pid %d", p.Name, p.SelfPID, p.Addr, p.PID)
		}
	}
	if g, err := syscall.Getpgid(a.PID); err != nil || g != a.PID {
		t.Errorf("pgid 0: peer %d in group %d (%v), want its own", a.PID, g, err)
	}
	if g, err := syscall.Getpgid(b.PID); err != nil || g != syscall.Getpgrp() {
		t.Errorf("NoGroup: peer %d in group %d (%v), want the test's %d", b.PID, g, err, syscall.Getpgrp())
	}
	for _, pq := range [][2]*Peer{{a, b}, {b, a}} {
		got := pq[0].Probe(t, pq[1].PID, pq[1].Addr)
		if strings.Contains(got, "ENOSYS") {
			t.Skipf("kcmp or process_vm_readv is not built into this kernel: %s", got)
		}
		if got != "kcmp=OK vm=OK" {
			t.Errorf("%s probes %s: %q, want kcmp=OK vm=OK", pq[0].Name, pq[1].Name, got)
		}
	}
}
