package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/testuser"
	"github.com/crashtui/crashtui/sessions"
)

// secretRE matches the lines demo/c/secret.c prints.
var secretRE = regexp.MustCompile(`^(secret|keep) ([0-9a-f]{32})$`)

// secrets returns the secret and the marker a run of demo/c/secret.c printed.
func secrets(t *testing.T, lines []string) (secret, keep string) {
	t.Helper()
	for _, l := range lines {
		if m := secretRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			if m[1] == "secret" {
				secret = m[2]
			} else {
				keep = m[2]
			}
		}
	}
	if secret == "" || keep == "" {
		t.Fatalf("secret printed no secret and marker:\n%s", strings.Join(lines, "\n"))
	}
	return secret, keep
}

// checkCoreHolds asserts that core holds keep and not secret.
func checkCoreHolds(t *testing.T, whose, core, secret, keep string) {
	t.Helper()
	b, err := os.ReadFile(core)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(keep)) {
		t.Errorf("%s core %s (%d bytes) lacks the marker from an ordinary page: it dumped too little to tell anything", whose, core, len(b))
	}
	if bytes.Contains(b, []byte(secret)) {
		t.Errorf("%s core %s holds the secret from the MADV_DONTDUMP page", whose, core)
	}
	if fi, _ := os.Stat(core); whose == "crashtui's" && (fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid())) {
		t.Errorf("%s core %s: mode %v, uid %d; want 0600, crashtui's", whose, core, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
	}
}

// kernelCore runs argv directly (no crashtui) with RLIMIT_CORE unlimited in a directory of
// its own and returns its output and the core the kernel wrote there ("" when none). The
// kernel's cores are only found this way when core_pattern names a file relative to the
// crashing process's directory (the default "core"); a pipe (systemd-coredump, apport) or
// another directory is set to "core" for the test and put back in t.Cleanup.
func kernelCore(t *testing.T, argv ...string) (out []string, core string, dumped bool) {
	t.Helper()
	const patternFile = "/proc/sys/kernel/core_pattern"
	b, err := os.ReadFile(patternFile)
	if err != nil {
		t.Skipf("no core_pattern: %v", err)
	}
	if p := strings.TrimSpace(string(b)); strings.HasPrefix(p, "|") || strings.Contains(p, "/") {
		if err := os.WriteFile(patternFile, []byte("core"), 0); err != nil {
			t.Skipf("core_pattern %q sends cores elsewhere and cannot be set for the test: %v", p, err)
		}
		t.Cleanup(func() { os.WriteFile(patternFile, b, 0) })
	}
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `ulimit -c unlimited; exec "$0" "$@"`}, argv...)...)
	cmd.Dir = dir
	stdout, _ := cmd.Output()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
		t.Fatalf("%v: %v, want killed by SIGSEGV", argv, cmd.ProcessState)
	}
	ents, _ := os.ReadDir(dir) // a new directory: only the kernel writes there
	for _, e := range ents {
		if e.Type().IsRegular() {
			core = filepath.Join(dir, e.Name())
		}
	}
	return strings.Split(string(stdout), "\n"), core, ws.CoreDump()
}

// secretCrash runs demo/c/secret.c MODE under `crashtui run --cores`, through prefix (a
// command that execs the rest, or none), and returns the result, the cores directory and the
// program's secret and marker.
func secretCrash(t *testing.T, prefix []string, prog, mode string) (crResult, string, string, string) {
	t.Helper()
	cores := t.TempDir()
	r := startCrashRun(t, 1, []string{"--cores", cores}, append(append(prefix, prog), mode)...)
	res := r.wait(60 * time.Second)
	if len(res.Crashes) != 1 {
		t.Fatalf("%d crashes, want 1\n%s", len(res.Crashes), r.tail())
	}
	secret, keep := secrets(t, res.Stderr)
	return res, cores, secret, keep
}

// TestCoreLeavesOutDontDumpLikeTheKernel: a page marked MADV_DONTDUMP is in neither the
// kernel's core nor crashtui's, while an ordinary page is in both; for a root process (its
// dumpability read by the ptrace check) and for a second user's (read from /proc's owners).
func TestCoreLeavesOutDontDumpLikeTheKernel(t *testing.T) {
	needRoot(t)
	prog := buildC(t, "secret")
	out, kcore, dumped := kernelCore(t, prog, "dontdump")
	if !dumped || kcore == "" {
		t.Fatalf("the kernel wrote no core of secret dontdump (dumped %v, file %q)", dumped, kcore)
	}
	ksecret, kkeep := secrets(t, out)
	checkCoreHolds(t, "the kernel's", kcore, ksecret, kkeep)

	res, cores, secret, keep := secretCrash(t, nil, prog, "dontdump")
	c := res.Crashes[0]
	if c.Core == nil || c.NoCore != "" {
		t.Fatalf("no core from crashtui: %+v, errors %+v", c, res.Errors)
	}
	if filepath.Dir(*c.Core) != cores {
		t.Errorf("core %s, want in %s", *c.Core, cores)
	}
	checkCoreHolds(t, "crashtui's", *c.Core, secret, keep)

	t.Run("second user", func(t *testing.T) {
		u := testuser.New(t)
		public := filepath.Join(testuser.PublicDir(t), "secret")
		copyFile(t, prog, public, 0o755)
		res, _, secret, keep := secretCrash(t, setprivAs(u), public, "dontdump")
		c := res.Crashes[0]
		if c.Core == nil {
			t.Fatalf("no core from crashtui for the user's dumpable process: %+v, errors %+v", c, res.Errors)
		}
		checkCoreHolds(t, "crashtui's", *c.Core, secret, keep)
	})
}

// TestNoCoreForNonDumpable: a process that called prctl(PR_SET_DUMPABLE, 0) gets no core from
// the kernel (fs.suid_dumpable does not apply to it: SUID_DUMP_DISABLE) and none from
// crashtui, whose crash event says why; as root (ptrace check) and as a second user (/proc's
// owners).
func TestNoCoreForNonDumpable(t *testing.T) {
	needRoot(t)
	prog := buildC(t, "secret")
	if _, kcore, dumped := kernelCore(t, prog, "nodump"); dumped || kcore != "" {
		t.Fatalf("the kernel dumped a non-dumpable process (file %q): this kernel's rule is not the one crashtui follows", kcore)
	}
	check := func(t *testing.T, res crResult, cores string) {
		t.Helper()
		c := res.Crashes[0]
		if c.Core != nil || c.NoCore != sessions.NoCoreNonDumpable || c.Representative {
			t.Errorf("crash: core %v, no_core %q, representative %v; want no core, %q", c.Core, c.NoCore, c.Representative, sessions.NoCoreNonDumpable)
		}
		if g := res.Summary.Groups; len(g) != 1 || g[0].Core != nil || g[0].NoCore != sessions.NoCoreNonDumpable {
			t.Errorf("summary groups %+v, want one without a core, no_core %q", g, sessions.NoCoreNonDumpable)
		}
		if ents, _ := os.ReadDir(cores); len(ents) != 0 {
			t.Errorf("files in --cores: %v", ents)
		}
	}
	res, cores, _, _ := secretCrash(t, nil, prog, "nodump")
	check(t, res, cores)
	t.Run("second user", func(t *testing.T) {
		u := testuser.New(t)
		public := filepath.Join(testuser.PublicDir(t), "secret")
		copyFile(t, prog, public, 0o755)
		res, cores, _, _ := secretCrash(t, setprivAs(u), public, "nodump")
		check(t, res, cores)
	})
}

// TestRunCoresUnderUlimitZero is issue 21's third case: under the soft `ulimit -c 0` of most
// shells, `run --cores` still keeps one core per site (the ranks' soft limit is raised to the
// hard one); a rank that lowers its own limit gets none, and where no member of a group may
// dump (a hard limit of 0) the events and the summary say so.
func TestRunCoresUnderUlimitZero(t *testing.T) {
	s := crashSuite(t)
	t.Run("soft 0", func(t *testing.T) {
		cores := t.TempDir()
		res := startCrashRunLimit(t, "-S -c 0", 6, []string{"--cores", cores}, s.PIE, "two").wait(120 * time.Second)
		checkGroups(t, res, 3, 3)
		checkCores(t, res, cores, s.PIE)
	})
	t.Run("soft 0, kernel's cores", func(t *testing.T) {
		// The kernel writes the representatives' cores: it needs the raised limit too.
		res := startCrashRunLimit(t, "-S -c 0", 6, []string{"--dedup-kernel-cores"}, s.PIE, "two").wait(120 * time.Second)
		checkGroups(t, res, 3, 3)
		checkKernelCores(t, res, false)
	})
	noCore := func(t *testing.T, res crResult, cores string) {
		t.Helper()
		for _, c := range res.Crashes {
			if c.Core != nil || c.NoCore != sessions.NoCoreRlimit {
				t.Errorf("pid %d: core %v, no_core %q; want none, %q", c.PID, c.Core, c.NoCore, sessions.NoCoreRlimit)
			}
		}
		for _, g := range res.Summary.Groups {
			if g.Core != nil || g.NoCore != sessions.NoCoreRlimit {
				t.Errorf("summary group %d: core %v, no_core %q; want %q", g.Group, g.Core, g.NoCore, sessions.NoCoreRlimit)
			}
		}
		if len(res.Summary.Groups) == 0 {
			t.Errorf("no groups")
		}
		if ents, _ := os.ReadDir(cores); len(ents) != 0 {
			t.Errorf("files in --cores: %v", ents)
		}
	}
	t.Run("hard 0", func(t *testing.T) {
		cores := t.TempDir()
		res := startCrashRunLimit(t, "-c 0", 4, []string{"--cores", cores}, s.PIE, "same").wait(120 * time.Second)
		noCore(t, res, cores)
	})
	t.Run("lowered by the rank", func(t *testing.T) {
		cores := t.TempDir()
		res := startCrashRun(t, 4, []string{"--cores", cores}, "/bin/sh", "-c", `ulimit -S -c 0; exec "$0" "$@"`, s.PIE, "same").wait(120 * time.Second)
		noCore(t, res, cores)
	})
}

// TestAttachNoMemberMayDump: attached to a job started under a soft `ulimit -c 0` (crashtui
// leaves an attached job's limits alone), --cores keeps no core, and the crash event and the
// summary say that no member may dump.
func TestAttachNoMemberMayDump(t *testing.T) {
	needRoot(t)
	prog := buildC(t, "secret")
	sh := exec.Command("/bin/sh", "-c", `ulimit -S -c 0; read go; exec "$0" dontdump`, prog)
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	cores := t.TempDir()
	c := startCrashtui(t, "attach", "--json", "--matrix", "off", "--cores", cores, "pid:"+strconv.Itoa(sh.Process.Pid))
	c.waitFor(t, "the shell attached", 30*time.Second, func(evs []event) bool { return count(evs, "process") > 0 })
	in.Write([]byte("\n"))
	evs := c.waitFor(t, "the crash", 30*time.Second, func(evs []event) bool { return count(evs, "crash") > 0 })
	for _, e := range evs {
		if e.kind() == "crash" && (e["core"] != nil || e.str("no_core") != string(sessions.NoCoreRlimit)) {
			t.Errorf("crash: core %v, no_core %q; want none, %q", e["core"], e.str("no_core"), sessions.NoCoreRlimit)
		}
	}
	sh.Wait()
	_, evs = c.stop(t)
	var groups []any
	for _, e := range evs {
		if e.kind() == "summary" {
			groups, _ = e["groups"].([]any)
		}
	}
	if len(groups) != 1 || groups[0].(map[string]any)["no_core"] != string(sessions.NoCoreRlimit) {
		t.Errorf("summary groups %v, want one with no_core %q", groups, sessions.NoCoreRlimit)
	}
	if ents, _ := os.ReadDir(cores); len(ents) != 0 {
		t.Errorf("files in --cores: %v", ents)
	}
}

// setprivAs is a command prefix that runs the rest as u.
func setprivAs(u *testuser.User) []string {
	return []string{"setpriv", "--reuid=" + strconv.Itoa(u.UID), "--regid=" + strconv.Itoa(u.GID), "--clear-groups", "--"}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, mode); err != nil {
		t.Fatal(err)
	}
}
