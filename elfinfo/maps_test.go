package elfinfo

import (
	"os"
	"testing"
)

const sampleMaps = `55d0c8a00000-55d0c8a01000 r--p 00000000 fd:01 1311 /usr/bin/prog
55d0c8a01000-55d0c8a02000 r-xp 00001000 fd:01 1311 /usr/bin/prog
55d0c9f3b000-55d0c9f5c000 rw-p 00000000 00:00 0                          [heap]
7f1c2a000000-7f1c2a028000 r--p 00000000 fd:01 2049 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a400000-7f1c2a401000 r-xp 00000000 00:2a 77 /tmp/my lib.so (deleted)
7f1c2a500000-7f1c2a501000 rw-s 00000000 00:01 5 /dev/zero (deleted)
7ffd1e5f0000-7ffd1e611000 rw-p 00000000 00:00 0                          [stack]
7ffd1e7f8000-7ffd1e7fc000 r--p 00000000 00:00 0                          [vvar]
7ffd1e7fc000-7ffd1e7fe000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`

func TestParseMaps(t *testing.T) {
	ms, err := ParseMaps([]byte(sampleMaps))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 10 {
		t.Fatalf("got %d mappings, want 10", len(ms))
	}
	want := Mapping{Start: 0x55d0c8a01000, End: 0x55d0c8a02000, Offset: 0x1000, Perms: "r-xp", Dev: "fd:01", Inode: 1311, Path: "/usr/bin/prog"}
	if ms[1] != want {
		t.Errorf("line 2 = %+v, want %+v", ms[1], want)
	}
	if ms[2].Path != "[heap]" || ms[2].IsFile() {
		t.Errorf("heap = %+v", ms[2])
	}
	if m := ms[4]; m.Path != "/tmp/my lib.so" || !m.Deleted || !m.IsFile() {
		t.Errorf("deleted path with space = %+v", m)
	}
	if ms[9].Readable() {
		t.Errorf("vsyscall should not be readable: %+v", ms[9])
	}

	tests := []struct {
		name string
		addr uint64
		path string
		ok   bool
	}{
		{"first byte", 0x55d0c8a00000, "/usr/bin/prog", true},
		{"last byte of text", 0x55d0c8a01fff, "/usr/bin/prog", true},
		{"gap after exe", 0x55d0c8a02000, "", false},
		{"stack", 0x7ffd1e600000, "[stack]", true},
		{"below all", 0x1000, "", false},
		{"vsyscall", 0xffffffffff600400, "[vsyscall]", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := FindMapping(ms, tc.addr)
			if ok != tc.ok || m.Path != tc.path {
				t.Errorf("FindMapping(%#x) = %q,%v want %q,%v", tc.addr, m.Path, ok, tc.path, tc.ok)
			}
		})
	}
}

func TestParseMapsErrors(t *testing.T) {
	for name, line := range map[string]string{
		"no dash":       "55d0c8a00000 r--p 00000000 fd:01 1311 /x\n",
		"bad hex":       "zz-55d0c8a01000 r--p 00000000 fd:01 1311 /x\n",
		"end<start":     "2000-1000 r--p 00000000 fd:01 1311 /x\n",
		"empty":         "1000-1000 r--p 00000000 fd:01 1311 /x\n",
		"overlap":       "1000-3000 r--p 00000000 fd:01 1311 /x\n2000-4000 r--p 00000000 fd:01 1311 /x\n",
		"short perms":   "1000-2000 r-- 00000000 fd:01 1311 /x\n",
		"bad dev":       "1000-2000 r--p 00000000 fd01 1311 /x\n",
		"bad inode":     "1000-2000 r--p 00000000 fd:01 -1 /x\n",
		"missing inode": "1000-2000 r--p 00000000 fd:01\n",
	} {
		if _, err := ParseMaps([]byte(line)); err == nil {
			t.Errorf("%s: no error for %q", name, line)
		}
	}
}

func TestReadMapsSelf(t *testing.T) {
	ms, err := ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The address of a function of this test binary lies in a mapping of the test binary.
	pc := funcPC(TestReadMapsSelf)
	m, ok := FindMapping(ms, pc)
	if !ok || m.Path != exe || m.Perms[2] != 'x' {
		t.Fatalf("FindMapping(%#x) = %+v,%v; want an executable mapping of %s", pc, m, ok, exe)
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add([]byte(sampleMaps))
	f.Add([]byte("0-1 ---p 0 0:0 0\n"))
	f.Add([]byte("ffffffffffffffff-ffffffffffffffff rwxs ffffffffffffffff ff:ff 18446744073709551615 x (deleted)"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMaps(data)
		if err != nil {
			return
		}
		for i, m := range ms {
			if m.End <= m.Start || len(m.Perms) != 4 {
				t.Fatalf("accepted bad mapping %+v", m)
			}
			if i > 0 && ms[i-1].Start > m.Start {
				t.Fatalf("not sorted at %d", i)
			}
			if got, ok := FindMapping(ms, m.Start); !ok || got != m {
				t.Fatalf("FindMapping(%#x) = %+v,%v", m.Start, got, ok)
			}
		}
	})
}

const sampleSmaps = `55d473519000-55d47351b000 r--p 00000000 fe:00 247278                     /usr/bin/head
Size:                  8 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd mr mw me 
7f0000000000-7f0000001000 rw-p 00000000 00:00 0 
Anonymous:             4 kB
Swap:                  0 kB
VmFlags: rd wr mr mw me ac dd 
7f0000001000-7f0000002000 rw-p 00000000 00:00 0 
Anonymous:             0 kB
Swap:                  4 kB
VmFlags: rd wr mr mw me ac 
`

func TestParseSmaps(t *testing.T) {
	got := ParseSmaps([]byte(sampleSmaps))
	want := map[uint64]Smap{
		0x55d473519000: {Flags: "rd mr mw me"},
		0x7f0000000000: {Anon: true, Flags: "rd wr mr mw me ac dd"},
		0x7f0000001000: {Anon: true, Flags: "rd wr mr mw me ac"}, // swapped out counts
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%#x: %+v, want %+v", k, got[k], w)
		}
	}
	if !got[0x7f0000000000].Flags.Has("dd") || got[0x7f0000001000].Flags.Has("dd") || got[0x7f0000000000].Flags.Has("d") {
		t.Errorf("Has")
	}
}

func FuzzParseSmaps(f *testing.F) {
	f.Add([]byte(sampleSmaps))
	f.Add([]byte("VmFlags: dd\nffff-\n0-1 x\nAnonymous: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sm := range ParseSmaps(data) {
			sm.Flags.Has("dd")
		}
	})
}
