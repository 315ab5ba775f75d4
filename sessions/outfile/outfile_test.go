package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crashtui/crashtui/demo/testuser"
)

// rootFile is a file of root's that an attack would overwrite: it must keep its content.
func rootFile(t *testing.T) (string, func()) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(p, []byte("root's own data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, func() {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "root's own data\n" {
			t.Errorf("root's file %s now holds %q (%v)", p, b, err)
		}
	}
}

func stat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func write(t *testing.T, p, text string) error {
	t.Helper()
	f, err := Create(p)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	return f.Close()
}

func TestCreateNewFileIs0600(t *testing.T) {
	old := syscall.Umask(0o277) // a umask that would leave the owner unable to write
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "out.jsonl")
	if err := write(t, p, "x\n"); err != nil {
		t.Fatal(err)
	}
	if st := stat(t, p); st.Mode&0o7777 != 0o600 || int(st.Uid) != os.Geteuid() {
		t.Errorf("mode %04o uid %d, want 0600 of uid %d", st.Mode&0o7777, st.Uid, os.Geteuid())
	}
}

// TestCreateReplacesOwnFile: an existing file of our own is replaced by a new inode, mode
// 0600, and a hard link to the old inode keeps the old content (it was never written into).
func TestCreateReplacesOwnFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, filepath.Join(dir, "other-name")); err != nil {
		t.Fatal(err)
	}
	before := stat(t, p).Ino
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new\n")
	if b, _ := os.ReadFile(p); string(b) != "old\n" {
		t.Errorf("before Close the path holds %q, want the old file", b)
	}
	if f.Name() != p {
		t.Errorf("Name() = %q, want %q", f.Name(), p)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st := stat(t, p)
	if st.Ino == before || st.Mode&0o7777 != 0o600 {
		t.Errorf("inode %d (was %d) mode %04o: want a new inode, 0600", st.Ino, before, st.Mode&0o7777)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("path holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "other-name")); string(b) != "old\n" {
		t.Errorf("the old inode was written into: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestCreateStream: a replacement takes the path at once, and what is written after lands there.
func TestCreateStream(t *testing.T) {
	p := filepath.Join(t.TempDir(), "crashes.csv")
	os.WriteFile(p, []byte("old\n"), 0o600)
	f, err := CreateStream(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("header\n")
	if b, _ := os.ReadFile(p); string(b) != "header\n" {
		t.Errorf("while it is written, the path holds %q", b)
	}
	f.WriteString("row\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "header\nrow\n" {
		t.Errorf("after Close the path holds %q", b)
	}
}

func TestAbortLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "core.1.42")
	os.WriteFile(p, []byte("old\n"), 0o600)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half a core")
	f.Abort()
	if b, _ := os.ReadFile(p); string(b) != "old\n" {
		t.Errorf("path holds %q", b)
	}
	q := filepath.Join(dir, "core.2.43")
	if f, err = Create(q); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestCreateRefusesWhatAnotherUserPlanted is the attack of issue 21: a second user plants a
// link to root's file where root will write (in the user's own directory, and in a sticky
// one where the user may add names), or a file of their own.
func TestCreateRefusesWhatAnotherUserPlanted(t *testing.T) {
	u := testuser.New(t)
	precious, check := rootFile(t)
	sticky := filepath.Join(testuser.PublicDir(t), "sticky")
	os.Mkdir(sticky, 0o755)
	syscall.Chmod(sticky, 0o1777)
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	plant := func(t *testing.T, args ...string) {
		t.Helper()
		if out, err := u.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v as %s: %v\n%s", args, u.Name, err, out)
		}
	}
	plant(t, "ln", "-s", precious, filepath.Join(u.Home, "session.jsonl"))
	plant(t, "ln", "-s", precious, filepath.Join(sticky, "session.jsonl"))
	plant(t, "sh", "-c", "echo mine > "+filepath.Join(sticky, "theirs.csv"))
	plant(t, "mkdir", filepath.Join(u.Home, "sub"))
	for _, tc := range []struct {
		name, path, why string
	}{
		{"link in the user's home", filepath.Join(u.Home, "session.jsonl"), "belongs to uid"},
		{"new file in the user's home", filepath.Join(u.Home, "fresh.jsonl"), "belongs to uid"},
		{"below the user's directory", filepath.Join(u.Home, "sub", "x"), "belongs to uid"},
		{"link in a sticky directory", filepath.Join(sticky, "session.jsonl"), "is a symbolic link"},
		{"the user's file in a sticky directory", filepath.Join(sticky, "theirs.csv"), "belongs to uid"},
		{"world-writable directory", filepath.Join(open, "x"), "writable by group or others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := write(t, tc.path, "overwritten\n")
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("Create(%s) = %v, want an error saying %q", tc.path, err, tc.why)
			}
			t.Log(err)
		})
	}
	check()
	if b, _ := os.ReadFile(filepath.Join(sticky, "theirs.csv")); string(b) != "mine\n" {
		t.Errorf("the user's file now holds %q", b)
	}
	// A new name in the sticky directory is ours to create (O_EXCL: nothing planted is opened).
	if err := write(t, filepath.Join(sticky, "fresh.jsonl"), "ok\n"); err != nil {
		t.Errorf("new file in a sticky directory: %v", err)
	}
}

// TestWalkFollowsOnlyTrustedLinks: a link on the way is followed when root made it in a
// directory of root's; one another user made in a sticky directory is not (their link could
// point anywhere, at any time).
func TestWalkFollowsOnlyTrustedLinks(t *testing.T) {
	u := testuser.New(t)
	base := testuser.PublicDir(t)
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o700)
	os.Symlink(real, filepath.Join(base, "mine"))
	if err := write(t, filepath.Join(base, "mine", "a"), "a\n"); err != nil {
		t.Fatalf("through root's link: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(real, "a")); string(b) != "a\n" {
		t.Errorf("through root's link, the file holds %q", b)
	}
	sticky := filepath.Join(base, "sticky")
	os.Mkdir(sticky, 0o755)
	syscall.Chmod(sticky, 0o1777)
	if out, err := u.Command("ln", "-s", real, filepath.Join(sticky, "theirs")).CombinedOutput(); err != nil {
		t.Fatalf("ln: %v\n%s", err, out)
	}
	err := write(t, filepath.Join(sticky, "theirs", "b"), "b\n")
	if err == nil || !strings.Contains(err.Error(), "symbolic link of uid") {
		t.Errorf("through the user's link: %v, want refused", err)
	}
	if _, err := os.Stat(filepath.Join(real, "b")); err == nil {
		t.Errorf("a file was created through the user's link")
	}
}

func TestDir(t *testing.T) {
	u := testuser.New(t)
	base := t.TempDir()
	made := filepath.Join(base, "cores", "deeper")
	old := syscall.Umask(0o277) // would leave 0500
	err := Dir(made)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(base, "cores"), made} {
		if st := stat(t, p); st.Mode&0o7777 != 0o700 {
			t.Errorf("%s mode %04o, want 0700", p, st.Mode&0o7777)
		}
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	sticky := filepath.Join(base, "sticky")
	os.Mkdir(sticky, 0o755)
	syscall.Chmod(sticky, 0o1777)
	if err := Dir(sticky); err != nil {
		t.Errorf("sticky directory of root's: %v", err)
	}
	for _, tc := range []struct{ path, why string }{
		{open, "writable by group or others"},
		{filepath.Join(open, "new"), "writable by group or others"},
		{u.Home, "belongs to uid"},
		{filepath.Join(u.Home, "cores"), "belongs to uid"},
	} {
		err := Dir(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Dir(%s) = %v, want an error saying %q", tc.path, err, tc.why)
		}
	}
	// Nothing was created inside the directories that were refused.
	for _, p := range []string{filepath.Join(open, "new"), filepath.Join(u.Home, "cores")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

func TestCheckTree(t *testing.T) {
	u := testuser.New(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckTree(prog); err != nil {
		t.Errorf("root's program in root's directory: %v", err)
	}
	theirs := filepath.Join(u.Home, "prog")
	os.WriteFile(theirs, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckTree(theirs); err == nil {
		t.Errorf("program in the user's home passed")
	}
	os.Chmod(prog, 0o777)
	if err := CheckTree(prog); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Errorf("world-writable program: %v", err)
	}
	os.Chmod(prog, 0o755)
	u.Own(t, prog)
	if err := CheckTree(prog); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("the user's program in root's directory: %v", err)
	}
}

func TestCreateTemp(t *testing.T) {
	dir := t.TempDir()
	f, err := CreateTemp(dir, "crashtui-ranks-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := filepath.Base(f.Name())
	if !strings.HasPrefix(base, "crashtui-ranks-") || !strings.HasSuffix(base, ".log") || filepath.Dir(f.Name()) != dir {
		t.Errorf("name %s", f.Name())
	}
	if st := stat(t, f.Name()); st.Mode&0o7777 != 0o600 {
		t.Errorf("mode %04o", st.Mode&0o7777)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	if _, err := CreateTemp(open, "x-*"); err == nil {
		t.Errorf("temporary file in a world-writable directory")
	}
}
