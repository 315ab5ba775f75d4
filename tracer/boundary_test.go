package tracer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestFeaturesNeverWaitOrResume: only the engine waits for, resumes, holds, injects into or
// detaches a tracee (tracer/doc.go). Go's package boundary already keeps the features out of
// a task's fields and the engine's unexported waits; this keeps them from going around it:
// no file of a feature (or of procfs or seccomp) names a ptrace request, the ptrace or wait
// syscalls, or golang.org/x/sys/unix's wrappers of them.
func TestFeaturesNeverWaitOrResume(t *testing.T) {
	forbidden := func(name string) bool {
		switch {
		case strings.HasPrefix(name, "Ptrace"), strings.HasPrefix(name, "PTRACE_"),
			name == "SYS_PTRACE", name == "SYS_WAIT4", name == "SYS_WAITID",
			name == "Wait4", name == "Waitid":
			return true
		}
		return false
	}
	root := tracertest.ModuleRoot()
	checked := 0
	for _, pkg := range []string{"access", "checkpoint", "crash", "stacks", "procfs", "seccomp"} {
		files, err := filepath.Glob(filepath.Join(root, "tracer", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("tracer/%s: no files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue // a test may drive a helper with its own ptrace (the guest tests do)
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			unixName := ""
			for _, imp := range file.Imports {
				switch strings.Trim(imp.Path.Value, `"`) {
				case "golang.org/x/sys/unix":
					unixName = "unix"
					if imp.Name != nil {
						unixName = imp.Name.Name
					}
				case "syscall":
					t.Errorf("%s imports syscall: use the engine (or golang.org/x/sys/unix for what is not ptrace)", f)
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == unixName && forbidden(sel.Sel.Name) {
					t.Errorf("%s: %s.%s: a feature never calls ptrace or waits for a tracee; ask the engine (tracer.Loop)", fset.Position(sel.Pos()), unixName, sel.Sel.Name)
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("only %d files checked", checked)
	}
}
