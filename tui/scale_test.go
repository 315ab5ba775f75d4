package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
	"github.com/crashtui/crashtui/views/viewtest"
)

// hostAsker is the recorder that can also ask a host for its processes, as a tree of views
// launched by crashtui attach slurm:ID does (treeController).
type hostAsker struct{ recorder }

func (h *hostAsker) AskProcesses(host string) error { return h.add("processes " + host) }

// scaleEvents are what a root of reducing views receives: one reducer's changes (sessions'
// own Reducer over the agents' events of three hosts, 100 ranks each, 100 of them crashed at
// one site, all in one barrier), never a task's event.
func scaleEvents(t *testing.T) (evs []sessions.Event, agents *sessions.State) {
	t.Helper()
	agents = sessions.NewState()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for h := 1; h <= 3; h++ {
		host := fmt.Sprintf("n%03d", h)
		for i := 0; i < 100; i++ {
			pid, rank := 1000+i, sessions.Rank((h-1)*100+i)
			agents.Apply(sessions.Event{Time: at, Host: host, Body: sessions.Process{PID: pid, PPID: 1, Rank: rank, Comm: "solver"}})
			agents.Apply(sessions.Event{Time: at, Host: host, Body: sessions.Sample{Seq: 1, PID: pid, Rank: rank,
				Threads: []sessions.ThreadSample{{TID: pid, State: "S", Held: true, Syscall: "futex", Frames: []sessions.Frame{
					{PC: 0x1100, Module: "/bin/solver", Offset: 0x1100, Function: "MPI_Barrier"},
					{PC: 0x1000, Module: "/bin/solver", Offset: 0x1000, Function: "main"}}}}}})
			if rank%3 == 0 {
				c := sessions.Crash{PID: pid, TID: pid, Rank: rank, Exe: "/bin/solver", Signal: "SIGSEGV", Module: "/bin/solver",
					Offset: 0x1234, Function: "halo", Group: 1, Representative: i == 0}
				c.Key = sessions.SiteKey(c)
				agents.Apply(sessions.Event{Time: at, Host: host, Body: c})
			}
		}
	}
	return sessions.NewReducer(agents, "view00").Changes(at, true), agents
}

// scaleModel is a live model fed evs whose channel stays open (more can come with feed).
func scaleModel(t *testing.T, evs []sessions.Event, ctrl Controller, w, h int) (*Model, func(...sessions.Event)) {
	t.Helper()
	ch := make(chan sessions.Event, 64)
	m := NewModel(Options{Events: ch, Header: viewtest.Header(), Mode: "view", Control: ctrl}, views.Plain())
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	cmd := m.Init()
	feed := func(es ...sessions.Event) {
		want := m.State().Seq + len(es)
		for _, e := range es {
			ch <- e
		}
		for m.State().Seq < want {
			_, cmd = m.Update(cmd())
		}
	}
	feed(evs...)
	return m, feed
}

// TestRootAtScale: a root's Processes is a row per host from the reducers' counts, enter asks
// that host's agent (through the Controller) for its processes and shows its answer, and
// Crashes and Stacks give rank ranges and how many hosts, from counts and rank sets.
func TestRootAtScale(t *testing.T) {
	evs, agents := scaleEvents(t)
	for _, e := range evs {
		switch e.Body.(type) {
		case sessions.Process, sessions.Sample, sessions.Crash:
			t.Fatalf("a reducer passed a task's event up: %+v", e)
		}
	}
	ctrl := &hostAsker{}
	m, feed := scaleModel(t, evs, ctrl, 100, 30)
	screen := func() string { return ansi.Strip(m.View()) }

	press(t, m, "1")
	s := screen()
	for _, want := range []string{"procs 300/300", "300 processes on 3 hosts, by host", "n001", "n002", "n003", "0-99", "100-199", "200-299"} {
		if !strings.Contains(s, want) {
			t.Errorf("Processes at scale lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "solver") {
		t.Errorf("Processes at scale lists tasks:\n%s", s)
	}
	press(t, m, "down", "enter")
	if got := ctrl.Calls(); !slices.Equal(got, []string{"processes n002"}) {
		t.Fatalf("enter on n002 asked %v", got)
	}
	if s := screen(); !strings.Contains(s, "n002 · asking its agent for its processes") {
		t.Errorf("no word that n002 was asked:\n%s", s)
	}
	// The agent's answer comes up the tree.
	feed(sessions.Event{Time: time.Now(), Host: "n002", Body: agents.HostProcessesOf("n002")})
	s = screen()
	for _, want := range []string{"n002 · 100 processes", "RANK", " 101  1001    1 alive     1 solver", " 102  1002    1 crashed   1 solver"} {
		if !strings.Contains(s, want) {
			t.Errorf("n002's processes lack %q:\n%s", want, s)
		}
	}
	press(t, m, "esc")
	if s := screen(); !strings.Contains(s, "by host") {
		t.Errorf("esc did not go back to the hosts:\n%s", s)
	}

	press(t, m, "3")
	if s := screen(); !strings.Contains(s, "0-297/3 on 3 hosts") {
		t.Errorf("Crashes at scale lacks the group's rank set and hosts:\n%s", s)
	}
	press(t, m, "5")
	if s := screen(); !strings.Contains(s, "0-299 on 3 hosts") {
		t.Errorf("Stacks at scale lacks the class's rank range and hosts:\n%s", s)
	}
	if n := len(m.State().Procs); n != 0 {
		t.Errorf("the root keeps %d processes in detail, want none", n)
	}
}
