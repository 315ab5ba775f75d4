// Package outfile creates every file crashtui writes: recordings, casts, crash logs, cores,
// checkpoint images, .dot trees and the ranks' temporary logs.
//
// crashtui runs as root on machines other users share, so a path it is given may sit in a
// directory another user controls (fs.protected_symlinks only guards sticky directories).
// Every file is therefore created relative to a directory held open and checked first:
//
//   - the directory, and every directory above it, belongs to root or to crashtui's own
//     user and is not writable by group or others, unless it is sticky (/tmp: others may
//     add names but cannot remove or rename crashtui's, and O_EXCL keeps a planted name
//     from being opened);
//   - a new file is created O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600;
//   - an existing regular file of crashtui's own user is replaced by a new one written
//     beside it and renamed over it (renameat never follows a link and never writes into
//     the old inode, so a hard link to another file leaves that file untouched);
//   - a symbolic link, anything not a regular file, or another user's file at the path is
//     refused with an error that says why.
//
// Dir does the same for a directory crashtui writes many files into (--cores): created
// 0700 when absent, refused when another user owns it or can write it.
//
// It must not follow a link at the last component of any path it writes, and must not
// write anything outside the checked directory.
package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// File is a file being written. Close makes it visible at its path: a file created in
// place is simply closed; a replacement is renamed over the old file. Publish does that
// rename earlier, for files that are read while they are written (a recording, a crash log).
type File struct {
	*os.File
	dir  *os.File // the checked directory: every later step is relative to it
	path string   // the path the caller asked for
	name string   // the final name in dir
	tmp  string   // the temporary name of a replacement not yet renamed; "" otherwise
}

// Name is the path the caller asked for (not the temporary name of a replacement).
func (f *File) Name() string { return f.path }

// Publish renames a replacement over the old file now; the file stays open for writing,
// and writes after it land at the path. It does nothing for a file created in place.
func (f *File) Publish() error {
	if f.tmp == "" {
		return nil
	}
	if err := unix.Renameat(int(f.dir.Fd()), f.tmp, int(f.dir.Fd()), f.name); err != nil {
		return &os.PathError{Op: "replace", Path: f.path, Err: err}
	}
	f.tmp = ""
	return nil
}

// Close closes the file and publishes it. When closing fails, a replacement is removed and
// the old file stays as it was.
func (f *File) Close() error {
	err := f.File.Close()
	if err == nil {
		err = f.Publish()
	}
	if err != nil && f.tmp != "" {
		unix.Unlinkat(int(f.dir.Fd()), f.tmp, 0)
	}
	f.dir.Close()
	return err
}

// Abort closes the file and removes what was written: a replacement's temporary file, or
// the file created in place. An old file that was being replaced stays as it was.
func (f *File) Abort() {
	f.File.Close()
	name := f.tmp
	if name == "" {
		name = f.name
	}
	unix.Unlinkat(int(f.dir.Fd()), name, 0)
	f.dir.Close()
}

// Create creates path for writing, mode 0600, by the rules of the package comment.
func Create(path string) (*File, error) {
	dirPath, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return nil, &os.PathError{Op: "create", Path: path, Err: errors.New("not a file name")}
	}
	dir, err := openDir(dirPath)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	f := &File{dir: dir, path: path, name: name}
	fd, err := createAt(dir, name)
	if errors.Is(err, unix.EEXIST) {
		if err = replaceable(dir, name); err == nil {
			f.tmp, fd, err = createTemp(dir, "."+name+".", ".tmp")
		}
	}
	if err != nil {
		dir.Close()
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	f.File = os.NewFile(uintptr(fd), path)
	return f, nil
}

// CreateStream is Create for a file that is read while it grows (a recording, a cast, a
// crash log): a replacement takes the path at once instead of at Close.
func CreateStream(path string) (*File, error) {
	f, err := Create(path)
	if err != nil {
		return nil, err
	}
	if err := f.Publish(); err != nil {
		f.Abort()
		return nil, err
	}
	return f, nil
}

// CreateTemp creates a new file in dir (os.TempDir() when empty), named by pattern as
// os.CreateTemp names it (the last "*" becomes a random string), mode 0600, after checking
// dir as Create does. The caller removes it when it is no longer wanted.
func CreateTemp(dir, pattern string) (*os.File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	if strings.ContainsRune(prefix+suffix, '/') {
		return nil, &os.PathError{Op: "createtemp", Path: pattern, Err: errors.New("pattern contains a path separator")}
	}
	d, err := openDir(dir)
	if err != nil {
		return nil, &os.PathError{Op: "createtemp", Path: dir, Err: err}
	}
	defer d.Close()
	name, fd, err := createTemp(d, prefix, suffix)
	if err != nil {
		return nil, &os.PathError{Op: "createtemp", Path: filepath.Join(dir, pattern), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

// Dir makes sure path is a directory crashtui may write files into: created (with any
// missing parent) mode 0700 when absent, and refused when it, or a directory on the way to
// it, belongs to another user or is writable by group or others without being sticky.
// Nothing is created before the directories above it have been checked.
func Dir(path string) error {
	if path == "" {
		return errors.New("directory: empty name")
	}
	d, err := walk(path, true)
	if err != nil {
		return &os.PathError{Op: "directory", Path: path, Err: err}
	}
	return d.Close()
}

// CheckTree checks path and every directory on the way to it as Create checks a file's
// directory, and path itself, which must not be a link: a regular file or directory of
// root or crashtui's user that group and others cannot write. What it names can then be
// changed by no one else (as ssh checks authorized_keys), so a program found there may be
// run as root.
func CheckTree(path string) error {
	dirPath, name := filepath.Split(path)
	d, err := walk(dirPath, false)
	if err != nil {
		return &os.PathError{Op: "check", Path: path, Err: err}
	}
	defer d.Close()
	if name == "" {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "check", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return &os.PathError{Op: "check", Path: path, Err: errSymlink}
	case unix.S_IFREG, unix.S_IFDIR:
	default:
		return &os.PathError{Op: "check", Path: path, Err: errors.New("is not a regular file or directory")}
	}
	return owned(path, &st)
}

var errSymlink = errors.New("is a symbolic link: crashtui never writes through one (remove it, or give the path it points to)")

// maxLinks bounds the symbolic links one path may go through (the kernel's MAXSYMLINKS).
const maxLinks = 40

// openDir opens path as a directory that crashtui may create files in (walk).
func openDir(path string) (*os.File, error) { return walk(path, false) }

// walk opens the directory path one component at a time from "/", checking each directory
// it passes through (owned), so that no directory another user controls is on the way: no
// one else can then swap a component for a link or another directory between the check and
// the use. A symbolic link on the way is followed only when it belongs to root or to
// crashtui's user (it sits in a checked directory, so only they could have made it; in a
// sticky one, fs.protected_symlinks' rule). With mkdir, missing directories are created
// mode 0700.
func walk(path string, mkdir bool) (*os.File, error) {
	if path == "" {
		path = "."
	}
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		path = wd + "/" + path // not Clean: ".." after a link is the link target's parent
	}
	fd, err := openRoot()
	if err != nil {
		return nil, err
	}
	rest := strings.Split(path, "/")
	links := 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		if comp == "" || comp == "." {
			continue
		}
		next, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && mkdir {
			made := unix.Mkdirat(fd, comp, 0o700)
			if made == nil || errors.Is(made, unix.EEXIST) {
				next, err = unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			} else {
				err = made
			}
			if made == nil && err == nil {
				unix.Fchmod(next, 0o700) // whatever the umask took away
			}
		}
		if err != nil {
			var st unix.Stat_t
			if serr := unix.Fstatat(fd, comp, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				err = fmt.Errorf("%s: %w", filepath.Join(fdPath(fd), comp), err)
				unix.Close(fd)
				return nil, err
			}
			link := filepath.Join(fdPath(fd), comp)
			if err := ownedLink(link, &st); err != nil {
				unix.Close(fd)
				return nil, err
			}
			if links++; links > maxLinks {
				unix.Close(fd)
				return nil, fmt.Errorf("%s: %w", link, unix.ELOOP)
			}
			target, err := readlinkat(fd, comp)
			if err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("%s: %w", link, err)
			}
			rest = append(strings.Split(target, "/"), rest...)
			if strings.HasPrefix(target, "/") {
				unix.Close(fd)
				if fd, err = openRoot(); err != nil {
					return nil, err
				}
			}
			continue
		}
		unix.Close(fd)
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, err
		}
		if err := owned(fdPath(fd), &st); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return os.NewFile(uintptr(fd), fdPath(fd)), nil
}

// openRoot opens "/" and checks it.
func openRoot() (int, error) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := owned("/", &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// ownedLink checks a symbolic link on the way: root's or crashtui's user's.
func ownedLink(path string, st *unix.Stat_t) error {
	if me := os.Geteuid(); st.Uid != 0 && int(st.Uid) != me {
		return fmt.Errorf("%s is a symbolic link of uid %d, not of root or uid %d (crashtui): crashtui does not follow it", path, st.Uid, me)
	}
	return nil
}

// owned checks one path component: root's or ours, not writable by group or others
// (unless it is a sticky directory).
func owned(path string, st *unix.Stat_t) error {
	me := os.Geteuid()
	if st.Uid != 0 && int(st.Uid) != me {
		return fmt.Errorf("%s belongs to uid %d, not to root or uid %d (crashtui): its owner could replace what crashtui writes or runs there",
			path, st.Uid, me)
	}
	if st.Mode&0o022 != 0 && !(st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0) {
		return fmt.Errorf("%s is writable by group or others (mode %04o) and not sticky: another user could replace what crashtui writes or runs there (chmod go-w it, or choose another)",
			path, st.Mode&0o7777)
	}
	return nil
}

// fdPath names an open directory (for messages and File names).
func fdPath(fd int) string {
	if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil {
		return p
	}
	return fmt.Sprintf("directory fd %d", fd)
}

// createAt creates name in dir: it must not exist, and a link planted there is not followed.
func createAt(dir *os.File, name string) (int, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, err
	}
	// 0600 whatever the umask: a umask can only take bits away, but a file that is not
	// readable by its own user would be no use.
	if err := unix.Fchmod(fd, 0o600); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// replaceable says whether the existing name in dir may be replaced: a regular file of
// crashtui's own user.
func replaceable(dir *os.File, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errSymlink
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return errors.New("exists and is not a regular file: crashtui replaces only files")
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("exists and belongs to uid %d: crashtui replaces only its own files (uid %d)", st.Uid, os.Geteuid())
	}
	return nil
}

// createTemp creates prefix+random+suffix in dir with createAt.
func createTemp(dir *os.File, prefix, suffix string) (string, int, error) {
	for range 100 {
		var b [6]byte
		rand.Read(b[:])
		name := prefix + hex.EncodeToString(b[:]) + suffix
		fd, err := createAt(dir, name)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return name, fd, err
	}
	return "", -1, errors.New("no free temporary name")
}
