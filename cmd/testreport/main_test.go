package main

import (
	"io"
	"strings"
	"testing"
)

// TestReport: one line per package, a failing test's output printed in full (its subtests'
// too), a line that is not JSON (a build failure) shown and counted as a failure, and the
// closing counts line.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:9: broken\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB/sub"}`,
		`{"Action":"fail","Package":"p","Test":"TestB"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`{"Action":"fail","Package":"p","Elapsed":1.5}`,
		`{"Action":"pass","Package":"q","Elapsed":0.2}`,
	}, "\n") + "\n"
	var out strings.Builder
	if code := report(strings.NewReader(in), &out, io.Discard, "", 0); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := out.String()
	for _, want := range []string{"FAIL p ", "ok   q ", "--- FAIL: TestB (p)", "b_test.go:9: broken", "go: 1 passed, 1 failed, 1 skipped"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	if code := report(strings.NewReader("# p\nx.go:1: undefined: y\n"), &out, io.Discard, "", 0); code != 1 || !strings.Contains(out.String(), "undefined: y") {
		t.Errorf("a build failure: exit %d\n%s", code, out.String())
	}
}
