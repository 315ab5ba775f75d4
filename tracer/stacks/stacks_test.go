package stacks

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/procfs"
	"github.com/crashtui/crashtui/tracer/tracertest"
)

// TestStacksGo samples a Go program on whichever architecture runs it (the QEMU stages run
// it on real arm64 and ppc64le kernels, where Go keeps no frame pointers on ppc64le and the
// unwinder needs the binary's .debug_frame): the goroutine blocked in a raw read is on its
// thread's stack under main.main, stuck; the spinning goroutine is found; both processes
// are untraced and running afterwards.
func TestStacksGo(t *testing.T) {
	bin := tracertest.GuestProgram(t, "CRASHTUI_CRASHPROG", "crashprog")
	a := tracertest.StartPiped(t, 0, bin, "hang")
	b := tracertest.StartPiped(t, a.PID, bin, "hang")
	tr := tracer.New(tracer.Options{})
	sampler := New(tr, nil)
	t.Cleanup(func() { tr.Close() })
	job, _ := tracer.ParseJob("pgid:" + strconv.Itoa(a.PID))
	if res, err := tr.Attach(job); err != nil || res.Processes != 2 {
		t.Fatalf("attach: %+v %v", res, err)
	}
	var all []sessions.StampedSample
	for k := 1; k <= 3; k++ {
		if k > 1 {
			time.Sleep(100 * time.Millisecond)
		}
		ss, st, err := sampler.Sample(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Processes != 2 {
			t.Fatalf("sample %d: %d processes", k, st.Processes)
		}
		for _, s := range ss {
			all = append(all, sessions.StampedSample{Time: time.Now(), Sample: s})
		}
	}
	merged := sessions.MergeStacks(all, sessions.StackOptions{})
	var read, spin bool
	for _, c := range merged.Classes {
		var names []string
		for _, f := range c.Frames {
			names = append(names, f.Function)
		}
		path := strings.Join(names, " > ")
		if strings.Contains(path, "main.main > main.blockRead > syscall.Read") {
			read = c.Progress == sessions.Stuck && c.Count == 2 && c.Syscall == "read"
			if !read {
				t.Errorf("blocked class: %+v", c)
			}
		}
		if strings.Contains(path, "main.spin") {
			spin = true
		}
		t.Logf("class %d %s %s: %s", c.Class, c.Ranks, c.Progress, path)
	}
	if !read || !spin {
		t.Errorf("blocked read found %v, spinning goroutine found %v", read, spin)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{a.PID, b.PID} {
		if _, tp := procfs.TaskStatus(pid); tp != 0 {
			t.Errorf("pid %d still traced by %d", pid, tp)
		}
	}
}
