package views

import (
	"fmt"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// LogOptions are the timeline's options.
type LogOptions struct {
	Width, Height int
	Filter        string
	Back          int // lines scrolled back from the newest; 0 follows new events
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
			what += " applied " + b.Applied
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
	return sessions.Sanitize(fmt.Sprintf("%s %-7s %s%s", hms(e.Time), e.Kind(), host, what))
}

// Log renders the event timeline, newest at the bottom.
func Log(st *Styles, s *sessions.State, o LogOptions) string {
	h := o.Height - 1
	var lines []*sessions.LogEntry
	f := strings.ToLower(o.Filter)
	// Walk back from the newest: only the visible window is formatted when there is no filter.
	need := h + o.Back
	matched := 0
	for i := len(s.Log) - 1; i >= 0 && matched < need; i-- {
		if f != "" && !strings.Contains(strings.ToLower(EventLine(s.Log[i].Event)), f) {
			continue
		}
		lines = append(lines, &s.Log[i])
		matched++
	}
	// lines is newest first; drop the Back newest and show the rest oldest first. Scrolled
	// back past the oldest event, the oldest full page is shown (never a blank one).
	if o.Back > len(lines)-h {
		o.Back = max(0, len(lines)-h)
	}
	lines = lines[o.Back:]
	var b strings.Builder
	title := Count(s.Seq, "event", "events")
	if o.Filter != "" {
		title += " · filter: " + sessions.Sanitize(o.Filter)
	}
	if o.Back > 0 {
		title += fmt.Sprintf(" · scrolled back %d (G follows)", o.Back)
	}
	b.WriteString(st.Dim.Render(title))
	for i := len(lines) - 1; i >= 0; i-- {
		l := EventLine(lines[i].Event)
		switch lines[i].Event.Kind() {
		case sessions.KindCrash, sessions.KindError:
			l = st.Bad.Render(cut(l, o.Width))
		case sessions.KindHandled, sessions.KindThread:
			l = st.Warn.Render(cut(l, o.Width))
		}
		b.WriteString("\n" + l)
	}
	return fit(b.String(), o.Width, o.Height)
}
