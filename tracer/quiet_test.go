package tracer

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
)

// TestChildSignalsQuiet: while a Tracer waits in waitid, no tracee's death or stop sends
// crashtui a SIGCHLD (quietChildren): a job of ten short children ends with every death
// seen by the loop and no SIGCHLD received, and crashtui's own children are still its to
// reap (SIG_DFL, not SIG_IGN, which would make the kernel reap them).
func TestChildSignalsQuiet(t *testing.T) {
	var mu sync.Mutex
	ended := 0
	tr := New(Options{Emit: func(e sessions.Event) {
		if _, ok := e.Body.(sessions.Exit); ok {
			mu.Lock()
			ended++
			mu.Unlock()
		}
	}})
	t.Cleanup(func() { tr.Close() })
	if !tr.blocking {
		t.Fatal("the loop does not wait in waitid: kickSignal has no Go handler")
	}
	var sa [4]uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
		t.Fatal(e)
	}
	if sa[0] != sigDfl {
		t.Errorf("SIGCHLD's action is %#x, not SIG_DFL", sa[0])
	}
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, unix.SIGCHLD)
	t.Cleanup(func() { signal.Stop(sigs) })

	const children = 10
	loop := "i=0; while [ $i -lt 10 ]; do /bin/true; i=$((i+1)); done"
	if _, err := tr.Launch(LaunchSpec{N: 1, Argv: []string{"/bin/sh", "-c", loop}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.JobDone():
	case <-time.After(time.Minute):
		t.Fatal("the job did not end in a minute")
	}
	tr.Close()
	mu.Lock()
	if ended != children+1 {
		t.Errorf("%d ends told, want %d (the shell and its %d children)", ended, children+1, children)
	}
	mu.Unlock()
	select {
	case s := <-sigs:
		t.Errorf("crashtui received %v while tracing", s)
	default:
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("a child of crashtui's own could not be reaped: %v", err)
	}
}
