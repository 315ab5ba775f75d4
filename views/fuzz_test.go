package views

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views/viewtest"
)

// Replay files are untrusted: whatever events a file holds, every view must render without
// panicking, without an escape byte, and within its frame.
func FuzzRenderEvents(f *testing.F) {
	var all []string
	for _, e := range viewtest.Events() {
		b, _ := json.Marshal(e)
		all = append(all, string(b))
	}
	f.Add(strings.Join(all, "\n"))
	f.Add(`{"event":"matrix","pids":[1,1,2],"cells":[{"from":1,"to":9},{"from":2,"to":1,"vm_readv":{"predicted":true}}]}`)
	f.Add(`{"event":"process","pid":2,"ppid":3}` + "\n" + `{"event":"process","pid":3,"ppid":2,"comm":"\u001b[2J"}`)
	f.Add(`{"event":"crash","pid":1,"signal":"SIGSEGV","regs":{"r1":"0x1","x":"0x2"},"stack":[{}]}`)
	f.Add(`{"event":"thread","pid":1,"tid":1,"in_syscall":true,"trap":"0x3000","before":[{"name":"nip"}],"after":[{"name":"trap","value":"0x1"}]}`)
	st := Plain()
	f.Fuzz(func(t *testing.T, data string) {
		s := sessions.NewState()
		for _, line := range strings.Split(data, "\n") {
			var e sessions.Event
			if json.Unmarshal([]byte(line), &e) == nil {
				s.Apply(e)
			}
		}
		for _, size := range [][2]int{{80, 24}, {31, 9}} {
			w, h := size[0], size[1]
			host, m := MatrixFor(s, "")
			ix := IndexMatrix(host, m)
			outs := []string{
				Header(st, s, sessions.Header{}, Status{}, w),
				Processes(st, s, ProcRows(s, "tree", ""), ProcOptions{Width: w, Height: h, Cursor: 3}),
				Processes(st, s, ProcRows(s, "crashes", "1"), ProcOptions{Width: w, Height: h}),
				Matrix(st, s, ix, MatrixOptions{Width: w, Height: h, Row: 1, Col: 2}),
				Matrix(st, s, ix, MatrixOptions{Width: w, Height: h, Group: 1, Expanded: map[int]bool{1: true}}),
				Crashes(st, s, CrashOptions{Width: w, Height: h}),
				Crashes(st, s, CrashOptions{Width: w, Height: h, Detail: true, Scroll: 2}),
				Threads(st, s, ThreadOptions{Width: w, Height: h, Cursor: 1}),
				Log(st, s, LogOptions{Width: w, Height: h, Filter: "a", Cursor: 1}),
			}
			for _, g := range s.Groups {
				outs = append(outs, RenderExplanation(st, ExplainGroup(g), w, h))
			}
			for _, tr := range ThreadList(s) {
				outs = append(outs, RenderExplanation(st, ExplainThread(tr.Thread), w, h))
			}
			for i, o := range outs {
				if strings.ContainsAny(o, "\x1b\x07") {
					t.Fatalf("output %d carries an escape: %q", i, o)
				}
			}
		}
	})
}
