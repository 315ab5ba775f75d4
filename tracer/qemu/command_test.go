package qemu

import (
	"bytes"
	"debug/elf"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShellFilter: what a shell-mode guest prints around the command is dropped, the command's
// output is passed on exactly (the newline init adds before the exit line is not the
// command's), and the status is parsed, however the console's bytes are split.
func TestShellFilter(t *testing.T) {
	for _, tc := range []struct {
		name, console, out string
		status             int
		ok                 bool
	}{
		{"lines", "SLOF noise\r\ncrashtui guest\r\n\r\nCRASHTUI-BEGIN\r\ncrashtui v1\r\nok\r\n\r\nCRASHTUI-EXIT: 0\r\n[  3.1] reboot: Power down\r\n", "crashtui v1\nok\n", 0, true},
		{"no final newline", "\nCRASHTUI-BEGIN\nabc\nCRASHTUI-EXIT: 3\n", "abc", 3, true},
		{"empty lines kept", "\nCRASHTUI-BEGIN\n\n\nx\n\n\nCRASHTUI-EXIT: 1\n", "\n\nx\n\n", 1, true},
		{"no output", "\nCRASHTUI-BEGIN\n\nCRASHTUI-EXIT: 130\n", "", 130, true},
		{"exit line before begin is noise", "CRASHTUI-EXIT: 9\n\nCRASHTUI-BEGIN\nz\n\nCRASHTUI-EXIT: 0\n", "z\n", 0, true},
		{"guest died mid-line", "\nCRASHTUI-BEGIN\nhalf\npart", "half\npart", 0, false},
		{"never began", "Kernel panic - not syncing\n", "", 0, false},
	} {
		for _, chunk := range []int{1, 3, 7, 1 << 20} {
			var out bytes.Buffer
			f := &shellFilter{out: &out}
			for b := []byte(tc.console); len(b) > 0; {
				n := min(chunk, len(b))
				f.Write(b[:n])
				b = b[n:]
			}
			status, ok := f.result()
			if out.String() != tc.out || status != tc.status || ok != tc.ok {
				t.Errorf("%s (chunks of %d): output %q status %d ok %v; want %q %d %v", tc.name, chunk, out.String(), status, ok, tc.out, tc.status, tc.ok)
			}
		}
	}
}

// TestQEMUArgsCommand: shell mode carries the command base64url-encoded (no '+', '/', '=' or
// space for the kernel's parser to split or mistake) instead of a test pattern.
func TestQEMUArgsCommand(t *testing.T) {
	cmd := `crashtui version; echo "a b" | tr a-z A-Z && exit 3 # +/=`
	args := BootConfig{Arch: ARM64, QEMU: "q", Kernel: "k", Initrd: "i", CPU: "max", Command: cmd, Run: "ARM64", Timeout: time.Minute}.QEMUArgs()
	var line string
	for i, a := range args {
		if a == "-append" {
			line = args[i+1]
		}
	}
	if strings.Contains(line, "crashtui.run=") || !strings.Contains(line, "crashtui.mode=shell") {
		t.Errorf("kernel command line %q: want shell mode and no test pattern", line)
	}
	var got string
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "crashtui.cmd="); ok {
			b, err := base64.RawURLEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("crashtui.cmd=%s: %v", v, err)
			}
			got = string(b)
		}
	}
	if got != cmd {
		t.Errorf("command on the kernel command line decodes to %q, want %q", got, cmd)
	}
}

// TestWriteInitramfsParents: every parent directory of a file gets its entry, before the file
// (the kernel's unpacker creates none).
func TestWriteInitramfsParents(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "initrd")
	files := map[string]string{"lib64/ld64.so.2": src, "usr/local/bin/tool": src, "lib/libc.so.6": src, "init": src}
	if err := WriteInitramfs(dst, files); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, b)
	for _, d := range []string{"lib", "lib64", "usr", "usr/local", "usr/local/bin"} {
		if got[d][0] != ModeDir|0o755 {
			t.Errorf("%s: mode %o, want a directory", d, got[d][0])
		}
	}
	for n := range files {
		for d := filepath.Dir(n); d != "."; d = filepath.Dir(d) {
			if bytes.Index(b, []byte(d+"\x00")) > bytes.Index(b, []byte(n+"\x00")) {
				t.Errorf("%s comes after %s", d, n)
			}
		}
	}
}

// TestCRuntime cross-compiles a dynamic C program for each guest with Debian's cross gcc (when
// installed) and checks that the runtime packed for it is the interpreter at the path the
// program asks for and its libc under /lib, taken from the cross libc, and nothing for a
// static program.
func TestCRuntime(t *testing.T) {
	for _, a := range []*Arch{PPC64LE, ARM64} {
		t.Run(a.GOARCH, func(t *testing.T) {
			if _, err := exec.LookPath(a.CC); err != nil {
				t.Skipf("%s not installed (make test-%s installs it)", a.CC, a.GOARCH)
			}
			ctx := t.Context()
			if _, err := a.ccFile(ctx, "libc.so.6"); err != nil {
				t.Skip(err)
			}
			dir := t.TempDir()
			src := filepath.Join(dir, "p.c")
			os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n"), 0o644)
			for _, p := range []struct{ name, flag string }{{"dyn", "-O1"}, {"static", "-static"}} {
				if out, err := exec.Command(a.CC, p.flag, "-o", filepath.Join(dir, p.name), src).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", a.CC, err, out)
				}
			}
			rt, err := a.cRuntime(ctx, map[string]string{"bin/static": filepath.Join(dir, "static")}, nil)
			if err != nil || len(rt) != 0 {
				t.Errorf("static program: runtime %v, %v; want nothing", rt, err)
			}
			rt, err = a.cRuntime(ctx, map[string]string{"bin/dyn": filepath.Join(dir, "dyn")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			interp := map[string]string{"ppc64le": "lib64/ld64.so.2", "arm64": "lib/ld-linux-aarch64.so.1"}[a.GOARCH]
			if len(rt) != 2 || rt[interp] == "" || rt["lib/libc.so.6"] == "" {
				t.Fatalf("runtime %v, want %s and lib/libc.so.6", rt, interp)
			}
			machine := map[string]elf.Machine{"ppc64le": elf.EM_PPC64, "arm64": elf.EM_AARCH64}[a.GOARCH]
			for name, host := range rt {
				f, err := elf.Open(host)
				if err != nil {
					t.Fatalf("%s (%s): %v", name, host, err)
				}
				if f.Machine != machine || f.Type != elf.ET_DYN {
					t.Errorf("%s (%s): %v %v, want a shared object for %v", name, host, f.Machine, f.Type, machine)
				}
				f.Close()
			}
		})
	}
}

// TestGuestMainRefuses: bad usage and a missing added file end with GuestStatusFailed and a
// reason, before anything is built or booted; -h is not a failure.
func TestGuestMainRefuses(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
		msg    string
	}{
		{[]string{"-h"}, 0, "usage: guest"},
		{[]string{"-arch", "amd64", "-run", "true"}, GuestStatusFailed, `-arch "amd64"`},
		{[]string{"-arch", "arm64"}, GuestStatusFailed, "no command"},
		{[]string{"-run", "true", filepath.Join(t.TempDir(), "missing")}, GuestStatusFailed, "add "},
		{[]string{"-run", "true", t.TempDir()}, GuestStatusFailed, "not a regular file"},
		{[]string{"-run", strings.Repeat("x", maxCommand+1)}, GuestStatusFailed, "kernel command line"},
		{[]string{"-bogus"}, GuestStatusFailed, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		if got := GuestMain(tc.args, &stdout, &stderr); got != tc.status || !strings.Contains(stderr.String(), tc.msg) || stdout.Len() != 0 {
			t.Errorf("guest %q: status %d, stdout %q, stderr %q; want %d and %q on stderr", tc.args, got, stdout.String(), stderr.String(), tc.status, tc.msg)
		}
	}
}

// TestShellFilterWholeLines: with WholeLines each line is out with its newline as soon as it
// came (an event parser must not wait for the next line), and init's own newline before the
// exit line is an empty last line.
func TestShellFilterWholeLines(t *testing.T) {
	var out bytes.Buffer
	f := &shellFilter{out: &out, whole: true}
	f.Write([]byte("boot noise\r\nCRASHTUI-BEGIN\r\n{\"event\":\"process\"}\r\n"))
	if got := out.String(); got != "{\"event\":\"process\"}\n" {
		t.Fatalf("after one line: %q, want it with its newline", got)
	}
	f.Write([]byte("{\"event\":\"task\"}\r\n\r\nCRASHTUI-EXIT: 0\r\n"))
	status, ok := f.result()
	if got := out.String(); got != "{\"event\":\"process\"}\n{\"event\":\"task\"}\n\n" || status != 0 || !ok {
		t.Fatalf("output %q status %d ok %v", got, status, ok)
	}
}

// TestQEMUArgsStdin: a shell-mode boot with Stdin gives the command the console
// (crashtui.stdin=console); without it the command's stdin stays /dev/null.
func TestQEMUArgsStdin(t *testing.T) {
	b := BootConfig{QEMU: "q", Kernel: "k", Initrd: "i", CPU: "power10", Command: "true", Timeout: time.Minute}
	if strings.Contains(strings.Join(b.QEMUArgs(), " "), "crashtui.stdin") {
		t.Fatal("crashtui.stdin without Stdin")
	}
	b.Stdin = strings.NewReader("")
	if !strings.Contains(strings.Join(b.QEMUArgs(), " "), " crashtui.stdin=console") {
		t.Fatalf("no crashtui.stdin=console with Stdin: %q", b.QEMUArgs())
	}
}
