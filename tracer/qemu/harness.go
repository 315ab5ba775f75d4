package qemu

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/demo/patience"
)

// VerdictPrefix starts the line the guest's /init prints before power-off
// (guest/init/main.go prints the same literal).
const VerdictPrefix = "CRASHTUI-VERDICT:"

// RegsPrefix starts a line on which the guest test prints one RegRecord as
// JSON (tracer/restart_ppc64le_test.go).
const RegsPrefix = "CRASHTUI-REGS:"

// DefaultCPUs are the QEMU CPU models booted by default: POWER8 has no scv
// (it must raise SIGILL), POWER9 and POWER10 advertise PPC_FEATURE2_SCV.
var DefaultCPUs = []string{"power8", "power9", "power10"}

// Arch is one guest architecture: which QEMU, which Debian kernel, which
// guest programs and how to boot them.
type Arch struct {
	GOARCH  string   // "ppc64le", "arm64": GOARCH of the guest programs
	DebArch string   // Debian architecture of the kernel package: "ppc64el", "arm64"
	Flavour string   // Debian kernel flavour: linux-image-<abi>-<Flavour>
	Image   string   // kernel file in the .deb's boot/: "vmlinux" (ELF) or "vmlinuz"
	QEMU    string   // emulator binary
	QEMUPkg string   // Debian package providing it
	CPUs    []string // QEMU -cpu models booted by default
	Run     string   // default guest -test.run pattern
	// Helpers are extra guest programs (package dirs under the module root);
	// each goes into the initramfs as bin/<base name>.
	Helpers []string
	// CC is the Debian cross C compiler that builds CHelpers on the host, CCPkgs the
	// packages that provide it and its libc (installed with apt-get when CC is missing).
	CC     string
	CCPkgs []string
	// CHelpers are C guest programs, built in order (a library before the program that
	// links it), each into the initramfs as bin/<Name>. The interpreter and libraries of
	// the dynamic ones are packed from the cross libc at the paths the programs ask for.
	CHelpers []CProgram
	// machine returns the QEMU arguments before -kernel for one CPU model,
	// console the kernel's console= device.
	machine func(cpu string, smp int) []string
	console string
	kpkgRE  *regexp.Regexp
}

// PPC64LE boots Debian's powerpc64le kernel on pseries (docs/ppc64le-qemu.md).
var PPC64LE = &Arch{
	GOARCH: "ppc64le", DebArch: "ppc64el", Flavour: "powerpc64le", Image: "vmlinux",
	QEMU: "qemu-system-ppc64", QEMUPkg: "qemu-system-ppc",
	// TestYama also measures the matrix by syscall injection (sc) on a real ppc64le kernel;
	// TestCrashGo groups crashes and follows a handled fault there.
	// TestGlibcSigpending checkpoints glibc's own scv (or sc) calls, TestGuestCrashSuite is
	// the C crash suite; TestSignalFrameC and TestSignalFrameGo[Preempt] (elfinfo) unwind through the
	// vDSO's signal trampoline.
	CPUs: DefaultCPUs, Run: "PPC64LE|Yama|CrashGo|InjectionDeath|StacksGo|GlibcSigpending|GuestCrashSuite|SignalFrame",
	Helpers:  []string{"./tracer/qemu/guest/scvprog", "./demo/access/peer", "./tracer/qemu/guest/crashprog"},
	CC:       "powerpc64le-linux-gnu-gcc",
	CCPkgs:   []string{"gcc-powerpc64le-linux-gnu", "libc6-dev-ppc64el-cross"},
	CHelpers: cHelpers,
	// x-vof=on skips SLOF, the cap-* settings only silence TCG warnings.
	machine: func(cpu string, smp int) []string {
		return []string{
			"-M", "pseries,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off,x-vof=on",
			"-cpu", cpu, "-m", "1G", "-smp", strconv.Itoa(smp),
		}
	},
	console: "hvc0",
	kpkgRE:  regexp.MustCompile(`linux-image-(\d+)\.(\d+)\.(\d+)-(\d+)-powerpc64le\b`),
}

// ARM64 boots Debian's arm64 kernel on QEMU's virt board. Debian 12's
// boot/vmlinuz-*-arm64 is a plain (uncompressed) arm64 Image, which -kernel
// boots directly without firmware; the PL011 UART (ttyAMA0) and devtmpfs are
// built in, virtio-console is a module, so the console is ttyAMA0.
var ARM64 = &Arch{
	GOARCH: "arm64", DebArch: "arm64", Flavour: "arm64", Image: "vmlinuz",
	QEMU: "qemu-system-aarch64", QEMUPkg: "qemu-system-arm",
	// TestYama runs here because Debian's kernel has Yama and this machine's may not;
	// TestCrashGo groups crashes and follows a handled fault on arm64; TestSignalFrameC and
	// TestSignalFrameGo[Preempt] (elfinfo) unwind through the vDSO's signal trampoline and Go's asyncPreempt.
	CPUs: []string{"max"}, Run: "ARM64|Yama|CrashGo|InjectionDeath|StacksGo|GlibcSigpending|GuestCrashSuite|SignalFrame",
	Helpers:  []string{"./tracer/qemu/guest/svcprog", "./demo/access/peer", "./tracer/qemu/guest/crashprog"},
	CC:       "aarch64-linux-gnu-gcc",
	CCPkgs:   []string{"gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"},
	CHelpers: cHelpers,
	machine: func(cpu string, smp int) []string {
		model := cpu
		if cpu == "max" {
			// QEMU's architected pointer-authentication algorithm (QARMA) is
			// slow under TCG; the implementation-defined one is not.
			model = "max,pauth-impdef=on"
		}
		return []string{"-M", "virt", "-cpu", model, "-m", "1G", "-smp", strconv.Itoa(smp)}
	},
	console: "ttyAMA0",
	kpkgRE:  regexp.MustCompile(`linux-image-(\d+)\.(\d+)\.(\d+)-(\d+)-arm64\b`),
}

// CProgram is one C guest program, cross-compiled on the host with Arch.CC.
type CProgram struct {
	Name    string   // output file, and bin/<Name> in the initramfs
	Sources []string // relative to the module root
	Flags   []string // gcc flags before the sources (-g is always given)
	Libs    []string // gcc arguments after the sources; run in the build dir, so -L. finds earlier outputs
}

// cHelpers are the C programs both guests carry.
//
// sigpending (TestGlibcSigpending) is static, as the issue asks: glibc's own wrappers, so on
// ppc64le the syscall instruction is glibc's choice (scv where AT_HWCAP2 offers it).
//
// The crash suite (TestGuestCrashSuite) is demo/crashes' crash.c, dynamically linked against
// libcrashfuncs.so and the cross libc, which the harness packs at the paths the program asks
// for (its PT_INTERP, and /lib for its DT_NEEDED): a crash inside a shared library is keyed by
// library + offset only when the library is a mapping of its own, and an abort's message is read
// from the __abort_msg of a mapped libc.so.6. -O0 as on the host (demo/crashes.Build), so every
// crash is at a predictable instruction of a named function; $ORIGIN finds the suite's
// libraries next to the program. sighandler (elfinfo's TestSignalFrameC) is elfinfo's
// testdata/sighandler.c, -O2 without frame pointers as on the host, dynamic: its stack runs
// from libc's read through its handler and the vDSO's signal trampoline.
var cHelpers = []CProgram{
	{Name: "sigpending", Sources: []string{"demo/restart/sigpending.c"}, Flags: []string{"-static", "-O1", "-pthread"}},
	{Name: "libcrashfuncs.so", Sources: []string{"demo/crashes/src/crashfuncs.c"}, Flags: []string{"-O0", "-shared", "-fPIC"}},
	{Name: "libcrashfixed.so", Sources: []string{"demo/crashes/src/crashfixed.c"}, Flags: []string{"-O0", "-shared", "-fPIC", "-Wl,-Ttext-segment=0x30000000"}},
	{Name: "crash", Sources: []string{"demo/crashes/src/crash.c"}, Flags: []string{"-O0", "-fPIE", "-pie"},
		Libs: []string{"-L.", "-lcrashfuncs", "-lcrashfixed", "-Wl,-rpath,$ORIGIN"}},
	{Name: "sighandler", Sources: []string{"elfinfo/testdata/sighandler.c"}, Flags: []string{"-O2", "-fomit-frame-pointer"}},
}

// ArchByName returns PPC64LE or ARM64 for a GOARCH name, nil otherwise.
func ArchByName(name string) *Arch {
	switch name {
	case "ppc64le":
		return PPC64LE
	case "arm64":
		return ARM64
	}
	return nil
}

// Options configures Run. Zero values pick the defaults noted per field.
type Options struct {
	Arch       *Arch         // default PPC64LE
	ModuleRoot string        // default: directory of `go env GOMOD` in the working directory
	CacheDir   string        // default: ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/<GOARCH>
	Kernel     string        // a kernel image to boot instead of the cached Debian one
	CPUs       []string      // default Arch.CPUs
	Run        string        // guest -test.run pattern, default Arch.Run
	Boot, Idle time.Duration // per boot, as in BootConfig: its progress decides, not a clock
	Timeout    time.Duration // per boot, the backstop (BootConfig), default DefaultTimeout
	Parallel   int           // guests booted at once, default 2
	// Log gets the guest output and what the harness does; the steps that take a while
	// (installing, downloading, building, each boot and each guest test) are lines that
	// start with "progress: ", which make test's stage runner shows (cmd/testreport -stage).
	// Default os.Stderr.
	Log  io.Writer
	Keep bool // keep the build directory (its path is logged)
	// Commands are booted in shell mode on the last CPU, as `make guest` runs one, from the
	// same initramfs, after the test boots (Result.Commands); Add are files put on their
	// PATH, as `make guest ADD=...` does.
	Commands []string
	Add      []string
}

// SkipError says the stage cannot run here at all (no QEMU and no way to
// install it, no kernel and no way to fetch it). Anything else is a failure.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "SKIP: " + e.Reason }

// RegRecord is what the guest test saw at one PTRACE_EVENT_STOP of a thread
// blocked in a syscall: raw words of unix.PtraceRegs (PTRACE_GETREGS on
// ppc64le: gpr[32], nip, msr, orig_gpr3, ctr, link, xer, ccr, softe, trap,
// dar, dsisr, result), as hex strings so that no JSON tool rounds them.
//
// On arm64 (Arch "arm64") Words are user_pt_regs (x0-x30, sp, pc, pstate)
// from PTRACE_GETREGSET NT_PRSTATUS, InsnWord/InsnBytes are the word at pc
// (the kernel rewound to the svc before the stop) and SyscallInfo is the raw
// struct ptrace_syscall_info PTRACE_GET_SYSCALL_INFO returned at that stop.
type RegRecord struct {
	Arch   string `json:"arch,omitempty"` // "" is ppc64le (the first fixtures)
	CPU    string `json:"cpu"`
	Kernel string `json:"kernel"`
	HWCap2 string `json:"hwcap2"`
	Insn   string `json:"insn"` // "sc", "scv" or "svc"
	Call   string `json:"call"` // "read" or "nanosleep"
	// Stop is the kind of ptrace stop: "interrupt" (PTRACE_INTERRUPT, also
	// when empty), "signal" (signal-delivery-stop of SIGUSR1, before
	// check_syscall_restart) or "handler" (the SIGTRAP stop after the kernel
	// set up the SIGUSR1 handler frame: check_syscall_restart already ran).
	Stop       string   `json:"stop,omitempty"`
	WaitStatus string   `json:"wait_status"`
	InsnWord   string   `json:"insn_word"`  // the 32-bit word at nip-4
	InsnBytes  string   `json:"insn_bytes"` // the same 4 bytes in memory order, hex
	Arg0       string   `json:"arg0"`       // what the helper passed as the first argument
	Words      []string `json:"words"`
	Layout     string   `json:"layout"`
	// SyscallInfo is the hex of the bytes PTRACE_GET_SYSCALL_INFO wrote
	// (arm64 records only), SyscallInfoLen the size the kernel returned.
	SyscallInfo    string `json:"syscall_info,omitempty"`
	SyscallInfoLen int    `json:"syscall_info_len,omitempty"`
	// Errno is the restart code learnt elsewhere for an arm64 record whose
	// registers no longer hold it (syscall-exit-stop rval), 0 if none.
	Errno int `json:"errno,omitempty"`
}

// Uint64s parses Words.
func (r RegRecord) Uint64s() ([]uint64, error) {
	out := make([]uint64, len(r.Words))
	for i, w := range r.Words {
		v, err := strconv.ParseUint(w, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("regs word %d %q: %w", i, w, err)
		}
		out[i] = v
	}
	return out, nil
}

// Bytes decodes InsnBytes.
func (r RegRecord) Bytes() ([]byte, error) {
	var b []byte
	for i := 0; i+2 <= len(r.InsnBytes); i += 2 {
		v, err := strconv.ParseUint(r.InsnBytes[i:i+2], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("insn bytes %q: %w", r.InsnBytes, err)
		}
		b = append(b, byte(v))
	}
	return b, nil
}

// FileName is the fixture name of the record: <cpu>_<insn>_<call>.json, or
// <cpu>_<insn>_<call>_<stop>.json for stops other than PTRACE_INTERRUPT;
// records of another arch than ppc64le start with "<arch>_".
func (r RegRecord) FileName() string {
	name := r.CPU + "_" + r.Insn + "_" + r.Call
	if r.Arch != "" && r.Arch != "ppc64le" {
		name = r.Arch + "_" + name
	}
	if r.Stop != "" && r.Stop != "interrupt" {
		name += "_" + r.Stop
	}
	return name + ".json"
}

// CPUResult is the outcome of one guest boot.
type CPUResult struct {
	CPU      string
	Pass     bool
	Verdict  string // the verdict line's text after the prefix, or why there is none
	Output   string // everything the guest printed on its console
	Regs     []RegRecord
	Duration time.Duration
}

// CommandResult is the outcome of one shell-mode boot of Options.Commands.
type CommandResult struct {
	Command  string
	CPU      string
	Status   int    // the command's exit status, when Err is nil
	Output   string // what it printed (stdout and stderr)
	Err      error  // the guest gave no exit status
	Duration time.Duration
}

// Result is the outcome of Run.
type Result struct {
	Kernel   string
	CPUs     []CPUResult
	Commands []CommandResult
}

// Passed is true when every CPU's guest printed a PASS verdict.
func (r *Result) Passed() bool {
	if r == nil || len(r.CPUs) == 0 {
		return false
	}
	for _, c := range r.CPUs {
		if !c.Pass {
			return false
		}
	}
	return true
}

// Run does the whole stage: QEMU, kernel, guest build, initramfs, one boot
// per CPU. It returns a *SkipError only when the stage cannot run here.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if opt.Log == nil {
		opt.Log = os.Stderr
	}
	a := opt.Arch
	if a == nil {
		a = PPC64LE
	}
	if len(opt.CPUs) == 0 {
		opt.CPUs = a.CPUs
	}
	if opt.Run == "" {
		opt.Run = a.Run
	}
	if opt.Parallel <= 0 {
		opt.Parallel = 2
	}
	start := time.Now()
	var logMu sync.Mutex // guests booted in parallel report at once
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(opt.Log, "%s-test: [%5.1fs] "+format+"\n", append([]any{a.GOARCH, time.Since(start).Seconds()}, args...)...)
	}
	progressf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(opt.Log, ProgressPrefix+"%s: "+format+"\n", append([]any{a.GOARCH}, args...)...)
	}

	gobin, err := goBinary()
	if err != nil {
		return nil, &SkipError{Reason: err.Error()}
	}
	if opt.ModuleRoot == "" {
		if opt.ModuleRoot, err = moduleRoot(ctx, gobin); err != nil {
			return nil, err
		}
	}
	if opt.CacheDir == "" {
		if opt.CacheDir, err = a.DefaultCacheDir(); err != nil {
			return nil, &SkipError{Reason: err.Error()}
		}
	}

	work, err := os.MkdirTemp("", "crashtui-"+a.GOARCH+"-")
	if err != nil {
		return nil, fmt.Errorf("create build dir: %w", err)
	}
	if opt.Keep {
		logf("build dir %s kept", work)
	} else {
		defer os.RemoveAll(work)
	}

	add, err := addedFiles(opt.Add)
	if err != nil {
		return nil, err
	}
	if err := a.EnsureCC(ctx, opt.Log); err != nil {
		return nil, err
	}
	// The guest build needs no QEMU or kernel: run it while those are fetched.
	type built struct {
		files map[string]string
		err   error
	}
	buildDone := make(chan built, 1)
	progressf("building the guest programs (crashtui, the tracer test binaries, init, the C helpers)")
	go func() {
		t0 := time.Now()
		files, err := a.buildGuest(ctx, gobin, opt.ModuleRoot, work, true)
		if err == nil {
			progressf("guest programs built (%s)", fmtDur(time.Since(t0)))
		}
		buildDone <- built{files, err}
	}()
	wait := func() built { return <-buildDone }

	qemuBin, err := a.EnsureQEMU(ctx, opt.Log)
	if err != nil {
		wait()
		return nil, err
	}
	logf("qemu: %s", qemuBin)
	kernel := opt.Kernel
	if kernel == "" {
		if kernel, err = a.FetchKernel(ctx, opt.CacheDir, opt.Log); err != nil {
			wait()
			return nil, err
		}
	}
	logf("kernel: %s", kernel)
	busybox, err := a.FetchBusybox(ctx, opt.CacheDir, opt.Log)
	if err != nil {
		wait()
		return nil, err
	}
	b := wait()
	if b.err != nil {
		return nil, b.err
	}
	files := b.files
	files["bin/busybox"] = busybox
	for k, v := range add {
		files[k] = v
	}

	initrd := filepath.Join(work, "initrd.cpio")
	if err := WriteInitramfs(initrd, files); err != nil {
		return nil, err
	}

	res := &Result{Kernel: kernel, CPUs: make([]CPUResult, len(opt.CPUs)), Commands: make([]CommandResult, len(opt.Commands))}
	// One queue for every boot, the long test boots first, so that the short command boots
	// fill in behind them instead of delaying one.
	var jobs []func()
	for i, cpu := range opt.CPUs {
		jobs = append(jobs, func() {
			t0 := time.Now()
			progressf("%s: booting", cpu)
			out, bootErr := Boot(ctx, BootConfig{
				Arch: a, QEMU: qemuBin, Kernel: kernel, Initrd: initrd, CPU: cpu,
				Run: opt.Run, Boot: opt.Boot, Idle: opt.Idle, Timeout: opt.Timeout,
				Progress: func(p Progress) { progressf("%s", p) },
			}, &prefixWriter{w: opt.Log, prefix: "[" + cpu + "] ", start: start, out: &logMu})
			r := CPUResult{CPU: cpu, Output: out, Duration: time.Since(t0)}
			v, ok := ParseVerdict(out)
			r.Verdict = v
			switch {
			case !ok:
				r.Verdict = "no verdict line"
				if bootErr != nil {
					r.Verdict += ": " + bootErr.Error()
				}
			case bootErr != nil:
				r.Verdict = v + " (qemu: " + bootErr.Error() + ")"
			default:
				r.Pass = strings.HasPrefix(v, "PASS")
			}
			r.Regs, _ = ParseRegRecords(out)
			res.CPUs[i] = r
			logf("%s: %s (%.1fs)", cpu, r.Verdict, r.Duration.Seconds())
			progressf("%s: %s (%s)", cpu, clip(r.Verdict, 200), fmtDur(r.Duration))
		})
	}
	for i, command := range opt.Commands {
		cpu := opt.CPUs[len(opt.CPUs)-1]
		jobs = append(jobs, func() {
			t0 := time.Now()
			var out bytes.Buffer
			pw := &prefixWriter{w: opt.Log, prefix: "[" + cpu + " sh] ", start: start, out: &logMu}
			status, err := BootCommand(ctx, BootConfig{
				Arch: a, QEMU: qemuBin, Kernel: kernel, Initrd: initrd, CPU: cpu,
				Command: command, Boot: opt.Boot, Idle: opt.Idle, Timeout: opt.Timeout,
			}, io.MultiWriter(&out, pw))
			pw.Flush()
			res.Commands[i] = CommandResult{Command: command, CPU: cpu, Status: status, Output: out.String(), Err: err, Duration: time.Since(t0)}
			logf("%s sh -c %q: status %d, err %v (%.1fs)", cpu, command, status, err, time.Since(t0).Seconds())
			if err != nil {
				progressf("%s: guest sh -c %q: %s (%s)", cpu, command, clip(oneLine(err.Error()), 200), fmtDur(time.Since(t0)))
			} else {
				progressf("%s: guest sh -c %q: exit status %d (%s)", cpu, command, status, fmtDur(time.Since(t0)))
			}
		})
	}
	queue := make(chan func(), len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var wg sync.WaitGroup
	for range min(opt.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				j()
			}
		}()
	}
	wg.Wait()
	logf("done")
	return res, nil
}

// DefaultCacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/ppc64le.
func DefaultCacheDir() (string, error) { return PPC64LE.DefaultCacheDir() }

// DefaultCacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/crashtui/<GOARCH>.
func (a *Arch) DefaultCacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			// No $HOME (some CI environments): a per-machine temp cache still
			// saves refetching within one run and is better than no stage.
			home = filepath.Join(os.TempDir(), "crashtui-home")
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "crashtui", a.GOARCH), nil
}

func goBinary() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	for _, p := range []string{filepath.Join(os.Getenv("GOROOT"), "bin", "go"), "/usr/local/go/bin/go"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("no go toolchain found (PATH, $GOROOT/bin, /usr/local/go/bin)")
}

func moduleRoot(ctx context.Context, gobin string) (string, error) {
	out, err := exec.CommandContext(ctx, gobin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the crashtui module")
	}
	return filepath.Dir(mod), nil
}

// EnsureQEMU returns the path of qemu-system-ppc64 (PPC64LE.EnsureQEMU).
func EnsureQEMU(ctx context.Context, log io.Writer) (string, error) {
	return PPC64LE.EnsureQEMU(ctx, log)
}

// EnsureQEMU returns the path of a.QEMU, installing Debian's a.QEMUPkg when
// it is missing and this process is root (apt-get update only if the plain
// install fails, since the lists are usually fresh).
func (a *Arch) EnsureQEMU(ctx context.Context, log io.Writer) (string, error) {
	present := func() bool { _, err := exec.LookPath(a.QEMU); return err == nil }
	if err := a.ensurePackages(ctx, log, a.QEMU, present, a.QEMUPkg); err != nil {
		return "", err
	}
	p, err := exec.LookPath(a.QEMU)
	if err != nil {
		return "", fmt.Errorf("%s installed but %s not found: %w", a.QEMUPkg, a.QEMU, err)
	}
	return p, nil
}

// EnsureCC makes sure a.CC and its cross libc (static and shared) are installed, with
// apt-get as for QEMU (`make test-ppc64le` and `make test-arm64` install them first).
func (a *Arch) EnsureCC(ctx context.Context, log io.Writer) error {
	present := func() bool {
		if _, err := exec.LookPath(a.CC); err != nil {
			return false
		}
		_, err := a.ccFile(ctx, "libc.a")
		return err == nil
	}
	if err := a.ensurePackages(ctx, log, a.CC+" and its libc", present, a.CCPkgs...); err != nil {
		return err
	}
	if !present() {
		return fmt.Errorf("%s installed but %s or its libc.a not found", strings.Join(a.CCPkgs, " "), a.CC)
	}
	return nil
}

// ensurePackages apt-get installs pkgs when present says what needs them is missing and this
// process is root; a *SkipError when it cannot.
func (a *Arch) ensurePackages(ctx context.Context, log io.Writer, what string, present func() bool, pkgs ...string) error {
	if present() {
		return nil
	}
	list := strings.Join(pkgs, " ")
	if os.Geteuid() != 0 {
		return &SkipError{Reason: what + " not installed and not root to apt-get install " + list}
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return &SkipError{Reason: what + " not installed and no apt-get to install " + list}
	}
	install := func() error {
		return runLogged(ctx, log, "", "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)...)
	}
	fmt.Fprintf(log, ProgressPrefix+"%s: installing %s (apt-get)\n", a.GOARCH, list)
	t0 := time.Now()
	if err := install(); err != nil {
		if uerr := runLogged(ctx, log, "", "apt-get", "update"); uerr != nil {
			fmt.Fprintf(log, "%s-test: apt-get update: %v\n", a.GOARCH, uerr)
		}
		if err := install(); err != nil {
			return &SkipError{Reason: "apt-get install " + list + " failed: " + err.Error()}
		}
	}
	fmt.Fprintf(log, ProgressPrefix+"%s: installed %s (%s)\n", a.GOARCH, list, fmtDur(time.Since(t0)))
	return nil
}

// ccFile is the cross libc's file name (libc.a, libc.so.6, ld64.so.2) as a.CC finds it.
func (a *Arch) ccFile(ctx context.Context, name string) (string, error) {
	out, err := exec.CommandContext(ctx, a.CC, "-print-file-name="+name).Output()
	if err != nil {
		return "", fmt.Errorf("%s -print-file-name=%s: %w", a.CC, name, err)
	}
	p := strings.TrimSpace(string(out))
	if !filepath.IsAbs(p) {
		// gcc prints the bare name when it finds nothing.
		return "", fmt.Errorf("%s finds no %s (is %s installed?)", a.CC, name, strings.Join(a.CCPkgs, " "))
	}
	p = filepath.Clean(p)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

func runLogged(ctx context.Context, log io.Writer, dir string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	if err != nil {
		// Only a failure's output is worth showing; the tail says why.
		tail := buf.Bytes()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		log.Write(tail)
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// FetchKernel returns a cached vmlinux of Debian's linux-image-*-powerpc64le
// (PPC64LE.FetchKernel).
func FetchKernel(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	return PPC64LE.FetchKernel(ctx, cacheDir, log)
}

// FetchKernel returns a cached boot/<a.Image>-* of Debian's
// linux-image-*-<a.Flavour>, fetching the .deb with a private apt state (host
// package state untouched, no root needed) and extracting it with dpkg -x
// when the cache is empty.
func (a *Arch) FetchKernel(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if k := a.newestKernel(cacheDir); k != "" {
		return k, nil
	}
	o, err := a.aptOptions(cacheDir)
	if err != nil {
		return "", &SkipError{Reason: "no cached " + a.GOARCH + " kernel in " + cacheDir + " and " + err.Error()}
	}
	fmt.Fprintf(log, ProgressPrefix+"%s: fetching Debian's %s package list (for its kernel)\n", a.GOARCH, a.DebArch)
	t0 := time.Now()
	// A security-index mirror sync error can make update exit 100 while the
	// main index is fine: judge by whether the package is found below.
	_ = runLogged(ctx, io.Discard, "", "apt-get", append(o, "update")...)
	fmt.Fprintf(log, ProgressPrefix+"%s: fetched Debian's %s package list (%s)\n", a.GOARCH, a.DebArch, fmtDur(time.Since(t0)))
	pkg, err := a.pickKernelPackage(ctx, o)
	if err != nil {
		return "", &SkipError{Reason: "no " + a.GOARCH + " kernel package: " + err.Error()}
	}
	deb, err := a.downloadDeb(ctx, log, cacheDir, o, pkg)
	if err != nil {
		return "", err
	}
	return extractFromDeb(ctx, log, deb, cacheDir, filepath.Join("boot", a.Image+"-*"))
}

// FetchBusybox returns a cached static busybox for a.DebArch (Debian's busybox-static,
// fetched and extracted as the kernel is), the guest's shell for `make guest`.
func (a *Arch) FetchBusybox(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	dst := filepath.Join(cacheDir, "busybox")
	if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
		return dst, nil
	}
	o, err := a.aptOptions(cacheDir)
	if err != nil {
		return "", &SkipError{Reason: "no cached busybox in " + cacheDir + " and " + err.Error()}
	}
	const pkg = "busybox-static"
	deb, err := a.downloadDeb(ctx, log, cacheDir, o, pkg)
	if err != nil {
		// The private lists may be missing or stale (the kernel was cached without them).
		fmt.Fprintf(log, ProgressPrefix+"%s: fetching Debian's %s package list (for busybox-static)\n", a.GOARCH, a.DebArch)
		t0 := time.Now()
		_ = runLogged(ctx, io.Discard, "", "apt-get", append(o, "update")...)
		fmt.Fprintf(log, ProgressPrefix+"%s: fetched Debian's %s package list (%s)\n", a.GOARCH, a.DebArch, fmtDur(time.Since(t0)))
		if deb, err = a.downloadDeb(ctx, log, cacheDir, o, pkg); err != nil {
			return "", err
		}
	}
	got, err := extractFromDeb(ctx, log, deb, cacheDir, filepath.Join("bin", "busybox"))
	if err != nil {
		return "", err
	}
	return got, nil
}

// lockCache takes the cache directory's lock: two runs sharing the cache must not both
// fetch and extract.
func lockCache(cacheDir string) (func(), error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("cache %s: %w", cacheDir, err)
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	return func() { lock.Close() }, nil
}

// aptOptions sets up the private apt state under cacheDir/apt (host package state untouched,
// no root needed) and returns the options that make apt-get and apt-cache use it for
// a.DebArch.
func (a *Arch) aptOptions(cacheDir string) ([]string, error) {
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("no %s to fetch Debian packages", tool)
		}
	}
	w := filepath.Join(cacheDir, "apt")
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(w, d), 0o755); err != nil {
			return nil, fmt.Errorf("apt state: %w", err)
		}
	}
	status := filepath.Join(w, "status")
	if f, err := os.OpenFile(status, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
	}
	user := "root"
	if u := os.Getenv("USER"); u != "" && os.Geteuid() != 0 {
		user = u
	}
	return []string{
		"-oAPT::Sandbox::User=" + user,
		"-oAPT::Architecture=" + a.DebArch, "-oAPT::Architectures=" + a.DebArch,
		"-oDir::State::Lists=" + filepath.Join(w, "lists"),
		"-oDir::Cache=" + filepath.Join(w, "cache"),
		"-oDir::State::status=" + status,
	}, nil
}

// downloadDeb returns cacheDir/<pkg>_*.deb, downloading it with the private apt state o
// when it is not there yet.
func (a *Arch) downloadDeb(ctx context.Context, log io.Writer, cacheDir string, o []string, pkg string) (string, error) {
	if debs, _ := filepath.Glob(filepath.Join(cacheDir, pkg+"_*.deb")); len(debs) > 0 {
		return debs[0], nil
	}
	fmt.Fprintf(log, ProgressPrefix+"%s: downloading %s into %s\n", a.GOARCH, pkg, cacheDir)
	t0 := time.Now()
	if err := runLogged(ctx, log, cacheDir, "apt-get", append(o, "download", pkg)...); err != nil {
		return "", &SkipError{Reason: "download " + pkg + ": " + err.Error()}
	}
	debs, _ := filepath.Glob(filepath.Join(cacheDir, pkg+"_*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("download %s: no .deb in %s", pkg, cacheDir)
	}
	fmt.Fprintf(log, ProgressPrefix+"%s: downloaded %s (%s)\n", a.GOARCH, filepath.Base(debs[0]), fmtDur(time.Since(t0)))
	return debs[0], nil
}

// extractFromDeb extracts deb with dpkg -x and moves its first file matching member (a glob
// relative to the package root) into cacheDir, under its base name.
func extractFromDeb(ctx context.Context, log io.Writer, deb, cacheDir, member string) (string, error) {
	x, err := os.MkdirTemp(cacheDir, "extract-")
	if err != nil {
		return "", fmt.Errorf("extract dir: %w", err)
	}
	defer os.RemoveAll(x)
	if err := runLogged(ctx, log, "", "dpkg", "-x", deb, x); err != nil {
		return "", fmt.Errorf("extract %s: %w", deb, err)
	}
	found, _ := filepath.Glob(filepath.Join(x, member))
	if len(found) == 0 {
		return "", fmt.Errorf("extract %s: no %s", deb, member)
	}
	dst := filepath.Join(cacheDir, filepath.Base(found[0]))
	if err := os.Rename(found[0], dst); err != nil {
		return "", fmt.Errorf("cache %s: %w", dst, err)
	}
	return dst, nil
}

func (a *Arch) newestKernel(dir string) string {
	found, _ := filepath.Glob(filepath.Join(dir, a.Image+"-*"))
	sort.Slice(found, func(i, j int) bool { return a.abiNumber(found[i]) < a.abiNumber(found[j]) })
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

// abiNumber orders kernel names by version and ABI number (6.1.0-50 > 6.1.0-47).
func (a *Arch) abiNumber(s string) int64 {
	m := a.kpkgRE.FindStringSubmatch("linux-image-" + strings.TrimPrefix(filepath.Base(s), a.Image+"-"))
	if m == nil {
		return -1
	}
	var n int64
	for _, p := range m[1:] {
		v, _ := strconv.ParseInt(p, 10, 64)
		n = n*1000 + v
	}
	return n
}

// pickKernelPackage takes what the metapackage linux-image-<flavour>
// depends on (the current ABI), else the highest one apt-cache search lists.
func (a *Arch) pickKernelPackage(ctx context.Context, o []string) (string, error) {
	if out, err := exec.CommandContext(ctx, "apt-cache", append(o, "depends", "linux-image-"+a.Flavour)...).Output(); err == nil {
		if m := a.kpkgRE.FindString(string(out)); m != "" {
			return m, nil
		}
	}
	out, err := exec.CommandContext(ctx, "apt-cache", append(o, "search", "--names-only", `^linux-image-[0-9.]+-[0-9]+-`+a.Flavour+`$`)...).Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache search: %w", err)
	}
	best, bestN := "", int64(-1)
	for _, m := range a.kpkgRE.FindAllString(string(out), -1) {
		if n := a.abiNumber(m); n > bestN {
			best, bestN = m, n
		}
	}
	if best == "" {
		return "", fmt.Errorf("apt-cache lists no linux-image-*-%s for %s", a.Flavour, a.DebArch)
	}
	return best, nil
}

// BuildGuest cross-builds the ppc64le guest programs (PPC64LE.BuildGuest).
func BuildGuest(ctx context.Context, gobin, moduleRoot, dir string) error {
	return PPC64LE.BuildGuest(ctx, gobin, moduleRoot, dir)
}

// BuildGuest cross-builds, into dir, the programs the stage's guest runs:
// init, a.Helpers, the test binaries of the engine and its features (guestTestPackages), crashtui
// and a.CHelpers.
func (a *Arch) BuildGuest(ctx context.Context, gobin, moduleRoot, dir string) error {
	_, err := a.buildGuest(ctx, gobin, moduleRoot, dir, true)
	return err
}

// buildGuest builds into dir init, crashtui and a.CHelpers, and with tests also a.Helpers and
// the test binaries, and returns the initramfs entries (archive name -> host path) for all of them
// and for the C runtime the dynamic C programs need.
func (a *Arch) buildGuest(ctx context.Context, gobin, moduleRoot, dir string, tests bool) (map[string]string, error) {
	env := append(os.Environ(), "GOOS=linux", "GOARCH="+a.GOARCH, "CGO_ENABLED=0")
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, gobin, args...)
		cmd.Dir = moduleRoot
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	out := dir + string(filepath.Separator)
	files := map[string]string{
		"init":         filepath.Join(dir, "init"),
		"bin/crashtui": filepath.Join(dir, "crashtui"),
	}
	jobs := []func() error{
		func() error { return run("build", "-ldflags=-s -w", "-o", out, "./tracer/qemu/guest/init") },
		func() error {
			return run("build", "-ldflags=-s -w -X main.version="+gitVersion(ctx, moduleRoot), "-o", out, "./cmd/crashtui")
		},
	}
	var cfiles map[string]string
	jobs = append(jobs, func() (err error) {
		cfiles, err = a.buildC(ctx, moduleRoot, dir)
		return err
	})
	if tests {
		for _, pkg := range guestTestPackages {
			name := filepath.Base(pkg) + ".test"
			files["bin/"+name] = filepath.Join(dir, name)
		}
		for _, h := range a.Helpers {
			files["bin/"+filepath.Base(h)] = filepath.Join(dir, filepath.Base(h))
		}
		jobs = append(jobs,
			// The helpers keep their symbols and DWARF: TestStacksGo unwinds and names their
			// frames (Go keeps no frame pointers on ppc64le; .debug_frame is the CFI).
			func() error { return run(append([]string{"build", "-o", out}, a.Helpers...)...) },
			func() error {
				// go test -c of several packages writes one PKG.test each into the directory.
				return run(append([]string{"test", "-c", "-ldflags=-s -w", "-o", out}, guestTestPackages...)...)
			})
	}
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		go func() { errs <- j() }()
	}
	var all []error
	for range jobs {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return nil, err
	}
	for k, v := range cfiles {
		files[k] = v
	}
	return files, nil
}

// gitVersion is the Makefile's VERSION: git describe --always --dirty, or "dev".
func gitVersion(ctx context.Context, dir string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = dir
	if b, err := cmd.Output(); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b))
	}
	return "dev"
}

// buildC compiles a.CHelpers into dir, in order, and returns their initramfs entries
// (bin/<Name>) with the C runtime the dynamic ones need (cRuntime).
func (a *Arch) buildC(ctx context.Context, moduleRoot, dir string) (map[string]string, error) {
	files := map[string]string{}
	built := map[string]bool{}
	for _, p := range a.CHelpers {
		// Paths in __FILE__ (an assertion's message) and DWARF relative to the module root.
		args := append([]string{"-g", "-ffile-prefix-map=" + moduleRoot + "/="}, p.Flags...)
		args = append(args, "-o", filepath.Join(dir, p.Name))
		for _, src := range p.Sources {
			args = append(args, filepath.Join(moduleRoot, src))
		}
		args = append(args, p.Libs...)
		cmd := exec.CommandContext(ctx, a.CC, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s %s: %w\n%s", a.CC, strings.Join(args, " "), err, out)
		}
		files["bin/"+p.Name] = filepath.Join(dir, p.Name)
		built[p.Name] = true
	}
	rt, err := a.cRuntime(ctx, files, built)
	if err != nil {
		return nil, err
	}
	for k, v := range rt {
		files[k] = v
	}
	return files, nil
}

// cRuntime returns the initramfs entries of what the dynamic programs among progs need from
// the cross libc: the interpreter at its PT_INTERP path (/lib64/ld64.so.2,
// /lib/ld-linux-aarch64.so.1) and every DT_NEEDED library that is not one of the built ones at
// lib/<name> (glibc's ld.so searches /lib), with what those libraries need in turn.
func (a *Arch) cRuntime(ctx context.Context, progs map[string]string, built map[string]bool) (map[string]string, error) {
	out := map[string]string{}
	var queue []string
	for _, p := range progs {
		queue = append(queue, p)
	}
	sort.Strings(queue)
	seen := map[string]bool{}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		f, err := elf.Open(path)
		if err != nil {
			return nil, fmt.Errorf("the C runtime of %s: %w", path, err)
		}
		var interp string
		for _, ph := range f.Progs {
			if ph.Type == elf.PT_INTERP {
				b, err := io.ReadAll(ph.Open())
				if err != nil {
					f.Close()
					return nil, fmt.Errorf("the C runtime of %s: PT_INTERP: %w", path, err)
				}
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
		libs, err := f.ImportedLibraries()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("the C runtime of %s: DT_NEEDED: %w", path, err)
		}
		if interp != "" && !seen[filepath.Base(interp)] {
			seen[filepath.Base(interp)] = true
			host, err := a.ccFile(ctx, filepath.Base(interp))
			if err != nil {
				return nil, err
			}
			out[strings.TrimPrefix(interp, "/")] = host
		}
		for _, l := range libs {
			// The interpreter is found by its soname once loaded (libc.so.6 needs ld64.so.2).
			if built[l] || seen[l] {
				continue
			}
			seen[l] = true
			host, err := a.ccFile(ctx, l)
			if err != nil {
				return nil, err
			}
			out["lib/"+l] = host
			queue = append(queue, host)
		}
	}
	return out, nil
}

// WriteInitramfs writes an uncompressed newc initramfs to path: the
// directories the guest needs, /dev/console (5:1, opened by the kernel before
// /init runs) and the given files (archive name -> host path), all mode 0755,
// with a directory entry for every parent of a file (the kernel's unpacker
// creates none).
func WriteInitramfs(path string, files map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("initramfs %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	c := NewCPIOWriter(bw)
	dirs := map[string]bool{"bin": true, "dev": true, "proc": true, "sys": true, "tmp": true}
	for n := range files {
		for d := filepath.Dir(n); d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	dirList := make([]string, 0, len(dirs))
	for d := range dirs {
		dirList = append(dirList, d)
	}
	// A parent sorts before its children: it is a prefix of theirs.
	sort.Strings(dirList)
	for _, d := range dirList {
		if err := c.Dir(d, 0o755); err != nil {
			f.Close()
			return err
		}
	}
	if err := c.CharDev("dev/console", 0o600, 5, 1); err != nil {
		f.Close()
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := os.ReadFile(files[n])
		if err != nil {
			f.Close()
			return fmt.Errorf("initramfs %s: %w", n, err)
		}
		if err := c.File(n, 0o755, data); err != nil {
			f.Close()
			return err
		}
	}
	if err := c.Close(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("initramfs %s: %w", path, err)
	}
	return f.Close()
}

// BootConfig is one guest boot.
type BootConfig struct {
	Arch                 *Arch // default PPC64LE
	QEMU, Kernel, Initrd string
	CPU                  string // QEMU -cpu model, passed to the guest as crashtui.cpu=
	Run                  string // guest -test.run pattern
	// A guest is stopped when it stops making progress, not after a fixed time: Boot is how
	// long it may take to reach its /init (init's first line), Idle how long it may then
	// print nothing, both in quiet-machine time (demo/patience: they stretch while the host
	// is loaded). 0 is DefaultBoot, DefaultIdle; Idle < 0 is no limit (a shell-mode command
	// that waits for its user). Timeout is the backstop for a guest that never stops
	// printing, default DefaultTimeout; the guest's own watchdog fires 10s before it.
	Boot, Idle, Timeout time.Duration
	// Patience is the host's load factor the guest's tests start with (CRASHTUI_PATIENCE in
	// the guest, where the host's load does not show); 0: Boot reads it (demo/patience).
	Patience float64
	// Progress, when set, hears of the guest's progress: booted, each test that ended.
	Progress func(Progress)
	SMP      int // default 1
	// Command, when set, boots the guest in shell mode: init runs it with busybox's sh -c
	// instead of the tests (Run is ignored; see BootCommand).
	Command string
	// Stdin, when set, is what the guest's console receives (QEMU's stdio serial reads it),
	// and a shell-mode command gets the console as its stdin (crashtui.stdin=console): a
	// bidirectional console, as `crashtui demo --guest` talks to its agent. Give an *os.File
	// (a pipe's read end): then QEMU reads it directly and its exit is not held up by a copy.
	Stdin io.Reader
	// WholeLines makes BootCommand write each line of the command's output with its newline
	// as soon as it comes, for a reader that acts on each line (an event stream). By default
	// a line's newline waits for the next line, so that the output is exactly the command's:
	// init prints one newline of its own before the exit line, which WholeLines passes on as
	// an empty last line.
	WholeLines bool
}

// QEMUArgs is the fast boot of docs/ppc64le-qemu.md (x-vof=on skips SLOF, the
// cap-* settings only silence TCG warnings), or for arm64 the virt board with
// the kernel Image booted directly; -no-reboot turns the guest's
// power-off into QEMU's exit. loglevel=1 keeps the console to the tests'
// output but still shows a panic (KERN_EMERG), and panic=-1 reboots at once,
// which -no-reboot turns into an exit: a crashed /init fails in seconds with
// "no verdict line" instead of waiting for the timeout.
func (b BootConfig) QEMUArgs() []string {
	smp := b.SMP
	if smp <= 0 {
		smp = 1
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	watchdog := timeout - 10*time.Second
	if watchdog < 10*time.Second {
		watchdog = timeout
	}
	a := b.Arch
	if a == nil {
		a = PPC64LE
	}
	appendLine := fmt.Sprintf("console=%s quiet loglevel=1 panic=-1 crashtui.cpu=%s crashtui.run=%s crashtui.timeout=%s",
		a.console, b.CPU, b.Run, watchdog)
	if b.Patience > 1 {
		appendLine += fmt.Sprintf(" crashtui.patience=%.2f", b.Patience)
	}
	if b.Command != "" {
		appendLine = fmt.Sprintf("console=%s quiet loglevel=1 panic=-1 crashtui.cpu=%s crashtui.timeout=%s %s",
			a.console, b.CPU, watchdog, commandParam(b.Command))
		if b.Stdin != nil {
			appendLine += " crashtui.stdin=console"
		}
	}
	return append(a.machine(b.CPU, smp),
		"-nographic", "-nodefaults", "-serial", "mon:stdio",
		"-kernel", b.Kernel, "-initrd", b.Initrd,
		"-append", appendLine, "-no-reboot",
	)
}

// The limits of a guest boot (BootConfig): to reach /init, between two lines, in all.
const (
	DefaultBoot    = 2 * time.Minute
	DefaultIdle    = 3 * time.Minute
	DefaultTimeout = time.Hour
)

// TestsPrefix starts the line on which the guest's init names the tests it will run
// (guest/init/main.go prints the same literal).
const TestsPrefix = "crashtui guest: tests:"

// Progress is what a guest boot reports as it goes (BootConfig.Progress).
type Progress struct {
	CPU     string
	Booted  bool   // init printed its first line (this report says only that)
	Test    string // a top-level test that ended
	Result  string // its PASS, FAIL or SKIP
	TestDur string // its time, as go test printed it ("8.33s")
	// Done of Total tests have ended (Total 0: the guest did not say how many will run).
	Done, Total int
	Elapsed     time.Duration // since QEMU started
}

// String is the progress line: "power9: booted (14s)", "power9: 3/13 TestCrashGo PASS (8.33s)".
func (p Progress) String() string {
	if p.Booted {
		return fmt.Sprintf("%s: booted (%s)", p.CPU, fmtDur(p.Elapsed))
	}
	n := strconv.Itoa(p.Done)
	if p.Total > 0 {
		n += "/" + strconv.Itoa(p.Total)
	}
	d := ""
	if p.TestDur != "" {
		d = " (" + p.TestDur + ")"
	}
	return fmt.Sprintf("%s: %s %s %s%s", p.CPU, n, p.Test, p.Result, d)
}

// ProgressPrefix starts the lines of Log that say how far a stage has got: the steps that
// take a while, each with its time (cmd/testreport -stage shows them on the console).
const ProgressPrefix = "progress: "

// fmtDur is a step's time: 45s, 3m29s.
func fmtDur(d time.Duration) string { return d.Round(time.Second).String() }

// oneLine is an error's first line.
func oneLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// watch follows a guest's console line by line: it reports progress and keeps the deadline
// that stops a guest which has gone quiet for too long.
type watch struct {
	mu       sync.Mutex
	b        BootConfig
	start    time.Time
	part     []byte
	booted   bool
	dl       *patience.Deadline
	last     string // the last line, for the failure
	running  string // the top-level test running now
	total    int
	done     int
	stopped  string // why the watch stopped the guest ("" while it has not)
	progress func(Progress)
}

func newWatch(b BootConfig) *watch {
	boot := b.Boot
	if boot == 0 {
		boot = DefaultBoot
	}
	return &watch{b: b, start: time.Now(), dl: patience.New(boot), progress: b.Progress}
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.line(strings.TrimSpace(string(bytes.TrimRight(w.part[:i], "\r"))))
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

// line takes one console line; w.mu is held.
func (w *watch) line(l string) {
	if l == "" {
		return
	}
	w.last = l
	report := func(p Progress) {
		if w.progress != nil {
			p.CPU, p.Elapsed, p.Done, p.Total = w.b.CPU, time.Since(w.start), w.done, w.total
			w.progress(p)
		}
	}
	if !w.booted {
		// Firmware and kernel lines come before init's: only init's own says it is up.
		if !strings.HasPrefix(l, "crashtui guest:") && l != BeginLine {
			return
		}
		w.booted = true
		report(Progress{Booted: true})
	}
	idle := w.b.Idle
	if idle == 0 {
		idle = DefaultIdle
	}
	w.dl = nil
	if idle > 0 {
		w.dl = patience.New(idle)
	}
	switch {
	case strings.HasPrefix(l, TestsPrefix):
		w.total = len(strings.Fields(strings.TrimPrefix(l, TestsPrefix)))
	case strings.HasPrefix(l, "=== RUN "):
		if f := strings.Fields(l); len(f) == 3 && !strings.Contains(f[2], "/") {
			w.running = f[2]
		}
	case strings.HasPrefix(l, "--- PASS: "), strings.HasPrefix(l, "--- FAIL: "), strings.HasPrefix(l, "--- SKIP: "):
		// Subtests' lines are indented (and trimmed here): a name with "/" is one of them.
		f := strings.Fields(l)
		if len(f) >= 3 && !strings.Contains(f[2], "/") {
			w.done++
			w.running = ""
			dur := ""
			if len(f) >= 4 {
				dur = strings.Trim(f[3], "()")
			}
			report(Progress{Test: f[2], Result: strings.TrimSuffix(f[1], ":"), TestDur: dur})
		}
	}
}

// expired says why the guest must be stopped now, or "".
func (w *watch) expired() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped != "" || w.dl == nil || !w.dl.Passed() {
		return ""
	}
	switch {
	case !w.booted:
		w.stopped = fmt.Sprintf("did not reach its /init in %v", w.dl.Waited())
	case w.running != "":
		w.stopped = fmt.Sprintf("silent for %v in %s, after %q", w.dl.Waited(), w.running, clip(w.last, 120))
	default:
		w.stopped = fmt.Sprintf("silent for %v after %q", w.dl.Waited(), clip(w.last, 120))
	}
	return w.stopped
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Boot runs one guest to power-off and returns its console output with \r removed; live
// streams it while it runs. The guest is stopped early only when it stops making progress
// (BootConfig's Boot and Idle) or reaches the backstop Timeout.
func Boot(ctx context.Context, b BootConfig, live io.Writer) (string, error) {
	if b.Timeout == 0 {
		b.Timeout = DefaultTimeout
	}
	if b.Patience == 0 {
		b.Patience = patience.Factor()
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	cmd := exec.CommandContext(ctx, b.QEMU, b.QEMUArgs()...)
	cmd.Stdin = b.Stdin // nil is /dev/null: nothing types into the monitor
	var buf bytes.Buffer
	var mu sync.Mutex
	wt := newWatch(b)
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		buf.Write(p)
		if live != nil {
			live.Write(p)
		}
		wt.Write(p)
		return len(p), nil
	})
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.WaitDelay = 5 * time.Second
	// A host process killed outright (crashtui demo --guest, a test) takes its guest along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	exited := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-exited:
				return
			case <-t.C:
				if wt.expired() != "" {
					stop()
					return
				}
			}
		}
	}()
	err := cmd.Run()
	close(exited)
	wt.mu.Lock()
	why := wt.stopped
	wt.mu.Unlock()
	switch {
	case why != "":
		err = fmt.Errorf("qemu %s: stopped: %s", b.CPU, why)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("qemu %s: killed after %v, still printing", b.CPU, b.Timeout)
	case err != nil:
		err = fmt.Errorf("qemu %s: %w", b.CPU, err)
	}
	if pw, ok := live.(*prefixWriter); ok {
		pw.Flush()
	}
	mu.Lock()
	defer mu.Unlock()
	return strings.ReplaceAll(buf.String(), "\r", ""), err
}

// ParseVerdict finds the guest's verdict line ("PASS ..." or "FAIL ...").
func ParseVerdict(out string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(strings.ReplaceAll(line, "\r", ""))
		if i := strings.Index(line, VerdictPrefix); i >= 0 {
			return strings.TrimSpace(line[i+len(VerdictPrefix):]), true
		}
	}
	return "", false
}

// FailedTests returns, for every test of a `go test -v` transcript that failed, its name and
// what it printed while it ran (-v streams t.Log and t.Error output as it happens, so the
// "--- FAIL" summary alone does not say why), at most max lines each; register records are
// left out.
func FailedTests(out string, max int) []string {
	said := map[string][]string{}
	cur := ""
	var failed []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(strings.ReplaceAll(line, "\r", ""), " ")
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "=== RUN") || strings.HasPrefix(trimmed, "=== CONT"):
			if f := strings.Fields(trimmed); len(f) == 3 {
				cur = f[2]
			}
		case strings.HasPrefix(trimmed, "--- FAIL: "):
			if f := strings.Fields(trimmed); len(f) >= 3 {
				failed = append(failed, f[2])
			}
		case strings.HasPrefix(trimmed, "--- "), strings.HasPrefix(trimmed, "==="), trimmed == "", trimmed == "FAIL", trimmed == "PASS",
			strings.Contains(line, RegsPrefix), strings.Contains(line, VerdictPrefix):
		default:
			if cur != "" && len(said[cur]) < max {
				said[cur] = append(said[cur], line)
			}
		}
	}
	var res []string
	for _, name := range failed {
		res = append(res, name+":")
		res = append(res, said[name]...)
	}
	return res
}

// ParseRegRecords collects the RegRecord lines the guest test printed.
func ParseRegRecords(out string) ([]RegRecord, error) {
	var recs []RegRecord
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, RegsPrefix)
		if i < 0 {
			continue
		}
		var r RegRecord
		if err := json.Unmarshal([]byte(strings.TrimSpace(line[i+len(RegsPrefix):])), &r); err != nil {
			errs = append(errs, fmt.Errorf("regs record: %w", err))
			continue
		}
		recs = append(recs, r)
	}
	return recs, errors.Join(errs...)
}

// WriteRegRecords writes each record to dir/<cpu>_<insn>_<call>.json.
func WriteRegRecords(dir string, recs []RegRecord) error {
	for _, r := range recs {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("fixture %s: %w", r.FileName(), err)
		}
		if err := os.WriteFile(filepath.Join(dir, r.FileName()), append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("fixture %s: %w", r.FileName(), err)
		}
	}
	return nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// prefixWriter prefixes whole lines, so that guests booted in parallel can be told apart in
// the log; with start set, each line also carries the seconds since start, and with out set
// it writes under that lock (shared with the harness's own lines).
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	start  time.Time
	out    *sync.Mutex
	part   []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			break
		}
		p.emit(bytes.TrimRight(p.part[:i], "\r"))
		p.part = p.part[i+1:]
	}
	return len(b), nil
}

func (p *prefixWriter) emit(line []byte) {
	if p.out != nil {
		p.out.Lock()
		defer p.out.Unlock()
	}
	if p.start.IsZero() {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, line)
		return
	}
	fmt.Fprintf(p.w, "%s[%5.1fs] %s\n", p.prefix, time.Since(p.start).Seconds(), line)
}

// Flush writes a trailing partial line.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.part) > 0 {
		p.emit(bytes.TrimRight(p.part, "\r"))
		p.part = nil
	}
}

// guestTestPackages are the packages whose tests a guest runs (the -test.run pattern picks
// which): the engine and each feature, and elfinfo (its unwinder), each its own test binary.
var guestTestPackages = []string{"./tracer", "./tracer/access", "./tracer/checkpoint", "./tracer/crash", "./tracer/stacks", "./elfinfo"}
