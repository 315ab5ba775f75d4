package access

import (
	"os"
	"testing"
)

const sampleStatus = `Name:	lu.W.x
Umask:	0022
State:	S (sleeping)
Tgid:	4242
Ngid:	0
Pid:	4242
PPid:	4200
TracerPid:	0
Uid:	998	998	998	998
Gid:	995	995	995	995
FDSize:	64
Groups:	995 27 
NStgid:	4242	12
NSpid:	4242	12
NSpgid:	4200	1
NSsid:	4200	1
Kthread:	0
VmPeak:	  123456 kB
VmSize:	  123456 kB
Threads:	3
CapInh:	0000000000000000
CapPrm:	0000000000000000
CapEff:	00000000a80425fb
CapBnd:	00000000a80425fb
CapAmb:	0000000000000000
NoNewPrivs:	1
Seccomp:	2
Seccomp_filters:	1
Cpus_allowed_list:	0-1
`

func TestParseStatus(t *testing.T) {
	p, err := ParseStatus([]byte(sampleStatus))
	if err != nil {
		t.Fatal(err)
	}
	if p.Comm != "lu.W.x" || p.State != 'S' || p.Tgid != 4242 || p.PPid != 4200 || p.TracerPid != 0 {
		t.Errorf("ids: %+v", p)
	}
	if p.UID != [4]uint32{998, 998, 998, 998} || p.GID != [4]uint32{995, 995, 995, 995} {
		t.Errorf("uid %v gid %v", p.UID, p.GID)
	}
	if len(p.Groups) != 2 || p.Groups[0] != 995 || p.Groups[1] != 27 {
		t.Errorf("groups %v", p.Groups)
	}
	if p.CapPrm != 0 || p.CapEff != 0xa80425fb || p.CapEff&CapSysPtrace != 0 {
		t.Errorf("caps %#x %#x", p.CapPrm, p.CapEff)
	}
	if p.Seccomp != 2 || p.SeccompFilters != 1 || !p.HasMM {
		t.Errorf("seccomp %d/%d mm %v", p.Seccomp, p.SeccompFilters, p.HasMM)
	}
	if len(p.NSpid) != 2 || p.NSpid[1] != 12 {
		t.Errorf("NSpid %v", p.NSpid)
	}
}

func TestParseStatusErrors(t *testing.T) {
	for name, s := range map[string]string{
		"no uid":      "Tgid:\t1\nGid:\t0\t0\t0\t0\n",
		"3 uid":       "Tgid:\t1\nUid:\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
		"bad cap":     "Tgid:\t1\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapEff:\tzz\n",
		"bad seccomp": "Tgid:\t1\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nSeccomp:\t7\n",
	} {
		if _, err := ParseStatus([]byte(s)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A kernel thread: no VmSize, so no mm.
	p, err := ParseStatus([]byte("Name:\tkworker/0:1\nState:\tI (idle)\nTgid:\t7\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"))
	if err != nil || p.HasMM || p.Seccomp != -1 || len(p.NSpid) != 1 {
		t.Errorf("kernel thread: %+v %v", p, err)
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(sampleStatus))
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("Uid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\nTgid:\t1\nNSpid:\t-1 x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseStatus(b)
		if err == nil && len(p.NSpid) == 0 {
			t.Fatal("parsed status without NSpid")
		}
	})
}

func TestParseMapsReadable(t *testing.T) {
	maps := "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n" +
		"7ffd1000-7ffd2000 r--p 00000000 00:00 0                          [vvar]\n" +
		"55d0c000-55d0d000 ---p 00000000 08:01 1234                       /usr/bin/x\n" +
		"55d0e000-55d0f000 r--p 00001000 08:01 1234                       /usr/bin/x\n"
	if got := ParseMapsReadable([]byte(maps)); got != 0x55d0e000 {
		t.Errorf("got %#x", got)
	}
	if got := ParseMapsReadable([]byte("garbage\nzz-1 r--p\n")); got != 0 {
		t.Errorf("garbage: %#x", got)
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add([]byte("55d0e000-55d0f000 r--p 00001000 08:01 1234 /usr/bin/x\n"))
	f.Fuzz(func(t *testing.T, b []byte) { _ = ParseMapsReadable(b) })
}

func TestParseIDMapRoot(t *testing.T) {
	for s, want := range map[string]int64{
		"         0          0 4294967295\n": 0,
		"0 65534 1\n":                        65534,
		"1000 1000 1\n":                      -1,
		"":                                   -1,
	} {
		if got := ParseIDMapRoot([]byte(s)); got != want {
			t.Errorf("%q: got %d want %d", s, got, want)
		}
	}
}

func TestParseStatPPid(t *testing.T) {
	if n, err := ParseStatPPid([]byte("42 (a) b) (c) S 17 42 42 0")); err != nil || n != 17 {
		t.Errorf("got %d %v", n, err)
	}
	if _, err := ParseStatPPid([]byte("42 no comm")); err == nil {
		t.Error("no error")
	}
}

func TestReadProcSelf(t *testing.T) {
	p, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.Tgid != os.Getpid() || int(p.UID[0]) != os.Getuid() || !p.HasMM || p.ReadableAddr == 0 {
		t.Errorf("self: %+v", p)
	}
	if len(p.UserNS) == 0 || len(p.PidNS) == 0 || p.MntNS == 0 {
		t.Errorf("namespaces: user %v pid %v mnt %d", p.UserNS, p.PidNS, p.MntNS)
	}
	if len(p.Ancestors) == 0 || p.Ancestors[0] != os.Getppid() {
		t.Errorf("ancestors %v, ppid %d", p.Ancestors, os.Getppid())
	}
	if _, err := ReadProc(1 << 30); err == nil {
		t.Error("ReadProc of a pid that cannot exist: no error")
	}
}

func FuzzParseIDMapAndStat(f *testing.F) {
	f.Add([]byte("0 65534 1\n1 100000 65536\n"))
	f.Add([]byte("42 (a b) c) S 17 42 42 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r := ParseIDMapRoot(b); r < -1 || r > 1<<32-1 {
			t.Fatalf("root %d out of range", r)
		}
		_, _ = ParseStatPPid(b)
	})
}
