package main

import (
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/tracer/crash"
)

// crashFlags are the crash flags that have no field in common (register declares them).
var crashFlags = struct {
	sync.Mutex
	stackDepth map[*common]int
	dedup      map[*common]bool
	leave      map[*common]bool // --unrepaired=leave
}{stackDepth: map[*common]int{}, dedup: map[*common]bool{}, leave: map[*common]bool{}}

// crashLogHeader is the first line of --crash-log (Spindle's crash log, PR #197, plus pid and
// group).
var crashLogHeader = []string{"rank", "pid", "group", "representative", "signal", "site"}

// registerCrashFlags declares --stack-depth and validates --group-by, --cores and --crash-log
// while flags are parsed, so a bad value is a usage error (exit 2) before anything is traced.
func registerCrashFlags(c *common, fs interface {
	Func(name, usage string, fn func(string) error)
	BoolFunc(name, usage string, fn func(string) error)
}) {
	fs.Func("stack-depth", "`N` frames of the call path that --group-by stack keys on (default 3)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("want 1..64 frames")
		}
		crashFlags.Lock()
		crashFlags.stackDepth[c] = n
		crashFlags.Unlock()
		return nil
	})
	fs.Func("unrepaired", "a fault whose handler returns without repairing it: `default` delivers it as if no handler were installed (the process dies of it, as Spindle does), leave lets the process loop on it as it would without crashtui", func(s string) error {
		switch s {
		case "default", "leave":
		default:
			return fmt.Errorf("want default or leave")
		}
		crashFlags.Lock()
		crashFlags.leave[c] = s == "leave"
		crashFlags.Unlock()
		return nil
	})
	fs.BoolFunc("dedup-kernel-cores", "let the kernel write one core per crash site: RLIMIT_CORE 0 for every crashing process but its group's representative (without it, and without --cores, the job's core limits are never touched)", func(s string) error {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		crashFlags.Lock()
		crashFlags.dedup[c] = v
		crashFlags.Unlock()
		return nil
	})
}

func validGroupBy(s string) error {
	switch strings.ToLower(s) {
	case string(crash.GroupBySite), string(crash.GroupByStack):
		return nil
	}
	return fmt.Errorf("want site or stack")
}

// createCrashLog creates FILE with the CSV header when the flag is parsed (a log with only
// the header means nothing crashed) and keeps it open for the crashes: one open, so the path
// cannot be swapped between the header and the first crash. An existing log of crashtui's
// is replaced at once, so the log can be read while crashtui runs.
func createCrashLog(path string) (*outfile.File, error) {
	f, err := outfile.CreateStream(path)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	w.Write(crashLogHeader)
	w.Flush()
	if err := w.Error(); err != nil {
		f.Abort()
		return nil, err
	}
	return f, nil
}

// crashOptions turns the crash flags (--cores, --crash-log, --group-by, --stack-depth) into
// tracer options. The flags were validated when parsed (the cores directory checked, the
// crash log created); the crash log stays open until exit.
func crashOptions(c *common) *crash.Options {
	o := &crash.Options{GroupBy: crash.GroupBy(strings.ToLower(c.groupBy)), CoresDir: c.cores}
	if abs, err := filepath.Abs(c.cores); err == nil && c.cores != "" {
		o.CoresDir = abs // events name cores by a path that works from anywhere
	}
	crashFlags.Lock()
	o.StackKeyFrames = crashFlags.stackDepth[c]
	o.DedupKernelCores = crashFlags.dedup[c]
	o.LeaveUnrepaired = crashFlags.leave[c]
	crashFlags.Unlock()
	if c.crashLogF != nil {
		o.CrashLog = c.crashLogF
	}
	return o
}
