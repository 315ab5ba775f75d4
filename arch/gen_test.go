package arch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// zsysnames.go must be what `go generate` produces from the pinned x/sys: a stale table would
// name syscalls wrongly on one arch without any other test noticing.
func TestZsysnamesUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building the generator")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go tool not in PATH: %v", err)
	}
	modcache, err := exec.Command(gobin, "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	sys := filepath.Join(string(bytes.TrimSpace(modcache)), "golang.org", "x", "sys@v0.50.0", "unix")
	if _, err := os.Stat(filepath.Join(sys, "zsysnum_linux_ppc64le.go")); err != nil {
		t.Skipf("x/sys v0.50.0 source not in the module cache: %v", err)
	}
	out := filepath.Join(t.TempDir(), "zsysnames.go")
	cmd := exec.Command(gobin, "run", "./internal/gensysnames", "-sys", sys, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gensysnames: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("zsysnames.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, have) {
		t.Errorf("zsysnames.go is stale: run `go generate ./arch`")
	}
}
