package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsThatTeach: the usual first mistakes get an error that says what to type instead,
// with exit status 2, and replay's help lists only the flags a replay uses.
func TestErrorsThatTeach(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a duration without a unit", []string{"demo", "--json", "--duration", "3"},
			[]string{`invalid value "3" for flag -duration`, "use a unit: 3s"}},
		{"a duration that is no duration", []string{"demo", "--json", "--duration", "soon"},
			[]string{"want a duration with a unit, like 30s"}},
		{"a negative duration", []string{"demo", "--json", "--duration", "-3s"},
			[]string{"want a duration >= 0"}},
		{"an asciicast given to replay", []string{"replay", filepath.Join("..", "..", "demo", "session.cast")},
			[]string{"is an asciicast", "asciinema play ../../demo/session.cast", "what --record writes"}},
		{"a live-only flag given to replay", []string{"replay", "--cores", t.TempDir(), filepath.Join("..", "..", "demo", "session.jsonl")},
			[]string{"flag provided but not defined: -cores"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(crashtuiBin, tc.args...).CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("crashtui %v: %v, want exit status 2\n%s", tc.args, err, out)
			}
			last := lastLine(string(out))
			if !strings.HasPrefix(last, "crashtui: ") {
				t.Errorf("crashtui %v: last line %q, want the error", tc.args, last)
			}
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("crashtui %v says %q, want it to say %q", tc.args, last, w)
				}
			}
			if strings.Contains(last, "parse error") {
				t.Errorf("crashtui %v still says only %q", tc.args, last)
			}
		})
	}

	out, err := exec.Command(crashtuiBin, "replay", "--help").Output()
	if err != nil {
		t.Fatalf("replay --help: %v", err)
	}
	var flags []string
	for _, l := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(l), "-"); ok {
			flags = append(flags, strings.Fields(f)[0])
		}
	}
	if got := strings.Join(flags, " "); got != "cast json tour" {
		t.Errorf("replay --help lists the flags %q, want only the three a replay uses, \"cast json tour\":\n%s", got, out)
	}
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return l[len(l)-1]
}
