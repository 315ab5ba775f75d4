package access

import (
	"bufio"
	"compress/gzip"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestReadSystem compares the self-probes with the kernel's own configuration, when the
// kernel exposes it (/proc/config.gz, CONFIG_IKCONFIG_PROC).
func TestReadSystem(t *testing.T) {
	s := ReadSystem()
	if s.Arch == "" || s.SuidDumpable < 0 {
		t.Errorf("system: %+v", s)
	}
	_, err := os.Stat("/proc/sys/kernel/yama/ptrace_scope")
	if (err == nil) != (s.Yama >= 0) {
		t.Errorf("Yama %d but sysctl file stat error %v", s.Yama, err)
	}
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		t.Skip("no /proc/config.gz to compare the kcmp/CMA probes with:", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]bool{}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && v == "y" {
			cfg[k] = true
		}
	}
	if s.KcmpBuilt == nil || *s.KcmpBuilt != cfg["CONFIG_KCMP"] {
		t.Errorf("kcmp probe %v, CONFIG_KCMP=y %v", s.KcmpBuilt, cfg["CONFIG_KCMP"])
	}
	if s.CMABuilt == nil || *s.CMABuilt != cfg["CONFIG_CROSS_MEMORY_ATTACH"] {
		t.Errorf("process_vm_readv probe %v, CONFIG_CROSS_MEMORY_ATTACH=y %v", s.CMABuilt, cfg["CONFIG_CROSS_MEMORY_ATTACH"])
	}
	if s.Yama >= 0 && !cfg["CONFIG_SECURITY_YAMA"] {
		t.Errorf("Yama %d without CONFIG_SECURITY_YAMA", s.Yama)
	}
}

func TestParseLSMs(t *testing.T) {
	got := ParseLSMs([]byte("lockdown,capability,yama,apparmor\n"))
	if strings.Join(got, " ") != "lockdown capability yama apparmor" {
		t.Errorf("%q", got)
	}
	s := System{LSMs: got, KcmpBuilt: yes(), CMABuilt: yes(), Yama: -1}
	if v := Predict(s, fixture(20, 1000), fixture(30, 1000)); !v.VMReadv || !slices.Contains(v.Uncertain, Uncertainty{Kind: UncertainLSM, LSM: "apparmor"}) {
		t.Errorf("apparmor must make the verdict uncertain: %+v", v)
	}
}
