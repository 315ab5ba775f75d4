package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// ProcDetailOptions lay out a process's detail (Processes' enter).
type ProcDetailOptions struct {
	Width, Height int
	Scroll        int
	// Detail is what /proc said, when it was read (a live process on this machine); Err why
	// it could not be; Loading that a read is under way; At when it was read.
	Detail  *sessions.ProcDetail
	Err     error
	Loading bool
	At      time.Time
	Users   map[int]string
}

// ProcDetailLines is the detail's text: what the session knows of the process, then what
// /proc says now when it was read.
func ProcDetailLines(st *Styles, s *sessions.State, p *sessions.Proc, o ProcDetailOptions) []string {
	w := o.Width
	var out []string
	add := func(label, text string) {
		lines := strings.Split(wrap(text, max(w-11, 20)), "\n")
		for i, l := range lines {
			if i == 0 {
				out = append(out, st.Bold.Render(pad(label, 10))+" "+l)
			} else {
				out = append(out, strings.Repeat(" ", 11)+l)
			}
		}
	}
	section := func(title string) { out = append(out, "", st.Bold.Render(title)) }
	state, _ := ProcStat(s, p)
	if d := o.Detail; d != nil && d.State != "" && p.Alive {
		state = sessions.Sanitize(d.State) // read just now, newer than the last sample
	}
	user, _ := procUser(p, o.Users)
	head := fmt.Sprintf("pid %d · %s · %s · %s · uid %s", p.PID, rankOrNone(p.Rank), sessions.Sanitize(p.Comm), state, user)
	if p.Host != "" {
		head = sessions.Sanitize(p.Host) + " " + head
	}
	out = append(out, st.Title.Render(cut(head, w)))
	d := o.Detail
	switch {
	case o.Loading && d == nil:
		out = append(out, st.Dim.Render("reading /proc/"+strconv.Itoa(p.PID)+"…"))
	case o.Err != nil && d == nil:
		out = append(out, st.Warn.Render(cut(sessions.Sanitize(o.Err.Error()), w)))
	case d != nil:
		out = append(out, st.Dim.Render(cut(fmt.Sprintf("read from /proc at %s (no stop, no ptrace) · refreshed every 2 s · esc closes", hms(o.At)), w)))
	}
	if d == nil {
		// What the session recorded: all there is for a process that ended, one on another
		// host, or a replay.
		add("command", sessions.Sanitize(strings.Join(p.Argv, " ")))
		add("exe", sessions.Sanitize(p.Exe))
		add("parent", strconv.Itoa(p.PPID))
		add("threads", strconv.Itoa(p.Threads))
		add("state", ProcState(p))
		if p.Crashes > 0 || p.Handled > 0 {
			add("faults", fmt.Sprintf("%s, %s", Count(p.Crashes, "crash", "crashes"), Count(p.Handled, "handled fault", "handled faults")))
		}
		return out
	}
	add("command", sessions.Sanitize(strings.Join(d.Cmdline, " ")))
	add("exe", sessions.Sanitize(d.Exe))
	add("cwd", sessions.Sanitize(d.Cwd))
	add("state", fmt.Sprintf("%s · parent %d", sessions.Sanitize(d.State), d.PPID))
	add("ids", fmt.Sprintf("uid %d/%d/%d/%d · gid %d/%d/%d/%d (real/effective/saved/fs)",
		d.UIDs[0], d.UIDs[1], d.UIDs[2], d.UIDs[3], d.GIDs[0], d.GIDs[1], d.GIDs[2], d.GIDs[3]))
	sec := map[int]string{0: "disabled", 1: "strict (read, write, exit, sigreturn only)", 2: "filter"}[d.Seccomp]
	if sec == "" {
		sec = "mode " + strconv.Itoa(d.Seccomp)
	}
	if d.Seccomp == 2 {
		sec += " (" + Count(d.SeccompFilters, "filter", "filters") + ")"
	}
	if d.NoNewPrivs {
		sec += " · no_new_privs"
	}
	add("seccomp", sec)
	add("caps", "effective "+sessions.Sanitize(d.CapEff))
	m := d.Maps
	add("memory", fmt.Sprintf("RSS %s of %s · %s: files %s, anonymous %s, heap %s, stack %s; executable %s",
		size(d.VmRSSKB), size(d.VmSizeKB), Count(m.Mappings, "mapping", "mappings"), size(m.FileKB), size(m.AnonKB),
		size(m.HeapKB), size(m.StackKB), size(m.ExecKB)))
	for i, c := range d.Cgroups {
		label := ""
		if i == 0 {
			label = "cgroup"
		}
		add(label, sessions.Sanitize(c))
	}
	section(fmt.Sprintf("threads (%d)", len(d.Threads)))
	for _, t := range d.Threads {
		sc := sessions.Sanitize(t.Syscall)
		switch {
		case t.Running:
			sc = "running on a CPU"
		case sc == "" && t.State == "R":
			sc = "runnable"
		case sc == "":
			sc = "not in a syscall"
		default:
			sc = "in " + sc
		}
		out = append(out, cut(fmt.Sprintf("  %7d %-16s %-2s %s", t.TID, sessions.Sanitize(t.Comm), sessions.Sanitize(t.State), sc), w))
	}
	more := ""
	if d.NFDs > len(d.FDs) {
		more = fmt.Sprintf(", the first %d shown", len(d.FDs))
	}
	section(fmt.Sprintf("open files (%d%s)", d.NFDs, more))
	for _, f := range d.FDs {
		out = append(out, "  "+midEllipsis(fmt.Sprintf("%4d %s", f.FD, sessions.Sanitize(f.Target)), max(w-2, 8)))
	}
	section(fmt.Sprintf("mapped files (%d)", len(m.Files)))
	for _, f := range m.Files {
		out = append(out, "  "+midEllipsis(sessions.Sanitize(f), max(w-2, 8)))
	}
	section("limits (soft / hard)")
	lw := 0
	for _, l := range d.Limits {
		lw = max(lw, len(sessions.Sanitize(l.Name)))
	}
	for _, l := range d.Limits {
		out = append(out, cut(fmt.Sprintf("  %-*s %s / %s %s", lw, sessions.Sanitize(l.Name), sessions.Sanitize(l.Soft),
			sessions.Sanitize(l.Hard), sessions.Sanitize(l.Units)), w))
	}
	if len(d.Unread) > 0 {
		section("not readable")
		for _, u := range d.Unread {
			out = append(out, "  "+st.Warn.Render(cut(sessions.Sanitize(u), max(w-2, 8))))
		}
	}
	return out
}

// size is a size in kB said in the unit that reads best.
func size(kb int64) string {
	switch {
	case kb >= 10<<20:
		return fmt.Sprintf("%d GB", kb>>20)
	case kb >= 1<<20:
		return fmt.Sprintf("%.1f GB", float64(kb)/(1<<20))
	case kb >= 10<<10:
		return fmt.Sprintf("%d MB", kb>>10)
	case kb >= 1<<10:
		return fmt.Sprintf("%.1f MB", float64(kb)/(1<<10))
	}
	return fmt.Sprintf("%d kB", kb)
}

// ProcDetail renders the detail from line o.Scroll, the position at the top right when it
// is taller than the body.
func ProcDetail(st *Styles, s *sessions.State, p *sessions.Proc, o ProcDetailOptions) string {
	lines := ProcDetailLines(st, s, p, o)
	head := lines[:1]
	body := lines[1:]
	return detailView(st, head, body, CrashOptions{Width: o.Width, Height: o.Height, Scroll: o.Scroll})
}

// ProcDetailMaxScroll is the last first line of the detail's scrolling part.
func ProcDetailMaxScroll(st *Styles, s *sessions.State, p *sessions.Proc, o ProcDetailOptions) int {
	return max(0, len(ProcDetailLines(st, s, p, o))-1-max(o.Height-1, 1))
}
