package views

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// ThreadOptions are the thread view's options.
type ThreadOptions struct {
	Width, Height int
	Cursor        int
	// Checkpoint is which of State.Checkpoints to show (out of range: the latest).
	Checkpoint int
	// Detail shows the selected thread's detail on the whole body, from line Scroll.
	Detail bool
	Scroll int
	// Filter, Sort (one of ThreadSorts) and Reverse choose and order the rows (ThreadRows).
	Filter  string
	Sort    string
	Reverse bool
}

// ThreadSorts are the orders of the Threads list (s cycles, r reverses); pid is by host, pid
// and tid.
var ThreadSorts = []string{"pid", "tid", "syscall", "code", "on resume", "applied", "outcome"}

// threadSortColumn is the column each sort is marked on.
var threadSortColumn = map[string]int{"pid": 0, "tid": 1, "syscall": 2, "code": 4, "on resume": 5, "applied": 6, "outcome": 7}

// threadCells are a thread's cells in the list: pid, tid, syscall, insn, code, on resume,
// applied, outcome.
func threadCells(s *sessions.State, t ThreadRef) []string {
	sc := "-"
	if t.InSyscall {
		sc = sessions.Sanitize(t.Syscall)
		if sc == "" {
			sc = fmt.Sprint(t.Nr)
		}
	}
	code := sessions.Sanitize(t.Code)
	if code == "" && t.InSyscall {
		code = fmt.Sprint(t.Ret)
	}
	outcome := ThreadOutcomeIn(s, t)
	if !ThreadLive(s, t) {
		outcome = "(ended) " + outcome // its state is history, not the thread's now
	}
	return []string{fmt.Sprint(t.PID), fmt.Sprint(t.TID), sc, sessions.Sanitize(t.Insn), code,
		sessions.Sanitize(t.OnResume), sessions.Sanitize(string(t.Applied)), outcome}
}

// ThreadRows are the threads of o's checkpoint whose row contains o.Filter, in o's order.
func ThreadRows(s *sessions.State, o ThreadOptions) []ThreadRef {
	all := ThreadListOf(s, o.Checkpoint)
	out := all[:0:0]
	cells := map[int]string{} // by tid: the column sorted on
	col, sorted := threadSortColumn[o.Sort]
	for _, t := range all {
		c := threadCells(s, t)
		if o.Filter != "" && !Matches(strings.Join(c, " "), o.Filter) {
			continue
		}
		out = append(out, t)
		if sorted && col > 1 {
			cells[t.TID] = c[col]
		}
	}
	var less func(a, b ThreadRef) bool
	switch {
	case o.Sort == "tid":
		less = func(a, b ThreadRef) bool { return a.TID < b.TID }
	case sorted && col > 1:
		less = func(a, b ThreadRef) bool { return cells[a.TID] < cells[b.TID] }
	}
	if less != nil {
		sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	}
	if o.Reverse {
		if less == nil {
			slices.Reverse(out)
		} else {
			sort.SliceStable(out, func(i, j int) bool { return less(out[j], out[i]) })
		}
	}
	return out
}

// ThreadRef is a thread with the host it lives on.
type ThreadRef struct {
	Host string
	*sessions.Thread
}

// ThreadList is the threads of the latest checkpoint, by host, pid and tid.
func ThreadList(s *sessions.State) []ThreadRef { return ThreadListOf(s, len(s.Checkpoints)-1) }

// CheckpointIndex is the checkpoint i names: i itself when in range, else the latest (-1
// when there is none).
func CheckpointIndex(s *sessions.State, i int) int {
	if i < 0 || i >= len(s.Checkpoints) {
		return len(s.Checkpoints) - 1
	}
	return i
}

// ThreadListOf is the threads of checkpoint i (CheckpointIndex), by host, pid and tid.
func ThreadListOf(s *sessions.State, i int) []ThreadRef {
	i = CheckpointIndex(s, i)
	if i < 0 {
		return nil
	}
	threads := s.Checkpoints[i].Threads
	out := make([]ThreadRef, 0, len(threads))
	for k, t := range threads {
		out = append(out, ThreadRef{k.Host, t})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.TID < b.TID
	})
	return out
}

// ThreadLive says whether the thread a checkpoint described still runs: its process is alive
// and still has that thread (the leader's tid is the process's).
func ThreadLive(s *sessions.State, t ThreadRef) bool {
	p := s.Procs[sessions.ProcKey{Host: t.Host, PID: t.PID}]
	return p != nil && p.Alive && (t.TID == t.PID || p.Tasks[t.TID])
}

func threadWhere(t *sessions.Thread) string {
	if !t.InSyscall {
		return "user code at " + t.PC.String()
	}
	sc := sessions.Sanitize(t.Syscall)
	if sc == "" {
		sc = fmt.Sprintf("syscall %d", t.Nr)
	}
	if t.Insn != "" {
		sc += " via " + sessions.Sanitize(t.Insn)
	}
	return "in " + sc
}

// Threads renders the restart state of every thread and the selected thread's registers.
func Threads(st *Styles, s *sessions.State, o ThreadOptions) string {
	if len(ThreadListOf(s, o.Checkpoint)) == 0 {
		return fit(st.Dim.Render("no thread states yet — c runs a simulated checkpoint (live sessions)"), o.Width, o.Height)
	}
	ts := ThreadRows(s, o)
	cur := clampI(o.Cursor, len(ts))
	if o.Detail && cur >= 0 {
		lines := wrapLines(threadDetail(st, s, ts[cur], o.Width), o.Width)
		off := max(0, min(o.Scroll, len(lines)-o.Height))
		return fit(strings.Join(lines[off:], "\n"), o.Width, o.Height)
	}
	listH := threadsListH(o.Height)
	detailH := o.Height - listH
	var b strings.Builder
	title := CheckpointTitle(s, o.Checkpoint, len(ThreadListOf(s, o.Checkpoint)))
	if o.Filter != "" {
		title = fmt.Sprintf("%s · filter: %s · %s", Count(len(ts), "thread matches", "threads match"), sessions.Sanitize(o.Filter), title)
	}
	b.WriteString(st.Dim.Render(cut(title, o.Width)) + "\n")
	// Columns as wide as their content; below the room they need the instruction goes to the
	// detail pane first, and the outcome (a sentence, read there too) shrinks to "ended".
	type cells struct {
		t     ThreadRef
		c     []string
		ended bool
	}
	rows := make([]cells, len(ts))
	cols := []column{{head: "PID", right: true}, {head: "TID", right: true}, {head: "SYSCALL", cap: 24},
		{head: "INSN", drop: 1}, {head: "CODE", cap: 24}, {head: "ON RESUME", cap: 18}, {head: "APPLIED", cap: 10},
		{head: "OUTCOME", min: 24}}
	for i, t := range ts {
		r := cells{t: t, c: threadCells(s, t), ended: !ThreadLive(s, t)}
		for j, c := range r.c {
			cols[j].want = max(cols[j].want, cellWidth(c))
		}
		rows[i] = r
	}
	if c, ok := threadSortColumn[o.Sort]; ok {
		cols[c].head += SortMark(o.Sort, o.Reverse)
	}
	ws := layout(cols, o.Width)
	short := ws[len(ws)-1] < 24 // no room for the sentence: only whether the thread ended
	if short && !strings.HasSuffix(cols[len(cols)-1].head, "▲") && !strings.HasSuffix(cols[len(cols)-1].head, "▼") {
		cols[len(cols)-1].head = ""
	}
	b.WriteString(st.Head.Render(cut(heads(cols, ws), o.Width)) + "\n")
	h := listH - 2
	off := window(cur, 0, h, len(ts))
	if len(ts) == 0 {
		b.WriteString(st.Dim.Render(" no thread matches the filter (esc clears it)"))
	}
	for i := off; i < len(ts) && i < off+h; i++ {
		r := rows[i]
		c := append([]string(nil), r.c...)
		if short {
			c[len(c)-1] = ""
			if r.ended {
				c[len(c)-1] = "ended"
			}
		}
		base := st.R.NewStyle()
		switch {
		case r.ended:
			base = st.Dim
		case OutcomeBad(r.t.Thread):
			base = st.Bad
		}
		b.WriteString(st.listRow(row(cols, ws, c), o.Filter, base, i == cur, o.Width) + "\n")
	}
	list := fit(strings.TrimSuffix(b.String(), "\n"), o.Width, listH)
	if cur < 0 {
		return list + "\n" + fit("", o.Width, detailH)
	}
	return list + "\n" + fit(strings.Join(threadDetail(st, s, ts[cur], o.Width), "\n"), o.Width, detailH)
}

// keyRegisters are the registers a syscall restart is about, on every architecture: the pc,
// the stack pointer, the syscall number and the return (and restart) registers.
var keyRegisters = []string{"rip", "rsp", "orig_rax", "rax", "pc", "sp", "x8", "x0", "nip", "r1", "r0", "r3", "orig_gpr3", "trap", "ccr"}

// CheckpointTitle is the Threads tab's first line: which checkpoint, its policy and time,
// and how to reach the others.
func CheckpointTitle(s *sessions.State, i, n int) string {
	i = CheckpointIndex(s, i)
	ck := s.Checkpoints[i]
	title := "checkpoint"
	if ck.ID > 0 {
		title += fmt.Sprintf(" #%d", ck.ID)
	}
	if ck.Policy != "" {
		title += " (" + sessions.Sanitize(string(ck.Policy)) + ")"
	}
	title += " at " + hms(ck.Time) + " · " + Count(n, "thread", "threads")
	if len(s.Checkpoints) > 1 {
		title += fmt.Sprintf(" · %d of %d (</> earlier/later)", i+1, len(s.Checkpoints))
	}
	return title + " · enter: detail · e: explain · c: checkpoint"
}

// wrapLines wraps every line to width (the full-body detail shows whole sentences).
func wrapLines(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		if lipglossWidth(l) <= width {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(wrap(l, width), "\n")...)
	}
	return out
}

// ThreadDetailLen is how many lines the detail of the selected thread has (for scrolling).
func ThreadDetailLen(st *Styles, s *sessions.State, o ThreadOptions) int {
	ts := ThreadRows(s, o)
	if len(ts) == 0 {
		return 0
	}
	return len(wrapLines(threadDetail(st, s, ts[clampI(o.Cursor, len(ts))], o.Width), o.Width))
}

// ThreadOutcomeIn is the thread's outcome (ThreadOutcome) or, when the tracer reported none
// after the restore, what the session knows of what followed: its process crashed or ended
// (the outcome was never followed), or it is still in its syscall.
func ThreadOutcomeIn(s *sessions.State, r ThreadRef) string {
	if o := ThreadOutcome(r.Thread); o != "" || r.Applied == "" {
		return o
	}
	p := s.Procs[sessions.ProcKey{Host: r.Host, PID: r.PID}]
	switch {
	case p == nil:
		return ""
	case p.Exit != nil && p.Exit.Signal != "" && p.Crashes > 0:
		return "not followed: the process crashed with " + sessions.Sanitize(p.Exit.Signal) + " after the restore (3: Crashes)"
	case p.Exit != nil && p.Exit.Signal != "":
		return "not followed: the process was killed by " + sessions.Sanitize(p.Exit.Signal) + " after the restore"
	case p.Exit != nil && p.Exit.Code != nil:
		return fmt.Sprintf("not followed: the process exited with status %d after the restore", *p.Exit.Code)
	case p.Exit != nil:
		return "not followed: the process ended after the restore"
	case !ThreadLive(s, r):
		return "not followed: the thread ended after the restore"
	}
	return "not known yet: the thread has not left its syscall since the restore"
}

func threadDetail(st *Styles, s *sessions.State, r ThreadRef, width int) []string {
	t := r.Thread
	var out []string
	out = append(out, st.Dim.Render(strings.Repeat("─", max(0, width))))
	head := fmt.Sprintf("tid %d (%s): %s · pc %s", t.TID, sessions.Sanitize(t.Arch), threadWhere(t), t.PC)
	if t.Trap != nil {
		head += " · trap " + t.Trap.String()
	}
	out = append(out, st.Bold.Render(head))
	if t.InSyscall {
		var args []string
		for _, a := range t.Args {
			args = append(args, a.String())
		}
		out = append(out, fmt.Sprintf("args (%s) · return %d %s · on resume: %s · restore: %s",
			strings.Join(args, ", "), t.Ret, sessions.Sanitize(t.Code), sessions.Sanitize(t.OnResume), sessions.Sanitize(t.Restore)))
	}
	outcome := ThreadOutcomeIn(s, r)
	if t.Applied != "" || outcome != "" {
		out = append(out, fmt.Sprintf("policy applied: %s · outcome: %s", sessions.Sanitize(string(t.Applied)), outcome))
	}
	if what := ThreadExplain(t); what != "" {
		out = append(out, st.Info.Render(what))
	} else {
		out = append(out, st.Info.Render(restartRule(t.Code)))
	}
	if len(t.Before) > 0 || len(t.After) > 0 {
		out = append(out, st.Bold.Render(fmt.Sprintf("%-10s %-20s %-20s", "register", "before", "after")))
		after := map[string]sessions.Hex{}
		for _, r := range t.After {
			after[r.Name] = r.Value
		}
		seen := map[string]bool{}
		row := func(name string, before *sessions.Hex) {
			b, a := "-", "-"
			if before != nil {
				b = before.String()
			}
			av, ok := after[name]
			if ok {
				a = av.String()
			}
			line := fmt.Sprintf("%-10s %-20s %-20s", sessions.Sanitize(name), b, a)
			if ok && before != nil && av != *before {
				line = st.Bad.Render(line + " changed")
			}
			out = append(out, line)
		}
		// Changed registers first, then the ones a restart is about (pc, sp, the syscall
		// number and the return register), then the rest in the kernel's order: a small pane
		// shows what the policy did (as pwndbg puts pc and changed registers first).
		before := map[string]sessions.Hex{}
		for _, r := range t.Before {
			before[r.Name] = r.Value
		}
		changed := func(name string) bool {
			b, ok1 := before[name]
			a, ok2 := after[name]
			return ok1 && ok2 && a != b
		}
		var order []string
		add := func(name string) {
			if !seen[name] {
				seen[name] = true
				order = append(order, name)
			}
		}
		for _, r := range t.Before {
			if changed(r.Name) {
				add(r.Name)
			}
		}
		for _, name := range keyRegisters {
			if _, ok := before[name]; ok {
				add(name)
			} else if _, ok := after[name]; ok {
				add(name)
			}
		}
		for _, r := range t.Before {
			add(r.Name)
		}
		for _, r := range t.After {
			add(r.Name)
		}
		for _, name := range order {
			if v, ok := before[name]; ok {
				row(name, &v)
			} else {
				row(name, nil)
			}
		}
	}
	return out
}
