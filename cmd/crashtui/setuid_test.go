package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/demo/testuser"
)

// TestRunWarnsOfSetuid is issue 21's fifth case: a second user runs crashtui on a setuid-root
// copy of id(1). The kernel ignores setuid for a traced exec, so the program runs with the
// user's uid: crashtui says so in one line on stderr before starting it. Root (who has
// CAP_SYS_PTRACE, so the kernel grants the setuid) and a program without the bit get no
// warning.
func TestRunWarnsOfSetuid(t *testing.T) {
	needRoot(t)
	u := testuser.New(t)
	dir := testuser.PublicDir(t)
	bin := filepath.Join(dir, "crashtui")
	copyFile(t, crashtuiBin, bin, 0o755)
	idPath, err := exec.LookPath("id")
	if err != nil {
		t.Skip("id(1) is not installed")
	}
	suid := filepath.Join(dir, "id-setuid")
	copyFile(t, idPath, suid, 0o755)
	if err := os.Chmod(suid, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "id-plain")
	copyFile(t, idPath, plain, 0o755)
	if out, err := u.Command(suid, "-u").Output(); err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Skipf("%s does not run as root for %s untraced (%q, %v): a nosuid mount?", suid, u.Name, out, err)
	}
	uid := strconv.Itoa(u.UID)
	warned := func(stderr string) []string {
		var out []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(l, "crashtui: warning:") {
				out = append(out, l)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		cmd      *exec.Cmd
		warn     bool
		euidSeen string // what id -u prints under crashtui
	}{
		{"user, setuid", u.Command(bin, "run", "--json", "--", suid, "-u"), true, uid},
		{"user, plain", u.Command(bin, "run", "--json", "--", plain, "-u"), false, uid},
		{"root, setuid", exec.Command(bin, "run", "--json", "--", suid, "-u"), false, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := exitOf(t, tc.cmd)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			w := warned(stderr)
			if tc.warn && (len(w) != 1 || !strings.Contains(w[0], suid) || !strings.Contains(w[0], "setuid (uid 0)") || !strings.Contains(w[0], "your own ids")) {
				t.Errorf("warnings %q, want one line naming %s, its setuid to uid 0 and what it means", w, suid)
			}
			if !tc.warn && len(w) != 0 {
				t.Errorf("warnings %q, want none", w)
			}
			// The ranks' output comes on stderr with --json: id -u's line.
			if !strings.Contains("\n"+stderr, "\n"+tc.euidSeen+"\n") {
				t.Errorf("id -u under crashtui did not print %s:\n%s", tc.euidSeen, stderr)
			}
			t.Log(strings.Join(w, "\n"))
		})
	}
}
