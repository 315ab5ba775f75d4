package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/crashtui/crashtui/demo/testuser"
)

// TestDemoRunsNoPlantedProgram: `crashtui demo` as root with HOME and XDG_CACHE_HOME unset
// would use $TMPDIR/crashtui-demo-0. A second user makes that directory first, with an
// executable where the demo's rank would be. crashtui refuses the cache, says why, and the
// user's program never runs.
func TestDemoRunsNoPlantedProgram(t *testing.T) {
	needRoot(t)
	rank := buildC(t, "rank") // the usual cache: only to learn where the rank would be
	u := testuser.New(t)
	tmp := filepath.Join(testuser.PublicDir(t), "tmp")
	os.Mkdir(tmp, 0o755)
	syscall.Chmod(tmp, 0o1777)
	marker := filepath.Join(u.Home, "ran-as-root")
	// Both places a cache under $TMPDIR was looked for: $TMPDIR/crashtui/demo (no home)
	// and $TMPDIR/crashtui-demo-UID (a home that cannot be written).
	for _, cache := range []string{filepath.Join(tmp, "crashtui", "demo"), filepath.Join(tmp, "crashtui-demo-0")} {
		sumDir := filepath.Join(cache, filepath.Base(filepath.Dir(rank)))
		script := "mkdir -p " + sumDir + " && printf '#!/bin/sh\\ntouch " + marker + "\\n' > " + sumDir + "/rank && chmod 755 " + sumDir + "/rank"
		if out, err := u.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("planting as %s: %v\n%s", u.Name, err, out)
		}
	}
	cmd := exec.Command(crashtuiBin, "demo", "--json", "--duration", "2s")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "XDG_CACHE_HOME" && k != "CRASHTUI_DEMO_DIR" && k != "TMPDIR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	code, stderr := exitOf(t, cmd)
	if code == 0 || !strings.Contains(stderr, "belongs to uid "+strconv.Itoa(u.UID)) {
		t.Errorf("crashtui demo: exit %d, stderr %q; want a failure naming uid %d", code, stderr, u.UID)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the planted program ran as root")
	}
}
