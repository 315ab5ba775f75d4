package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/tracer/qemu"
)

// readme is README.md and its first screen (what a newcomer reads before scrolling: up to the
// paragraph after the bullet list, which begins "`make` alone").
func readme(t *testing.T) (all, first string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	all = string(b)
	i := strings.Index(all, "`make` alone")
	if i < 0 {
		t.Fatal("README.md has no paragraph beginning \"`make` alone\" after its first screen")
	}
	return all, all[:i]
}

// TestREADMEFirstScreen: the first screen says which Go (go.mod's), that crashtui runs as root
// and why, and what make test needs and takes.
func TestREADMEFirstScreen(t *testing.T) {
	_, first := readme(t)
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(mod))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	for _, want := range []string{
		"**Go " + m[1] + "**",
		"**Run it as root.**", "CAP_SYS_PTRACE", "ptrace_scope", // why
		"**`make demo` installs**", "**`make test` needs**", "**`make test` takes**",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("the README's first screen lacks %q", want)
		}
	}
	if n := strings.Count(first, "\n"); n > 70 {
		t.Errorf("the README's first screen is %d lines: no longer a screen", n)
	}
}

// TestREADMETimeLimits: the first screen gives make test's time limits as the Makefile sets
// them (each stage's LIMIT_ and the whole run's TEST_BUDGET); cmd/testreport's
// TestMakeTestRunsEveryStage shows a stage past its limit stopped and the next one run.
func TestREADMETimeLimits(t *testing.T) {
	_, first := readme(t)
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	limits := regexp.MustCompile(`(?m)^(LIMIT_[\w-]+|TEST_BUDGET) \?= (\S+)$`).FindAllStringSubmatch(string(mk), -1)
	if len(limits) < 6 {
		t.Fatalf("the Makefile sets %d time limits, want a budget and one per stage: %v", len(limits), limits)
	}
	for _, l := range limits {
		if want := "`" + l[1] + "=" + l[2] + "`"; !strings.Contains(first, want) {
			t.Errorf("the README's first screen lacks %s (the Makefile's)", want)
		}
	}
}

// TestREADMEInstalls: every package that make demo or make test installs (the Makefile's
// lists, the Slurm stage's, the QEMU harness's) is named on the README's first screen, and
// make demo installs none of the tests' own (Open MPI, dlv).
func TestREADMEInstalls(t *testing.T) {
	_, first := readme(t)
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	slurm, err := os.ReadFile("../../.ci/slurm")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, m := range regexp.MustCompile(`(?m)^(?:DEMO_NEEDS|TEST_NEEDS|QEMU_NEEDS_\w+) := ((?:.*\\\n)*.*)$`).FindAllStringSubmatch(string(mk), -1) {
		for _, pair := range strings.Fields(strings.ReplaceAll(m[1], "\\\n", " ")) {
			pkgs = append(pkgs, pair[strings.LastIndexByte(pair, ':')+1:])
		}
	}
	if len(pkgs) < 8 {
		t.Fatalf("found only %v in the Makefile's install lists", pkgs)
	}
	for _, m := range regexp.MustCompile(`for pair in ([^;]*);`).FindAllStringSubmatch(string(slurm), -1) {
		for _, pair := range strings.Fields(m[1]) {
			pkgs = append(pkgs, pair[strings.LastIndexByte(pair, ':')+1:])
		}
	}
	if dlv := regexp.MustCompile(`(?m)^DLV := (\S+)$`).FindStringSubmatch(string(mk)); dlv != nil {
		pkgs = append(pkgs, dlv[1])
	} else {
		t.Error("the Makefile installs no dlv (DLV := ...)")
	}
	for _, a := range []*qemu.Arch{qemu.PPC64LE, qemu.ARM64} {
		pkgs = append(append(pkgs, a.QEMUPkg, "linux-image-*-"+a.Flavour, "busybox-static"), a.CCPkgs...)
	}
	for _, p := range pkgs {
		if !strings.Contains(first, "`"+p+"`") && !strings.Contains(first, " "+p+"`") {
			t.Errorf("make demo or make test installs %s, which the README's first screen does not name", p)
		}
	}

	out, err := exec.Command("make", "-C", "../..", "-n", "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	for _, testOnly := range []string{"openmpi-bin", "libopenmpi-dev", "go-delve", "slurmctld", "qemu-system"} {
		if strings.Contains(string(out), testOnly) {
			t.Errorf("make demo would install %s, which only the tests use:\n%s", testOnly, out)
		}
	}
	out, err = exec.Command("make", "-C", "../..", "-n", "test-deps").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "openmpi-bin") || !strings.Contains(string(out), "delve") {
		t.Errorf("make test-deps does not install Open MPI and dlv: %v\n%s", err, out)
	}
}

// TestREADMECommands: the README's Commands list has every command of `crashtui --help`, as
// it is written there (crashtui demo [--tour], crashtui version), and the README names every
// flag of every command and every --restore policy.
func TestREADMECommands(t *testing.T) {
	all, _ := readme(t)
	i := strings.Index(all, "## Commands\n\n```\n")
	if i < 0 {
		t.Fatal("README.md has no Commands list")
	}
	list := all[i:]
	list = list[:strings.Index(list[len("## Commands\n\n```\n"):], "```")+len("## Commands\n\n```\n")]
	usageOut, err := exec.Command(crashtuiBin, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmds := 0
	for _, l := range strings.Split(string(usageOut), "\n") {
		l = strings.TrimSpace(l)
		if !regexp.MustCompile(`^crashtui [a-z]`).MatchString(l) {
			continue // the title, the JOB paragraph, the flags
		}
		cmds++
		// "crashtui demo [--tour]" from "crashtui demo [--tour]         the built-in ...".
		synopsis := strings.TrimSpace(regexp.MustCompile(`\s{2,}`).Split(l, 2)[0])
		if !strings.Contains(list, synopsis) {
			t.Errorf("the README's Commands list lacks %q", synopsis)
		}
		name := strings.Fields(synopsis)[1]
		if name == "version" {
			continue
		}
		help, err := exec.Command(crashtuiBin, name, "--help").Output()
		if err != nil {
			t.Errorf("crashtui %s --help: %v", name, err)
			continue
		}
		for _, f := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(string(help), -1) {
			if !strings.Contains(all, "--"+f[1]) {
				t.Errorf("crashtui %s has --%s, which the README does not name", name, f[1])
			}
		}
	}
	if cmds < 10 {
		t.Fatalf("crashtui --help lists only %d commands:\n%s", cmds, usageOut)
	}
	for _, want := range []string{"crashtui version", "demo [--tour]", "replay [--tour] FILE", "--restore=correct|naive|sc-only|none"} {
		if !strings.Contains(list, want) {
			t.Errorf("the README's Commands list lacks %q", want)
		}
	}
}
