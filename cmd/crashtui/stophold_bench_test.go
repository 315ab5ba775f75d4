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
//
// Beside the holds, from sched_wakeup and sched_migrate_task too: how long the tracer ran on
// a CPU where a task of the job waited, woken (oncpu). Where a woken task is queued on the
// CPU its tracer runs on (the kernel puts it on its waker's CPU or its own last one, and
// looks for an idle CPU only among those that share that CPU's cache: in a 2-vCPU guest that
// tells no cache topology, none), whatever the tracer does after a resume, before it sleeps
// again, is the job's time: a readlink of the exec'd program's /proc/PID/exe (28 µs, median,
// on a pid's first look), or a park of the loop goroutine (parkDue: an eventfd write to wake
// Go's netpoller, 25 µs). The floor sleeps at once (20-26 µs per fork+exec, against
// crashtui's 93-98 on 2026-12-07).
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
	tracerComm := map[string]string{"floor": "floor", "json": "crashtui"} // every thread's
	held := map[string][]float64{}                                        // µs per fork+exec, round by round
	exec1 := map[string][]float64{}
	onCPU := map[string][]float64{}
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
			sc := tr.stop(b, tracerComm[m])
			holds := sc.holds
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
			onCPU[m] = append(onCPU[m], float64(sc.tracerOnJobCPU.Microseconds())/n)
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
		b.ReportMetric(medianOf(onCPU[m]), m+"-oncpu-us/event")
	}
	b.ReportMetric(ratio(held), "json-held/floor")
	b.ReportMetric(ratio(exec1), "json-exec-held/floor")
	b.ReportMetric(ratio(onCPU), "json-oncpu/floor")
}

// traceInstance is a tracefs instance recording the scheduler's switches, wakeups and
// migrations: its own buffer, so that it neither reads nor disturbs anyone else's tracing.
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
		"events/sched/sched_switch/enable":       "1",
		"events/sched/sched_wakeup/enable":       "1",
		"events/sched/sched_migrate_task/enable": "1",
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

// stop stops recording and reads what it recorded of the job's tasks (comm events or true)
// and of the tracer (every thread of it named tracer).
func (tr *traceInstance) stop(b *testing.B, tracer string) schedTrace {
	tr.write(b, "tracing_on", "0")
	f, err := os.Open(filepath.Join(tr.dir, "trace"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc, err := readSched(f, map[string]bool{"events": true, "true": true}, tracer)
	if err != nil {
		b.Fatal(err)
	}
	return sc
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
	traceEvent   = regexp.MustCompile(`\[(\d+)\] \S+ +(\d+)\.(\d+): (sched_switch|sched_wakeup|sched_migrate_task): (.*)$`)
	traceSwitch  = regexp.MustCompile(`^prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+) next_prio=\d+$`)
	traceWakeup  = regexp.MustCompile(`^comm=(.*) pid=(\d+) prio=\d+ target_cpu=(\d+)$`)
	traceMigrate = regexp.MustCompile(`^comm=(.*) pid=(\d+) prio=\d+ orig_cpu=(\d+) dest_cpu=(\d+)$`)
	traceLost    = regexp.MustCompile(`^# entries-in-buffer/entries-written: (\d+)/(\d+)`)
)

// schedTrace is what a trace of the scheduler's events says of a job and its tracer.
type schedTrace struct {
	// holds are the job's ptrace stops.
	holds []stopHold
	// tracerOnJobCPU is how long the tracer ran on a CPU where a task of the job was waiting
	// to run: woken (most often by the tracer's own resume of it) and queued behind the
	// tracer. A tracer that goes on working after a resume, or a thread of it woken on the
	// CPU the job is queued on, takes this time from the job; one that sleeps at once
	// takes none. A stretch is counted once however many of the job's tasks wait.
	tracerOnJobCPU time.Duration
}

// readSched reads a tracefs trace of sched_switch, sched_wakeup and sched_migrate_task
// events: the stops of the tasks whose comm is in comms (each from a switch away from the
// task in the traced state, "t", to the next switch to it), and the time the tracer (every
// task named tracer) ran on a CPU such a task was queued on. A trace whose buffer lost
// events is an error: its figures would be wrong.
func readSched(r io.Reader, comms map[string]bool, tracer string) (schedTrace, error) {
	type stopped struct {
		at   time.Duration
		comm string
	}
	type cpuState struct {
		tracerRuns bool          // the task running there is the tracer
		waiting    int           // the job's tasks queued there, woken and not yet run
		since      time.Duration // when the two above last changed
	}
	var out schedTrace
	open := map[int]stopped{}
	count := map[string]int{}
	queued := map[int]int{} // a job's woken task: the CPU it waits on
	cpus := map[int]*cpuState{}
	// settle counts the time since the CPU's last change, then lets it change.
	settle := func(cpu int, at time.Duration) *cpuState {
		c := cpus[cpu]
		if c == nil {
			c = &cpuState{since: at}
			cpus[cpu] = c
		}
		if c.tracerRuns && c.waiting > 0 {
			out.tracerOnJobCPU += at - c.since
		}
		c.since = at
		return c
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := traceLost.FindStringSubmatch(l); m != nil && m[1] != m[2] {
			return schedTrace{}, fmt.Errorf("the trace buffer lost events: %s", strings.TrimPrefix(l, "# "))
		}
		e := traceEvent.FindStringSubmatch(l)
		if e == nil {
			continue
		}
		cpu, _ := strconv.Atoi(e[1])
		sec, _ := strconv.Atoi(e[2])
		usec, _ := strconv.Atoi(e[3])
		at := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
		switch e[4] {
		case "sched_switch":
			m := traceSwitch.FindStringSubmatch(e[5])
			if m == nil {
				continue
			}
			prev, _ := strconv.Atoi(m[2])
			next, _ := strconv.Atoi(m[5])
			c := settle(cpu, at)
			c.tracerRuns = m[4] == tracer
			if q, ok := queued[next]; ok {
				delete(queued, next)
				settle(q, at).waiting--
			}
			if s, ok := open[next]; ok {
				delete(open, next)
				key := strconv.Itoa(next) + "/" + s.comm
				out.holds = append(out.holds, stopHold{pid: next, comm: s.comm, nth: count[key], held: at - s.at})
				count[key]++
			}
			if m[3] == "t" && comms[m[1]] {
				open[prev] = stopped{at, m[1]}
			}
		case "sched_wakeup":
			m := traceWakeup.FindStringSubmatch(e[5])
			if m == nil || !comms[m[1]] {
				continue
			}
			pid, _ := strconv.Atoi(m[2])
			target, _ := strconv.Atoi(m[3])
			if _, ok := queued[pid]; !ok {
				queued[pid] = target
				settle(target, at).waiting++
			}
		case "sched_migrate_task":
			m := traceMigrate.FindStringSubmatch(e[5])
			if m == nil {
				continue
			}
			pid, _ := strconv.Atoi(m[2])
			if from, ok := queued[pid]; ok {
				to, _ := strconv.Atoi(m[4])
				settle(from, at).waiting--
				settle(to, at).waiting++
				queued[pid] = to
			}
		}
	}
	return out, sc.Err()
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
	sc, err := readSched(strings.NewReader(trace), map[string]bool{"events": true, "true": true}, "floor")
	if err != nil {
		t.Fatal(err)
	}
	holds := sc.holds
	want := []stopHold{
		{3635, "events", 0, 77 * time.Microsecond}, // the parent's fork event
		{3636, "events", 0, 40 * time.Microsecond}, // the child's first stop, until 633790 (not the S of its parent)
		{3636, "true", 0, 15 * time.Microsecond},   // the exec
		{3636, "true", 1, 12 * time.Microsecond},   // the exit
	}
	if fmt.Sprint(holds) != fmt.Sprint(want) {
		t.Errorf("holds\n%v\nwant\n%v", holds, want)
	}
	// The kernel pads the time to a column: on a machine up less than 10,000 s there are two
	// spaces before it (a fresh CI machine's trace read as no stops at all).
	young := strings.ReplaceAll(trace, ". 50840.", ".  4084.")
	if sc, err := readSched(strings.NewReader(young), map[string]bool{"events": true, "true": true}, "floor"); err != nil || len(sc.holds) != len(want) {
		t.Errorf("a trace of a machine up 4084 s: %d holds (%v), want %d", len(sc.holds), err, len(want))
	}
	lost := strings.Replace(trace, "10/10", "10/12", 1)
	if _, err := readSched(strings.NewReader(lost), map[string]bool{"true": true}, "floor"); err == nil {
		t.Error("a trace that lost events was read")
	}
}

// TestTracerOnJobCPU reads lines the kernel wrote under `crashtui run --json` (a fork+exec
// loop of events and true, on this machine): the time crashtui's threads ran on a CPU where a
// task of the job waited, woken. First, on CPU 0, crashtui resumes the parent and the child
// in turn, and the exec and exit stops of true: each time it goes on for a few µs after its
// wakeup of the task (PTRACE_CONT) before it sleeps; at 557130 two tasks wait at once (one
// stretch, counted once). Then, on CPU 1, it resumes the parent (23194) and the child
// (23202), runs the child, and the parent waits behind it until CPU 0's balancing takes it
// (sched_migrate_task): its wait there is the child's doing, not crashtui's, and crashtui's
// run on CPU 0 meanwhile (476496-476520) holds nothing of the job's.
func TestTracerOnJobCPU(t *testing.T) {
	const trace = `            true-23105   [000] d..2. 85952.556848: sched_switch: prev_comm=true prev_pid=23105 prev_prio=120 prev_state=Z ==> next_comm=crashtui next_pid=23098 next_prio=120
        crashtui-23098   [000] d..5. 85952.556864: sched_wakeup: comm=events pid=23100 prio=120 target_cpu=000
        crashtui-23098   [000] d..2. 85952.556871: sched_switch: prev_comm=crashtui prev_pid=23098 prev_prio=120 prev_state=S ==> next_comm=events next_pid=23100 next_prio=120
          events-23100   [000] dN.6. 85952.556895: sched_wakeup: comm=crashtui pid=23098 prio=120 target_cpu=000
          events-23100   [000] d..2. 85952.556896: sched_switch: prev_comm=events prev_pid=23100 prev_prio=120 prev_state=t ==> next_comm=crashtui next_pid=23098 next_prio=120
        crashtui-23098   [000] d..4. 85952.556904: sched_wakeup: comm=events pid=23100 prio=120 target_cpu=000
        crashtui-23098   [000] d..2. 85952.556907: sched_switch: prev_comm=crashtui prev_pid=23098 prev_prio=120 prev_state=S ==> next_comm=events next_pid=23100 next_prio=120
          events-23100   [000] dN.6. 85952.557051: sched_wakeup: comm=crashtui pid=23098 prio=120 target_cpu=000
          events-23100   [000] d..2. 85952.557053: sched_switch: prev_comm=events prev_pid=23100 prev_prio=120 prev_state=t ==> next_comm=crashtui next_pid=23098 next_prio=120
        crashtui-23098   [000] d..4. 85952.557064: sched_wakeup: comm=events pid=23100 prio=120 target_cpu=000
        crashtui-23098   [000] d..2. 85952.557069: sched_switch: prev_comm=crashtui prev_pid=23098 prev_prio=120 prev_state=S ==> next_comm=events next_pid=23106 next_prio=120
            true-23106   [000] dN.6. 85952.557119: sched_wakeup: comm=crashtui pid=23098 prio=120 target_cpu=000
            true-23106   [000] d..2. 85952.557120: sched_switch: prev_comm=events prev_pid=23106 prev_prio=120 prev_state=t ==> next_comm=crashtui next_pid=23098 next_prio=120
        crashtui-23098   [000] d..4. 85952.557130: sched_wakeup: comm=events pid=23106 prio=120 target_cpu=000
        crashtui-23098   [000] d..2. 85952.557133: sched_switch: prev_comm=crashtui prev_pid=23098 prev_prio=120 prev_state=S ==> next_comm=events next_pid=23100 next_prio=120
          events-23100   [000] d..2. 85952.557190: sched_switch: prev_comm=events prev_pid=23100 prev_prio=120 prev_state=S ==> next_comm=events next_pid=23106 next_prio=120
            true-23106   [000] dN.6. 85952.558254: sched_wakeup: comm=crashtui pid=23098 prio=120 target_cpu=000
            true-23106   [000] d..2. 85952.558255: sched_switch: prev_comm=true prev_pid=23106 prev_prio=120 prev_state=t ==> next_comm=crashtui next_pid=23098 next_prio=120
        crashtui-23098   [000] d..4. 85952.558289: sched_wakeup: comm=true pid=23106 prio=120 target_cpu=000
        crashtui-23098   [000] d..2. 85952.558306: sched_switch: prev_comm=crashtui prev_pid=23098 prev_prio=120 prev_state=S ==> next_comm=true next_pid=23106 next_prio=120
            true-23106   [000] dN.6. 85952.559324: sched_wakeup: comm=crashtui pid=23098 prio=120 target_cpu=000
            true-23106   [000] d..2. 85952.559326: sched_switch: prev_comm=true prev_pid=23106 prev_prio=120 prev_state=t ==> next_comm=crashtui next_pid=23098 next_prio=120
        crashtui-23098   [000] d..4. 85952.559339: sched_wakeup: comm=true pid=23106 prio=120 target_cpu=000
        crashtui-23098   [000] d..2. 85952.559380: sched_switch: prev_comm=crashtui prev_pid=23098 prev_prio=120 prev_state=S ==> next_comm=true next_pid=23106 next_prio=120
          events-23194   [001] d..2. 85972.475588: sched_switch: prev_comm=events prev_pid=23194 prev_prio=120 prev_state=t ==> next_comm=events next_pid=23202 next_prio=120
            true-23202   [001] d..2. 85972.475686: sched_switch: prev_comm=events prev_pid=23202 prev_prio=120 prev_state=t ==> next_comm=crashtui next_pid=23191 next_prio=120
        crashtui-23191   [001] d..4. 85972.475747: sched_wakeup: comm=events pid=23194 prio=120 target_cpu=001
        crashtui-23191   [001] d..4. 85972.475763: sched_wakeup: comm=events pid=23202 prio=120 target_cpu=001
        crashtui-23191   [001] d..2. 85972.475767: sched_switch: prev_comm=crashtui prev_pid=23191 prev_prio=120 prev_state=S ==> next_comm=events next_pid=23202 next_prio=120
          <idle>-0       [000] dNh4. 85972.476486: sched_wakeup: comm=crashtui pid=23185 prio=120 target_cpu=000
          <idle>-0       [000] d..2. 85972.476496: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=crashtui next_pid=23185 next_prio=120
        crashtui-23185   [000] d..2. 85972.476520: sched_switch: prev_comm=crashtui prev_pid=23185 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       [000] d.s2. 85972.476591: sched_migrate_task: comm=events pid=23194 prio=120 orig_cpu=1 dest_cpu=0
          <idle>-0       [000] d..2. 85972.476600: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=events next_pid=23194 next_prio=120
          events-23194   [000] d..2. 85972.476706: sched_switch: prev_comm=events prev_pid=23194 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
`
	sc, err := readSched(strings.NewReader(trace), map[string]bool{"events": true, "true": true}, "crashtui")
	if err != nil {
		t.Fatal(err)
	}
	// CPU 0: 556864-871, 904-907, 557064-069, 120-130-133 (two waiting), 558289-306, 559339-380;
	// CPU 1: 475747-763-767.
	if want := (7 + 3 + 5 + 10 + 3 + 17 + 41 + 20) * time.Microsecond; sc.tracerOnJobCPU != want {
		t.Errorf("crashtui on the job's CPU %v, want %v", sc.tracerOnJobCPU, want)
	}
	want := []stopHold{
		{23100, "events", 0, 11 * time.Microsecond},   // 556896-907
		{23100, "events", 1, 80 * time.Microsecond},   // 557053-133, behind the child
		{23106, "events", 0, 70 * time.Microsecond},   // 557120-190: the child's first stop
		{23106, "true", 0, 51 * time.Microsecond},     // its exec
		{23106, "true", 1, 54 * time.Microsecond},     // its exit
		{23202, "events", 0, 81 * time.Microsecond},   // 475686-767
		{23194, "events", 0, 1012 * time.Microsecond}, // 475588-476600, on the other CPU at last
	}
	if fmt.Sprint(sc.holds) != fmt.Sprint(want) {
		t.Errorf("holds\n%v\nwant\n%v", sc.holds, want)
	}
}
