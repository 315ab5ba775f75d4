package sessions

import (
	"sort"
	"time"
)

// Reducer turns a State into the reduced events a view above it applies (crashtui view
// --reduce): each call says what changed since the last one, as snapshots stamped with the
// reducer's name. The State is the one that applied the reducer's inputs (agents' events,
// or other reducers'), so a tree of reducers is States all the way up.
type Reducer struct {
	st   *State
	name string
	// Stacks are the options the classes are merged with.
	Stacks StackOptions

	sentHost   map[string]int // "\x00host" (own) or "reducer\x00host" -> ver sent
	sentGroup  map[string]int
	sentStacks int
	sentMatrix map[string]int
	sentCkpt   map[string]int
	sentLost   int
}

// NewReducer reduces st; its events carry Host name.
func NewReducer(st *State, name string) *Reducer {
	return &Reducer{st: st, name: name, Stacks: StackOptions{Cut: DefaultCutRE},
		sentHost: map[string]int{}, sentGroup: map[string]int{}, sentMatrix: map[string]int{}, sentCkpt: map[string]int{}, sentStacks: -1}
}

// Covers are the hosts the State knows of: its own inputs' and its reducers'.
func (s *State) Covers() HostSet {
	var hs []string
	for h := range s.hosts {
		hs = append(hs, h)
	}
	cov := HostSetOf(hs...)
	for _, name := range s.subList {
		var sub []string
		for h := range s.subs[name].hosts {
			sub = append(sub, h)
		}
		cov = cov.Union(HostSetOf(sub...))
	}
	return cov.Union(s.Lost)
}

// Changes are the reduced events of what changed since the last call (everything, the first
// time), the hosts' counts last. Stack classes, a merge of every sample, only when stacks is
// true.
func (r *Reducer) Changes(at time.Time, stacks bool) []Event {
	s := r.st
	var out []Event
	ev := func(b Body) { out = append(out, Event{Time: at, Host: r.name, Body: b}) }
	covers := s.Covers()

	for _, g := range s.Groups {
		if g.ver <= r.sentGroup[g.Key] {
			continue
		}
		r.sentGroup[g.Key] = g.ver
		cg := CrashGroup{Group: g.ID, Key: g.Key, Signal: g.Signal, Module: g.Module, Offset: g.Offset, Function: g.Function,
			AbortMessage: g.AbortMessage, Count: g.Count(), Ranks: g.Ranks(), Unranked: g.Unranked(), Hosts: g.Hosts(),
			Members: []Member{}, Core: g.Core, NoCore: g.NoCore, Stack: g.Stack, First: g.First, Last: g.Last, Covers: covers,
			Representative: Member{Host: g.Representative.Host, PID: g.Representative.PID, Rank: NoRank}}
		for i, m := range g.Members {
			if i == 0 {
				cg.File, cg.Line = m.Crash.File, m.Crash.Line
			}
			if i < MaxReducedMembers {
				cg.Members = append(cg.Members, memberOf(m))
			}
			if m.Host == g.Representative.Host && m.Crash.PID == g.Representative.PID {
				cg.Representative = memberOf(m)
			}
		}
		ev(cg)
	}

	if stacks && s.stacksVer > r.sentStacks {
		r.sentStacks = s.stacksVer
		sc := s.StackClasses(r.Stacks)
		sc.Covers = covers
		ev(sc)
	}

	var mats []HostMatrix
	for h, m := range s.Matrix {
		if v := s.matrixVer[h]; v > r.sentMatrix["\x00"+h] {
			r.sentMatrix["\x00"+h] = v
			mats = append(mats, matrixCounts(h, m))
		}
	}
	for _, name := range s.subList {
		sub := s.subs[name]
		for h, v := range sub.matrixVer {
			if k := name + "\x00" + h; v > r.sentMatrix[k] {
				r.sentMatrix[k] = v
				mats = append(mats, sub.matrix[h])
			}
		}
	}
	if len(mats) > 0 {
		sort.Slice(mats, func(i, j int) bool { return mats[i].Host < mats[j].Host })
		ev(MatrixCounts{Hosts: mats})
	}

	var cks []HostCheckpoint
	for h, v := range s.ckptVer {
		if v > r.sentCkpt["\x00"+h] {
			r.sentCkpt["\x00"+h] = v
			cks = append(cks, s.checkpointCounts(h))
		}
	}
	for _, name := range s.subList {
		sub := s.subs[name]
		for h, v := range sub.ckptVer {
			if k := name + "\x00" + h; v > r.sentCkpt[k] {
				r.sentCkpt[k] = v
				cks = append(cks, sub.ckpt[h])
			}
		}
	}
	if len(cks) > 0 {
		sort.Slice(cks, func(i, j int) bool { return cks[i].Host < cks[j].Host })
		ev(CheckpointCounts{Hosts: cks})
	}

	for _, l := range s.lost[r.sentLost:] {
		ev(l)
	}
	r.sentLost = len(s.lost)
	// The hosts' counts last: a reader that has them has the groups they count.
	var hosts []HostCount
	for h, a := range s.hosts {
		if k := "\x00" + h; a.ver > r.sentHost[k] {
			r.sentHost[k] = a.ver
			hc := a.HostCount
			hc.Ranks, hc.Lost = a.ranks.Set(), s.Lost.Contains(h)
			hosts = append(hosts, hc)
		}
	}
	for _, name := range s.subList {
		sub := s.subs[name]
		for h, v := range sub.hostVer {
			if k := name + "\x00" + h; v > r.sentHost[k] {
				r.sentHost[k] = v
				hc := sub.hosts[h]
				hc.Lost = hc.Lost || s.Lost.Contains(h)
				hosts = append(hosts, hc)
			}
		}
	}
	if len(hosts) > 0 {
		sort.Slice(hosts, func(i, j int) bool { return hosts[i].Host < hosts[j].Host })
		ev(Hosts{Hosts: hosts})
	}

	return out
}

// matrixCounts is one host's matrix as counts.
func matrixCounts(h string, m *Matrix) HostMatrix {
	hm := HostMatrix{Host: h, Measured: m.Measured, Processes: len(m.PIDs), Cells: len(m.Cells), ByReason: map[string]int{}}
	for _, c := range m.Cells {
		why := "ok"
		if c.Reason != nil && *c.Reason != "" {
			why = string(*c.Reason)
		}
		hm.ByReason[why]++
		if c.OpenMPI {
			hm.OpenMPI++
		}
		if c.Disagrees() {
			hm.Disagree++
		}
	}
	return hm
}

// checkpointCounts is host h's latest checkpoint as counts.
func (s *State) checkpointCounts(h string) HostCheckpoint {
	hc := HostCheckpoint{Host: h, ByDecision: map[string]int{}, ByOutcome: map[string]int{}}
	for i := len(s.Checkpoints) - 1; i >= 0; i-- {
		c := s.Checkpoints[i]
		if c.Host != h {
			continue
		}
		hc.Checkpoint, hc.Policy, hc.Threads = c.ID, c.Policy, len(c.Threads)
		for _, t := range c.Threads {
			if t.InSyscall {
				hc.InSyscall++
			}
			d := t.Applied
			if d == "" {
				d = "none"
			}
			hc.ByDecision[string(d)]++
			if t.OutcomeKind != "" {
				hc.ByOutcome[string(t.OutcomeKind)]++
			}
		}
		break
	}
	return hc
}
