package views

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// CrashSorts are the orders of the crash groups (s cycles, r reverses): # is the order the
// groups were first seen in.
var CrashSorts = []string{"#", "count", "signal", "ranks", "last", "rep", "site"}

// HandledSorts are the orders of the handled-fault sites: first is the order first seen.
var HandledSorts = []string{"first", "count", "signal", "code", "ranks", "procs", "last", "site"}

// groupRankText is a group's RANKS: its members' ranks compressed; for a group that keeps
// fewer members than it counts (a root of reducing views, or past MaxGroupMembers) its rank
// set and how many hosts it spans, which cost runs and hosts, never members.
func groupRankText(g *sessions.Group) string {
	if g.Count() <= len(g.Members) {
		return RankList(groupRanks(g))
	}
	t := g.Ranks().String()
	if n := g.Unranked(); n > 0 {
		t = strings.TrimSpace(t + fmt.Sprintf(" +%d unranked", n))
	}
	if t == "" {
		t = "-"
	}
	if n := g.Hosts().Len(); n > 1 {
		t += fmt.Sprintf(" on %d hosts", n)
	}
	return t
}

// groupFirstRank is the lowest rank of a group (1<<30 when none).
func groupFirstRank(g *sessions.Group) int {
	if g.Count() <= len(g.Members) {
		return firstRank(groupRanks(g))
	}
	if r := g.Ranks(); !r.Empty() {
		return r.First()
	}
	return 1 << 30
}

func groupRanks(g *sessions.Group) []sessions.Rank {
	rs := make([]sessions.Rank, 0, len(g.Members))
	for _, m := range g.Members {
		rs = append(rs, m.Crash.Rank)
	}
	return rs
}

func firstRank(rs []sessions.Rank) int {
	lo := 1 << 30
	for _, r := range rs {
		if r >= 0 {
			lo = min(lo, int(r))
		}
	}
	return lo
}

// repPID is the group's representative's pid, or "-" while it has none (no member could have
// a core).
func repPID(g *sessions.Group) string {
	if g.Representative.PID == 0 {
		return "-"
	}
	return strconv.Itoa(g.Representative.PID)
}

// crashRowText is what a group's filter matches: every column of its row, the site whole and
// the core's path.
func crashRowText(g *sessions.Group) string {
	t := fmt.Sprintf("%d %d %s %s %s %s", g.ID, g.Count(), g.Signal, groupRankText(g), repPID(g), siteFull(g))
	if g.Core != nil {
		t += " " + *g.Core
	}
	return sessions.Sanitize(t)
}

// CrashRows are the groups whose row contains filter, in the order by (one of CrashSorts),
// reversed when reverse is set; ties keep the order first seen.
func CrashRows(s *sessions.State, filter, by string, reverse bool) []*sessions.Group {
	out := make([]*sessions.Group, 0, len(s.Groups))
	for _, g := range s.Groups {
		if Matches(crashRowText(g), filter) {
			out = append(out, g)
		}
	}
	less := map[string]func(a, b *sessions.Group) bool{
		"count":  func(a, b *sessions.Group) bool { return a.Count() > b.Count() },
		"signal": func(a, b *sessions.Group) bool { return a.Signal < b.Signal },
		"ranks":  func(a, b *sessions.Group) bool { return groupFirstRank(a) < groupFirstRank(b) },
		"last":   func(a, b *sessions.Group) bool { return a.Last.After(b.Last) },
		"rep":    func(a, b *sessions.Group) bool { return a.Representative.PID < b.Representative.PID },
		"site":   func(a, b *sessions.Group) bool { return siteFull(a) < siteFull(b) },
	}[by]
	if less == nil { // #: the order first seen
		less = func(a, b *sessions.Group) bool { return false }
	}
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	if reverse {
		if by == "#" || by == "" {
			reverseGroups(out)
		} else {
			sort.SliceStable(out, func(i, j int) bool { return less(out[j], out[i]) })
		}
	}
	return out
}

func reverseGroups(gs []*sessions.Group) {
	for i, j := 0, len(gs)-1; i < j; i, j = i+1, j-1 {
		gs[i], gs[j] = gs[j], gs[i]
	}
}

// handledRowText is what a handled site's filter matches.
func handledRowText(h *HandledSite) string {
	return sessions.Sanitize(fmt.Sprintf("%d %s %s %s %d %s", len(h.Members), h.Signal, h.Code, h.ranks(), h.procs(), h.Site()))
}

// HandledRows are the sites whose row contains filter, in the order by (one of
// HandledSorts), reversed when reverse is set.
func HandledRows(sites []HandledSite, filter, by string, reverse bool) []HandledSite {
	out := make([]HandledSite, 0, len(sites))
	for i := range sites {
		if Matches(handledRowText(&sites[i]), filter) {
			out = append(out, sites[i])
		}
	}
	ranks := func(h *HandledSite) int {
		var rs []sessions.Rank
		for _, m := range h.Members {
			rs = append(rs, m.Crash.Rank)
		}
		return firstRank(rs)
	}
	less := map[string]func(a, b *HandledSite) bool{
		"count":  func(a, b *HandledSite) bool { return len(a.Members) > len(b.Members) },
		"signal": func(a, b *HandledSite) bool { return a.Signal < b.Signal },
		"code":   func(a, b *HandledSite) bool { return a.Code < b.Code },
		"ranks":  func(a, b *HandledSite) bool { return ranks(a) < ranks(b) },
		"procs":  func(a, b *HandledSite) bool { return a.procs() > b.procs() },
		"last":   func(a, b *HandledSite) bool { return a.Last.After(b.Last) },
		"site":   func(a, b *HandledSite) bool { return a.Site() < b.Site() },
	}[by]
	if less == nil { // first: the order first seen
		less = func(a, b *HandledSite) bool { return false }
	}
	sort.SliceStable(out, func(i, j int) bool { return less(&out[i], &out[j]) })
	if reverse {
		if by == "first" || by == "" {
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
		} else {
			sort.SliceStable(out, func(i, j int) bool { return less(&out[j], &out[i]) })
		}
	}
	return out
}

// markSort appends the sort marker to the head of the column named by (its position in
// sorts is its column in cols, through at).
func markSort(cols []column, at map[string]int, by string, reverse bool) {
	if i, ok := at[by]; ok && cols[i].head != "" { // a column left out has no header to mark
		cols[i].head += SortMark(by, reverse)
	}
}

// The columns each sort is marked on.
var (
	crashSortColumn   = map[string]int{"#": 0, "count": 1, "signal": 2, "ranks": 3, "last": 5, "rep": 6, "site": 8}
	handledSortColumn = map[string]int{"count": 0, "signal": 1, "code": 2, "ranks": 3, "procs": 4, "first": 5, "last": 6, "site": 7}
)

// Crashes renders the crash groups (or the handled faults by site), or the selected one's
// detail.
func Crashes(st *Styles, s *sessions.State, o CrashOptions) string {
	if o.Handled {
		return handledList(st, s, o)
	}
	gs := o.groups(s)
	if len(s.Groups) == 0 {
		msg := "no crashes so far"
		if s.NHandled > 0 {
			msg += fmt.Sprintf(" · %s by the program's own handlers (not crashes): t lists them",
				Count(s.NHandled, "fault handled", "faults handled"))
		}
		return fit(st.Dim.Render(msg), o.Width, o.Height)
	}
	cur := clampI(o.Cursor, len(gs))
	if o.Detail && cur >= 0 {
		return CrashDetail(st, s, gs[cur], o)
	}
	var b strings.Builder
	title := fmt.Sprintf("%s in %s", Count(s.Crashes, "crash", "crashes"), Count(len(s.Groups), "group", "groups"))
	if o.Filter != "" {
		title = fmt.Sprintf("%d of %s match · filter: %s", len(gs), Count(len(s.Groups), "group", "groups"), sessions.Sanitize(o.Filter))
	}
	if s.NHandled > 0 {
		title += " · " + Count(s.NHandled, "handled fault", "handled faults") + " (t lists them)"
	}
	h := o.Height - 2
	b.WriteString(st.Dim.Render(leftRight(title, Position(cur, len(gs), h), o.Width)) + "\n")
	cols := []column{{head: "#", right: true}, {head: "COUNT", right: true}, {head: "SIGNAL"}, {head: "RANKS", cap: 24},
		{head: "FIRST", drop: 2}, {head: "LAST", drop: 2}, {head: "REP", right: true, drop: 3}, {head: "CORE", drop: 1},
		{head: "SITE", min: 24}}
	cells := make([][]string, len(gs))
	for i, g := range gs {
		core := "no"
		if g.Core != nil {
			core = "yes"
		}
		cells[i] = []string{strconv.Itoa(g.ID), strconv.Itoa(g.Count()), sessions.Sanitize(g.Signal), groupRankText(g),
			hms(g.First), hms(g.Last), repPID(g), core, siteFull(g)}
		for j, c := range cells[i] {
			cols[j].want = max(cols[j].want, cellWidth(c))
		}
	}
	if o.Width < wideList { // the times are in the detail; a narrow list keeps the site
		cols[4].want, cols[4].head, cols[5].want, cols[5].head = 0, "", 0, ""
	}
	markSort(cols, crashSortColumn, o.Sort, o.Reverse)
	ws := layout(cols, o.Width)
	b.WriteString(st.Head.Render(cut(heads(cols, ws), o.Width)) + "\n")
	if len(gs) == 0 {
		b.WriteString(st.Dim.Render(" no group matches the filter (esc clears it)"))
		return fit(b.String(), o.Width, o.Height)
	}
	siteW := ws[len(ws)-1]
	off := window(cur, 0, h, len(gs))
	for i := off; i < len(gs) && i < off+h; i++ {
		g := gs[i]
		c := cells[i]
		site := siteFull(g)
		switch {
		case cellWidth(site) > siteW:
			site = siteShort(g, siteW)
		case g.Core != nil && ws[7] == 0 || g.Core != nil && siteW-cellWidth(site) >= 16:
			// Room left after the site: the core's path, the middle cut first.
			site += " → " + midEllipsis(sessions.Sanitize(*g.Core), max(siteW-cellWidth(site)-3, 12))
		}
		c[len(c)-1] = site
		b.WriteString(st.listRow(row(cols, ws, c), o.Filter, st.Bad, i == cur, o.Width) + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}

func handledList(st *Styles, s *sessions.State, o CrashOptions) string {
	sites := o.sites(s)
	if len(s.Handled) == 0 {
		msg := "no handled faults: faults that the program's own handler repairs (a safepoint, a SIGBUS on a file it then extends) are listed here · t: crash groups"
		return fit(st.Dim.Render(wrap(msg, o.Width)), o.Width, o.Height)
	}
	cur := clampI(o.Cursor, len(sites))
	if o.Detail && cur >= 0 {
		return detailView(st, handledDetailHead(st, &sites[cur], o.Width), HandledDetailLines(st, &sites[cur], o.Width), o)
	}
	var b strings.Builder
	title := fmt.Sprintf("%s at %s (repaired by the program: not crashes) · t: crash groups",
		Count(s.NHandled, "handled fault", "handled faults"), Count(len(sites), "site", "sites"))
	if o.Filter != "" {
		title = fmt.Sprintf("%s · filter: %s · t: crash groups", Count(len(sites), "handled-fault site matches", "handled-fault sites match"), sessions.Sanitize(o.Filter))
	}
	h := o.Height - 2
	b.WriteString(st.Dim.Render(leftRight(title, Position(cur, len(sites), h), o.Width)) + "\n")
	cols := []column{{head: "COUNT", right: true}, {head: "SIGNAL"}, {head: "CODE"}, {head: "RANKS", cap: 24},
		{head: "PROCS", right: true}, {head: "FIRST", drop: 2}, {head: "LAST", drop: 2}, {head: "SITE", min: 24}}
	cells := make([][]string, len(sites))
	for i := range sites {
		hs := &sites[i]
		cells[i] = []string{strconv.Itoa(len(hs.Members)), sessions.Sanitize(hs.Signal), sessions.Sanitize(hs.Code), hs.ranks(),
			strconv.Itoa(hs.procs()), hms(hs.First), hms(hs.Last), hs.Site()}
		for j, c := range cells[i] {
			cols[j].want = max(cols[j].want, cellWidth(c))
		}
	}
	if o.Width < wideList {
		cols[5].want, cols[5].head, cols[6].want, cols[6].head = 0, "", 0, ""
	}
	markSort(cols, handledSortColumn, o.Sort, o.Reverse)
	ws := layout(cols, o.Width)
	b.WriteString(st.Head.Render(cut(heads(cols, ws), o.Width)) + "\n")
	if len(sites) == 0 {
		b.WriteString(st.Dim.Render(" no site matches the filter (esc clears it)"))
		return fit(b.String(), o.Width, o.Height)
	}
	off := window(cur, 0, h, len(sites))
	for i := off; i < len(sites) && i < off+h; i++ {
		b.WriteString(st.listRow(row(cols, ws, cells[i]), o.Filter, st.Warn, i == cur, o.Width) + "\n")
	}
	return fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height)
}
