package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// crashesTab is Crashes: the groups by crash site and one group's detail; t switches to the
// handled faults by site (their own list and detail). Both lists filter (/) and sort (s, r).
type crashesTab struct {
	cursor  int // the selected row of the groups listed
	detail  bool
	scroll  int
	handled bool // the list is the handled faults
	hcursor int  // the selected row of the handled-fault sites listed
	filter  string
	// sort and hsort index CrashSorts and HandledSorts; reverse and hreverse flip them.
	sort, hsort       int
	reverse, hreverse bool
	// sites are the handled faults by site, regrouped only when State has more of them.
	sites   []views.HandledSite
	sitesOf *sessions.State
	sitesN  int
	// keep and hkeep follow the selected group (by id) and handled site (by its key).
	keep  follow[int]
	hkeep follow[string]
}

// groups are the groups listed: filtered and sorted.
func (c *crashesTab) groups(m *Model) []*sessions.Group {
	return views.CrashRows(m.state, c.filter, views.CrashSorts[c.sort], c.reverse)
}

// listedSites are the handled-fault sites listed: filtered and sorted.
func (c *crashesTab) listedSites(m *Model) []views.HandledSite {
	return views.HandledRows(c.handledSites(m), c.filter, views.HandledSorts[c.hsort], c.hreverse)
}

// group is the selected group, nil when none is listed.
func (c *crashesTab) group(m *Model) *sessions.Group {
	gs := c.groups(m)
	if i := clamp(c.cursor, len(gs)); i >= 0 {
		return gs[i]
	}
	return nil
}

// show selects group id (Processes' enter, the tour), wherever the sort puts it (the filter
// is cleared), and opens its detail or not.
func (c *crashesTab) show(m *Model, id int, detail bool) {
	c.handled, c.detail, c.scroll, c.filter = false, detail, 0, ""
	for i, g := range c.groups(m) {
		if g.ID == id {
			c.cursor = i
		}
	}
	c.keep = follow[int]{at: c.cursor, key: id, has: true}
}

func (c *crashesTab) opts(m *Model, w, h int) views.CrashOptions {
	o := views.CrashOptions{Width: w, Height: h, Cursor: c.cursor, Detail: c.detail, Scroll: c.scroll, Handled: c.handled,
		Groups: c.groups(m), Filter: c.filter, Sort: views.CrashSorts[c.sort], Reverse: c.reverse}
	if c.handled {
		o.Cursor, o.Sites, o.Sort, o.Reverse = c.hcursor, c.listedSites(m), views.HandledSorts[c.hsort], c.hreverse
	}
	return o
}

func (c *crashesTab) handledSites(m *Model) []views.HandledSite {
	if c.sitesOf != m.state || c.sitesN != len(m.state.Handled) {
		c.sites, c.sitesOf, c.sitesN = views.HandledSites(m.state), m.state, len(m.state.Handled)
		if c.sites == nil {
			c.sites = []views.HandledSite{}
		}
	}
	return c.sites
}

// n is the length of the list shown.
func (c *crashesTab) n(m *Model) int {
	if c.handled {
		return len(c.listedSites(m))
	}
	return len(c.groups(m))
}

func (c *crashesTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	switch {
	case key.Matches(msg, k.Debug):
		return c.gdbCore(m)
	case key.Matches(msg, k.Handled):
		c.handled, c.detail, c.scroll = !c.handled, false, 0
		return nil
	case key.Matches(msg, k.Sort) && !c.detail:
		if c.handled {
			c.hsort = (c.hsort + 1) % len(views.HandledSorts)
		} else {
			c.sort = (c.sort + 1) % len(views.CrashSorts)
		}
		return nil
	case key.Matches(msg, k.Reverse) && !c.detail:
		if c.handled {
			c.hreverse = !c.hreverse
		} else {
			c.reverse = !c.reverse
		}
		return nil
	case m.matchDir(msg) != 0 && !c.detail:
		// Every row listed matches the filter: n and N go through them, round.
		if n := c.n(m); n > 0 {
			cur := &c.cursor
			if c.handled {
				cur = &c.hcursor
			}
			*cur = nextMatch(clamp(*cur, n), n, m.matchDir(msg), func(int) bool { return true })
		}
		return nil
	}
	if c.detail {
		c.scroll += d
		if key.Matches(msg, k.Left) {
			c.detail = false
		}
		return nil
	}
	if key.Matches(msg, k.Enter) || key.Matches(msg, k.Right) {
		if c.n(m) > 0 {
			c.detail, c.scroll = true, 0 // another group opens at its top
		}
		return nil
	}
	if c.handled {
		c.hcursor += d
	} else {
		c.cursor += d
	}
	return nil
}

func (c *crashesTab) normalize(m *Model) {
	gs, sites := c.groups(m), c.listedSites(m)
	c.keep.fit(&c.cursor, len(gs), func(i int) int { return gs[i].ID })
	c.hkeep.fit(&c.hcursor, len(sites), func(i int) string { return sites[i].Key() })
	cur := c.cursor
	if c.handled {
		cur = c.hcursor
	}
	if cur < 0 {
		c.detail, c.scroll = false, 0
		return
	}
	if c.detail {
		// No dead zone: the scroll stops where the last line is at the bottom.
		c.scroll = max(0, min(c.scroll, views.CrashDetailMaxScroll(m.st, m.state, c.opts(m, m.width, m.bodyH()))))
	}
}

func (c *crashesTab) view(m *Model, w, h int) string {
	return views.Crashes(m.st, m.state, c.opts(m, w, h))
}

func (c *crashesTab) explain(m *Model) *views.Explanation {
	if c.handled {
		sites := c.listedSites(m)
		if i := clamp(c.hcursor, len(sites)); i >= 0 {
			e := views.ExplainHandled(&sites[i])
			return &e
		}
		return nil
	}
	if g := c.group(m); g != nil {
		e := views.ExplainGroup(g)
		return &e
	}
	return nil
}

func (c *crashesTab) click(m *Model, x, y int) {
	if i := views.CrashesHit(c.opts(m, m.width, m.bodyH()), c.n(m), y); i >= 0 {
		if c.handled {
			c.hcursor = i
		} else {
			c.cursor = i
		}
	}
}

// gdbCore asks, then opens gdb EXE CORE on the selected group's core in the terminal (Bubble Tea lets go
// of it while gdb runs) and comes back when gdb exits. It touches no process, so it works in
// a replay too, as long as the core is on this machine.
func (c *crashesTab) gdbCore(m *Model) tea.Cmd {
	if c.handled {
		m.message = "a handled fault has no core: the program survived it (t: crash groups)"
		return nil
	}
	g := c.group(m)
	if g == nil {
		m.message = "no crash group to debug"
		return nil
	}
	if g.Core == nil {
		m.message = fmt.Sprintf("group %d has no core: crashtui keeps one per crash site only with --cores DIR (and only when the representative's RLIMIT_CORE allows one)", g.ID)
		return nil
	}
	exe := ""
	if r := views.RepresentativeCrash(g); r != nil {
		exe = r.Crash.Exe
	}
	if p := m.state.Procs[g.Representative]; exe == "" && p != nil {
		exe = p.Exe
	}
	args, core, err := gdbCoreArgs(exe, *g.Core)
	if err != nil {
		if g.Representative.Host != "" {
			err = fmt.Errorf("%w (written on %s)", err, g.Representative.Host)
		}
		m.message = err.Error()
		return nil
	}
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		m.message = "gdb is not installed (apt-get install gdb)"
		return nil
	}
	op := "gdb on " + filepath.Base(core)
	rank := "no rank"
	if r := views.RepresentativeCrash(g); r != nil {
		rank = rankWord(r.Crash.Rank)
	}
	m.ask(fmt.Sprintf("Open gdb on %s (pid %d, %s)? y/n · the terminal is gdb's until it exits",
		sessions.Sanitize(filepath.Base(core)), g.Representative.PID, rank), func() tea.Cmd {
		start := time.Now()
		return tea.Sequence(tea.Exec(flushedCmd{exec.Command(gdb, args...)}, func(err error) tea.Msg {
			return ctrlMsg{op: op, err: err, took: time.Since(start)}
		}), m.mouseBack())
	})
	return nil
}

// gdbCoreArgs are gdb's arguments for core (and exe, when it is still there). Both paths come
// from events, and a replayed file is untrusted: they are made absolute, so neither can pass
// for one of gdb's options ("--eval-command=…"); exec runs no shell.
func gdbCoreArgs(exe, core string) (args []string, abs string, err error) {
	abs, err = filepath.Abs(core)
	if err != nil {
		return nil, "", fmt.Errorf("core %s: %w", core, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, "", fmt.Errorf("core %s is not readable here: %w", abs, err)
	}
	if exe != "" {
		if e, err := filepath.Abs(exe); err == nil {
			if _, err := os.Stat(e); err == nil {
				return []string{"-q", e, abs}, abs, nil
			}
		}
	}
	return []string{"-q", "-c", abs}, abs, nil // gdb finds what it can from the core alone
}

// escape closes the detail, or clears the filter.
func (c *crashesTab) escape(m *Model) {
	if c.detail {
		c.detail = false
		return
	}
	c.filter = ""
}
func (c *crashesTab) filterRef(m *Model) *string { return &c.filter }
func (c *crashesTab) sorts() bool                { return true }
func (c *crashesTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	enter := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail"))
	if c.detail {
		enter = key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back"))
	}
	var bs []key.Binding
	if c.handled {
		bs = []key.Binding{enter, key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "crashes")), k.Explain}
	} else {
		bs = []key.Binding{enter, key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "gdb core")),
			key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "handled")), k.Explain}
	}
	if c.detail {
		return bs
	}
	bs = append(bs, k.Filter)
	if c.filter != "" {
		bs = append(bs, k.NextMatch)
	}
	return append(bs, k.Sort, k.Reverse)
}
