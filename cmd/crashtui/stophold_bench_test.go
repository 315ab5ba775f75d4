package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/tracer/tracertest"
)

// BenchmarkStopHold is where BenchmarkJobTime's fork+exec figure comes from, stop by stop:
// how long each of the job's tasks is held at a ptrace stop, from the moment it leaves its
// CPU in the traced state to the moment it runs again, read from the kernel's own scheduler
// events (sched_switch, in a tracefs instance of this benchmark's own). A hold is the
// tracer's whole share of a stop: its wake, what it does before the resume, and what it does
// after the resume on the CPU the task waits for. The job is the same loop of
// fork + exec /bin/true + waitpid, under the floor tracer and under `crashtui run --json`,
// interleaved; each fork+exec has five stops (the parent's fork event and SIGCHLD, the
// child's first stop, its exec and its exit), and each figure is their holds' sum over the
// number of fork+execs. Unlike the job's wall time, a hold does not count the job's own
// work, so a busy host moves it less (eight runs on one day: 1.30-1.53 of the floor's, while
// BenchmarkJobTime's fork+exec went from 1.38 to 1.73).
func BenchmarkStopHold(b *testing.B) {
	needRoot(b)
	floor, events := tracertest.FloorPrograms(b)
	tr := openTraceInstance(b)
	const n = 300
	job := []string{events, "fork", strconv.Itoa(n)}
	modes := map[string][]string{
		"floor": append([]string{floor}, job...),
		"json":  append([]string{crashtuiBin, "run", "--json", "--"}, job...),
	}
	held := map[string][]float64{} // µs per fork+exec, round by round
	exec1 := map[string][]float64{}
	outPath := filepath.Join(b.TempDir(), "out")
	for round := 0; round < b.N*3; round++ {
		for _, m := range []string{"floor", "json"} {
			// Output to a file, as in BenchmarkJobTime: a pipe read here would wake this
			// process beside the job for every write.
			out, err := os.Create(outPath)
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(modes[m][0], modes[m][1:]...)
			cmd.Stdout, cmd.Stderr = out, out
			tr.start(b)
			err = cmd.Run()
			holds := tr.stop(b)
			out.Close()
			if err != nil {
				said, _ := os.ReadFile(outPath)
				b.Fatalf("%s: %v\n%s", m, err, said[max(0, len(said)-4096):])
			}
			var all, execs time.Duration
			nexec := 0
			for _, h := range holds {
				all += h.held
				if h.comm == "true" && h.nth == 0 { // the exec'd program's first stop: its exec
					execs += h.held
					nexec++
				}
			}
			// A stop the tracer ends before its task has left the CPU is never switched away
			// from (the task wakes before it sleeps): it held nothing, and counts as nothing.
			// Half the exec stops missing says the events were misread.
			if nexec < n/2 || nexec > n {
				b.Fatalf("%s: %d exec stops seen in the kernel's events, for %d execs", m, nexec, n)
			}
			held[m] = append(held[m], float64(all.Microseconds())/n)
			exec1[m] = append(exec1[m], float64(execs.Microseconds())/n)
		}
	}
	ratio := func(of map[string][]float64) float64 {
		var rs []float64
		for i := range of["json"] {
			rs = append(rs, of["json"][i]/of["floor"][i])
		}
		return medianOf(rs)
	}
	for _, m := range []string{"floor", "json"} {
		b.ReportMetric(medianOf(held[m]), m+"-held-us/event")
		b.ReportMetric(medianOf(exec1[m]), m+"-exec-held-us")
	}
	b.ReportMetric(ratio(held), "json-held/floor")
	b.ReportMetric(ratio(exec1), "json-exec-held/floor")
}

// traceInstance is a tracefs instance recording the scheduler's switch events:
// its own buffer, so that it neither reads nor disturbs anyone else's tracing.
type traceInstance struct{ dir string }

func openTraceInstance(b *testing.B) *traceInstance {
	root := "/sys/kernel/tracing"
	if _, err := os.Stat(root + "/instances"); err != nil {
		b.Skipf("tracefs is not mounted at %s (mount -t tracefs nodev %s): %v", root, root, err)
	}
	tr := &traceInstance{dir: fmt.Sprintf("%s/instances/crashtui-bench-%d", root, os.Getpid())}
	if err := os.Mkdir(tr.dir, 0o700); err != nil {
		b.Fatalf("a tracefs instance: %v", err)
	}
	b.Cleanup(func() { os.Remove(tr.dir) })
	for file, v := range map[string]string{
		"tracing_on": "0", "buffer_size_kb": "8192",
		"events/sched/sched_switch/enable": "1",
	} {
		tr.write(b, file, v)
	}
	return tr
}

func (tr *traceInstance) write(b *testing.B, file, v string) {
	if err := os.WriteFile(filepath.Join(tr.dir, file), []byte(v), 0o600); err != nil {
		b.Fatalf("tracefs %s: %v", file, err)
	}
}

// start empties the buffer and starts recording.
func (tr *traceInstance) start(b *testing.B) {
	tr.write(b, "trace", "")
	tr.write(b, "tracing_on", "1")
}

// stop stops recording and returns the holds of the job's tasks (comm events or true).
func (tr *traceInstance) stop(b *testing.B) []stopHold {
	tr.write(b, "tracing_on", "0")
	f, err := os.Open(filepath.Join(tr.dir, "trace"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	holds, err := stopHolds(f, map[string]bool{"events": true, "true": true})
	if err != nil {
		b.Fatal(err)
	}
	return holds
}

// stopHold is one ptrace stop of a task: its comm when it stopped, how many stops it had
// made before under that comm (nth), and how long it was off its CPU.
type stopHold struct {
	pid  int
	comm string
	nth  int
	held time.Duration
}

var (
	traceSwitch = regexp.MustCompile(` (\d+)\.(\d+): sched_switch: prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=.* next_pid=(\d+) next_prio=\d+$`)
	traceLost   = regexp.MustCompile(`^# entries-in-buffer/entries-written: (\d+)/(\d+)`)
)

// stopHolds reads a tracefs trace of sched_switch events and returns the stops of the tasks
// whose comm is in comms: each runs from a switch away from the task in the traced state
// ("t") to the next switch to it. A trace whose buffer lost events is an error: its holds
// would be wrong.
func stopHolds(r io.Reader, comms map[string]bool) ([]stopHold, error) {
	type stopped struct {
		at   time.Duration
		comm string
	}
	var holds []stopHold
	open := map[int]stopped{}
	count := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := traceLost.FindStringSubmatch(l); m != nil && m[1] != m[2] {
			return nil, fmt.Errorf("the trace buffer lost events: %s", strings.TrimPrefix(l, "# "))
		}
		m := traceSwitch.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		sec, _ := strconv.Atoi(m[1])
		usec, _ := strconv.Atoi(m[2])
		at := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
		prev, _ := strconv.Atoi(m[4])
		next, _ := strconv.Atoi(m[6])
		if s, ok := open[next]; ok {
			delete(open, next)
			key := strconv.Itoa(next) + "/" + s.comm
			holds = append(holds, stopHold{pid: next, comm: s.comm, nth: count[key], held: at - s.at})
			count[key]++
		}
		if m[5] == "t" && comms[m[3]] {
			open[prev] = stopped{at, m[3]}
		}
	}
	return holds, sc.Err()
}

// TestStopHolds reads lines the kernel wrote (a fork+exec under the floor tracer, on this
// machine): a traced stop is held until the task runs again, counted per pid and comm; other
// tasks and other states (the parent's sleep in waitpid) are not stops; a trace that lost
// events is refused.
func TestStopHolds(t *testing.T) {
	const trace = `# tracer: nop
#
# entries-in-buffer/entries-written: 10/10   #P:2
#
          events-3635    [001] d..2. 50840.633673: sched_switch: prev_comm=events prev_pid=3635 prev_prio=120 prev_state=t ==> next_comm=events next_pid=3636 next_prio=120
            true-3636    [001] d..2. 50840.633750: sched_switch: prev_comm=events prev_pid=3636 prev_prio=120 prev_state=t ==> next_comm=events next_pid=3635 next_prio=120
          events-3635    [001] d..2. 50840.633790: sched_switch: prev_comm=events prev_pid=3635 prev_prio=120 prev_state=S ==> next_comm=events next_pid=3636 next_prio=120
            true-3636    [001] d..2. 50840.634600: sched_switch: prev_comm=true prev_pid=3636 prev_prio=120 prev_state=t ==> next_comm=floor next_pid=3634 next_prio=120
           floor-3634    [001] d..2. 50840.634615: sched_switch: prev_comm=floor prev_pid=3634 prev_prio=120 prev_state=S ==> next_comm=true next_pid=3636 next_prio=120
            true-3636    [001] d..2. 50840.635000: sched_switch: prev_comm=true prev_pid=3636 prev_prio=120 prev_state=t ==> next_comm=floor next_pid=3634 next_prio=120
           floor-3634    [001] d..2. 50840.635012: sched_switch: prev_comm=floor prev_pid=3634 prev_prio=120 prev_state=S ==> next_comm=true next_pid=3636 next_prio=120
           floor-3634    [000] d..2. 50840.635100: sched_switch: prev_comm=floor prev_pid=3634 prev_prio=120 prev_state=t ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       [000] d..2. 50840.635200: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=floor next_pid=3634 next_prio=120
          <idle>-0       [001] d..2. 50840.635300: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=events next_pid=3635 next_prio=120
`
	holds, err := stopHolds(strings.NewReader(trace), map[string]bool{"events": true, "true": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []stopHold{
		{3635, "events", 0, 77 * time.Microsecond}, // the parent's fork event
		{3636, "events", 0, 40 * time.Microsecond}, // the child's first stop, until 633790 (not the S of its parent)
		{3636, "true", 0, 15 * time.Microsecond},   // the exec
		{3636, "true", 1, 12 * time.Microsecond},   // the exit
	}
	if fmt.Sprint(holds) != fmt.Sprint(want) {
		t.Errorf("holds\n%v\nwant\n%v", holds, want)
	}
	lost := strings.Replace(trace, "10/10", "10/12", 1)
	if _, err := stopHolds(strings.NewReader(lost), map[string]bool{"true": true}); err == nil {
		t.Error("a trace that lost events was read")
	}
}
