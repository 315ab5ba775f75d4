package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crashtui/crashtui/demo/testuser"
	"github.com/crashtui/crashtui/tui/tuitest"
)

// exitOf runs cmd to its end and returns its exit status and stderr.
func exitOf(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("%v: %v", cmd.Args, err)
	return -1, ""
}

// TestOutputFlagsRefusePlantedLinks is issue 21's first attack against every flag that names
// a file crashtui writes: a second user plants a link to a file of root's at the path, in a
// directory of their own and in a sticky one of root's (where they may add names). crashtui
// exits 2 before touching the job, says why, and root's file keeps its content.
func TestOutputFlagsRefusePlantedLinks(t *testing.T) {
	needRoot(t)
	u := testuser.New(t)
	precious := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(precious, []byte("root's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rootDir := t.TempDir() // a directory of root's, the target of a planted --cores link
	sticky := filepath.Join(testuser.PublicDir(t), "sticky")
	os.Mkdir(sticky, 0o755)
	syscall.Chmod(sticky, 0o1777)
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)

	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	job := "pid:" + strconv.Itoa(sleeper.Process.Pid)

	plant := func(t *testing.T, target, at string) {
		t.Helper()
		if out, err := u.Command("ln", "-s", target, at).CombinedOutput(); err != nil {
			t.Fatalf("ln -s %s %s as %s: %v\n%s", target, at, u.Name, err, out)
		}
	}
	for _, tc := range []struct {
		flag string
		args func(path string) []string
	}{
		{"record", func(p string) []string { return []string{"run", "--json", "--record", p, "--", "/bin/true"} }},
		{"crash-log", func(p string) []string { return []string{"run", "--json", "--crash-log", p, "--", "/bin/true"} }},
		{"image", func(p string) []string { return []string{"checkpoint", "--json", "--image", p, job} }},
		{"dot", func(p string) []string { return []string{"stacks", "--json", "--dot", p, job} }},
		{"cores", func(p string) []string { return []string{"run", "--json", "--cores", p, "--", "/bin/true"} }},
	} {
		for _, where := range []struct{ name, dir, why string }{
			{"home", u.Home, "belongs to uid " + strconv.Itoa(u.UID)},
			{"sticky", sticky, "symbolic link"},
		} {
			t.Run(tc.flag+"/"+where.name, func(t *testing.T) {
				at := filepath.Join(where.dir, tc.flag+"-link")
				target := precious
				if tc.flag == "cores" {
					target = rootDir
				}
				plant(t, target, at)
				code, stderr := exitOf(t, exec.Command(crashtuiBin, tc.args(at)...))
				if code != 2 || !strings.Contains(stderr, at) || !strings.Contains(stderr, where.why) {
					t.Errorf("crashtui %v: exit %d, stderr %q; want 2 and an error naming %s and saying %q",
						tc.args(at), code, stderr, at, where.why)
				}
				if tracerPID(sleeper.Process.Pid) != 0 {
					t.Errorf("the job is still traced")
				}
			})
		}
	}
	if b, _ := os.ReadFile(precious); string(b) != "root's own\n" {
		t.Errorf("root's file now holds %q", b)
	}
	if ents, _ := os.ReadDir(rootDir); len(ents) != 0 {
		t.Errorf("written into root's directory through a link: %v", ents)
	}

	t.Run("cores/world-writable", func(t *testing.T) {
		code, stderr := exitOf(t, exec.Command(crashtuiBin, "run", "--json", "--cores", open, "--", "/bin/true"))
		if code != 2 || !strings.Contains(stderr, "writable by group or others") {
			t.Errorf("--cores %s (mode 0777): exit %d, stderr %q; want 2, refused", open, code, stderr)
		}
	})
	t.Run("cores/created-0700", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new", "cores")
		if code, stderr := exitOf(t, exec.Command(crashtuiBin, "run", "--json", "--cores", dir, "--", "/bin/true")); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("--cores %s: %v, mode %v; want created 0700", dir, err, fi.Mode())
		}
	})

	// --cast needs a screen: a replay in a pseudo-terminal.
	t.Run("cast/home", func(t *testing.T) {
		at := filepath.Join(u.Home, "cast-link")
		plant(t, precious, at)
		scr := tuitest.Open(t, 120, 40)
		cmd := exec.Command(crashtuiBin, "replay", "--cast", at, filepath.Join("..", "..", "demo", "session.jsonl"))
		cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		proc := startWaited(t, cmd, syscall.SIGTERM)
		select {
		case <-proc.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("crashtui replay --cast did not end:\n%s", scr.Text())
		}
		var ee *exec.ExitError
		if !errors.As(proc.err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("replay --cast %s: %v, want exit status 2", at, proc.err)
		}
		scr.WaitFor(t, 5*time.Second, "belongs to uid")
		if b, _ := os.ReadFile(precious); string(b) != "root's own\n" {
			t.Errorf("root's file now holds %q", b)
		}
	})
}

// TestOutputReplacesOwnFile: a recording and a crash log of our own at the path are replaced,
// not written into: a new inode, mode 0600, whatever the old file's mode.
func TestOutputReplacesOwnFile(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	rec, log := filepath.Join(dir, "session.jsonl"), filepath.Join(dir, "crashes.csv")
	old := map[string]uint64{}
	for _, p := range []string{rec, log} {
		if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o644)
		old[p] = inode(t, p)
	}
	if code, stderr := exitOf(t, exec.Command(crashtuiBin, "run", "--json", "--record", rec, "--crash-log", log, "--", "/bin/true")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range []string{rec, log} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if inode(t, p) == old[p] || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: inode %d (was %d), mode %v; want a new inode, 0600", p, inode(t, p), old[p], fi.Mode())
		}
		if b, _ := os.ReadFile(p); strings.HasPrefix(string(b), "old") {
			t.Errorf("%s still holds the old content", p)
		}
	}
	if b, _ := os.ReadFile(log); string(b) != "rank,pid,group,representative,signal,site\n" {
		t.Errorf("crash log %q, want only its header", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestOutputAppearsAtOnce: a recording and a crash log replace an old file of ours as soon as
// crashtui starts, not when it ends: they can be read (tail -f, replay) while they grow.
func TestOutputAppearsAtOnce(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	rec, log := filepath.Join(dir, "session.jsonl"), filepath.Join(dir, "crashes.csv")
	for _, p := range []string{rec, log} {
		os.WriteFile(p, []byte("old\n"), 0o600)
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	c := startCrashtui(t, "attach", "--json", "--matrix", "off", "--record", rec, "--crash-log", log, "pid:"+strconv.Itoa(sleeper.Process.Pid))
	c.waitFor(t, "the process event", 30*time.Second, func(evs []event) bool { return count(evs, "process") > 0 })
	if b, _ := os.ReadFile(rec); !strings.HasPrefix(string(b), `{"format":"crashtui-session"`) {
		t.Errorf("while crashtui runs, %s holds %.60q, want the new recording", rec, b)
	}
	if b, _ := os.ReadFile(log); string(b) != "rank,pid,group,representative,signal,site\n" {
		t.Errorf("while crashtui runs, %s holds %q, want the new log's header", log, b)
	}
	if code, _ := c.stop(t); code != 0 {
		t.Errorf("crashtui attach: exit %d", code)
	}

	// A cast too, while the screen it records is up.
	cast := filepath.Join(dir, "screen.cast")
	os.WriteFile(cast, []byte("old\n"), 0o600)
	scr := tuitest.Open(t, 120, 40)
	cmd := exec.Command(crashtuiBin, "replay", "--cast", cast, filepath.Join("..", "..", "demo", "session.jsonl"))
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = scr.TTY, scr.TTY, scr.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	startWaited(t, cmd, syscall.SIGTERM)
	scr.WaitFor(t, 30*time.Second, "crashtui replay")
	if b, _ := os.ReadFile(cast); !strings.HasPrefix(string(b), `{"version":2`) {
		t.Errorf("while the replay runs, %s holds %.60q, want the new cast", cast, b)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
