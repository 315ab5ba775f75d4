// Package testuser gives a test a real second user: created with useradd (a home of its own
// under /home, a group of its own), removed with userdel -r in t.Cleanup. crashtui runs as
// root on machines other users share; the tests of what such a user can and cannot make it
// do (plant a link, plant a program, run it on a setuid program) need one that exists.
//
// It is imported only by _test.go files, needs root, and never traces anything.
package testuser

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// User is a user that exists for one test.
type User struct {
	Name     string
	UID, GID int
	Home     string // owned by the user, mode 0755 or stricter
}

// New creates a user whose name is unique to this test run and removes it (home and all) in
// t.Cleanup, after everything the test registered later (its processes) is gone.
func New(t testing.TB) *User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a second user needs root (make test runs as root)")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd is not installed (the passwd package provides it)")
	}
	var b [4]byte
	rand.Read(b[:])
	name := "crashtui-" + hex.EncodeToString(b[:])
	if out, err := locked(exec.Command("useradd", "--create-home", "--user-group", "--shell", "/bin/sh", name)); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := locked(exec.Command("userdel", "-r", name)); err != nil {
			t.Errorf("userdel -r %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &User{Name: name, UID: uid, GID: gid, Home: u.HomeDir}
}

// locked runs useradd or userdel holding flock on /etc: test binaries of several packages
// run at once, and shadow's own lock makes a second concurrent useradd fail rather than
// wait. (Not on /etc/passwd: useradd replaces that file by a rename, so a lock on it would
// be on an inode no one else opens.)
func locked(cmd *exec.Cmd) ([]byte, error) {
	f, err := os.Open("/etc")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	return cmd.CombinedOutput()
}

// Credential runs a process as the user, with no supplementary groups.
func (u *User) Credential() *syscall.Credential {
	return &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}
}

// Command is exec.Command run as the user, with HOME and USER set to the user's.
func (u *User) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	cmd.Env = append(os.Environ(), "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name)
	return cmd
}

// Own gives path (not what a link points to) to the user.
func (u *User) Own(t testing.TB, path string) {
	t.Helper()
	if err := os.Lchown(path, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
}

// PublicDir is a new temporary directory of root's, mode 0755, removed in t.Cleanup: the
// user can run what is put there but change nothing in it.
func PublicDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "crashtui-public-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
