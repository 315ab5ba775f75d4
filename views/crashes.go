package views

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// CrashOptions are the crash view's options.
type CrashOptions struct {
	Width, Height int
	Cursor        int  // selected group (index into State.Groups)
	Detail        bool // show the selected group's detail instead of the list
	Scroll        int  // first line of the detail
}

func groupSite(g *sessions.Group) string {
	if g.AbortMessage != "" {
		return "abort: " + sessions.Sanitize(g.AbortMessage)
	}
	site := sessions.Sanitize(baseName(g.Module)) + "+" + g.Offset.String()
	if g.Function != "" {
		site = sessions.Sanitize(g.Function) + " (" + site + ")"
	}
	return site
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

// RankList compresses ranks into ranges: 0-3,7,9-10; unranked members are counted as "+N".
func RankList(rs []sessions.Rank) string {
	var ns []int
	none := 0
	seen := map[sessions.Rank]bool{}
	for _, r := range rs {
		if r < 0 {
			none++
			continue
		}
		if !seen[r] {
			seen[r] = true
			ns = append(ns, int(r))
		}
	}
	sort.Ints(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
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

// Crashes renders the crash groups, or the selected group's detail.
func Crashes(st *Styles, s *sessions.State, o CrashOptions) string {
	if len(s.Groups) == 0 {
		msg := "no crashes so far"
		if s.NHandled > 0 {
			msg += fmt.Sprintf(" · %d faults handled by the program's own handlers (not crashes)", s.NHandled)
		}
		return fit(st.Dim.Render(msg), o.Width, o.Height)
	}
	cur := clampI(o.Cursor, len(s.Groups))
	if o.Detail {
		return CrashDetail(st, s, s.Groups[cur], o)
	}
	var b strings.Builder
	b.WriteString(st.Dim.Render(fmt.Sprintf("%s in %s · %s · enter: detail · e: explain",
		Count(s.Crashes, "crash", "crashes"), Count(len(s.Groups), "group", "groups"), Count(s.NHandled, "handled fault", "handled faults"))) + "\n")
	head := fmt.Sprintf("%3s %5s %-8s %-12s %-8s %-8s %-7s %s", "#", "COUNT", "SIGNAL", "RANKS", "FIRST", "LAST", "REP", "SITE / CORE")
	b.WriteString(st.Head.Render(cut(head, o.Width)) + "\n")
	h := o.Height - 2
	off := window(cur, 0, h, len(s.Groups))
	for i := off; i < len(s.Groups) && i < off+h; i++ {
		g := s.Groups[i]
		var ranks []sessions.Rank
		for _, m := range g.Members {
			ranks = append(ranks, m.Crash.Rank)
		}
		core := ""
		if g.Core != nil {
			core = " → " + sessions.Sanitize(*g.Core)
		}
		line := fmt.Sprintf("%3d %5d %-8s %s %-8s %-8s %-7d %s%s", g.ID, g.Count(), sessions.Sanitize(g.Signal),
			pad(RankList(ranks), 12), hms(g.First), hms(g.Last), g.Representative.PID, groupSite(g), core)
		line = cut(line, o.Width)
		if i == cur {
			line = st.Cursor(line, o.Width)
		} else {
			line = st.Bad.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}

// CrashDetailLines is the detail of a group as lines (the tui scrolls them).
func CrashDetailLines(st *Styles, s *sessions.State, g *sessions.Group, width int) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	rep := RepresentativeCrash(g)
	out = append(out, st.Title.Render(fmt.Sprintf("group %d · %s × %d · %s", g.ID, sessions.Sanitize(g.Signal), g.Count(), groupSite(g))))
	add("key: %s", sessions.Sanitize(g.Key))
	core := "none kept"
	if g.Core != nil {
		core = sessions.Sanitize(*g.Core)
	}
	add("representative: pid %d · core: %s · first %s · last %s", g.Representative.PID, core, hms(g.First), hms(g.Last))
	if rep != nil {
		c := rep.Crash
		out = append(out, "")
		out = append(out, st.Bold.Render("siginfo"))
		add("  %s %s addr %s pc %s (tid %d, rank %s)", sessions.Sanitize(c.Signal), sessions.Sanitize(c.Code), c.Addr, c.PC, c.TID, c.Rank)
		for _, l := range strings.Split(wrap(SigCodeText(c.Signal, c.Code), max(width-4, 10)), "\n") {
			out = append(out, "  "+st.Info.Render(l))
		}
		if c.UserSent {
			out = append(out, "  "+st.Warn.Render("sent by kill/tgkill: the pc is where the thread was, not a faulting instruction"))
		}
		if g.AbortMessage != "" || c.AbortMessage != "" {
			msg := c.AbortMessage
			if msg == "" {
				msg = g.AbortMessage
			}
			out = append(out, "")
			out = append(out, st.Bold.Render("abort message"))
			out = append(out, "  "+sessions.Sanitize(msg))
		}
		out = append(out, "")
		out = append(out, st.Bold.Render("site"))
		loc := ""
		if c.File != "" {
			loc = fmt.Sprintf(" at %s:%d", sessions.Sanitize(c.File), c.Line)
		}
		add("  %s+%s %s%s", sessions.Sanitize(c.Module), c.Offset, sessions.Sanitize(c.Function), loc)
		stack := c.Stack
		if len(stack) == 0 {
			stack = g.Stack
		}
		out = append(out, "")
		out = append(out, st.Bold.Render("stack"))
		if len(stack) == 0 {
			out = append(out, st.Dim.Render("  no stack in the event"))
		}
		for i, f := range stack {
			fn := sessions.Sanitize(f.Function)
			if fn == "" {
				fn = "??"
			}
			line := fmt.Sprintf("  #%-2d %s %s  %s+%s", i, f.PC, fn, sessions.Sanitize(baseName(f.Module)), f.Offset)
			if f.File != "" {
				line += fmt.Sprintf("  %s:%d", sessions.Sanitize(f.File), f.Line)
			}
			out = append(out, line)
		}
		out = append(out, "")
		out = append(out, st.Bold.Render("disassembly"))
		if len(c.Disasm) == 0 {
			out = append(out, st.Dim.Render(fmt.Sprintf("  the crash event carries no instructions; the site is %s+%s (pc %s)",
				sessions.Sanitize(baseName(c.Module)), c.Offset, c.PC)))
		}
		for _, in := range c.Disasm {
			mark := "   "
			if in.Fault {
				mark = "=> "
			}
			line := fmt.Sprintf("  %s%s  %-20s %s", mark, in.PC, sessions.Sanitize(in.Bytes), sessions.Sanitize(in.Text))
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
		add("  %s %s%d tid %d rank %s %s", hms(m.Time), host, m.Crash.PID, m.Crash.TID, m.Crash.Rank, sessions.Sanitize(m.Crash.Code))
	}
	return out
}

// CrashDetail renders a group's detail from line o.Scroll.
func CrashDetail(st *Styles, s *sessions.State, g *sessions.Group, o CrashOptions) string {
	lines := CrashDetailLines(st, s, g, o.Width)
	off := o.Scroll
	if off > len(lines)-o.Height {
		off = len(lines) - o.Height
	}
	if off < 0 {
		off = 0
	}
	return fit(strings.Join(lines[off:], "\n"), o.Width, o.Height)
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
		line.WriteString(pad(fmt.Sprintf("%-6s %s", sessions.Sanitize(n), val(n)), cw))
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
