package views

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// LogOptions are the timeline's options.
type LogOptions struct {
	Width, Height int
	Filter        string
	// Rows are the lines listed, in order (LogRows); nil lists every event of the State.
	Rows []LogRow
	// Cursor is the selected row (-1: none, following the newest); Offset the first row
	// shown, kept by the caller (Window).
	Cursor, Offset int
	Sort           string // one of LogSorts, for the title
	Reverse        bool
	Following      bool // the cursor follows the newest event
}

// LogSorts are the orders of the Log (s cycles, r reverses): time is the events' own order.
var LogSorts = []string{"time", "kind"}

// LogRow is one event of the Log as listed.
type LogRow struct {
	Entry *sessions.LogEntry
	Line  string // EventLine
}

// LogRows are the events whose line, as a row width cells wide shows it, contains filter (a
// match that the cut hides does not count), in the order by, reversed when reverse is set.
// line formats entry i of s.Log (the tui keeps them: formatting 20000 events per frame is
// the slow part); nil formats them here.
func LogRows(s *sessions.State, filter string, width int, by string, reverse bool, line func(i int) string) []LogRow {
	if line == nil {
		line = func(i int) string { return EventLine(s.Log[i].Event) }
	}
	out := make([]LogRow, 0, len(s.Log))
	for i := range s.Log {
		l := line(i)
		if filter != "" && !visibleMatch(l, filter, width-1) { // the row's first cell is the cursor's
			continue
		}
		out = append(out, LogRow{Entry: &s.Log[i], Line: l})
	}
	if by == "kind" {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Entry.Event.Kind() < out[j].Entry.Event.Kind() })
	}
	if reverse {
		slices.Reverse(out)
	}
	return out
}

// EventLine is one event as a line of text (sanitised).
func EventLine(e sessions.Event) string {
	host := ""
	if e.Host != "" {
		host = sessions.Sanitize(e.Host) + " "
	}
	var what string
	switch b := e.Body.(type) {
	case sessions.Session:
		what = fmt.Sprintf("%s · job %s · %s %s", b.Mode, b.Job, b.Arch, b.Kernel)
	case sessions.Process:
		what = fmt.Sprintf("pid %d joined (ppid %d, rank %s, uid %d, %s) %s %s", b.PID, b.PPID, b.Rank, b.UID, Count(b.Threads, "thread", "threads"), b.Comm, strings.Join(b.Argv, " "))
	case sessions.Task:
		verb := "started"
		if b.Exited {
			verb = "ended"
		}
		what = fmt.Sprintf("pid %d thread %d %s", b.PID, b.TID, verb)
	case sessions.Exec:
		what = fmt.Sprintf("pid %d exec %s (%s) %s", b.PID, b.Exe, b.Comm, strings.Join(b.Argv, " "))
	case sessions.Exit:
		switch {
		case b.Detached:
			what = fmt.Sprintf("pid %d detached", b.PID)
		case b.Signal != "":
			what = fmt.Sprintf("pid %d killed by %s", b.PID, b.Signal)
			if b.CoreDumped {
				what += " (core dumped)"
			}
		case b.Code != nil:
			what = fmt.Sprintf("pid %d exited %d", b.PID, *b.Code)
		default:
			what = fmt.Sprintf("pid %d exited", b.PID)
		}
	case sessions.Crash:
		what = fmt.Sprintf("pid %d tid %d rank %s %s %s at %s+%s", b.PID, b.TID, b.Rank, b.Signal, b.Code, sessions.ModuleBase(b.Module), b.Offset)
		if b.Function != "" {
			what += " " + b.Function
		}
		if b.AbortMessage != "" {
			what += " abort: " + b.AbortMessage
		}
	case sessions.Handled:
		what = fmt.Sprintf("pid %d %s %s at %s+%s", b.PID, b.Signal, b.Code, sessions.ModuleBase(b.Module), b.Offset)
	case sessions.CrashLines:
		what = fmt.Sprintf("pid %d tid %d crash site %s", b.PID, b.TID, b.Function)
		if b.File != "" {
			what += fmt.Sprintf(" at %s:%d", b.File, b.Line)
		}
		what += " (line tables loaded)"
	case sessions.Matrix:
		m := "predicted"
		if b.Measured {
			m = "measured"
		}
		what = fmt.Sprintf("%s, %d cells, %s", Count(len(b.PIDs), "process", "processes"), len(b.Cells), m)
	case sessions.Thread:
		what = fmt.Sprintf("%d/%d %s %s on resume %s", b.PID, b.TID, b.Syscall, b.Code, b.OnResume)
		if b.Applied != "" {
			what += " applied " + sessions.Sanitize(string(b.Applied))
		}
		if o := ThreadOutcome(&b); o != "" {
			what += " → " + o
		}
	case sessions.Summary:
		what = fmt.Sprintf("%s, %s in %s, %s, %d handled", Count(b.Processes, "process", "processes"),
			Count(b.Crashes, "crash", "crashes"), Count(len(b.Groups), "group", "groups"), Count(b.Exits, "exit", "exits"), b.Handled)
	case sessions.Error:
		what = fmt.Sprintf("%s pid %d: %s", b.Op, b.PID, b.Message)
	case sessions.Sample:
		what = fmt.Sprintf("pid %d: %s (sample %d, held %d µs)", b.PID, Count(len(b.Threads), "thread", "threads"), b.Seq, b.HeldUS)
	case sessions.MatrixProgress:
		what = fmt.Sprintf("matrix: %d of %d pairs measured", b.Done, b.Total)
	case sessions.Stacks:
		what = fmt.Sprintf("%s over %s", Count(len(b.Classes), "class", "classes"), Count(b.Samples, "sample", "samples"))
	default:
		what = string(e.Kind())
	}
	kind := string(e.Kind())
	if e.Kind() == sessions.KindCrashLines {
		kind = "lines" // the column is 7 wide: "crash_lines" pushed its row out of line
	}
	return sessions.Sanitize(fmt.Sprintf("%s %-7s %s%s", hms(e.Time), kind, host, what))
}

// Log renders the event timeline, newest at the bottom (in the time order), the cursor's row
// marked.
func Log(st *Styles, s *sessions.State, o LogOptions) string {
	rows := o.Rows
	if rows == nil {
		rows = LogRows(s, o.Filter, o.Width, o.Sort, o.Reverse, nil)
	}
	h := o.Height - 1
	cur := min(o.Cursor, len(rows)-1)
	off := window(cur, o.Offset, h, len(rows))
	if cur < 0 { // no cursor: the newest page
		off = 0
		if !o.Reverse {
			off = max(0, len(rows)-h)
		}
	}
	var b strings.Builder
	title := Count(len(s.Log), "event", "events")
	if o.Filter != "" {
		title = fmt.Sprintf("%d of %s match · filter: %s", len(rows), Count(len(s.Log), "event", "events"), sessions.Sanitize(o.Filter))
	}
	if s.SampleEvents > 0 {
		title += " · " + Count(s.SampleEvents, "stack sample", "stack samples") + " not listed (Stacks)"
	}
	if o.Sort == "kind" {
		title += " · by kind"
	}
	if o.Reverse {
		title += " · newest first"
	}
	if !o.Following && len(rows) > 0 {
		title += " · G follows the newest"
	}
	pos := ""
	if cur >= 0 {
		pos = Position(cur, len(rows), h)
	}
	b.WriteString(st.Dim.Render(leftRight(title, pos, o.Width)))
	for i := off; i < len(rows) && i < off+h; i++ {
		base, styled := st.R.NewStyle(), true
		switch rows[i].Entry.Event.Kind() {
		case sessions.KindCrash, sessions.KindError:
			base = st.Bad
		case sessions.KindHandled, sessions.KindThread:
			base = st.Warn
		default:
			styled = false
		}
		line := " " + rows[i].Line // the cursor's marker takes the first cell
		if i == cur || o.Filter != "" || styled {
			line = st.listRow(line, o.Filter, base, i == cur, o.Width)
		}
		b.WriteString("\n" + cut(line, o.Width))
	}
	return fit(b.String(), o.Width, o.Height)
}
