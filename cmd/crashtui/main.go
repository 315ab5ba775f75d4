// Command crashtui is a terminal debugger for a whole job: it attaches with ptrace to every
// process of a job and shows who can read whose memory, crashes grouped by crash site, and the
// syscall restart state a checkpoint must get right. README.md, "Architecture", says how.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
)

// version is set by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

const usage = `crashtui — a terminal debugger for a whole job

Usage:
  crashtui attach JOB            TUI on a running job (never kills it; q detaches and leaves it running)
  crashtui run [-n N] -- CMD...  start N ranks of CMD traced from birth (env CRASHTUI_RANK, CRASHTUI_SIZE)
  crashtui demo [--tour]         the built-in demo job, in the TUI (--tour: a guided tour)
  crashtui replay [--tour] FILE  a recorded session (--record), in the TUI (no ptrace, no root)
  crashtui matrix JOB            the access matrix once, as a table (or --json)
  crashtui checkpoint JOB        simulated checkpoint: freeze, show restart state, apply
                                 --restore=correct|naive|sc-only|none, resume
  crashtui stacks JOB            where every thread is now: K stack samples merged into a call-path
                                 tree and classes, stuck or moving (--samples, --interval, --dot)
  crashtui agent JOB             one node of a multi-node session: attach, JSON Lines stamped with
                                 this host on stdout (srun ... crashtui agent slurm:ID | crashtui view)
  crashtui view [SOURCE...]      agents' merged streams (stdin) or JSON Lines files, as one session
  crashtui version               print crashtui's version

JOB is pgid:N, sid:N, pid:N (N and all its descendants), cgroup:PATH, slurm:ID[.STEP], or a bare
number (a process group if one has that id, else pid:N).

Common flags:
  --json           no TUI: one JSON object per line on stdout, the last one a summary
  --record FILE    record the session as JSON Lines (replay it with crashtui replay FILE)
  --host NAME      stamp every event with NAME (agent: this machine's name), for merging
  --whole-namespace  let the JOB contain init: every process of the machine or container
  --cores DIR      write one core per crash site into DIR (and suppress the kernel's cores)
  -h, --help       help for a command (crashtui run --help)

Exit status: 0 when crashtui did its job (a crashing job is data, not an error), 2 for bad
usage or a JOB that names nothing, 1 when tracing itself failed. SIGINT, SIGTERM and SIGHUP
make crashtui finish its current step, detach and exit 0 with the summary; so does a --json
reader that goes away (crashtui --json JOB | head -1).
`

// exitError carries an exit status up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{2, fmt.Errorf(format, a...)}
}

// init installs the signal handlers before anything else runs (see quit).
func init() { catchSignals() }

func main() {
	stop := startProfile()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole run to $CRASHTUI_CPUPROFILE when set (for
// make bench and whoever measures crashtui's cost: go tool pprof crashtui FILE). The file is
// created as every file crashtui writes (sessions/outfile).
func startProfile() (stop func()) {
	path := os.Getenv("CRASHTUI_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := outfile.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtui: CRASHTUI_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "crashtui: CRASHTUI_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func run(args []string, stdout, stderr io.Writer) int {
	helpOut = stdout
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(stderr, "crashtui: "+oneLine(err.Error()))
	return code
}

var errHelp = errors.New("help shown")

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageErr("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return errHelp
	case "version", "--version":
		fmt.Fprintln(stdout, "crashtui", version)
		return nil
	case "attach":
		return cmdAttach(rest, stdout, stderr)
	case "run":
		return cmdRun(rest, stdout, stderr)
	case "demo":
		return cmdDemo(rest, stdout, stderr)
	case "replay":
		return cmdReplay(rest, stdout, stderr)
	case "matrix":
		return cmdMatrix(rest, stdout, stderr)
	case "checkpoint":
		return cmdCheckpoint(rest, stdout, stderr)
	case "stacks":
		return cmdStacks(rest, stdout, stderr)
	case "agent":
		return cmdAgent(rest, stdout, stderr)
	case "view":
		return cmdView(rest, stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return usageErr("unknown command %q", cmd)
}

// oneLine keeps error messages to one sanitised line: they quote job specs, paths and
// replay files, all untrusted.
func oneLine(s string) string {
	return sessions.Sanitize(strings.ReplaceAll(strings.TrimSpace(s), "\n", "; "))
}
