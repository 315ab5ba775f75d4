package views

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// Processes at scale: when the State counts more than it keeps (a root of a tree of reducing
// views, a million tasks), Processes is a row per host, from the hosts' counts (O(hosts),
// never O(tasks)); enter asks the host's agent for its processes, and HostProcesses shows its
// answer (at most sessions.MaxHostProcesses of them).

// HostOptions say how the hosts' rows are drawn.
type HostOptions struct {
	Width, Height  int
	Cursor, Offset int
	Filter         string
	// Ask says enter can ask a host for its processes (a tree this view launched).
	Ask bool
}

// HostRows are the hosts whose name matches filter.
func HostRows(s *sessions.State, filter string) []sessions.HostCount {
	all := s.HostCounts()
	if filter == "" {
		return all
	}
	var out []sessions.HostCount
	for _, h := range all {
		if strings.Contains(h.Host, filter) {
			out = append(out, h)
		}
	}
	return out
}

// Hosts draws Processes as a row per host: its processes, alive, ended and crashed, its rank
// set, and whether its stream was lost.
func Hosts(st *Styles, s *sessions.State, rows []sessions.HostCount, o HostOptions) string {
	var b strings.Builder
	h := o.Height - 2
	procs := 0
	for _, r := range rows {
		procs += r.Processes
	}
	title := fmt.Sprintf("%s on %s, by host", Count(procs, "process", "processes"), Count(len(rows), "host", "hosts"))
	if o.Filter != "" {
		title += " · filter: " + sessions.Sanitize(o.Filter)
	}
	if o.Ask {
		title += " · enter: the host's processes"
	}
	b.WriteString(st.Dim.Render(leftRight(title, Position(o.Cursor, len(rows), h), o.Width)) + "\n")
	cols := []column{{head: "HOST", cap: 24}, {head: "PROCS", right: true}, {head: "ALIVE", right: true},
		{head: "ENDED", right: true, drop: 2}, {head: "CRASHED", right: true, drop: 3}, {head: "THR", right: true, drop: 1},
		{head: "RANKS", min: 8}}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		ranks := r.Ranks.String()
		if r.Unranked > 0 {
			ranks = strings.TrimSpace(ranks + fmt.Sprintf(" +%d without a rank", r.Unranked))
		}
		if r.Lost {
			ranks += " · stream lost: counts as last sent"
		}
		cells[i] = []string{sessions.Sanitize(r.Host), strconv.Itoa(r.Processes), strconv.Itoa(r.Alive),
			strconv.Itoa(r.Exits), strconv.Itoa(r.Crashes), strconv.Itoa(r.Threads), ranks}
		for j, c := range cells[i][:len(cols)-1] {
			cols[j].want = max(cols[j].want, cellWidth(c))
		}
	}
	ws := layout(cols, o.Width)
	b.WriteString(st.Head.Render(cut(heads(cols, ws), o.Width)) + "\n")
	if len(rows) == 0 {
		b.WriteString(st.Dim.Render(" no host has said anything yet"))
		return fit(b.String(), o.Width, o.Height)
	}
	off := window(o.Cursor, o.Offset, h, len(rows))
	for i := off; i < len(rows) && i < off+h; i++ {
		r := rows[i]
		line := cut(row(cols, ws, cells[i]), o.Width)
		switch {
		case i == o.Cursor:
			line = st.Cursor(line, o.Width)
		case r.Lost || r.Crashes > 0:
			line = st.Bad.Render(line)
		case r.Alive == 0:
			line = st.Dim.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}

// HostProcesses draws one host's processes as its agent listed them (hp nil: asked, no answer
// yet).
func HostProcesses(st *Styles, host string, hp *sessions.HostProcesses, o HostOptions) string {
	var b strings.Builder
	h := o.Height - 2
	host = sessions.Sanitize(host)
	switch {
	case hp == nil:
		b.WriteString(st.Dim.Render(cut(fmt.Sprintf("%s · asking its agent for its processes (← back)", host), o.Width)) + "\n")
		return fit(b.String(), o.Width, o.Height)
	default:
		title := fmt.Sprintf("%s · %s", host, Count(hp.Total, "process", "processes"))
		if hp.Total > len(hp.Processes) {
			title += fmt.Sprintf(", the first %d its agent keeps in detail", len(hp.Processes))
		}
		title += " (← back)"
		b.WriteString(st.Dim.Render(leftRight(title, Position(o.Cursor, len(hp.Processes), h), o.Width)) + "\n")
	}
	cols := []column{{head: "RANK"}, {head: "PID", right: true}, {head: "PPID", right: true, drop: 1},
		{head: "STATE"}, {head: "THR", right: true, drop: 2}, {head: "COMMAND", min: 8}}
	cells := make([][]string, len(hp.Processes))
	for i, p := range hp.Processes {
		rank := "-"
		if p.Rank >= 0 {
			rank = strconv.Itoa(int(p.Rank))
		}
		state := "alive"
		switch {
		case p.Crashes > 0:
			state = "crashed"
		case !p.Alive:
			state = "ended"
		}
		ppid := ""
		if p.PPID > 0 {
			ppid = strconv.Itoa(p.PPID)
		}
		cells[i] = []string{rank, strconv.Itoa(p.PID), ppid, state, strconv.Itoa(p.Threads), sessions.Sanitize(p.Comm)}
		for j, c := range cells[i][:len(cols)-1] {
			cols[j].want = max(cols[j].want, cellWidth(c))
		}
	}
	ws := layout(cols, o.Width)
	b.WriteString(st.Head.Render(cut(heads(cols, ws), o.Width)) + "\n")
	off := window(o.Cursor, o.Offset, h, len(cells))
	for i := off; i < len(cells) && i < off+h; i++ {
		line := cut(row(cols, ws, cells[i]), o.Width)
		switch {
		case i == o.Cursor:
			line = st.Cursor(line, o.Width)
		case hp.Processes[i].Crashes > 0:
			line = st.Bad.Render(line)
		case !hp.Processes[i].Alive:
			line = st.Dim.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}
