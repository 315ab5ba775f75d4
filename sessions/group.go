package sessions

import (
	"slices"
	"time"
)

// Group is the crashes that share a crash-site key: those of the events applied here, and
// those each reducer counted (its CrashGroup). Its members are kept in detail up to
// MaxGroupMembers; beyond that it keeps their count, rank set and hosts. Which crashes belong
// together and which is the representative is the tracer's decision (tracer/crash: it
// applies the core policy by them before the signal goes on), carried by each crash event
// (Key, Group, Representative); the State takes it from there and decides nothing of its
// own, but for the merge of many hosts' streams: the groups of one key are one group
// whatever the host.
type Group struct {
	// ID is the tracer's group number (Crash.Group) of the group's first crash. Each host's
	// tracer numbers its own groups, so in a view of many hosts a number another host's group
	// already has is replaced by the next free one (as is a missing one).
	ID           int
	Key          string
	Signal       string
	Module       string
	Offset       Hex
	Function     string
	AbortMessage string
	// Members are the first MaxGroupMembers crashes: this State's own first, then each
	// reducer's first few (MaxReducedMembers).
	Members []CrashRef
	// Representative is the member the tracer named representative (Crash.Representative,
	// the one whose core is kept); the zero ProcKey while none was, because no member could
	// have a core (each says why: NoCore).
	Representative ProcKey
	Core           *string
	// NoCore is why Core is nil: the reason every member without a core gave, or
	// NoCoreMixed when they gave different ones; empty once the group has a core.
	NoCore      NoCore
	Stack       []Frame
	First, Last time.Time

	// This State's own members.
	local       []CrashRef // the first MaxGroupMembers
	n           int
	ranks       RankAdder
	unranked    int
	hosts       map[string]bool
	pids        RankAdder // while every member is on one host (pidHost)
	pidHost     string
	pidsOne     bool
	rep         ProcKey
	repStack    []Frame
	core        *string
	noCore      NoCore
	first, last time.Time

	sub      map[string]*CrashGroup // by reducer
	subOrder []string
	ver      int
}

// MaxGroupMembers bounds the members a Group keeps in detail.
const MaxGroupMembers = 256

// add is one crash of this State's own events.
func (g *Group) add(h string, at time.Time, b Crash) {
	g.n++
	if g.n == 1 {
		g.repStack, g.first = b.Stack, at
		g.pidHost = h
	}
	if len(g.local) < MaxGroupMembers {
		g.local = append(g.local, CrashRef{Host: h, Crash: b, Time: at})
	}
	if b.Rank >= 0 {
		g.ranks.Add(int(b.Rank))
	} else {
		g.unranked++
	}
	g.hosts[h] = true
	if g.pidsOne && h != g.pidHost {
		g.pidsOne, g.pids = false, RankAdder{} // pids are per host: a set of them means nothing now
	}
	if g.pidsOne {
		g.pids.Add(b.PID)
	}
	// The crash the tracer calls the representative is the group's (each agent names one
	// per site; across hosts the latest named).
	if b.Representative {
		g.rep = ProcKey{h, b.PID}
		if len(b.Stack) > 0 {
			g.repStack = b.Stack
		}
	}
	switch {
	case b.Core != nil && g.core == nil:
		g.core, g.noCore = b.Core, ""
	case g.core == nil && b.NoCore != "" && g.noCore == "":
		g.noCore = b.NoCore
	case g.core == nil && b.NoCore != "" && g.noCore != b.NoCore:
		g.noCore = NoCoreMixed
	}
	g.last = at
	g.refresh()
}

// amend completes a member's crash with its line tables' answer (CrashLines).
func (g *Group) amend(h string, b CrashLines) {
	for i := range g.local {
		m := &g.local[i]
		if m.Host != h || m.Crash.PID != b.PID || m.Crash.TID != b.TID {
			continue
		}
		m.Crash.Function, m.Crash.File, m.Crash.Line, m.Crash.Stack = b.Function, b.File, b.Line, b.Stack
		if i == 0 {
			g.Function = b.Function // the group is named after its first crash
		}
		if g.rep == (ProcKey{h, b.PID}) && len(b.Stack) > 0 {
			g.repStack = b.Stack
		}
	}
	g.refresh()
}

// setSub is what reducer name says of the group now.
func (g *Group) setSub(name string, cg *CrashGroup) {
	if g.sub == nil {
		g.sub = map[string]*CrashGroup{}
	}
	if g.sub[name] == nil {
		g.subOrder = append(g.subOrder, name)
	}
	g.sub[name] = cg
	g.refresh()
}

// refresh derives the group's public fields from its own members and its reducers'.
func (g *Group) refresh() {
	g.Representative, g.Stack, g.Core, g.NoCore, g.First, g.Last = g.rep, g.repStack, g.core, g.noCore, g.first, g.last
	if len(g.sub) == 0 {
		g.Members = g.local
		return
	}
	g.Members = slices.Clone(g.local)
	for _, name := range g.subOrder {
		cg := g.sub[name]
		if g.Representative == (ProcKey{}) && cg.Representative.PID != 0 {
			g.Representative = ProcKey{cg.Representative.Host, cg.Representative.PID}
			g.Stack = cg.Stack
			if g.n == 0 {
				g.Function = cg.Function
			}
		}
		switch {
		case g.Core == nil && cg.Core != nil:
			g.Core, g.NoCore = cg.Core, ""
		case g.Core == nil && cg.NoCore != "" && g.NoCore == "":
			g.NoCore = cg.NoCore
		case g.Core == nil && cg.NoCore != "" && g.NoCore != cg.NoCore:
			g.NoCore = NoCoreMixed
		}
		if g.First.IsZero() || (!cg.First.IsZero() && cg.First.Before(g.First)) {
			g.First = cg.First
		}
		if cg.Last.After(g.Last) {
			g.Last = cg.Last
		}
		for _, m := range cg.Members {
			if len(g.Members) >= MaxGroupMembers {
				break
			}
			c := Crash{PID: m.PID, TID: m.TID, Rank: m.Rank, Code: m.Code, Signal: cg.Signal, Module: cg.Module,
				Offset: cg.Offset, Function: cg.Function, File: cg.File, Line: cg.Line, AbortMessage: cg.AbortMessage, Key: cg.Key}
			if m.Host == cg.Representative.Host && m.PID == cg.Representative.PID {
				c.Representative, c.Stack, c.Core, c.NoCore = true, cg.Stack, cg.Core, cg.NoCore
			}
			g.Members = append(g.Members, CrashRef{Host: m.Host, Crash: c, Time: m.Time})
		}
	}
}

// Count is the number of crashes in the group.
func (g *Group) Count() int {
	n := g.n
	for _, cg := range g.sub {
		n += cg.Count
	}
	return n
}

// Ranks are the ranks of its members.
func (g *Group) Ranks() RankSet {
	r := g.ranks.Set()
	for _, name := range g.subOrder {
		r = r.Union(g.sub[name].Ranks)
	}
	return r
}

// Unranked is how many of its members had no rank.
func (g *Group) Unranked() int {
	n := g.unranked
	for _, cg := range g.sub {
		n += cg.Unranked
	}
	return n
}

// Hosts are the named hosts of its members (events without a host are this machine's).
func (g *Group) Hosts() HostSet {
	var own []string
	for h := range g.hosts {
		own = append(own, h)
	}
	hs := HostSetOf(own...)
	for _, name := range g.subOrder {
		hs = hs.Union(g.sub[name].Hosts)
	}
	return hs
}

// PIDs are its members' pids when they are all on one host (pids are per host); false
// otherwise.
func (g *Group) PIDs() (RankSet, bool) {
	if len(g.sub) > 0 || !g.pidsOne || g.n == 0 {
		return RankSet{}, false
	}
	return g.pids.Set(), true
}

// applyReduced applies a reducer's snapshot; name is the reducer (the event's Host).
func (s *State) applyReduced(name string, at time.Time, b Body) {
	switch b := b.(type) {
	case Hosts:
		sub := s.sub(name)
		for _, hc := range b.Hosts {
			old := sub.hosts[hc.Host]
			s.NProcs += hc.Processes - old.Processes
			s.Exits += hc.Exits - old.Exits
			s.Crashes += hc.Crashes - old.Crashes
			s.NHandled += hc.Handled - old.Handled
			s.NErrors += hc.Errors - old.Errors
			sub.hosts[hc.Host] = hc
			s.ver++
			sub.hostVer[hc.Host] = s.ver
		}
	case CrashGroup:
		cg := b
		g := s.group(cg.Group, cg.Key, cg.Signal, cg.Module, cg.Offset, cg.Function, cg.AbortMessage, cg.First)
		g.setSub(name, &cg)
		s.sub(name)
		s.ver++
		g.ver = s.ver
	case StackClasses:
		c := b
		s.sub(name).classes = &c
		s.stacksVer = s.Seq
	case MatrixCounts:
		sub := s.sub(name)
		for _, m := range b.Hosts {
			sub.matrix[m.Host] = m
			s.ver++
			sub.matrixVer[m.Host] = s.ver
		}
	case CheckpointCounts:
		sub := s.sub(name)
		for _, c := range b.Hosts {
			sub.ckpt[c.Host] = c
			s.ver++
			sub.ckptVer[c.Host] = s.ver
		}
	case Lost:
		s.Lost = s.Lost.Union(b.Hosts)
		s.lost = append(s.lost, b)
		s.ver++
		for _, h := range b.Hosts.Hosts() {
			if a := s.hosts[h]; a != nil {
				a.ver = s.ver
			}
			for _, sub := range s.subs {
				if _, ok := sub.hosts[h]; ok {
					sub.hostVer[h] = s.ver
				}
			}
		}
	}
}

func (s *State) sub(name string) *subtree {
	t := s.subs[name]
	if t == nil {
		t = &subtree{hosts: map[string]HostCount{}, hostVer: map[string]int{}, matrix: map[string]HostMatrix{},
			matrixVer: map[string]int{}, ckpt: map[string]HostCheckpoint{}, ckptVer: map[string]int{}}
		s.subs[name] = t
		s.subList = append(s.subList, name)
	}
	return t
}
