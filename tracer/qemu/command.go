package qemu

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Shell mode (`make guest`): guest/init runs one command with busybox's sh -c and prints it
// between these lines (guest/init/main.go has the same literals).
const (
	BeginLine  = "CRASHTUI-BEGIN"
	ExitPrefix = "CRASHTUI-EXIT:"
)

// maxCommand bounds a shell-mode command: it travels base64url-encoded on the kernel command
// line, whose COMMAND_LINE_SIZE is 2048 on ppc64 and arm64, and the console and crashtui.*
// settings take their share.
const maxCommand = 1200

// commandParam is the kernel command line setting that carries a shell-mode command.
func commandParam(command string) string {
	return "crashtui.mode=shell crashtui.cmd=" + base64.RawURLEncoding.EncodeToString([]byte(command))
}

// shellFilter passes on what a shell-mode guest prints between BeginLine and the exit line,
// line by line as it comes, and parses the status. The newline init prints before the exit
// line is its own: each line's newline is held back until the next line shows it is not
// that one.
type shellFilter struct {
	mu     sync.Mutex
	out    io.Writer
	part   []byte
	begun  bool
	done   bool
	status int
	heldNL bool
	// whole: each line goes out with its newline at once (BootConfig.WholeLines).
	whole bool
}

func (f *shellFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.part = append(f.part, p...)
	for {
		i := bytes.IndexByte(f.part, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(f.part[:i], "\r")
		f.part = f.part[i+1:]
		f.line(line)
	}
	return len(p), nil
}

func (f *shellFilter) line(line []byte) {
	switch {
	case f.done:
	case !f.begun:
		f.begun = bytes.Equal(bytes.TrimSpace(line), []byte(BeginLine))
	case bytes.HasPrefix(line, []byte(ExitPrefix)):
		n, err := strconv.Atoi(strings.TrimSpace(string(line[len(ExitPrefix):])))
		if err == nil {
			f.status, f.done = n, true
		}
	case f.whole:
		f.emit(append(line, '\n'))
	default:
		if f.heldNL {
			f.emit([]byte{'\n'})
		}
		f.emit(line)
		f.heldNL = true
	}
}

func (f *shellFilter) emit(b []byte) { f.out.Write(b) }

// result is the exit status, and whether the exit line came.
func (f *shellFilter) result() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done && f.begun && len(f.part) > 0 {
		// The guest died mid-line: show what it printed.
		if f.heldNL {
			f.emit([]byte{'\n'})
		}
		f.emit(f.part)
		f.part = nil
	}
	return f.status, f.done
}

// BootCommand boots one guest with b.Command in shell mode: the command's output (stdout and
// stderr together, through a pipe) goes to out as the guest prints it, and its exit status
// is returned (128+N for a command killed by signal N, as a shell reports it). The error is
// set when no exit line came (the guest did not boot, its watchdog fired, QEMU was killed):
// the status then means nothing.
func BootCommand(ctx context.Context, b BootConfig, out io.Writer) (int, error) {
	if b.Command == "" {
		return 0, errors.New("guest command: empty")
	}
	if len(b.Command) > maxCommand {
		return 0, fmt.Errorf("guest command: %d bytes, at most %d fit on the kernel command line (put a script among the added files and run that)", len(b.Command), maxCommand)
	}
	f := &shellFilter{out: out, whole: b.WholeLines}
	console, err := Boot(ctx, b, f)
	status, ok := f.result()
	if ok {
		return status, nil
	}
	why := "no exit line"
	if v, found := ParseVerdict(console); found {
		why = v
	}
	if err != nil {
		why += ": " + err.Error()
	}
	return 0, fmt.Errorf("guest %s: %s\n%s", b.CPU, why, tail(console, 1500))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// GuestOptions configures RunGuest. Zero values pick the defaults noted per field.
type GuestOptions struct {
	Arch       *Arch         // default PPC64LE
	CPU        string        // QEMU -cpu model, default the last of Arch.CPUs (power10, max)
	Command    string        // run with sh -c in the guest
	Add        []string      // host files put on the guest's PATH, as /usr/local/bin/<base name>
	ModuleRoot string        // as in Options
	CacheDir   string        // as in Options
	Kernel     string        // as in Options
	Timeout    time.Duration // the whole boot (from QEMU's start), default 10 minutes (the guest watchdog fires 10s earlier)
	Stdout     io.Writer     // the command's output, default os.Stdout
	// Stdin, when set, goes to the guest's console, which is then the command's stdin
	// (BootConfig.Stdin): a command that reads requests from the host (crashtui agent
	// --control). nil: the command's stdin is /dev/null.
	Stdin io.Reader
	// WholeLines writes each line of the output to Stdout with its newline as soon as it
	// comes (BootConfig.WholeLines), for a reader that acts on each line.
	WholeLines bool
	Log        io.Writer // progress, default os.Stderr
	Keep       bool      // keep the build directory
	// BuildDir, when set, is where the guest's programs are built and kept from one boot to
	// the next (created 0700): go build then relinks nothing that did not change, which is
	// most of a warm start (demo --guest). "": a fresh temporary directory each time.
	BuildDir string
}

// RunGuest is `make guest`: it cross-builds crashtui, init and the C helpers for the guest,
// fetches busybox (Debian's busybox-static) and the kernel, packs them with the added files,
// boots one guest and runs the command there. It returns the command's exit status; an error
// means the guest could not run it (a *SkipError when QEMU, the kernel or busybox cannot be
// had here).
func RunGuest(ctx context.Context, opt GuestOptions) (int, error) {
	a := opt.Arch
	if a == nil {
		a = PPC64LE
	}
	if opt.CPU == "" {
		opt.CPU = a.CPUs[len(a.CPUs)-1]
	}
	if opt.Timeout == 0 {
		opt.Timeout = 10 * time.Minute
	}
	if opt.Stdout == nil {
		opt.Stdout = os.Stdout
	}
	if opt.Log == nil {
		opt.Log = os.Stderr
	}
	if len(opt.Command) > maxCommand {
		return 0, fmt.Errorf("guest command: %d bytes, at most %d fit on the kernel command line (put a script among the added files and run that)", len(opt.Command), maxCommand)
	}
	add, err := addedFiles(opt.Add)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(opt.Log, "guest: [%5.1fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	gobin, err := goBinary()
	if err != nil {
		return 0, &SkipError{Reason: err.Error()}
	}
	if opt.ModuleRoot == "" {
		opt.ModuleRoot = executableModule()
	}
	if opt.ModuleRoot == "" {
		if opt.ModuleRoot, err = moduleRoot(ctx, gobin); err != nil {
			return 0, fmt.Errorf("the guest is built from crashtui's source, so run this inside its tree (or run a crashtui built there): %w", err)
		}
	}
	if opt.CacheDir == "" {
		if opt.CacheDir, err = a.DefaultCacheDir(); err != nil {
			return 0, &SkipError{Reason: err.Error()}
		}
	}
	if err := a.EnsureCC(ctx, opt.Log); err != nil {
		return 0, err
	}
	work, err := os.MkdirTemp("", "crashtui-guest-"+a.GOARCH+"-")
	if err != nil {
		return 0, fmt.Errorf("create build dir: %w", err)
	}
	if opt.Keep {
		logf("build dir %s kept", work)
	} else {
		defer os.RemoveAll(work)
	}
	type built struct {
		files map[string]string
		err   error
	}
	buildDir := work
	if opt.BuildDir != "" {
		if err := os.MkdirAll(opt.BuildDir, 0o700); err != nil {
			return 0, fmt.Errorf("create build dir: %w", err)
		}
		buildDir = opt.BuildDir
	}
	buildDone := make(chan built, 1)
	go func() {
		files, err := a.buildGuest(ctx, gobin, opt.ModuleRoot, buildDir, false)
		buildDone <- built{files, err}
	}()
	wait := func() built { return <-buildDone }
	qemuBin, err := a.EnsureQEMU(ctx, opt.Log)
	if err != nil {
		wait()
		return 0, err
	}
	kernel := opt.Kernel
	if kernel == "" {
		if kernel, err = a.FetchKernel(ctx, opt.CacheDir, opt.Log); err != nil {
			wait()
			return 0, err
		}
	}
	busybox, err := a.FetchBusybox(ctx, opt.CacheDir, opt.Log)
	if err != nil {
		wait()
		return 0, err
	}
	b := wait()
	if b.err != nil {
		return 0, b.err
	}
	logf("%s guest programs built; kernel %s", a.GOARCH, filepath.Base(kernel))
	files := b.files
	files["bin/busybox"] = busybox
	for k, v := range add {
		files[k] = v
	}
	initrd := filepath.Join(work, "initrd.cpio")
	if err := WriteInitramfs(initrd, files); err != nil {
		return 0, err
	}
	logf("booting %s", opt.CPU)
	// The command may wait for its user as long as it likes (Idle < 0); the guest must still
	// reach its /init within DefaultBoot, stretched by the host's load.
	status, err := BootCommand(ctx, BootConfig{
		Arch: a, QEMU: qemuBin, Kernel: kernel, Initrd: initrd, CPU: opt.CPU,
		Command: opt.Command, Idle: -1, Timeout: opt.Timeout, Stdin: opt.Stdin, WholeLines: opt.WholeLines,
		Progress: func(p Progress) { logf("%s", p) },
	}, opt.Stdout)
	if err != nil {
		return 0, err
	}
	logf("%s: exit status %d", opt.CPU, status)
	return status, nil
}

// Missing says what a guest boot needs that is not on this machine yet, without installing
// or fetching anything (RunGuest would, as root): QEMU, the cross C compiler and its libc, the
// cached kernel and busybox (cacheDir "" is DefaultCacheDir), the go toolchain. Nil when
// nothing is missing. `make test-ppc64le` / `make test-arm64` (or `make guest`) install and
// fetch all of it once.
func (a *Arch) Missing(ctx context.Context, cacheDir string) []string {
	var miss []string
	if _, err := goBinary(); err != nil {
		miss = append(miss, err.Error())
	}
	if _, err := exec.LookPath(a.QEMU); err != nil {
		miss = append(miss, a.QEMU+" (Debian package "+a.QEMUPkg+")")
	}
	if _, err := exec.LookPath(a.CC); err != nil {
		miss = append(miss, a.CC+" (Debian packages "+strings.Join(a.CCPkgs, " ")+")")
	} else if _, err := a.ccFile(ctx, "libc.a"); err != nil {
		miss = append(miss, "the cross libc.a of "+a.CC+" (Debian packages "+strings.Join(a.CCPkgs, " ")+")")
	}
	if cacheDir == "" {
		cacheDir, _ = a.DefaultCacheDir()
	}
	if a.newestKernel(cacheDir) == "" {
		miss = append(miss, "Debian's "+a.DebArch+" kernel (linux-image-*-"+a.Flavour+") in "+cacheDir)
	}
	if st, err := os.Stat(filepath.Join(cacheDir, "busybox")); err != nil || !st.Mode().IsRegular() {
		miss = append(miss, "Debian's "+a.DebArch+" busybox-static in "+cacheDir)
	}
	return miss
}

// addedFiles maps the host files to put on a guest's PATH to their initramfs entries,
// usr/local/bin/<base name> (first on the shell's PATH).
func addedFiles(paths []string) (map[string]string, error) {
	add := map[string]string{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("add %s: %w", p, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("add %s: not a regular file", p)
		}
		name := "usr/local/bin/" + filepath.Base(p)
		if prev, dup := add[name]; dup {
			return nil, fmt.Errorf("add %s: %s has the same name", p, prev)
		}
		add[name] = p
	}
	return add, nil
}

// executableModule is the crashtui module that holds this executable (build/guest), so that
// it runs from any directory; "" when there is none (go run: the working directory decides).
func executableModule() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	for d := filepath.Dir(exe); d != filepath.Dir(d); d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if strings.HasPrefix(string(b), "module github.com/crashtui/crashtui\n") {
				return d
			}
			return ""
		}
	}
	return ""
}

// GuestStatusFailed is GuestMain's exit status when the guest itself failed (bad usage, no
// QEMU, a guest that did not boot): like env(1) and docker run, a value a command rarely uses.
const GuestStatusFailed = 125

// GuestMain is cmd/guest: `make guest` as a command line. It returns the command's exit
// status, or GuestStatusFailed after saying why on stderr.
func GuestMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("guest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: guest [-arch ppc64le|arm64] [-cpu MODEL] [-timeout D] -run COMMAND [FILE...]")
		fmt.Fprintln(stderr, "Boots a guest with crashtui and FILEs on its PATH, runs COMMAND with sh -c, prints its output and exits with its status.")
		fs.PrintDefaults()
	}
	archName := fs.String("arch", "ppc64le", "guest architecture: ppc64le or arm64")
	cpu := fs.String("cpu", "", "QEMU -cpu model (ppc64le: power8, power9, power10; arm64: max); default power10 or max")
	run := fs.String("run", "", "the command, run with sh -c in the guest")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit for the whole boot")
	keep := fs.Bool("keep", false, "keep the build directory")
	kernel := fs.String("kernel", "", "kernel to boot instead of the cached Debian one")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return GuestStatusFailed
	}
	a := ArchByName(*archName)
	if a == nil {
		fmt.Fprintf(stderr, "guest: -arch %q: want ppc64le or arm64\n", *archName)
		return GuestStatusFailed
	}
	if strings.TrimSpace(*run) == "" {
		fmt.Fprintln(stderr, "guest: no command: -run COMMAND (make guest RUN=\"...\")")
		return GuestStatusFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	status, err := RunGuest(ctx, GuestOptions{
		Arch: a, CPU: *cpu, Command: *run, Add: fs.Args(), Kernel: *kernel, ModuleRoot: executableModule(),
		Timeout: *timeout, Stdout: stdout, Log: stderr, Keep: *keep,
	})
	if err != nil {
		fmt.Fprintln(stderr, "guest:", err)
		return GuestStatusFailed
	}
	return status
}
