package peertest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Dir returns a new 0755 temporary directory, removed in t.Cleanup: uid 65534 must exec what
// is built there, and an unreadable binary would make its process non-dumpable
// (fs/exec.c would_dump).
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "crashtui-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Build builds demo/access/peer into Dir(t) and returns the binary's path. CGO_ENABLED=0:
// -dropcaps needs syscall.AllThreadsSyscall.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(Dir(t), "peer")
	cmd := exec.Command(goTool(), "build", "-o", bin, "github.com/crashtui/crashtui/demo/access/peer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build peer: %v\n%s", err, out)
	}
	return bin
}

// NoGroup as Start's pgid leaves the peer in the test's own process group.
const NoGroup = -1

// Peer is one running demo/access/peer serving probes on its stdin.
type Peer struct {
	Name string
	Cmd  *exec.Cmd
	In   io.WriteCloser // "probe PID ADDR" lines; closing it makes the peer exit
	Out  *bufio.Reader  // the peer's answers, after the ready line
	PID  int            // as the test (its PID namespace) names the peer

	// From the ready line: the peer's pid as it names itself (1 in a new PID namespace)
	// and the address of memory it offers to be read.
	SelfPID int
	Addr    uint64
}

// Start starts bin with args and attr (nil: none) and waits for its ready line. pgid >= 0
// puts the peer in process group pgid (0: a new group it leads); NoGroup leaves it in the
// test's group. attr is not modified. A start that fails because attr asks for namespaces
// or another uid skips the test; any other failure fails it. Cleanup closes stdin, kills the
// peer by pid (only the process this call started) and reaps it.
func Start(t testing.TB, bin, name string, args []string, attr *syscall.SysProcAttr, pgid int) *Peer {
	t.Helper()
	a := syscall.SysProcAttr{}
	if attr != nil {
		a = *attr
	}
	if pgid >= 0 {
		a.Setpgid, a.Pgid = true, pgid
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &a
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		if a.Cloneflags != 0 || a.Credential != nil {
			t.Skipf("start %s peer: %v (needs root, user and PID namespaces)", name, err)
		}
		t.Fatalf("start %s peer: %v", name, err)
	}
	p := &Peer{Name: name, Cmd: cmd, In: in, Out: bufio.NewReader(out), PID: cmd.Process.Pid}
	t.Cleanup(func() {
		in.Close()
		_ = syscall.Kill(p.PID, syscall.SIGKILL) // only the process this call started
		_ = cmd.Wait()
	})
	line, err := p.Out.ReadString('\n') // blocks until the peer has set itself up
	if err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("%s peer did not get ready: %q %v", name, line, err)
	}
	if _, err := fmt.Sscanf(line, "ready %d %v", &p.SelfPID, &p.Addr); err != nil {
		t.Fatalf("%s peer: ready line %q: %v", name, line, err)
	}
	return p
}

// Probe asks the peer to run kcmp(getpid(), pid, KCMP_VM) and a 1-byte process_vm_readv of
// pid's addr itself — the kernel's own answer for this ordered pair, without injection —
// and returns its answer line, "kcmp=OK|ERRNO vm=OK|ERRNO", without the newline.
func (p *Peer) Probe(t testing.TB, pid int, addr uint64) string {
	t.Helper()
	if _, err := fmt.Fprintf(p.In, "probe %d %#x\n", pid, addr); err != nil {
		t.Fatalf("%s: write probe: %v", p.Name, err)
	}
	line, err := p.Out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: read probe answer: %v", p.Name, err)
	}
	return strings.TrimSpace(line)
}

// goTool is the go command: on PATH, else the toolchain make installs.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}
