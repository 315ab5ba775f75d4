package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// The guided tour (crashtui demo --tour, replay --tour, or T in any session): it walks a
// newcomer through the four capabilities, one step per key: it switches to the tab, selects
// the cell, group, thread or class that matters and explains it in a band at the bottom of
// the screen, so that what it selected stays in view above. esc leaves the tour; the session
// goes on. In a live session a step that has nothing to show yet (no checkpoint, no stack
// sample) asks the tracer for it and shows itself when it is there. The band's text is made
// when it is drawn, from the State and the selection as they are then: its numbers are the
// header's.

type tourStep struct {
	title string
	tab   int
	// pick selects what the step is about; false when the session has nothing for it yet.
	pick func(m *Model) bool
	// text is the step's explanation; nil: the tab's own explanation of what pick selected.
	text func(m *Model) *views.Explanation
	// fetch, in a live session, asks for what pick needs (a checkpoint, a sample).
	fetch func(m *Model) tea.Cmd
	// wait says what the step waits for when pick has nothing.
	wait string
}

var tourSteps = []tourStep{
	{title: "the job", tab: tabProcs, pick: func(m *Model) bool {
		m.proc.det, m.proc.cursor = nil, 0
		return len(m.state.Procs) > 0
	}, text: func(m *Model) *views.Explanation {
		alive, threads := m.state.Live()
		all := len(m.state.Procs)
		held := fmt.Sprintf("%s, %d of them running, with %s", views.Count(all, "process", "processes"), alive,
			views.Count(threads, "thread", "threads"))
		if alive == all {
			held = fmt.Sprintf("%s with %s", views.Count(all, "process", "processes"), views.Count(threads, "thread", "threads"))
		}
		return &views.Explanation{Title: "a whole job under one debugger",
			What:  "This session holds " + held + ": every process of the job, seized with ptrace without its cooperation. The tour shows, in four steps, what crashtui knows about them.",
			Rule:  "crashtui attaches with PTRACE_SEIZE (no stop), follows every fork, clone and exec, and stops a process only briefly and one at a time; on quit it detaches and the job runs on.",
			Story: "The tabs are the four questions a whole job raises: 2 who can read whose memory, 3 which crashes are the same crash, 4 what a checkpoint must restore, 5 where every rank is now; 1 lists the processes and 6 every event.",
		}
	}, wait: "the job's processes"},
	{title: "who can read whose memory", tab: tabMatrix, pick: func(m *Model) bool {
		x := m.mx
		x.refresh(m)
		if x.ix == nil {
			return false
		}
		units := x.units(m)
		for i := range units {
			for j := range units {
				if c := x.ix.PairCell(units[i], units[j]); c != nil && c.Reason != nil && i != j {
					x.row, x.col = i, j
					return true
				}
			}
		}
		if len(units) > 1 {
			x.row, x.col = 0, 1
			return true
		}
		return false
	}, fetch: func(m *Model) tea.Cmd { return m.ctrlCmd("measure", m.ctrl.Measure) }, wait: "the access matrix"},
	{title: "crashes grouped by site", tab: tabCrashes, pick: func(m *Model) bool {
		if len(m.state.Groups) == 0 {
			return false
		}
		best := m.state.Groups[0]
		for _, g := range m.state.Groups {
			if g.Count() > best.Count() {
				best = g
			}
		}
		m.crash.show(m, best.ID, false)
		return true
	}, wait: "a crash (the demo's ranks 4 and 5 crash after 4 and 6 seconds)"},
	{title: "syscall restart state at a checkpoint", tab: tabThreads, pick: func(m *Model) bool {
		t := m.thr
		t.filter, t.sort, t.reverse, t.following, t.detail = "", 0, false, true, false
		for i, th := range t.rows(m) {
			if th.InSyscall && th.Code != "" {
				t.cursor = i
				return true
			}
		}
		return false
	}, fetch: func(m *Model) tea.Cmd { return m.checkpoint(sessions.PolicyCorrect) }, wait: "a simulated checkpoint"},
	{title: "where every rank is now", tab: tabStacks, pick: func(m *Model) bool {
		s := m.stk
		s.filter, s.sort, s.reverse, s.detail = "", 0, false, false
		s.refresh(m)
		want := tourClass(s.merged)
		for i, l := range s.lines() {
			if len(l.Node.Classes) == 1 && l.Node.Classes[0] == want {
				s.cursor = i // where the class's branch parts from the others
				return true
			}
		}
		return false
	}, fetch: func(m *Model) tea.Cmd { return m.ctrlCmd("stack sample", m.ctrl.Sample) }, wait: "a stack sample"},
}

// tourClass is the class the Stacks step explains: the deadlock's culprit when the merge found
// one, else the lone rank's class, else the smallest class of the program's own threads (the
// odd one out), never the majority the eye already sees.
func tourClass(st sessions.Stacks) int {
	if st.Culprit != nil {
		return st.Culprit.Class
	}
	if len(st.Classes) == 0 {
		return 0
	}
	for _, l := range st.Lone {
		for _, c := range st.Classes {
			for k, pid := range c.PIDs {
				if pid == l.PID && (len(c.Hosts) == 0 || c.Hosts[k] == l.Host) {
					return c.Class
				}
			}
		}
	}
	small := st.Classes[0] // the program's own threads' first: helpers are no odd one out
	for _, c := range st.Classes {
		if c.Count < small.Count && c.Role == "" {
			small = c
		}
	}
	return small.Class
}

// tourBandH is the height of the tour's band at the bottom of a body h lines high.
func tourBandH(h int) int { return max(min(10, h/2), 4) }

// startTour begins the tour at its first step. In a replay the session is presented whole:
// everything applied, the clock paused.
func (m *Model) startTour() tea.Cmd {
	if m.player != nil {
		m.seek(m.player.Length())
		m.player.SetPaused(m.now(), true)
		m.tickSeq++
	}
	m.overlay, m.tour, m.tourFetched = noOverlay, 0, false
	return m.tourShow()
}

// tourShow shows the current step: it selects what the step is about, or asks a live tracer
// for it.
func (m *Model) tourShow() tea.Cmd {
	if m.tour < 0 || m.tour >= len(tourSteps) {
		m.tour = -1
		return nil
	}
	st := tourSteps[m.tour]
	m.tab = st.tab
	m.normalize()
	m.tourWaiting = !st.pick(m)
	m.normalize()
	if m.tourWaiting && st.fetch != nil && m.live() && !m.tourFetched {
		m.tourFetched = true
		return st.fetch(m)
	}
	return nil
}

// tourExplanation is the band's text now: the step's, or the tab's own explanation of what
// the step selected, or what the step waits for.
func (m *Model) tourExplanation() views.Explanation {
	st := tourSteps[m.tour]
	head := fmt.Sprintf("Tour %d/%d · %s", m.tour+1, len(tourSteps), st.title)
	var ex *views.Explanation
	if !m.tourWaiting {
		if st.text != nil {
			ex = st.text(m)
		} else {
			ex = m.active().explain(m)
		}
	}
	var e views.Explanation
	switch {
	case ex != nil:
		e = *ex
		e.Title = head + " — " + e.Title
	case m.tourFetched && m.live():
		e = views.Explanation{Title: head, What: "Asking the tracer for " + st.wait + "…"}
	case m.live():
		e = views.Explanation{Title: head, What: "Waiting for " + st.wait + "."}
	default:
		e = views.Explanation{Title: head, What: "Nothing for this step in this session (it shows " + st.wait + "): any key goes on."}
	}
	e.Hint = "any key: next step · esc: leave the tour · j/k scroll"
	if m.tour == len(tourSteps)-1 {
		e.Hint = "any key: end of the tour · esc: leave it · j/k scroll"
	}
	return e
}

// tourKey handles a key while the tour runs: esc leaves it, the scroll keys scroll its band,
// anything else goes to the next step.
func (m *Model) tourKey(msg tea.KeyMsg) tea.Cmd {
	if msg.Type == tea.KeyEsc {
		m.tour = -1
		m.message = "tour left: the session goes on (T starts it again, ? for the keys)"
		return nil
	}
	if d := m.delta(msg); d != 0 && msg.Type != tea.KeySpace {
		m.tourFrom = max(0, m.tourFrom+d)
		_, m.tourFrom = views.TourBand(m.st, m.tourExplanation(), m.width, tourBandH(m.bodyH()), m.tourFrom)
		return nil
	}
	m.tour++
	m.tourFetched, m.tourFrom = false, 0
	if m.tour >= len(tourSteps) {
		m.tour = -1
		m.message = "end of the tour: the session goes on (T starts it again, ? for the keys)"
		return nil
	}
	return m.tourShow()
}
