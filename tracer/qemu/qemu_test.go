package qemu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/patience"
)

// readNewc parses a newc archive the way init/initramfs.c does, so the
// writer is checked against the format rather than against itself.
func readNewc(t *testing.T, b []byte) map[string][3]uint64 {
	t.Helper()
	out := map[string][3]uint64{} // mode, size, rdev major<<8|minor
	off := 0
	field := func(i int) uint64 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+6+8*i+8]), 16, 32)
		if err != nil {
			t.Fatalf("header at %d field %d: %v", off, i, err)
		}
		return v
	}
	for {
		if off%4 != 0 {
			t.Fatalf("header at %d is not 4-byte aligned", off)
		}
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc magic at %d", off)
		}
		mode, size, maj, min, namesize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+int(namesize)])
		if !strings.HasSuffix(name, "\x00") {
			t.Fatalf("name at %d not NUL-terminated: %q", off, name)
		}
		name = strings.TrimSuffix(name, "\x00")
		off += 110 + int(namesize)
		off = (off + 3) &^ 3
		if name == "TRAILER!!!" {
			if rest := b[off:]; len(bytes.TrimRight(rest, "\x00")) != 0 {
				t.Fatalf("%d bytes after the trailer", len(rest))
			}
			return out
		}
		if _, dup := out[name]; dup {
			t.Fatalf("duplicate entry %q", name)
		}
		out[name] = [3]uint64{mode, size, maj<<8 | min}
		off += int(size)
		off = (off + 3) &^ 3
	}
}

func TestCPIOWriter(t *testing.T) {
	var buf bytes.Buffer
	c := NewCPIOWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Dir("dev", 0o755))
	must(c.CharDev("/dev/console", 0o600, 5, 1))
	must(c.File("init", 0o755, []byte("abcde")))
	must(c.File("bin/x", 0o644, nil))
	must(c.Close())
	if err := c.File("late", 0o644, nil); err == nil {
		t.Fatal("File after Close succeeded")
	}
	got := readNewc(t, buf.Bytes())
	want := map[string][3]uint64{
		"dev":         {ModeDir | 0o755, 0, 0},
		"dev/console": {ModeChar | 0o600, 0, 5<<8 | 1},
		"init":        {ModeReg | 0o755, 5, 0},
		"bin/x":       {ModeReg | 0o644, 0, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: mode/size/rdev %o/%d/%#x, want %o/%d/%#x", n, got[n][0], got[n][1], got[n][2], w[0], w[1], w[2])
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte("abcde")) {
		t.Error("file data missing")
	}
}

func TestWriteInitramfs(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "init.bin")
	if err := os.WriteFile(src, []byte("#!init"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "initrd")
	if err := WriteInitramfs(dst, map[string]string{"init": src}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, b)
	for _, n := range []string{"bin", "dev", "proc", "sys", "tmp", "dev/console", "init"} {
		if _, ok := got[n]; !ok {
			t.Errorf("initramfs lacks %s (the kernel's unpacker creates no parents)", n)
		}
	}
	if got["dev/console"] != [3]uint64{ModeChar | 0o600, 0, 5<<8 | 1} {
		t.Errorf("dev/console = %v, want char 5:1", got["dev/console"])
	}
	if err := WriteInitramfs(filepath.Join(dir, "x"), map[string]string{"init": filepath.Join(dir, "missing")}); err == nil {
		t.Error("missing input file: no error")
	}
}

func TestParseVerdict(t *testing.T) {
	for _, tc := range []struct {
		out, want string
		ok        bool
	}{
		{"noise\r\n\r\nCRASHTUI-VERDICT: PASS cpu=power9\r\n", "PASS cpu=power9", true},
		{"[   1.0] x CRASHTUI-VERDICT: FAIL watchdog\n", "FAIL watchdog", true},
		{"Kernel panic - not syncing\n", "", false},
		{"", "", false},
	} {
		got, ok := ParseVerdict(tc.out)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseVerdict(%q) = %q, %v; want %q, %v", tc.out, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFailedTests(t *testing.T) {
	out := strings.Join([]string{
		"=== RUN   TestA", "=== RUN   TestA/none", "    guard_test.go:170: injected getpid = 0; want 12\r",
		RegsPrefix + ` {"cpu":"power10"}`, "=== RUN   TestA/regs", "    guard_test.go:9: fine",
		"--- FAIL: TestA (1.0s)", "    --- FAIL: TestA/none (0.5s)", "    --- PASS: TestA/regs (0.5s)",
		"=== RUN   TestB", "    b_test.go:1: one", "    b_test.go:2: two", "    b_test.go:3: three",
		"--- FAIL: TestB (0.1s)", "FAIL", VerdictPrefix + " FAIL /bin/tracer.test",
	}, "\n")
	got := strings.Join(FailedTests(out, 2), "|")
	want := "TestA:|TestA/none:|    guard_test.go:170: injected getpid = 0; want 12|TestB:|    b_test.go:1: one|    b_test.go:2: two"
	if got != want {
		t.Errorf("FailedTests =\n%s\nwant\n%s", got, want)
	}
}

func TestParseRegRecords(t *testing.T) {
	out := "x\n" + RegsPrefix + ` {"cpu":"power9","insn":"scv","call":"read","insn_bytes":"01000044","words":["0x3","0xfffffffffffffe00"]}` + "\r\n" +
		RegsPrefix + " {broken\n"
	recs, err := ParseRegRecords(out)
	if err == nil {
		t.Error("broken record: no error")
	}
	if len(recs) != 1 || recs[0].FileName() != "power9_scv_read.json" {
		t.Fatalf("records %+v", recs)
	}
	w, err := recs[0].Uint64s()
	if err != nil || len(w) != 2 || w[1] != 0xfffffffffffffe00 {
		t.Fatalf("Uint64s = %#x, %v", w, err)
	}
	b, err := recs[0].Bytes()
	if err != nil || !bytes.Equal(b, []byte{1, 0, 0, 0x44}) {
		t.Fatalf("Bytes = %x, %v", b, err)
	}
}

func FuzzParseRegRecords(f *testing.F) {
	f.Add(RegsPrefix + ` {"cpu":"power9","words":["0x1"],"insn_bytes":"01000044"}`)
	f.Add(RegsPrefix + ` {"words":["zz"],"insn_bytes":"0"}` + "\n" + VerdictPrefix + " PASS")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		recs, _ := ParseRegRecords(s)
		for _, r := range recs {
			r.Uint64s()
			r.Bytes()
			_ = r.FileName()
		}
		ParseVerdict(s)
	})
}

func TestQEMUArgs(t *testing.T) {
	args := strings.Join(BootConfig{QEMU: "q", Kernel: "k", Initrd: "i", CPU: "power10", Run: "PPC64LE", Timeout: 150 * time.Second, Patience: 3.25}.QEMUArgs(), " ")
	for _, want := range []string{"x-vof=on", "-cpu power10", "-no-reboot", "crashtui.cpu=power10", "crashtui.timeout=2m20s", "crashtui.patience=3.25", "-kernel k", "-initrd i"} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu args %q lack %q", args, want)
		}
	}
	// A quiet host says nothing of its load; the backstop is an hour when none is given.
	args = strings.Join(BootConfig{QEMU: "q", Kernel: "k", Initrd: "i", CPU: "power10", Run: "PPC64LE", Patience: 1}.QEMUArgs(), " ")
	if strings.Contains(args, "crashtui.patience") || !strings.Contains(args, "crashtui.timeout=59m50s") {
		t.Errorf("qemu args %q: want no crashtui.patience and the guest watchdog at 59m50s", args)
	}
}

func TestQEMUArgsARM64(t *testing.T) {
	args := strings.Join(BootConfig{Arch: ARM64, QEMU: "q", Kernel: "k", Initrd: "i", CPU: "max", Run: "ARM64", Timeout: 150 * time.Second}.QEMUArgs(), " ")
	for _, want := range []string{"-M virt", "-cpu max,pauth-impdef=on", "console=ttyAMA0", "-no-reboot", "crashtui.cpu=max", "crashtui.run=ARM64", "-kernel k", "-initrd i"} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "pseries") || strings.Contains(args, "hvc0") {
		t.Errorf("arm64 qemu args %q carry ppc64le settings", args)
	}
}

func TestArchKernelNames(t *testing.T) {
	for _, tc := range []struct {
		a    *Arch
		name string
		want int64
	}{
		{PPC64LE, "vmlinux-6.1.0-50-powerpc64le", 6001000050},
		{ARM64, "vmlinuz-6.1.0-57-arm64", 6001000057},
		{ARM64, "vmlinux-6.1.0-57-powerpc64le", -1},
		{PPC64LE, "vmlinuz-6.1.0-57-arm64", -1},
	} {
		if got := tc.a.abiNumber(tc.name); got != tc.want {
			t.Errorf("%s abiNumber(%q) = %d, want %d", tc.a.GOARCH, tc.name, got, tc.want)
		}
	}
	if ArchByName("arm64") != ARM64 || ArchByName("ppc64le") != PPC64LE || ArchByName("amd64") != nil {
		t.Error("ArchByName")
	}
	if got := (RegRecord{Arch: "arm64", CPU: "max", Insn: "svc", Call: "read", Stop: "exit"}).FileName(); got != "arm64_max_svc_read_exit.json" {
		t.Errorf("arm64 FileName = %q", got)
	}
}

// TestARM64QEMU runs the whole arm64 stage (go run ./tracer/qemu/cmd/arm64-test): it
// boots an arm64 guest under QEMU, so it runs only when asked.
func TestARM64QEMU(t *testing.T) {
	if os.Getenv("CRASHTUI_QEMU") != "1" {
		t.Skip("boots an arm64 guest under QEMU: run with CRASHTUI_QEMU=1, or go run ./tracer/qemu/cmd/arm64-test")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	// No clock of its own: each guest is stopped when it stops making progress (Boot).
	var log bytes.Buffer
	res, err := Run(t.Context(), Options{Arch: ARM64, Log: &log})
	var skip *SkipError
	if errors.As(err, &skip) {
		t.Skip(skip.Reason)
	}
	if err != nil {
		t.Fatalf("arm64 stage: %v\n%s", err, log.String())
	}
	for _, c := range res.CPUs {
		t.Logf("%s: %s (%.1fs, %d register records)", c.CPU, c.Verdict, c.Duration.Seconds(), len(c.Regs))
		if !c.Pass {
			t.Errorf("%s: %s\n%s", c.CPU, c.Verdict, c.Output)
		}
		// read and nanosleep, at the PTRACE_INTERRUPT stop and at the syscall-exit-stop.
		if len(c.Regs) != 4 {
			t.Errorf("%s: %d register records, want 4", c.CPU, len(c.Regs))
		}
	}
}

// TestPPC64LEQEMU runs the whole `make test-ppc64le` stage: it boots QEMU
// guests for power8, power9 and power10, so it runs only when asked.
func TestPPC64LEQEMU(t *testing.T) {
	if os.Getenv("CRASHTUI_QEMU") != "1" {
		t.Skip("boots ppc64le guests under QEMU (about 1 minute from nothing): run with CRASHTUI_QEMU=1, or `make test-ppc64le`")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	var log bytes.Buffer
	res, err := Run(t.Context(), Options{Log: &log})
	var skip *SkipError
	if errors.As(err, &skip) {
		t.Skip(skip.Reason)
	}
	if err != nil {
		t.Fatalf("ppc64le stage: %v\n%s", err, log.String())
	}
	for _, c := range res.CPUs {
		t.Logf("%s: %s (%.1fs, %d register records)", c.CPU, c.Verdict, c.Duration.Seconds(), len(c.Regs))
		if !c.Pass {
			t.Errorf("%s: %s\n%s", c.CPU, c.Verdict, c.Output)
		}
		// sc/scv x (read, nanosleep at PTRACE_INTERRUPT; read at the SIGUSR1
		// signal-delivery-stop and after handler setup); power8 has no scv.
		want := 8
		if c.CPU == "power8" {
			want = 4
		}
		if len(c.Regs) != want {
			t.Errorf("%s: %d register records, want %d", c.CPU, len(c.Regs), want)
		}
	}
}

// TestWatchProgress: the console lines that say how far a guest has got become progress
// reports (booted once init speaks, not at the firmware's banner; each top-level test that
// ends, counted against the list init printed; subtests are not counted).
func TestWatchProgress(t *testing.T) {
	var got []Progress
	w := newWatch(BootConfig{CPU: "power9", Progress: func(p Progress) { got = append(got, p) }})
	w.Write([]byte("VOF: booting\r\n\ncrashtui guest: cpu=power9 AT_HWCAP2=0x0 kernel=6.1\ncrashtui guest: tests: TestA TestB TestC\n"))
	w.Write([]byte("=== RUN   TestA\n=== RUN   TestA/sub\n    --- PASS: TestA/sub (0.10s)\n--- PASS: TestA (1.50s)\n=== RUN   TestB\n--- SK"))
	w.Write([]byte("IP: TestB (0.00s)\n=== RUN   TestC\n"))
	if len(got) != 3 {
		t.Fatalf("%d progress reports, want booted and two tests: %+v", len(got), got)
	}
	if !got[0].Booted || got[0].CPU != "power9" {
		t.Errorf("first report %+v, want power9 booted", got[0])
	}
	if p := got[1]; p.Test != "TestA" || p.Result != "PASS" || p.TestDur != "1.50s" || p.Done != 1 || p.Total != 3 {
		t.Errorf("second report %+v, want TestA PASS 1.50s, 1 of 3", p)
	}
	if p := got[2]; p.Test != "TestB" || p.Result != "SKIP" || p.Done != 2 || p.Total != 3 {
		t.Errorf("third report %+v, want TestB SKIP, 2 of 3", p)
	}
	if w.running != "TestC" {
		t.Errorf("running %q, want TestC", w.running)
	}
	for _, tc := range []struct {
		p    Progress
		want string
	}{
		{Progress{CPU: "power9", Booted: true, Elapsed: 14 * time.Second}, "power9: booted (14s)"},
		{Progress{CPU: "power9", Test: "TestCrashGo", Result: "PASS", TestDur: "8.33s", Done: 3, Total: 13}, "power9: 3/13 TestCrashGo PASS (8.33s)"},
		{Progress{CPU: "max", Test: "TestX", Result: "FAIL", Done: 1}, "max: 1 TestX FAIL"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestWatchLimits: a guest that never reaches init, or goes silent in a test, is stopped with a
// reason that says which; a line resets the wait; with Idle < 0 a booted guest may be silent.
func TestWatchLimits(t *testing.T) {
	expires := func(w *watch) string {
		t.Helper()
		var why string
		if !patience.Until(10*time.Second, time.Millisecond, func() bool { why = w.expired(); return why != "" }) {
			t.Fatal("the watch never expired")
		}
		return why
	}
	w := newWatch(BootConfig{Boot: time.Millisecond})
	w.Write([]byte("firmware banner\n"))
	if why := expires(w); !strings.HasPrefix(why, "did not reach its /init in ") {
		t.Errorf("no init line: %q", why)
	}

	w = newWatch(BootConfig{Boot: time.Hour, Idle: time.Millisecond})
	w.Write([]byte("crashtui guest: cpu=max\n=== RUN   TestHang\n"))
	if why := expires(w); !strings.HasPrefix(why, "silent for ") || !strings.Contains(why, `in TestHang, after "=== RUN   TestHang"`) {
		t.Errorf("silent in a test: %q", why)
	}

	w = newWatch(BootConfig{Boot: time.Hour, Idle: time.Hour})
	w.Write([]byte("crashtui guest: cpu=max\n"))
	if why := w.expired(); why != "" {
		t.Errorf("a guest that just spoke, with an hour to go: %q", why)
	}

	w = newWatch(BootConfig{Boot: time.Millisecond, Idle: -1})
	w.Write([]byte(BeginLine + "\n"))
	time.Sleep(5 * time.Millisecond) // longer than Boot: only Idle may apply now, and it is off
	if why := w.expired(); why != "" {
		t.Errorf("Idle < 0 after boot: %q", why)
	}
}

// TestBootStopsASilentGuest: Boot stops a QEMU that has gone silent (here a script standing
// in for it, which hangs in a test) and says so, with what it printed.
func TestBootStopsASilentGuest(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "qemu")
	script := "#!/bin/sh\necho 'crashtui guest: cpu=power9'\necho '=== RUN   TestHang'\nexec sleep 600\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var booted bool
	out, err := Boot(context.Background(), BootConfig{QEMU: fake, Kernel: "k", Initrd: "i", CPU: "power9", Run: "X",
		Idle: 50 * time.Millisecond, Progress: func(p Progress) { booted = booted || p.Booted }}, nil)
	if err == nil || !strings.Contains(err.Error(), "qemu power9: stopped: silent for ") || !strings.Contains(err.Error(), "in TestHang") {
		t.Errorf("Boot of a guest that hangs: %v", err)
	}
	if !booted || !strings.Contains(out, "=== RUN   TestHang") {
		t.Errorf("booted %v, output %q", booted, out)
	}
}
