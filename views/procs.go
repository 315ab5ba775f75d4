package views

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// ProcSorts are the orders of the process list (s cycles through them); "tree" nests children
// under their parent inside the job.
var ProcSorts = []string{"tree", "rank", "pid", "comm", "state", "crashes"}

// ProcRow is one line of the process list.
type ProcRow struct {
	Proc  *sessions.Proc
	Depth int
}

// ProcOptions are the process view's options.
type ProcOptions struct {
	Width, Height  int
	Cursor, Offset int
	Sort           string
	Filter         string
}

// ProcState is a process's state in a word or two: alive, stopped, exit N, killed SIGX (core),
// detached.
func ProcState(p *sessions.Proc) string {
	switch {
	case p.Exit != nil && p.Exit.Detached:
		return "detached"
	case p.Exit != nil && p.Exit.Signal != "":
		s := "killed " + sessions.Sanitize(p.Exit.Signal)
		if p.Exit.CoreDumped {
			s += " (core)"
		}
		return s
	case p.Exit != nil && p.Exit.Code != nil:
		return "exit " + strconv.Itoa(*p.Exit.Code)
	case p.Exit != nil:
		return "exited"
	case p.Stopped:
		return "stopped"
	}
	return "running"
}

// ProcRows lists the processes in the given order, keeping those whose rank, pid, comm, exe,
// argv or state contain filter (case-insensitive).
func ProcRows(s *sessions.State, order, filter string) []ProcRow {
	procs := s.SortedProcs()
	filter = strings.ToLower(filter)
	match := func(p *sessions.Proc) bool {
		if filter == "" {
			return true
		}
		hay := strings.ToLower(fmt.Sprintf("%s %d %s %s %s %s", p.Rank, p.PID, p.Comm, p.Exe,
			strings.Join(p.Argv, " "), ProcState(p)))
		return strings.Contains(hay, filter)
	}
	var rows []ProcRow
	if order == "" || order == "tree" {
		children := map[sessions.ProcKey][]*sessions.Proc{}
		var roots []*sessions.Proc
		for _, p := range procs {
			parent := sessions.ProcKey{Host: p.Host, PID: p.PPID}
			if _, ok := s.Procs[parent]; ok && p.PPID != p.PID {
				children[parent] = append(children[parent], p)
			} else {
				roots = append(roots, p)
			}
		}
		seen := map[*sessions.Proc]bool{}
		var walk func(p *sessions.Proc, d int)
		walk = func(p *sessions.Proc, d int) {
			if seen[p] { // a pid reused inside the job must not loop
				return
			}
			seen[p] = true
			if match(p) {
				rows = append(rows, ProcRow{p, d})
			}
			for _, c := range children[sessions.ProcKey{Host: p.Host, PID: p.PID}] {
				walk(c, d+1)
			}
		}
		for _, p := range roots {
			walk(p, 0)
		}
		for _, p := range procs { // cycles (pid reuse) leave orphans: list them flat
			if !seen[p] && match(p) {
				rows = append(rows, ProcRow{p, 0})
			}
		}
		return rows
	}
	for _, p := range procs {
		if match(p) {
			rows = append(rows, ProcRow{p, 0})
		}
	}
	less := map[string]func(a, b *sessions.Proc) bool{
		"rank":    func(a, b *sessions.Proc) bool { return false }, // SortedProcs is by rank
		"pid":     func(a, b *sessions.Proc) bool { return a.PID < b.PID },
		"comm":    func(a, b *sessions.Proc) bool { return a.Comm < b.Comm },
		"state":   func(a, b *sessions.Proc) bool { return ProcState(a) < ProcState(b) },
		"crashes": func(a, b *sessions.Proc) bool { return a.Crashes > b.Crashes },
	}[order]
	if less != nil {
		sort.SliceStable(rows, func(i, j int) bool { return less(rows[i].Proc, rows[j].Proc) })
	}
	return rows
}

// Processes renders the process list with the cursor row highlighted.
func Processes(st *Styles, s *sessions.State, rows []ProcRow, o ProcOptions) string {
	var b strings.Builder
	sortName := o.Sort
	if sortName == "" {
		sortName = "tree"
	}
	title := fmt.Sprintf("%d processes · sort: %s (s)", len(rows), sortName)
	if o.Filter != "" {
		title += " · filter: " + sessions.Sanitize(o.Filter)
	}
	b.WriteString(st.Dim.Render(title) + "\n")
	hostW := 0
	for _, r := range rows {
		if r.Proc.Host != "" && len(r.Proc.Host)+1 > hostW {
			hostW = min(len(r.Proc.Host)+1, 12)
		}
	}
	head := fmt.Sprintf("%-5s %*s%7s %6s %-20s %4s %-7s %s", "RANK", hostW, "", "PID", "UID", "STATE", "THR", "FAULTS", "COMMAND")
	b.WriteString(st.Head.Render(cut(head, o.Width)) + "\n")
	h := o.Height - 2
	if len(rows) == 0 {
		if o.Filter != "" {
			b.WriteString(st.Dim.Render("no process matches the filter"))
		} else {
			b.WriteString(st.Dim.Render("no processes yet"))
		}
		return fit(b.String(), o.Width, o.Height)
	}
	off := window(o.Cursor, o.Offset, h, len(rows))
	for i := off; i < len(rows) && i < off+h; i++ {
		p := rows[i].Proc
		host := ""
		if hostW > 0 {
			host = pad(sessions.Sanitize(p.Host)+":", hostW)
		}
		faults := ""
		if p.Crashes > 0 {
			faults += fmt.Sprintf("✗%d ", p.Crashes)
		}
		if p.Handled > 0 {
			faults += fmt.Sprintf("h%d", p.Handled)
		}
		name := sessions.Sanitize(p.Comm)
		if name == "" {
			name = sessions.Sanitize(p.Exe)
		}
		if len(p.Argv) > 1 {
			name += " " + st.Dim.Render(sessions.Sanitize(strings.Join(p.Argv[1:], " ")))
		}
		indent := ""
		if rows[i].Depth > 0 {
			indent = strings.Repeat("  ", min(rows[i].Depth-1, 8)) + "└─"
		}
		state := ProcState(p)
		line := fmt.Sprintf("%-5s %s%7d %6d %s %4d %s %s%s", p.Rank, host, p.PID, p.UID,
			pad(state, 20), p.Threads, pad(faults, 7), indent, name)
		line = cut(line, o.Width)
		switch {
		case i == o.Cursor:
			line = st.Cursor(stripForSelect(line), o.Width)
		case p.Crashes > 0 || (p.Exit != nil && p.Exit.Signal != ""):
			line = st.Bad.Render(line)
		case !p.Alive:
			line = st.Dim.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}
