package views

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/crashtui/crashtui/sessions"
)

// ProcSorts are the orders of the process list (s cycles through them, r reverses); "tree"
// nests children under their parent inside the job, the others sort by a column.
var ProcSorts = []string{"tree", "rank", "pid", "user", "state", "threads", "faults", "command"}

// procSortColumn is the column of procTable each sort is marked on.
var procSortColumn = map[string]int{"rank": 0, "pid": 2, "user": 3, "state": 4, "threads": 5, "faults": 6, "command": 7}

// ProcRow is one line of the process list.
type ProcRow struct {
	Proc  *sessions.Proc
	Depth int
	// Prefix is the tree's glyphs before the name ("│  ├─ "); "" outside the tree order.
	Prefix string
	// Children is how many of the job's processes are below it in the tree (all depths), and
	// Collapsed says they are hidden (← folds, → unfolds).
	Children  int
	Collapsed bool
	// Context marks a parent shown only so that a filtered tree keeps its shape: it does not
	// match the filter itself.
	Context bool
}

// Key is the row's process key.
func (r ProcRow) Key() sessions.ProcKey { return sessions.ProcKey{Host: r.Proc.Host, PID: r.Proc.PID} }

// ProcQuery says which processes the list shows and in which order.
type ProcQuery struct {
	Order   string // one of ProcSorts; "" is tree
	Reverse bool   // the sort descending (the tree keeps its order)
	Filter  string // case-insensitive; "uid:N" and "user:NAME" match exactly
	// Collapsed are the subtrees folded in the tree order. While a filter is on every match
	// shows, folded or not.
	Collapsed map[sessions.ProcKey]bool
	// Users are user names by uid, when the front end resolved them (views do no I/O).
	Users map[int]string
}

// ProcOptions are the process view's options.
type ProcOptions struct {
	Width, Height  int
	Cursor, Offset int
	Sort           string
	Reverse        bool
	Filter         string
	Users          map[int]string // user names by uid (USER shows the uid without one)
	Live           bool           // a tracer runs: S can sample (the title says so)
	// Waiting is what the session is waiting for before it has processes (the guest's boot
	// progress), shown under "no processes yet".
	Waiting string
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

// ProcStat is a process's STATE as ps shows it: its main thread's state letter (R running,
// S sleeping, D uninterruptible, T stopped, t stopped by a tracer, Z zombie) and, for a
// sleeper, the syscall it waits in ("S nanosleep"); "exit N", "killed SIGX" or "detached" once
// it has ended; "?" while no event has said. at is when the letter was read (zero otherwise).
//
// The letter comes from the process's latest stack Sample event (State.Samples), not from an
// event of its own: the tracer already reads every thread's /proc/TID/stat letter and
// /proc/TID/syscall when it samples (tracer/stacks: procfs.ReadTaskStat and the syscall file), which is
// ps's answer, and a separate periodic "procstate" event would read the same files again and
// write them into every recording. The cost is age: the column is as old as the last sample
// (the title says when; the TUI samples every 5 s by default, S samples now).
func ProcStat(s *sessions.State, p *sessions.Proc) (state string, at time.Time) {
	if p.Exit != nil {
		return strings.TrimSuffix(ProcState(p), " (core)"), time.Time{} // the column has no room for it
	}
	if l := s.Samples[sessions.ProcKey{Host: p.Host, PID: p.PID}]; len(l) > 0 && !l[len(l)-1].Time.Before(p.Joined) {
		last := l[len(l)-1]
		var th *sessions.ThreadSample
		for i := range last.Threads {
			// ps shows the thread group leader's letter (/proc/PID/stat is the leader's).
			if t := &last.Threads[i]; t.TID == p.PID {
				th = t
			}
		}
		if th == nil && len(last.Threads) > 0 {
			// The tracer samples no zombie thread: a leader missing while others run has
			// exited (pthread_exit in main), which ps shows as Z.
			return "Z", last.Time
		}
		if th != nil && th.State != "" {
			st := sessions.Sanitize(th.State)
			if (st == "S" || st == "D") && th.Syscall != "" {
				st += " " + sessions.Sanitize(th.Syscall)
			}
			return st, last.Time
		}
	}
	if p.Stopped {
		return "T", time.Time{} // in a job-control stop when it joined (the process event says)
	}
	return "?", time.Time{}
}

// stateOrder sorts states as ps's users read them: running first, then waiting (D, S), stopped,
// zombies, unknown, and the ended last.
func stateOrder(st string) string {
	if st == "" {
		return "9"
	}
	if i := strings.Index("RDSTtZ?", st[:1]); i >= 0 && (len(st) == 1 || st[1] == ' ') {
		return string(rune('0'+i)) + st
	}
	return "9" + st
}

// ProcRows lists the processes in the given order, keeping those whose rank, pid, comm, exe,
// argv, state or uid contain filter (case-insensitive).
func ProcRows(s *sessions.State, order, filter string) []ProcRow {
	return ProcList(s, ProcQuery{Order: order, Filter: filter})
}

// procMatcher returns the filter's predicate.
func procMatcher(s *sessions.State, filter string, users map[int]string) func(p *sessions.Proc) bool {
	filter = strings.ToLower(strings.TrimSpace(filter))
	if filter == "" {
		return func(*sessions.Proc) bool { return true }
	}
	if v, ok := strings.CutPrefix(filter, "uid:"); ok {
		return func(p *sessions.Proc) bool { return strconv.Itoa(p.UID) == v }
	}
	if v, ok := strings.CutPrefix(filter, "user:"); ok {
		return func(p *sessions.Proc) bool { return strings.ToLower(users[p.UID]) == v || strconv.Itoa(p.UID) == v }
	}
	return func(p *sessions.Proc) bool {
		state, _ := ProcStat(s, p)
		hay := strings.ToLower(fmt.Sprintf("%s %d %s %s %s %s %s uid:%d %s %s", p.Rank, p.PID, p.Comm, p.Exe,
			strings.Join(p.Argv, " "), ProcState(p), state, p.UID, users[p.UID], p.Host))
		return strings.Contains(hay, filter)
	}
}

// procCmdKey is what the command sort compares: the name, then the arguments.
func procCmdKey(p *sessions.Proc) string {
	return strings.ToLower(p.Comm + " " + strings.Join(p.Argv, " "))
}

// ProcList lists the processes as q asks: the tree (children under their parent inside the
// job, with ├─ └─ glyphs, folded subtrees skipped) or one sorted list.
func ProcList(s *sessions.State, q ProcQuery) []ProcRow {
	procs := s.SortedProcs()
	match := procMatcher(s, q.Filter, q.Users)
	var rows []ProcRow
	if q.Order != "" && q.Order != "tree" {
		for _, p := range procs {
			if match(p) {
				rows = append(rows, ProcRow{Proc: p})
			}
		}
		state := func(p *sessions.Proc) string { st, _ := ProcStat(s, p); return stateOrder(st) }
		user := func(p *sessions.Proc) string { u, _ := procUser(p, q.Users); return u }
		less := map[string]func(a, b *sessions.Proc) bool{
			"rank":    func(a, b *sessions.Proc) bool { return false }, // SortedProcs is by rank
			"pid":     func(a, b *sessions.Proc) bool { return a.PID < b.PID },
			"user":    func(a, b *sessions.Proc) bool { return user(a) < user(b) },
			"state":   func(a, b *sessions.Proc) bool { return state(a) < state(b) },
			"threads": func(a, b *sessions.Proc) bool { return a.Threads > b.Threads },
			"faults":  func(a, b *sessions.Proc) bool { return a.Crashes*1000+a.Handled > b.Crashes*1000+b.Handled },
			"command": func(a, b *sessions.Proc) bool { return procCmdKey(a) < procCmdKey(b) },
		}[q.Order]
		if less != nil {
			sort.SliceStable(rows, func(i, j int) bool { return less(rows[i].Proc, rows[j].Proc) })
		}
		switch {
		case q.Reverse && q.Order == "rank":
			slices.Reverse(rows)
		case q.Reverse && less != nil:
			// Reversed, ties keep rank order: sorted again, stably, with the order flipped.
			sort.SliceStable(rows, func(i, j int) bool { return less(rows[j].Proc, rows[i].Proc) })
		}
		return rows
	}

	return procTree(procs, match, q)
}

// procTree is ProcList's tree order: each process under its parent inside the job, in the
// order procs has them, subtrees that do not match the filter left out. It is drawn every
// frame, so it works on indexes into procs, not on a map and a node per process.
func procTree(procs []*sessions.Proc, match func(*sessions.Proc) bool, q ProcQuery) []ProcRow {
	n := len(procs)
	at := make(map[sessions.ProcKey]int32, n)
	for i, p := range procs {
		at[sessions.ProcKey{Host: p.Host, PID: p.PID}] = int32(i)
	}
	// Each process's children, in procs' order: its first kid, then each one's sibling. built is the
	// process a child was built under (-1: a root, or none yet); a pid reused inside the job
	// can make a cycle, and a process is built once.
	links := make([]int32, 4*n)
	kid, lastKid, sibling, built := links[:n], links[n:2*n], links[2*n:3*n], links[3*n:]
	for i := range links {
		links[i] = -1
	}
	var roots []int32
	for i, p := range procs {
		j, ok := at[sessions.ProcKey{Host: p.Host, PID: p.PPID}]
		if !ok || p.PPID == p.PID {
			roots = append(roots, int32(i))
			continue
		}
		if lastKid[j] < 0 {
			kid[j] = int32(i)
		} else {
			sibling[lastKid[j]] = int32(i)
		}
		lastKid[j] = int32(i)
	}
	flags := make([]uint8, n)
	const (
		seen = 1 << iota
		matches
		show // it or something below it matches
	)
	desc := make([]int, n)
	var build func(i int32)
	build = func(i int32) {
		flags[i] |= seen
		if match(procs[i]) {
			flags[i] |= matches | show
		}
		for c := kid[i]; c >= 0; c = sibling[c] {
			if flags[c]&seen != 0 { // a pid reused inside the job must not loop
				continue
			}
			build(c)
			built[c] = i
			desc[i] += 1 + desc[c]
			flags[i] |= flags[c] & show
		}
	}
	var trees []int32
	for _, i := range roots {
		build(i)
		trees = append(trees, i)
	}
	for i := range int32(n) { // cycles (pid reuse) leave no root: start from where they are
		if flags[i]&seen == 0 {
			build(i)
			trees = append(trees, i)
		}
	}
	filtering := strings.TrimSpace(q.Filter) != ""
	rows := make([]ProcRow, 0, n)
	var emit func(i int32, depth int, prefix string, last bool)
	emit = func(i int32, depth int, prefix string, last bool) {
		glyph, next := "", prefix
		if depth > 0 {
			if last {
				glyph, next = prefix+"└─ ", prefix+"   "
			} else {
				glyph, next = prefix+"├─ ", prefix+"│  "
			}
		}
		p := procs[i]
		folded := !filtering && desc[i] > 0 && q.Collapsed[sessions.ProcKey{Host: p.Host, PID: p.PID}]
		rows = append(rows, ProcRow{Proc: p, Depth: depth, Prefix: shortPrefix(glyph), Children: desc[i],
			Collapsed: folded, Context: flags[i]&matches == 0})
		if folded {
			return
		}
		shown := func(c int32) bool { return built[c] == i && flags[c]&show != 0 }
		lastShown := int32(-1)
		for c := kid[i]; c >= 0; c = sibling[c] {
			if shown(c) {
				lastShown = c
			}
		}
		for c := kid[i]; c >= 0; c = sibling[c] {
			if shown(c) {
				emit(c, depth+1, next, c == lastShown)
			}
		}
	}
	for _, i := range trees {
		if flags[i]&show != 0 {
			emit(i, 0, "", true)
		}
	}
	return rows
}

// maxPrefix bounds the tree's glyphs in cells: a deep fork chain keeps its inner levels and
// room for the names.
const maxPrefix = 24

func shortPrefix(p string) string {
	if utf8.RuneCountInString(p) <= maxPrefix {
		return p
	}
	r := []rune(p)
	if len(r) <= maxPrefix {
		return p
	}
	return "…" + string(r[len(r)-maxPrefix+1:])
}

// ProcStateNote says how old the STATE column is: the newest stack sample among the rows.
func ProcStateNote(s *sessions.State, rows []ProcRow) string {
	var newest time.Time
	alive := false
	for _, r := range rows {
		if r.Proc.Exit != nil {
			continue
		}
		alive = true
		if _, at := ProcStat(s, r.Proc); at.After(newest) {
			newest = at
		}
	}
	switch {
	case !alive:
		return ""
	case newest.IsZero():
		return "state: ? until a stack sample"
	}
	return "state as of " + hms(newest)
}

// leftRight puts right at the right edge, cutting left to make room.
func leftRight(left, right string, width int) string {
	if right == "" {
		return cut(left, width)
	}
	rw := cellWidth(right)
	if rw+3 > width {
		return cut(left, width)
	}
	left = cut(left, width-rw-2)
	return left + strings.Repeat(" ", width-cellWidth(left)-rw) + right
}

// Position is the "12/201" of a long list (cursor is 0-based); "" when it all fits.
func Position(cursor, n, visible int) string {
	if n <= visible || n == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", clampI(cursor, n)+1, n)
}

// Processes renders the process list with the cursor row highlighted.
func Processes(st *Styles, s *sessions.State, rows []ProcRow, o ProcOptions) string {
	var b strings.Builder
	sortName := o.Sort
	if sortName == "" {
		sortName = "tree"
	}
	h := o.Height - 2
	matches, folded := 0, 0
	for _, r := range rows {
		if !r.Context {
			matches++
		}
		if r.Collapsed {
			folded += r.Children
		}
	}
	title := Count(matches+folded, "process", "processes")
	if o.Filter != "" {
		title = fmt.Sprintf("%d of %d processes match", matches, len(s.Procs))
	}
	if folded > 0 {
		title += fmt.Sprintf(" (%d folded)", folded)
	}
	title += " · sort: " + sortName
	if o.Reverse && sortName != "tree" {
		title += " reversed"
	}
	title += " (s, r)"
	if o.Filter != "" {
		title += " · filter: " + sessions.Sanitize(o.Filter)
	}
	if note := ProcStateNote(s, rows); note != "" {
		title += " · " + note
		if o.Live && strings.HasPrefix(note, "state: ?") {
			title += " (S)"
		}
	}
	b.WriteString(st.Dim.Render(leftRight(title, Position(o.Cursor, len(rows), h), o.Width)) + "\n")
	if len(rows) == 0 {
		b.WriteString(st.Head.Render(cut(" RANK  PID STATE   COMMAND", o.Width)) + "\n")
		if o.Filter != "" {
			b.WriteString(st.Dim.Render(" no process matches the filter (uid:N and user:NAME match exactly)"))
		} else {
			b.WriteString(st.Dim.Render(" no processes yet"))
			if o.Waiting != "" {
				b.WriteString("\n" + st.Info.Render(cut(" "+sessions.Sanitize(o.Waiting), o.Width)))
			}
		}
		return fit(b.String(), o.Width, o.Height)
	}
	off := window(o.Cursor, o.Offset, h, len(rows))
	end := min(len(rows), off+h)
	cols, cells := procTable(s, rows, o.Users, off, end)
	if c, ok := procSortColumn[sortName]; ok {
		cols[c].head += SortMark(sortName, o.Reverse)
	}
	ws := layout(cols, o.Width)
	b.WriteString(st.Head.Render(cut(heads(cols, ws), o.Width)) + "\n")
	cmdW := ws[len(ws)-1]
	for i := off; i < end; i++ {
		r := rows[i]
		p := r.Proc
		c := cells[i-off]
		c[len(c)-1] = procCommand(st, r, cmdW)
		line := cut(row(cols, ws, c), o.Width)
		base, styled := st.R.NewStyle(), true
		switch {
		case r.Context || !p.Alive:
			base = st.Dim
		case p.Crashes > 0 || (p.Exit != nil && p.Exit.Signal != ""):
			base = st.Bad
		default:
			styled = false
		}
		if o.Filter != "" && !r.Context {
			// The matches highlighted (the arguments' dimming gives way to them).
			line = st.listRow(ansi.Strip(line), o.Filter, base, i == o.Cursor, o.Width)
		} else if i == o.Cursor {
			line = st.Cursor(stripForSelect(line), o.Width)
		} else if styled {
			line = base.Render(stripForSelect(line))
		}
		b.WriteString(line + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}

// procTable is the process list's columns, each as wide as its content in every row, and
// the cells of rows[from:to], the ones shown (the command's is the plain text; procCommand
// draws it for the room it gets). USER, THR and FAULTS give their room to the command first
// when the terminal is narrow (e explains a row). The list is drawn every frame: the other
// rows are measured (procCellWidths), not written.
func procTable(s *sessions.State, rows []ProcRow, users map[int]string, from, to int) ([]column, [][]string) {
	cols := []column{{head: "RANK"}, {head: "HOST", cap: 16, drop: 4}, {head: "PID", right: true}, {head: "USER", cap: 12, drop: 2},
		{head: "STATE", cap: 24}, {head: "THR", right: true, drop: 1}, {head: "FAULTS", drop: 3}, {head: "COMMAND", min: 16}}
	hosts, named := false, false
	for _, r := range rows {
		p := r.Proc
		ws, ok := procCellWidths(s, r, users)
		named = named || ok
		hosts = hosts || p.Host != ""
		for j, w := range ws {
			cols[j].want = max(cols[j].want, w)
		}
	}
	cells := make([][]string, 0, to-from)
	for _, r := range rows[from:to] {
		cells = append(cells, procCells(s, r, users))
	}
	if !hosts {
		cols[1].want, cols[1].head = 0, "" // one machine: no HOST column at all
	}
	if !named {
		// A recording (or another host's processes) names no user: its uids are the
		// recorded machine's, whose /etc/passwd is not this one's. The column says so.
		cols[3].head = "UID"
	}
	return cols, cells
}

// procCells are a row's cells, as procTable's columns.
func procCells(s *sessions.State, r ProcRow, users map[int]string) []string {
	p := r.Proc
	faults := ""
	if p.Crashes > 0 {
		faults += fmt.Sprintf("✗%d ", p.Crashes)
	}
	if p.Handled > 0 {
		faults += fmt.Sprintf("h%d", p.Handled)
	}
	state, _ := ProcStat(s, p)
	user, _ := procUser(p, users)
	return []string{p.Rank.String(), sessions.Sanitize(p.Host), strconv.Itoa(p.PID), user, state,
		strconv.Itoa(p.Threads), strings.TrimSpace(faults), procCommandText(r, false)}
}

// procCellWidths are the widths of procCells(s, r, users), most of them counted rather than
// written, and whether the user was named.
func procCellWidths(s *sessions.State, r ProcRow, users map[int]string) ([8]int, bool) {
	p := r.Proc
	var w [8]int
	w[0] = 1 // "-": no rank
	if p.Rank >= 0 {
		w[0] = digits(int(p.Rank))
	}
	w[1] = cellWidth(sessions.Sanitize(p.Host))
	w[2] = digits(p.PID)
	named := false
	if u := users[p.UID]; u != "" && p.Host == "" {
		w[3], named = cellWidth(sessions.Sanitize(u)), true
	} else {
		w[3] = digits(p.UID)
	}
	state, _ := ProcStat(s, p)
	w[4] = cellWidth(state)
	w[5] = digits(p.Threads)
	if p.Crashes > 0 {
		w[6] = 1 + digits(p.Crashes) // ✗N
	}
	if p.Handled > 0 {
		if w[6] > 0 {
			w[6]++ // the space between
		}
		w[6] += 1 + digits(p.Handled) // hN
	}
	w[7] = procCommandWidth(r)
	return w, named
}

// procCommandWidth is cellWidth(procCommandText(r, false)), without writing it when the
// arguments need no sanitising.
func procCommandWidth(r ProcRow) int {
	p := r.Proc
	args := 0
	if len(p.Argv) > 1 {
		for i, a := range p.Argv[1:] {
			if sessions.Sanitize(a) != a {
				return cellWidth(procCommandText(r, false)) // its escapes, as written
			}
			args += cellWidth(a)
			if i > 0 {
				args++
			}
		}
		args++ // the space before them
	}
	name := sessions.Sanitize(p.Comm)
	if name == "" {
		name = sessions.Sanitize(p.Exe)
	}
	w := cellWidth(r.Prefix) + cellWidth(name) + args
	if r.Collapsed {
		w += 2 + 3 + digits(r.Children) + 1 // "▸ " and " (+N)"
	}
	return w
}

// digits is len(strconv.Itoa(n)).
func digits(n int) int {
	if n < 0 {
		return len(strconv.Itoa(n))
	}
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// procUser is the USER cell: the name when the front end resolved it (for this machine's
// processes only: a uid from another host is that host's), else the uid.
func procUser(p *sessions.Proc, users map[int]string) (string, bool) {
	if u := users[p.UID]; u != "" && p.Host == "" {
		return sessions.Sanitize(u), true
	}
	return strconv.Itoa(p.UID), false
}

// procCommandText is the COMMAND cell as plain text: the tree's glyphs, then the whole
// command line (full: argv[0] as it was run, a path) or the name and the arguments.
func procCommandText(r ProcRow, full bool) string {
	p := r.Proc
	name := sessions.Sanitize(p.Comm)
	if name == "" {
		name = sessions.Sanitize(p.Exe)
	}
	if full && len(p.Argv) > 0 {
		name = sessions.Sanitize(p.Argv[0])
	}
	if r.Collapsed {
		name = "▸ " + name + fmt.Sprintf(" (+%d)", r.Children)
	}
	if len(p.Argv) > 1 {
		name += " " + sessions.Sanitize(strings.Join(p.Argv[1:], " "))
	}
	return r.Prefix + name
}

// procCommand draws the COMMAND cell for w cells: the whole command line when it fits (ps's
// COMMAND), else the name and as much of the arguments as fit; the arguments dim.
func procCommand(st *Styles, r ProcRow, w int) string {
	full := len(r.Proc.Argv) > 0 && cellWidth(procCommandText(r, true)) <= w
	text := procCommandText(r, full)
	if len(r.Proc.Argv) > 1 {
		args := sessions.Sanitize(strings.Join(r.Proc.Argv[1:], " "))
		if head, ok := strings.CutSuffix(text, " "+args); ok {
			return head + " " + st.Dim.Render(args)
		}
	}
	return text
}

// Signals are the signals K offers, in the order its dialog lists them.
var Signals = []string{"SIGTERM", "SIGINT", "SIGKILL", "SIGSTOP", "SIGCONT", "SIGUSR1", "SIGUSR2", "SIGQUIT"}

// signalEffect is what each of Signals does to a process that has no handler for it.
var signalEffect = map[string]string{
	"SIGTERM": "asks it to end: the default action ends it, a handler may clean up first.",
	"SIGINT":  "what ctrl+c sends: ends it unless it handles SIGINT.",
	"SIGKILL": "ends it at once: it cannot be caught, blocked or ignored, and nothing is cleaned up.",
	"SIGSTOP": "stops it (state T) until SIGCONT; it cannot be caught. Its ranks' peers may time out.",
	"SIGCONT": "resumes it after a stop; harmless to a running process.",
	"SIGUSR1": "means what the program makes it mean; without a handler it ends the process.",
	"SIGUSR2": "means what the program makes it mean; without a handler it ends the process.",
	"SIGQUIT": "what ctrl+\\ sends: ends it with a core dump (the default action).",
}

// SignalDialog asks before K sends a signal: it names the process (pid, rank, comm) and lets
// ←/→ choose the signal.
func SignalDialog(st *Styles, p *sessions.Proc, choice, width int) string {
	w := min(width-4, 76)
	choice = clampI(choice, len(Signals))
	var b strings.Builder
	b.WriteString(st.Title.Render("Send a signal") + "\n")
	who := fmt.Sprintf("pid %d · rank %s · %s", p.PID, p.Rank, sessions.Sanitize(p.Comm))
	if p.Host != "" {
		who = sessions.Sanitize(p.Host) + " " + who
	}
	b.WriteString(cut(who, w) + "\n\n")
	var names []string
	for i, sig := range Signals {
		n := strings.TrimPrefix(sig, "SIG")
		if i == choice {
			n = st.Selected.Render("[" + n + "]")
		} else {
			n = " " + n + " "
		}
		names = append(names, n)
	}
	b.WriteString(wrap(strings.Join(names, " "), w) + "\n\n")
	sig := Signals[choice]
	q := fmt.Sprintf("Send %s to pid %d (rank %s, %s)? %s sends it with kill(2), as kill -%s %d would.",
		sig, p.PID, p.Rank, sessions.Sanitize(p.Comm), "crashtui", strings.TrimPrefix(sig, "SIG"), p.PID)
	b.WriteString(wrap(q, w) + "\n")
	b.WriteString(st.Dim.Render(wrap(sig+" "+signalEffect[sig], w)) + "\n\n")
	b.WriteString(st.Dim.Render("←/→ choose · enter send · esc cancel"))
	return st.Box.Render(b.String())
}
