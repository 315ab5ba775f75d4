package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// jsonProc is a crashtui --json command started by a test, its events read as they come.
type jsonProc struct {
	cmd    *exec.Cmd
	events chan event
	exited chan struct{}
	err    error
}

func startJSON(t *testing.T, args ...string) *jsonProc {
	t.Helper()
	p := &jsonProc{cmd: exec.Command(crashtuiBin, args...), events: make(chan event, 1<<16), exited: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				e = event{"event": "unparsable", "line": sc.Text()}
			}
			p.events <- e
		}
		close(p.events)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// exit waits for the exit and returns the status and every event not yet taken.
func (p *jsonProc) exit(t *testing.T, timeout time.Duration) (int, []event) {
	t.Helper()
	var rest []event
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-p.events:
			if ok {
				rest = append(rest, e)
				continue
			}
			<-p.exited
			code := 0
			if ee, ok := p.err.(*exec.ExitError); ok {
				code = ee.ExitCode()
				if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
					t.Errorf("crashtui died of %v", ws.Signal())
				}
			}
			return code, rest
		case <-deadline:
			t.Fatalf("crashtui did not exit within %v", timeout)
		}
	}
}

// checkJobIntact asserts that every process of the job is alive, running (not stopped, not
// traced) and that none has gone from the group.
func checkJobIntact(t *testing.T, j *job, pids []int) {
	t.Helper()
	for _, pid := range pids {
		switch st := procState(pid); st {
		case "", "Z", "X":
			t.Errorf("job process %d died (state %q)", pid, st)
		case "t", "T":
			t.Errorf("job process %d left stopped (state %s)", pid, st)
		}
		if tp := tracerPID(pid); tp != 0 {
			t.Errorf("job process %d still traced by %d", pid, tp)
		}
	}
	if now := pgroupPIDs(j.pgid); len(now) != len(pids) {
		t.Errorf("%d processes in the job's group, %d before crashtui", len(now), len(pids))
	}
}

// SIGTERM while `crashtui matrix` is measuring (a job process is in ptrace stop t, crashtui
// injecting syscalls into it): crashtui finishes the measurement, detaches and exits 0 with
// the summary last; every one of the 100 processes is still alive, running and untraced.
// Without signal handling crashtui died mid-injection and the process it held died of SIGTRAP.
func TestMatrixSignalDetaches(t *testing.T) {
	needRoot(t)
	const n = 100
	j := startJob(t, n)
	pids := pgroupPIDs(j.pgid)
	if len(pids) != n {
		t.Fatalf("%d processes in the job's group, want %d", len(pids), n)
	}
	p := startJSON(t, "matrix", "--json", "pgid:"+strconv.Itoa(j.pgid))

	// Every process announced: the attach is done and the measurement begins.
	procs := 0
	deadline := time.After(30 * time.Second)
	for procs < n {
		select {
		case e, ok := <-p.events:
			if !ok {
				t.Fatalf("crashtui ended after %d process events", procs)
			}
			if e.kind() == "process" {
				procs++
			}
		case <-deadline:
			t.Fatalf("%d process events in 30 s", procs)
		}
	}
	// The trigger is a condition: a job process in ptrace stop (/proc cannot be waited on,
	// so it is polled).
	stopped := 0
	for end := time.Now().Add(30 * time.Second); stopped == 0; {
		for _, pid := range pids {
			if procState(pid) == "t" {
				stopped = pid
				break
			}
		}
		if stopped == 0 {
			if time.Now().After(end) {
				t.Fatal("no job process was ever seen in ptrace stop")
			}
			select {
			case <-p.exited:
				t.Fatal("crashtui ended before a job process was seen in ptrace stop")
			default:
			}
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	code, rest := p.exit(t, 60*time.Second)
	if code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	if len(rest) == 0 || rest[len(rest)-1].kind() != "summary" {
		t.Errorf("the last event after SIGTERM is not the summary: %v", rest)
	}
	t.Logf("SIGTERM with %d in ptrace stop; %d events after it", stopped, len(rest))
	checkJobIntact(t, j, pids)
}
