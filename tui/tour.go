package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/views"
)

// The guided tour (crashtui demo --tour, replay --tour): it walks a newcomer through the
// four capabilities, one step per key: it switches to the tab, selects the cell, group,
// thread or class that matters and opens its explanation. esc leaves the tour; the session
// goes on. In a live demo a step that has nothing to show yet (no checkpoint, no stack
// sample) asks the tracer for it and shows itself when it is there.

type tourStep struct {
	title string
	tab   int
	// pick selects what the step is about and returns its explanation, nil when the
	// session has nothing for it yet.
	pick func(m *Model) *views.Explanation
	// fetch, in a live session, asks for what pick needs (a checkpoint, a sample).
	fetch func(m *Model) tea.Cmd
	// wait says what the step waits for when pick has nothing.
	wait string
}

var tourSteps = []tourStep{
	{title: "the job", tab: tabProcs, pick: func(m *Model) *views.Explanation {
		m.proc.cursor = 0
		procs, threads := 0, 0
		for _, p := range m.state.Procs {
			procs++
			threads += max(p.Threads, 1)
		}
		if procs == 0 {
			return nil
		}
		return &views.Explanation{Title: "a whole job under one debugger",
			What: fmt.Sprintf("This session holds %s with %s: every process of the job, seized with ptrace without its cooperation. The tour shows, in four steps, what crashtui knows about them.",
				views.Count(procs, "process", "processes"), views.Count(threads, "thread", "threads")),
			Rule:  "crashtui attaches with PTRACE_SEIZE (no stop), follows every fork, clone and exec, and stops a process only briefly and one at a time; on quit it detaches and the job runs on.",
			Story: "The tabs are the four questions a whole job raises: 2 who can read whose memory, 3 which crashes are the same crash, 4 what a checkpoint must restore, 5 where every rank is now; 1 lists the processes and 6 every event.",
		}
	}, wait: "the job's processes"},
	{title: "who can read whose memory", tab: tabMatrix, pick: func(m *Model) *views.Explanation {
		x := m.mx
		x.refresh(m)
		if x.ix == nil {
			return nil
		}
		units := x.units(m)
		for i := range units {
			for j := range units {
				if c := x.ix.PairCell(units[i], units[j]); c != nil && c.Reason != nil && i != j {
					x.row, x.col = i, j
					return x.explain(m)
				}
			}
		}
		if len(units) > 1 {
			x.row, x.col = 0, 1
			return x.explain(m)
		}
		return nil
	}, fetch: func(m *Model) tea.Cmd { return m.ctrlCmd("measure", m.ctrl.Measure) }, wait: "the access matrix"},
	{title: "crashes grouped by site", tab: tabCrashes, pick: func(m *Model) *views.Explanation {
		if len(m.state.Groups) == 0 {
			return nil
		}
		best := m.state.Groups[0]
		for _, g := range m.state.Groups {
			if g.Count() > best.Count() {
				best = g
			}
		}
		m.crash.show(m, best.ID, false)
		return m.crash.explain(m)
	}, wait: "a crash (the demo's ranks 4 and 5 crash after 4 and 6 seconds)"},
	{title: "syscall restart state at a checkpoint", tab: tabThreads, pick: func(m *Model) *views.Explanation {
		ts := views.ThreadList(m.state)
		for i, t := range ts {
			if t.InSyscall && t.Code != "" {
				m.thr.cursor, m.thr.following, m.thr.detail = i, true, false
				return m.thr.explain(m)
			}
		}
		return nil
	}, fetch: func(m *Model) tea.Cmd { return m.checkpoint("correct") }, wait: "a simulated checkpoint"},
	{title: "where every rank is now", tab: tabStacks, pick: func(m *Model) *views.Explanation {
		s := m.stk
		s.refresh(m)
		lines := s.lines()
		want := 0
		if s.merged.Culprit != nil {
			want = s.merged.Culprit.Class
		}
		for i, l := range lines {
			if len(l.Node.Classes) == 1 && (want == 0 || l.Node.Classes[0] == want) {
				s.cursor = i
				return s.explain(m)
			}
		}
		return nil
	}, fetch: func(m *Model) tea.Cmd { return m.ctrlCmd("stack sample", m.ctrl.Sample) }, wait: "a stack sample"},
}

// startTour begins the tour at its first step.
func (m *Model) startTour() tea.Cmd {
	m.tour = 0
	return m.tourShow()
}

// tourShow shows the current step: its explanation, or what it waits for (asking a live
// tracer for it).
func (m *Model) tourShow() tea.Cmd {
	if m.tour < 0 || m.tour >= len(tourSteps) {
		m.tour = -1
		m.overlay = noOverlay
		return nil
	}
	st := tourSteps[m.tour]
	m.tab = st.tab
	m.normalize()
	head := fmt.Sprintf("Tour %d/%d · %s", m.tour+1, len(tourSteps), st.title)
	ex := st.pick(m)
	m.tourWaiting = ex == nil
	var cmd tea.Cmd
	if ex == nil {
		e := views.Explanation{Title: head, What: "Waiting for " + st.wait + "."}
		if st.fetch != nil && m.live() && !m.tourFetched {
			m.tourFetched = true
			e.What = "Asking the tracer for " + st.wait + "…"
			cmd = st.fetch(m)
		} else if !m.live() {
			e.What = "Nothing for this step in this session (it shows " + st.wait + "): any key goes on."
		}
		ex = &e
	} else {
		e := *ex
		e.Title = head + " — " + e.Title
		ex = &e
	}
	ex.Hint = "any key: next step · esc: leave the tour"
	if m.tour == len(tourSteps)-1 {
		ex.Hint = "any key: end of the tour · esc: leave it"
	}
	m.explanation, m.explainFrom, m.overlay = *ex, 0, explainOverlay
	return cmd
}

// tourKey handles a key while the tour shows a step: esc leaves the tour, the scroll keys
// scroll, anything else goes to the next step.
func (m *Model) tourKey(msg tea.KeyMsg) tea.Cmd {
	if msg.Type == tea.KeyEsc {
		m.tour, m.overlay = -1, noOverlay
		m.message = "tour left: the session goes on (? for the keys)"
		return nil
	}
	if d := m.delta(msg); d != 0 && msg.Type != tea.KeySpace {
		m.explainFrom = max(0, m.explainFrom+d)
		_, m.explainFrom = views.RenderExplanationFrom(m.st, m.explanation, m.width, m.bodyH(), m.explainFrom)
		return nil
	}
	m.tour++
	m.tourFetched = false
	return m.tourShow()
}
