package views

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/crashtui/crashtui/sessions"
)

// CrashOptions are the crash view's options.
type CrashOptions struct {
	Width, Height int
	Cursor        int  // selected row: a group (index into Groups), or a site (into Sites) when Handled
	Detail        bool // show the selected group's (or site's) detail instead of the list
	Scroll        int  // first line of the detail's scrolling part
	// Handled lists the handled faults by site instead of the crash groups (t toggles).
	Handled bool
	// Groups are the groups listed, in order (CrashRows: filtered and sorted); nil lists
	// State.Groups as they are.
	Groups []*sessions.Group
	// Sites are the handled sites listed (HandledRows), when the caller keeps them (nil:
	// HandledSites(State)).
	Sites []HandledSite
	// Filter is the filter the rows match (highlighted); Sort and Reverse are the order
	// (CrashSorts or HandledSorts), marked in the header.
	Filter  string
	Sort    string
	Reverse bool
}

// groups is the list of groups o shows.
func (o CrashOptions) groups(s *sessions.State) []*sessions.Group {
	if o.Groups != nil {
		return o.Groups
	}
	return s.Groups
}

// sites is the list of handled sites o shows.
func (o CrashOptions) sites(s *sessions.State) []HandledSite {
	if o.Sites != nil {
		return o.Sites
	}
	return HandledSites(s)
}

// wideList is the width from which the lists show times and the core's path in their rows.
const wideList = 120

func groupSite(g *sessions.Group) string {
	if g.AbortMessage != "" {
		return "abort: " + sessions.Sanitize(g.AbortMessage)
	}
	site := sessions.Sanitize(sessions.ModuleBase(g.Module)) + "+" + g.Offset.String()
	if g.Function != "" {
		site = sessions.Sanitize(g.Function) + " (" + site + ")"
	}
	return site
}

// siteFull is groupSite without an abort message's final newline.
func siteFull(g *sessions.Group) string {
	if g.AbortMessage != "" {
		return "abort: " + sessions.Sanitize(strings.TrimRight(g.AbortMessage, "\n "))
	}
	return groupSite(g)
}

// assertRE is glibc's assert message (__assert_fail_base: "%s%s%s:%u: %s%sAssertion `%s'
// failed.\n"): program, file, line, function, expression.
var assertRE = regexp.MustCompile("^(?:.*?: )?([^: ]+):([0-9]+): (?:(.+?): )?Assertion [`'](.*)' failed\\.?\\s*$")

// siteShort is the site in a narrow list row, w cells: an assert as its file:line and
// expression (the SIGNAL column already says SIGABRT); a long function name is cut so that
// module+offset, the site's key, stays on screen.
func siteShort(g *sessions.Group, w int) string {
	if g.AbortMessage != "" {
		msg := strings.TrimRight(g.AbortMessage, "\n ")
		if m := assertRE.FindStringSubmatch(msg); m != nil {
			return sessions.Sanitize(fmt.Sprintf("%s:%s assert `%s'", sessions.ModuleBase(m[1]), m[2], m[4]))
		}
		return "abort: " + sessions.Sanitize(msg)
	}
	where := sessions.Sanitize(sessions.ModuleBase(g.Module)) + "+" + g.Offset.String()
	if g.Function == "" {
		return where
	}
	fn := sessions.Sanitize(g.Function)
	room := w - cellWidth(where) - 3
	switch {
	case cellWidth(fn) <= room:
	case room >= 12:
		fn = ansi.Truncate(fn, room, "…")
	case w < 32: // too narrow for both: the function, the detail has the rest
		return fn
	default: // the module's name is long too: they share the row
		off := "+" + g.Offset.String()
		fn = ansi.Truncate(fn, max((w-3-len(off))*2/5, 8), "…")
		where = cutMiddle(sessions.Sanitize(sessions.ModuleBase(g.Module)), w-cellWidth(fn)-3-len(off)) + off
	}
	return fn + " (" + where + ")"
}

// cutMiddle shortens s to w cells keeping its start and its end ("mca_btl…memory.so").
func cutMiddle(s string, w int) string {
	r := []rune(s)
	if len(r) <= w || w < 3 {
		return s
	}
	head := (w - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(w-1-head):])
}

// MidEllipsis is midEllipsis for the tui.
func MidEllipsis(s string, w int) string { return midEllipsis(s, w) }

// midEllipsis shortens a path to w cells by cutting its middle at directory boundaries: the
// file name and the directories nearest to it stay, "…" stands for what was cut
// ("/home/…/solver/relax.c:88").
func midEllipsis(s string, w int) string {
	if cellWidth(s) <= w {
		return s
	}
	if w < 4 {
		return cut(s, w)
	}
	parts := strings.Split(s, "/")
	last := parts[len(parts)-1]
	if cellWidth(last)+1 >= w {
		r := []rune(last)
		for len(r) > 0 && cellWidth(string(r))+1 > w {
			r = r[1:]
		}
		return "…" + string(r)
	}
	i := len(parts) - 1 // the tail is parts[i:]
	for i > 1 && cellWidth(strings.Join(parts[i-1:], "/"))+2 <= w {
		i--
	}
	tail := "/" + strings.Join(parts[i:], "/")
	head := ""
	for j := 1; j < i; j++ {
		c := strings.Join(parts[:j], "/")
		if cellWidth(c)+2+cellWidth(tail) > w {
			break
		}
		head = c + "/"
	}
	return head + "…" + tail
}

// hardWrap breaks s (a path, a key: no spaces to wrap at) into lines of w cells after prefix,
// after its separators where it can (splitToken), at most maxLines lines; the last one is cut
// in the middle when it does not fit.
func hardWrap(prefix, s string, w, maxLines int) []string {
	pw := cellWidth(prefix)
	room := w - pw
	if room < 8 {
		return []string{cut(prefix+s, w)}
	}
	pieces := splitToken(s, room, room)
	var out []string
	for i, piece := range pieces {
		p := prefix
		if i > 0 {
			p = strings.Repeat(" ", pw)
		}
		if i == maxLines-1 && i < len(pieces)-1 {
			return append(out, p+midEllipsis(strings.TrimSpace(strings.Join(pieces[i:], "")), room))
		}
		out = append(out, p+strings.TrimSpace(piece))
	}
	return out
}

// RankList compresses ranks into ranges: 0-3,7,9-10; unranked members are counted as "+N".
func RankList(rs []sessions.Rank) string {
	var ns []int
	none := 0
	for _, r := range rs {
		if r < 0 {
			none++
			continue
		}
		ns = append(ns, int(r))
	}
	var parts []string
	if len(ns) > 0 {
		parts = append(parts, sessions.CompressInts(ns))
	}
	if none > 0 {
		parts = append(parts, fmt.Sprintf("+%d unranked", none))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func hms(t time.Time) string {
	if t.IsZero() {
		return "--:--:--"
	}
	return t.UTC().Format("15:04:05")
}

// HandledSite is the handled faults at one site: the same signal at the same module+offset,
// across processes and hosts (as crash groups are).
type HandledSite struct {
	Signal, Code string
	Module       string
	Offset       sessions.Hex
	Function     string
	Members      []sessions.CrashRef // Crash.Rank filled from the process when the event had none
	First, Last  time.Time
}

// Key is the site's identity: its signal, module and offset.
func (h *HandledSite) Key() string { return h.Signal + "|" + h.Module + "|" + h.Offset.String() }

// Site is the site as a list shows it.
func (h *HandledSite) Site() string {
	site := sessions.Sanitize(sessions.ModuleBase(h.Module)) + "+" + h.Offset.String()
	if h.Function != "" {
		site = sessions.Sanitize(h.Function) + " (" + site + ")"
	}
	return site
}

// HandledSites groups the State's handled faults by site, in first-seen order.
func HandledSites(s *sessions.State) []HandledSite {
	var out []HandledSite
	at := map[string]int{}
	for _, r := range s.Handled {
		c := r.Crash
		k := c.Signal + "|" + c.Module + "|" + c.Offset.String()
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, HandledSite{Signal: c.Signal, Code: c.Code, Module: c.Module, Offset: c.Offset,
				Function: c.Function, First: r.Time})
		}
		if c.Rank < 0 {
			if p := s.Procs[sessions.ProcKey{Host: r.Host, PID: c.PID}]; p != nil {
				r.Crash.Rank = p.Rank
			}
		}
		h := &out[i]
		h.Members = append(h.Members, r)
		h.Last = r.Time
		if h.Code != c.Code {
			h.Code = "mixed"
		}
	}
	return out
}

func (h *HandledSite) ranks() string {
	var rs []sessions.Rank
	for _, m := range h.Members {
		rs = append(rs, m.Crash.Rank)
	}
	return RankList(rs)
}

func (h *HandledSite) procs() int {
	n := map[sessions.ProcKey]bool{}
	for _, m := range h.Members {
		n[sessions.ProcKey{Host: m.Host, PID: m.Crash.PID}] = true
	}
	return len(n)
}

// NoCoreSentence says why a crash group has no core, from the tracer's reason (a recorded
// one may be anything: unknown reasons are shown sanitised).
func NoCoreSentence(why sessions.NoCore) string {
	switch why {
	case "":
		return "core: none kept (crashtui keeps one per crash site with --cores DIR)"
	case sessions.NoCoreRlimit:
		return "no core: every member has RLIMIT_CORE 0; ulimit -c unlimited before starting the job"
	case sessions.NoCoreNonDumpable:
		return "no core: the process is not dumpable (PR_SET_DUMPABLE 0, or a setuid/setgid exec), and the kernel would write none either"
	case sessions.NoCoreDumpableUnknown:
		return "no core: whether the process may be dumped cannot be told from outside (root of its user namespace), so none is written"
	case sessions.NoCoreWriteFailed:
		return "no core: writing it failed (the Log tab says why)"
	case sessions.NoCoreMixed:
		return "no core: members lacked one for different reasons (RLIMIT_CORE 0, not dumpable); see each crash"
	}
	return "no core: " + sessions.Sanitize(string(why))
}

// crashDetailHead is the part of a group's detail that never scrolls away: what it is, its
// core's path (whole, wrapped when long) and who the representative is.
func crashDetailHead(st *Styles, s *sessions.State, g *sessions.Group, width int) []string {
	out := []string{st.Title.Render(cut(fmt.Sprintf("group %d · %s × %d · %s", g.ID, sessions.Sanitize(g.Signal), g.Count(), siteFull(g)), width))}
	if g.Core != nil {
		out = append(out, hardWrap("core ", sessions.Sanitize(*g.Core), width, 3)...)
	} else {
		out = append(out, st.Warn.Render(cut(NoCoreSentence(g.NoCore), width)))
	}
	rep := "representative"
	if width < 100 {
		rep = "rep"
	}
	if g.Representative.PID == 0 {
		rep = "no " + rep + ": no member could have a core"
	} else {
		rep += fmt.Sprintf(" pid %d", g.Representative.PID)
		if r := RepresentativeCrash(g); r != nil {
			rep += " (rank " + r.Crash.Rank.String() + ")"
		}
		if g.Representative.Host != "" {
			rep += " on " + sessions.Sanitize(g.Representative.Host)
		}
	}
	out = append(out, st.Dim.Render(cut(rep+" · first "+hms(g.First)+" · last "+hms(g.Last), width)))
	return out
}

// CrashDetailLines is the scrolling part of a group's detail (the tui scrolls it below
// crashDetailHead).
func CrashDetailLines(st *Styles, s *sessions.State, g *sessions.Group, width int) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	rep := RepresentativeCrash(g)
	out = append(out, hardWrap("key: ", sessions.Sanitize(g.Key), width, 3)...)
	if rep != nil {
		c := rep.Crash
		out = append(out, "")
		out = append(out, st.Bold.Render("siginfo"))
		out = append(out, cut(fmt.Sprintf("  %s %s addr %s pc %s (tid %d, rank %s)", sessions.Sanitize(c.Signal), sessions.Sanitize(c.Code), c.Addr, c.PC, c.TID, c.Rank), width))
		for _, l := range strings.Split(wrap(SigCodeText(c.Signal, c.Code), max(width-4, 10)), "\n") {
			out = append(out, "  "+st.Info.Render(l))
		}
		if c.UserSent {
			for _, l := range strings.Split(wrap("sent by kill/tgkill: the pc is where the thread was, not a faulting instruction", max(width-4, 10)), "\n") {
				out = append(out, "  "+st.Warn.Render(l))
			}
		}
		if g.AbortMessage != "" || c.AbortMessage != "" {
			msg := c.AbortMessage
			if msg == "" {
				msg = g.AbortMessage
			}
			out = append(out, "")
			out = append(out, st.Bold.Render("abort message"))
			for _, l := range strings.Split(wrap(sessions.Sanitize(strings.TrimRight(msg, "\n ")), max(width-4, 10)), "\n") {
				out = append(out, "  "+l)
			}
		}
		out = append(out, "")
		out = append(out, st.Bold.Render("site"))
		out = append(out, cut("  "+orUnknown(sessions.Sanitize(c.Function)), width))
		if c.File != "" {
			out = append(out, "  at "+midEllipsis(fmt.Sprintf("%s:%d", sessions.Sanitize(c.File), c.Line), max(width-5, 8)))
		}
		out = append(out, "  in "+midEllipsis(sessions.Sanitize(c.Module)+"+"+c.Offset.String(), max(width-5, 8)))
		stack := c.Stack
		if len(stack) == 0 {
			stack = g.Stack
		}
		out = append(out, "")
		out = append(out, st.Bold.Render("stack"))
		if len(stack) == 0 {
			out = append(out, st.Dim.Render("  no stack in the event"))
		}
		out = append(out, stackLines(st, stack, width)...)
		out = append(out, "")
		out = append(out, st.Bold.Render("disassembly"))
		if len(c.Disasm) == 0 {
			out = append(out, st.Dim.Render(cut(fmt.Sprintf("  the crash event carries no instructions; the site is %s+%s (pc %s)",
				sessions.Sanitize(sessions.ModuleBase(c.Module)), c.Offset, c.PC), width)))
		}
		for _, in := range c.Disasm {
			mark := "   "
			if in.Fault {
				mark = "=> "
			}
			line := cut(fmt.Sprintf("  %s%s  %-20s %s", mark, in.PC, sessions.Sanitize(in.Bytes), sessions.Sanitize(in.Text)), width)
			if in.Fault {
				line = st.Bad.Render(line)
			}
			out = append(out, line)
		}
		out = append(out, "")
		out = append(out, st.Bold.Render("registers"))
		if len(c.Regs) == 0 {
			out = append(out, st.Dim.Render("  no registers in the event"))
		}
		out = append(out, regGrid(regNames(c.Regs), func(n string) string { return c.Regs[n].String() }, width)...)
	}
	out = append(out, "")
	out = append(out, st.Bold.Render(fmt.Sprintf("members (%d)", g.Count())))
	for i, m := range g.Members {
		if i == 200 {
			add("  … %d more", g.Count()-i)
			break
		}
		host := ""
		if m.Host != "" {
			host = sessions.Sanitize(m.Host) + ":"
		}
		line := fmt.Sprintf("  %s %s%d tid %d rank %s %s", hms(m.Time), host, m.Crash.PID, m.Crash.TID, m.Crash.Rank, sessions.Sanitize(m.Crash.Code))
		if m.Host == g.Representative.Host && m.Crash.PID == g.Representative.PID {
			line += " (representative)"
		}
		out = append(out, cut(line, width))
	}
	return out
}

// commonDir is the directory every absolute source file of the stack is under, when it is
// at least two levels deep ("/home/ada/src/"); "" otherwise.
func commonDir(stack []sessions.Frame) string {
	dir := ""
	n := 0
	for _, f := range stack {
		if !strings.HasPrefix(f.File, "/") {
			continue
		}
		d := f.File[:strings.LastIndexByte(f.File, '/')+1]
		if n == 0 {
			dir = d
		}
		for !strings.HasPrefix(d, dir) {
			dir = dir[:strings.LastIndexByte(dir[:len(dir)-1], '/')+1]
		}
		n++
	}
	if strings.Count(dir, "/") < 3 {
		return ""
	}
	return dir
}

// stackLines lays a stack out to fit width: one line per frame in aligned columns (frame,
// function, file:line relative to the sources' common directory, said once above,
// module+offset, and the pc when there is room); a frame too long for them takes two lines,
// the function on the first and file:line and module+offset under it, so that nothing is cut
// but what even a line of its own cannot hold (then in the middle of the path, keeping the
// file name).
func stackLines(st *Styles, stack []sessions.Frame, width int) []string {
	var out []string
	dir := commonDir(stack)
	if dir != "" {
		out = append(out, st.Dim.Render("  sources under "+midEllipsis(sessions.Sanitize(dir), max(width-16, 8))))
	}
	type row struct{ fn, loc, mod, pc string }
	rows := make([]row, len(stack))
	for i, f := range stack {
		r := row{fn: orUnknown(sessions.Sanitize(f.Function)), mod: sessions.Sanitize(sessions.ModuleBase(f.Module)) + "+" + f.Offset.String(), pc: f.PC.String()}
		if f.Inlined {
			r.fn += " (inlined)"
		}
		if f.File != "" {
			file := f.File
			if dir != "" {
				file = strings.TrimPrefix(file, dir)
			}
			r.loc = fmt.Sprintf("%s:%d", sessions.Sanitize(file), f.Line)
		}
		rows[i] = r
	}
	const lead = 6 // "  #12 "
	// Frames whose columns do not fit go on two lines, the longest first, until the rest fit
	// in aligned columns.
	split := make([]bool, len(rows))
	var fnW, locW, modW int
	for {
		fnW, locW, modW = 0, 0, 0
		longest, longestW := -1, 0
		for i, r := range rows {
			if split[i] {
				continue
			}
			fnW = max(fnW, cellWidth(r.fn))
			locW = max(locW, cellWidth(r.loc))
			modW = max(modW, cellWidth(r.mod))
			if w := cellWidth(r.fn) + cellWidth(r.loc) + cellWidth(r.mod); w > longestW {
				longest, longestW = i, w
			}
		}
		need := lead + fnW + 2 + modW
		if locW > 0 {
			need += locW + 2
		}
		if need <= width || longest < 0 {
			break
		}
		split[longest] = true
	}
	need := lead + fnW + 2 + locW + 2 + modW
	showPC := need+2+18 <= width
	for i, r := range rows {
		if !split[i] {
			line := fmt.Sprintf("  #%-2d %s  ", i, pad(r.fn, fnW))
			if locW > 0 {
				line += pad(r.loc, locW) + "  "
			}
			line += pad(r.mod, modW)
			if showPC {
				line += "  " + r.pc
			}
			out = append(out, strings.TrimRight(line, " "))
			continue
		}
		out = append(out, cut(fmt.Sprintf("  #%-2d %s", i, r.fn), width))
		room := width - lead
		second := r.mod
		if r.loc != "" {
			loc := r.loc
			if cellWidth(loc)+2+cellWidth(r.mod) > room {
				loc = midEllipsis(loc, max(room-2-min(cellWidth(r.mod), 24), room/2))
			}
			second = loc + "  " + r.mod
		}
		out = append(out, cut(strings.Repeat(" ", lead)+second, width))
	}
	return out
}

// handledDetailHead is the part of a handled site's detail that never scrolls away.
func handledDetailHead(st *Styles, h *HandledSite, width int) []string {
	return []string{
		st.Title.Render(cut(fmt.Sprintf("handled · %s %s × %d · %s", sessions.Sanitize(h.Signal), sessions.Sanitize(h.Code), len(h.Members), h.Site()), width)),
		st.Good.Render(cut("repaired by the program's own handler: not a crash, no core kept", width)),
		st.Dim.Render(cut(fmt.Sprintf("%s · %s · first %s · last %s", Count(h.procs(), "process", "processes"), ranksWord(h.ranks()), hms(h.First), hms(h.Last)), width)),
	}
}

// HandledDetailLines is the scrolling part of a handled site's detail.
func HandledDetailLines(st *Styles, h *HandledSite, width int) []string {
	var out []string
	w := max(width-4, 10)
	out = append(out, st.Bold.Render("signal"))
	for _, l := range strings.Split(wrap(SigCodeText(h.Signal, h.Code), w), "\n") {
		out = append(out, "  "+st.Info.Render(l))
	}
	out = append(out, "", st.Bold.Render("site"))
	out = append(out, cut("  "+orUnknown(sessions.Sanitize(h.Function)), width), "  in "+midEllipsis(sessions.Sanitize(h.Module)+"+"+h.Offset.String(), max(width-5, 8)))
	out = append(out, "", st.Bold.Render("why it is not a crash"))
	for _, l := range strings.Split(wrap("crashtui delivered the signal to the program's handler and followed the thread to the rt_sigreturn "+
		"that ends it; the thread then ran on without the same fault coming back, so the handler repaired it (a safepoint page made "+
		"readable, a file extended under a SIGBUS). The handler's own address is not in the event.", w), "\n") {
		out = append(out, "  "+l)
	}
	out = append(out, "", st.Bold.Render(fmt.Sprintf("faults (%d)", len(h.Members))))
	for i, m := range h.Members {
		if i == 200 {
			out = append(out, fmt.Sprintf("  … %d more", len(h.Members)-i))
			break
		}
		host := ""
		if m.Host != "" {
			host = sessions.Sanitize(m.Host) + ":"
		}
		out = append(out, cut(fmt.Sprintf("  %s %s%d tid %d rank %s addr %s pc %s", hms(m.Time), host, m.Crash.PID, m.Crash.TID,
			m.Crash.Rank, m.Crash.Addr, m.Crash.PC), width))
	}
	return out
}

// detailView draws head, then body from o.Scroll, with where the body is in the last head line.
func detailView(st *Styles, head, body []string, o CrashOptions) string {
	room := max(o.Height-len(head), 1)
	off := max(0, min(o.Scroll, len(body)-room))
	end := min(len(body), off+room)
	if len(body) > room {
		pos := fmt.Sprintf("lines %d-%d/%d", off+1, end, len(body))
		last := len(head) - 1
		head[last] = leftRight(head[last], st.Dim.Render(pos), o.Width)
	}
	return fit(strings.Join(append(head, body[off:end]...), "\n"), o.Width, o.Height)
}

// CrashDetail renders a group's detail, its scrolling part from line o.Scroll.
func CrashDetail(st *Styles, s *sessions.State, g *sessions.Group, o CrashOptions) string {
	return detailView(st, crashDetailHead(st, s, g, o.Width), CrashDetailLines(st, s, g, o.Width), o)
}

// CrashDetailMaxScroll is the last first line of the detail's scrolling part: scrolling stops
// where its last line is at the bottom (no dead zone past the end).
func CrashDetailMaxScroll(st *Styles, s *sessions.State, o CrashOptions) int {
	var head, body []string
	gs := o.groups(s)
	switch {
	case o.Handled:
		sites := o.sites(s)
		if len(sites) == 0 {
			return 0
		}
		h := &sites[clampI(o.Cursor, len(sites))]
		head, body = handledDetailHead(st, h, o.Width), HandledDetailLines(st, h, o.Width)
	case len(gs) > 0:
		g := gs[clampI(o.Cursor, len(gs))]
		head, body = crashDetailHead(st, s, g, o.Width), CrashDetailLines(st, s, g, o.Width)
	default:
		return 0
	}
	return max(0, len(body)-max(o.Height-len(head), 1))
}

// ExplainHandled teaches a handled-fault site.
func ExplainHandled(h *HandledSite) Explanation {
	return Explanation{
		Title: fmt.Sprintf("handled %s at %s", sessions.Sanitize(h.Signal), h.Site()),
		What: fmt.Sprintf("%s at this site, in %s, were repaired by the program's own %s handler: the thread went on after the handler returned and the fault did not come back. They are not crashes and get no core.",
			Count(len(h.Members), "fault", "faults"), Count(h.procs(), "process", "processes"), sessions.Sanitize(h.Signal)),
		Rule:   SigCodeText(h.Signal, h.Code),
		Kernel: "signal-delivery-stop (get_signal): crashtui delivers the signal, follows the thread with PTRACE_SYSCALL to the rt_sigreturn that balances the handler's frame, then lets it run: a syscall or no fault soon after means repaired, the same fault again means not (then it is a crash at the original site).",
		Fix:    "nothing to fix when the program means it (Java and Julia safepoints, a SIGBUS on a file it extends); thousands per second cost time, and a handler that siglongjmps out of a real bug hides it.",
		Story:  StorySpindle,
	}
}

// regNames orders registers: pc/sp-like first, then the rest by name with numeric suffixes in
// order (r2 before r10).
func regNames(regs map[string]sessions.Hex) []string {
	var ns []string
	for n := range regs {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool {
		pi, pj := regPriority(ns[i]), regPriority(ns[j])
		if pi != pj {
			return pi < pj
		}
		return regLess(ns[i], ns[j])
	})
	return ns
}

// regPriority puts the pc, the stack pointer and the frame pointer first, in that order, on
// every architecture (amd64 rip rsp rbp, arm64 pc sp x29, ppc64le nip r1 and lr for the
// caller); the rest follow by name.
func regPriority(name string) int {
	switch name {
	case "rip", "pc", "nip":
		return 0
	case "rsp", "sp", "r1":
		return 1
	case "rbp", "x29", "link", "x30":
		return 2
	}
	return 3
}

func regLess(a, b string) bool {
	split := func(s string) (string, int) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n := 0
		fmt.Sscan(s[i:], &n)
		return s[:i], n
	}
	pa, na := split(a)
	pb, nb := split(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

// regGrid lays registers out in columns.
func regGrid(names []string, val func(string) string, width int) []string {
	const cw = 28
	cols := max(1, (width-2)/cw)
	var out []string
	var line strings.Builder
	for i, n := range names {
		line.WriteString(pad(fmt.Sprintf("%-8s %s", sessions.Sanitize(n), val(n)), cw))
		if (i+1)%cols == 0 {
			out = append(out, "  "+strings.TrimRight(line.String(), " "))
			line.Reset()
		}
	}
	if line.Len() > 0 {
		out = append(out, "  "+strings.TrimRight(line.String(), " "))
	}
	return out
}
