package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// Status is what the header says about the session beyond the State: how it is driven.
type Status struct {
	Mode      string // attach, run, demo, replay
	Recording string // path of the --record file, "" when off
	Finished  bool   // the tracer closed the event stream (the job ended)
	Replay    *ReplayStatus
	Message   string // the last controller result or error
}

// ReplayStatus is the player's position for the header.
type ReplayStatus struct {
	Pos, Len     time.Duration
	Speed        float64
	Paused, Done bool
	Index, Total int
}

// Header is the two header lines: the job and the counts.
func Header(st *Styles, s *sessions.State, h sessions.Header, status Status, width int) string {
	job, arch, kernel := h.Job, h.Arch, h.Kernel
	if s.Session.Job != "" {
		job = s.Session.Job
	}
	if s.Session.Arch != "" {
		arch = s.Session.Arch
	}
	if s.Session.Kernel != "" {
		kernel = s.Session.Kernel
	}
	mode := status.Mode
	if mode == "" {
		mode = "live"
	}
	left := st.Title.Render("crashtui") + " " + st.Bold.Render(sessions.Sanitize(mode))
	if job != "" {
		left += "  job " + sessions.Sanitize(job)
	}
	if arch != "" || kernel != "" {
		left += "  " + st.Dim.Render(strings.TrimSpace(sessions.Sanitize(arch)+" "+sessions.Sanitize(kernel)))
	}
	var right []string
	switch {
	case status.Replay != nil:
		r := status.Replay
		state := "▶"
		if r.Paused {
			state = "⏸"
		}
		if r.Done {
			state = "■ end"
		}
		right = append(right, fmt.Sprintf("%s %s/%s ×%g [%d/%d]", state, clock(r.Pos), clock(r.Len), r.Speed, r.Index, r.Total))
	case status.Finished:
		right = append(right, st.Warn.Render("job finished"))
	default:
		right = append(right, st.Good.Render("● live"))
	}
	if status.Recording != "" {
		right = append(right, st.Bad.Render("⏺")+" "+sessions.Sanitize(status.Recording))
	}
	line1 := joinLR(left, strings.Join(right, "  "), width)

	procs, threads := s.Live()
	parts := []string{
		fmt.Sprintf("procs %d/%d", procs, s.NProcs), // every host's, counted beyond those kept in detail
		fmt.Sprintf("threads %d", threads),
	}
	crash := fmt.Sprintf("crashes %d in %s", s.Crashes, Count(len(s.Groups), "group", "groups"))
	if s.Crashes > 0 {
		crash = st.Bad.Render(crash)
	}
	parts = append(parts, crash, fmt.Sprintf("handled %d", s.NHandled), fmt.Sprintf("exits %d", s.Exits))
	if len(s.Errors) > 0 {
		parts = append(parts, st.Warn.Render(fmt.Sprintf("errors %d", len(s.Errors))))
	}
	line2 := strings.Join(parts, " · ")
	if status.Message != "" {
		line2 = joinLR(line2, st.Info.Render(sessions.Sanitize(status.Message)), width)
	}
	return cut(line1, width) + "\n" + cut(line2, width)
}

// joinLR puts right at the right edge; when both do not fit, left is cut: the right side
// (live, the replay's position, job finished) is what changes and must stay in view.
func joinLR(left, right string, width int) string {
	rw := lipglossWidth(right)
	if rw+2 >= width {
		return cut(right, width)
	}
	if lipglossWidth(left)+2+rw > width {
		left = cut(left, width-rw-2)
	}
	return left + strings.Repeat(" ", width-lipglossWidth(left)-rw) + right
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// Tab names, in the order of the number keys; Output (the ranks' output) is there only in a
// session that started the ranks (run).
var TabNames = []string{"Processes", "Matrix", "Crashes", "Threads", "Stacks", "Log", "Output"}

var tabShort = []string{"Proc", "Matrix", "Crash", "Thr", "Stack", "Log", "Out"}

// TabSpan is the columns a tab occupies in the tab bar, for mouse clicks.
type TabSpan struct{ From, To int }

// Tabs is the tab bar of the first n tabs; badges are appended to names (crash count, thread
// count). The full names are used when they fit, else short ones, else short ones without
// badges.
func Tabs(st *Styles, s *sessions.State, active, n, width int) (string, []TabSpan) {
	var bar string
	var spans []TabSpan
	for _, try := range []struct {
		names  []string
		badges bool
	}{{TabNames[:n], true}, {tabShort[:n], true}, {tabShort[:n], false}} {
		bar, spans = tabBar(st, s, active, try.names, try.badges)
		if spans[len(spans)-1].To <= width {
			break
		}
	}
	return cut(bar, width), spans
}

func tabBar(st *Styles, s *sessions.State, active int, names []string, badges bool) (string, []TabSpan) {
	var b strings.Builder
	var spans []TabSpan
	x := 0
	for i, n := range names {
		label := fmt.Sprintf("%d %s", i+1, n)
		switch {
		case !badges:
		case i == 2 && len(s.Groups) > 0:
			label += fmt.Sprintf(" (%d)", len(s.Groups))
		case i == 3 && len(s.Threads) > 0:
			label += fmt.Sprintf(" (%d)", len(s.Threads))
		}
		var r string
		if i == active {
			r = " " + st.TabOn.Render("["+label+"]")
		} else {
			r = st.TabOff.Render("  " + label + " ")
		}
		w := lipglossWidth(r)
		spans = append(spans, TabSpan{x, x + w})
		x += w
		b.WriteString(r)
	}
	return b.String(), spans
}

// Count is n with the singular or plural noun: "1 group", "2 groups".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
