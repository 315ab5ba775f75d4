package tui

import (
	"fmt"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// procsTab is Processes: the job's processes as a tree or sorted, filterable; K signals one.
type procsTab struct {
	cursor, offset, sort int
	reverse              bool
	filter               string
	collapsed            map[sessions.ProcKey]bool
	// users are the user names of the uids seen, resolved on this machine in a live session
	// only (a recording may come from another machine, where uid 1000 is someone else).
	users   map[int]string
	names   *userNames
	namesAt int
	// sig is the open signal dialog (K), nil when none: it takes every key until it closes.
	sig *signalDialog
	// keep follows the selected process across updates.
	keep follow[sessions.ProcKey]
	// det is the open process detail (enter), nil when none.
	det *procDetail
	// At scale (the State counts more than it keeps: a root of a tree) the tab is a row per
	// host; host is the one opened (enter), whose agent is asked for its processes.
	hostCursor, hostOffset int
	host                   string
	hostProcCursor         int
	// framed are the rows normalize listed, for the View that follows it (a frame lists
	// them once, not twice: every process, each frame); framedOf is the State they are of,
	// at framedSeq.
	framed    []views.ProcRow
	framedOf  *sessions.State
	framedSeq int
}

// HostAsker is a Controller that can ask one host's agent for its processes (a tree of views:
// the answer comes back up as a host_processes event).
type HostAsker interface {
	AskProcesses(host string) error
}

// hostKey is key at scale: the hosts' rows, or the opened host's processes.
func (p *procsTab) hostKey(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	if p.host != "" {
		switch {
		case key.Matches(msg, k.Enter, k.Left, k.Back):
			p.host = ""
		default:
			p.hostProcCursor += d
		}
		return nil
	}
	rows := views.HostRows(m.state, p.filter)
	c := clamp(p.hostCursor, len(rows))
	switch {
	case m.matchDir(msg) != 0:
		if c >= 0 {
			p.hostCursor = nextMatch(c, len(rows), m.matchDir(msg), func(int) bool { return true })
		}
		return nil
	case key.Matches(msg, k.Enter, k.Right) && c >= 0:
		a, ok := m.ctrl.(HostAsker)
		if !ok {
			m.message = "this view asks nothing of its hosts (a view of files): their counts are all it has"
			return nil
		}
		host := rows[c].Host
		p.host, p.hostProcCursor = host, 0
		return m.ctrlCmd("processes of "+sessions.Sanitize(host), func() error { return a.AskProcesses(host) })
	}
	p.hostCursor += d
	return nil
}

// procDetail is one process's detail: read from /proc through the Controller, off Update,
// and read again every procDetailEvery while it is open.
type procDetail struct {
	key     sessions.ProcKey
	d       *sessions.ProcDetail
	err     error
	loading bool
	at      time.Time
	scroll  int
	seq     int // the read asked last: an older answer or tick is dropped
}

// procDetailEvery is how often an open detail is read again (its threads' states change).
const procDetailEvery = 2 * time.Second

type (
	procDetailMsg struct {
		key sessions.ProcKey
		seq int
		d   sessions.ProcDetail
		err error
		at  time.Time
	}
	procDetailTick struct {
		key sessions.ProcKey
		seq int
	}
)

// openDetail shows pr's detail and, when it is alive on this machine with a tracer running,
// starts reading it from /proc.
func (p *procsTab) openDetail(m *Model, pr *sessions.Proc) tea.Cmd {
	p.det = &procDetail{key: sessions.ProcKey{Host: pr.Host, PID: pr.PID}}
	return p.readDetail(m)
}

// readDetail asks the Controller for the open detail, when there is a live process to read.
func (p *procsTab) readDetail(m *Model) tea.Cmd {
	d := p.det
	pr := m.state.Procs[d.key]
	switch {
	case pr == nil:
		return nil
	case m.ctrl == nil || m.player != nil:
		d.err = fmt.Errorf("a replay has the recorded facts only: /proc is read in a live session")
		return nil
	case !pr.Alive:
		d.d, d.err = nil, fmt.Errorf("pid %d has ended: the facts the session recorded", pr.PID)
		return nil
	case pr.Host != "":
		d.err = fmt.Errorf("pid %d runs on %s: its /proc is read there (crashtui attach on that host)", pr.PID, sessions.Sanitize(pr.Host))
		return nil
	case !m.live():
		d.err = fmt.Errorf("the tracer has finished: the facts the session recorded")
		return nil
	}
	d.seq++
	d.loading = true
	key, seq, ctrl := d.key, d.seq, m.ctrl
	return func() tea.Msg {
		det, err := ctrl.ProcDetail(key.PID)
		return procDetailMsg{key: key, seq: seq, d: det, err: err, at: time.Now()}
	}
}

// detailMsg takes a read's answer, and schedules the next read.
func (p *procsTab) detailMsg(m *Model, msg procDetailMsg) tea.Cmd {
	d := p.det
	if d == nil || d.key != msg.key || d.seq != msg.seq {
		return nil // closed, or another process's
	}
	d.loading, d.at = false, msg.at
	if msg.err != nil {
		d.d, d.err = nil, msg.err
		return nil
	}
	det := msg.d
	d.d, d.err = &det, nil
	key, seq := d.key, d.seq
	return tea.Tick(procDetailEvery, func(time.Time) tea.Msg { return procDetailTick{key, seq} })
}

func (p *procsTab) detailTick(m *Model, msg procDetailTick) tea.Cmd {
	if d := p.det; d == nil || d.key != msg.key || d.seq != msg.seq || m.tab != tabProcs {
		return nil
	}
	return p.readDetail(m)
}

func (p *procsTab) detailOpts(m *Model, w, h int) views.ProcDetailOptions {
	d := p.det
	return views.ProcDetailOptions{Width: w, Height: h, Scroll: d.scroll, Detail: d.d, Err: d.err, Loading: d.loading, At: d.at, Users: p.users}
}

// signalDialog is K's confirmation: the process it names is fixed when it opens, so rows
// moving underneath (a filter, new processes) cannot change whom the signal goes to.
type signalDialog struct {
	proc   sessions.Proc
	choice int // index into views.Signals
}

func (p *procsTab) query(m *Model) views.ProcQuery {
	return views.ProcQuery{Order: views.ProcSorts[p.sort], Reverse: p.reverse, Filter: p.filter, Collapsed: p.collapsed, Users: p.users}
}

func (p *procsTab) rows(m *Model) []views.ProcRow { return views.ProcList(m.state, p.query(m)) }

func (p *procsTab) opts(m *Model, w, h int) views.ProcOptions {
	o := views.ProcOptions{Width: w, Height: h, Cursor: p.cursor, Offset: p.offset,
		Sort: views.ProcSorts[p.sort], Reverse: p.reverse, Filter: p.filter, Users: p.users, Live: m.live()}
	if m.out.guest && len(m.state.Procs) == 0 {
		// The guest's boot, as far as it has come, and for how long (redrawn at each read of
		// the log, a few times a second).
		if l := m.out.latest(); l != "" {
			o.Waiting = fmt.Sprintf("%s · %.0f s since the start", l, m.now().Sub(m.started).Seconds())
		}
	}
	return o
}

// dialog reports whether the signal dialog is open: the Model then gives this tab every key.
func (p *procsTab) dialog() bool { return p.sig != nil }

func (p *procsTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	if p.sig != nil {
		return p.dialogKey(m, msg)
	}
	if m.state.AtScale() {
		return p.hostKey(m, msg, d)
	}
	rows := p.rows(m)
	c := clamp(p.cursor, len(rows))
	if p.det != nil {
		switch {
		case key.Matches(msg, k.Enter, k.Left, k.Back):
			p.det = nil
		case key.Matches(msg, k.Signal):
			if pr := m.state.Procs[p.det.key]; pr != nil {
				return p.openSignalOn(m, pr)
			}
		case key.Matches(msg, k.Debug):
			if pr := m.state.Procs[p.det.key]; pr != nil {
				return m.debugProc(pr)
			}
		default:
			p.det.scroll += d
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Sort):
		p.sort = (p.sort + 1) % len(views.ProcSorts)
		return nil
	case key.Matches(msg, k.Reverse):
		if views.ProcSorts[p.sort] == "tree" {
			m.message = "the tree keeps the job's order: s sorts by a column, r then reverses it"
			return nil
		}
		p.reverse = !p.reverse
		return nil
	case m.matchDir(msg) != 0:
		if c >= 0 {
			p.cursor = nextMatch(c, len(rows), m.matchDir(msg), func(i int) bool { return !rows[i].Context })
		}
		return nil
	case key.Matches(msg, k.Signal):
		return p.openSignal(m, rows, c)
	case key.Matches(msg, k.Debug):
		if c < 0 {
			m.message = "no process selected"
			return nil
		}
		return m.debugProc(rows[c].Proc)
	case key.Matches(msg, k.Left, k.Right) && views.ProcSorts[p.sort] != "tree":
		m.message = "←/→ fold the tree: s until sort: tree"
		return nil
	case key.Matches(msg, k.Left) && c >= 0:
		r := rows[c]
		if r.Children > 0 && !r.Collapsed && p.filter == "" {
			if p.collapsed == nil {
				p.collapsed = map[sessions.ProcKey]bool{}
			}
			p.collapsed[r.Key()] = true
			return nil
		}
		// A leaf or a folded subtree: go to the parent, as file trees do.
		for i := c - 1; i >= 0; i-- {
			if rows[i].Depth < r.Depth {
				p.cursor = i
				break
			}
		}
		return nil
	case key.Matches(msg, k.Right) && c >= 0:
		delete(p.collapsed, rows[c].Key())
		return nil
	case key.Matches(msg, k.Enter) && c >= 0 && (rows[c].Proc.Alive || rows[c].Proc.Crashes == 0):
		return p.openDetail(m, rows[c].Proc)
	case key.Matches(msg, k.Enter):
		// An ended process that crashed: its crash group says the most.
		if c >= 0 && rows[c].Proc.Crashes > 0 {
			for _, g := range m.state.Groups {
				for _, mem := range g.Members {
					if mem.Host == rows[c].Proc.Host && mem.Crash.PID == rows[c].Proc.PID {
						m.tab = tabCrashes
						m.crash.show(m, g.ID, true)
						return nil
					}
				}
			}
		}
		if c >= 0 {
			m.message = fmt.Sprintf("pid %d has no crash group (e explains its state)", rows[c].Proc.PID)
		}
		return nil
	}
	p.cursor += d
	return nil
}

// openSignal opens K's dialog on the selected process, or says why not.
func (p *procsTab) openSignal(m *Model, rows []views.ProcRow, c int) tea.Cmd {
	if c < 0 {
		m.message = "no process selected"
		return nil
	}
	return p.openSignalOn(m, rows[c].Proc)
}

func (p *procsTab) openSignalOn(m *Model, pr *sessions.Proc) tea.Cmd {
	switch {
	case m.ctrl == nil || m.player != nil:
		m.message = "K needs a live session: the signal is sent through the tracer (no tracer in replay or view)"
	case !m.live():
		m.message = "K needs a live session: the tracer has finished"
	case !pr.Alive:
		st, _ := views.ProcStat(m.state, pr)
		m.message = fmt.Sprintf("pid %d has ended (%s): nothing to signal", pr.PID, st)
	default:
		p.sig = &signalDialog{proc: *pr}
	}
	return nil
}

func (p *procsTab) dialogKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	n := len(views.Signals)
	switch {
	case key.Matches(msg, k.Left, k.Up):
		p.sig.choice = (p.sig.choice + n - 1) % n
	case key.Matches(msg, k.Right, k.Down):
		p.sig.choice = (p.sig.choice + 1) % n
	case key.Matches(msg, k.Enter) || msg.String() == "y":
		d := p.sig
		p.sig = nil
		sig, pid := views.Signals[d.choice], d.proc.PID
		m.message = fmt.Sprintf("sending %s to pid %d…", sig, pid)
		ctrl := m.ctrl
		return m.ctrlCmd(fmt.Sprintf("%s to pid %d (rank %s)", sig, pid, d.proc.Rank), func() error { return ctrl.Signal(pid, sig) })
	case key.Matches(msg, k.Back, k.Quit) || msg.String() == "n":
		p.sig = nil
		m.message = "no signal sent"
	}
	return nil
}

func (p *procsTab) normalize(m *Model) {
	if p.sig != nil && !m.live() {
		p.sig = nil // the dialog needs a running tracer
	}
	p.resolveUsers(m)
	if m.state.AtScale() {
		// A row per host, or one host's answer: what a screen shows, never every task.
		p.det = nil
		if p.host != "" {
			n := 0
			if hp := m.state.HostProcs(p.host); hp != nil {
				n = len(hp.Processes)
			}
			p.hostProcCursor = max(clamp(p.hostProcCursor, n), 0)
			return
		}
		n := len(views.HostRows(m.state, p.filter))
		p.hostCursor = max(clamp(p.hostCursor, n), 0)
		p.hostOffset = views.Window(p.hostCursor, p.hostOffset, m.bodyH()-2, n)
		return
	}
	if p.det != nil {
		if pr := m.state.Procs[p.det.key]; pr == nil {
			p.det = nil // the session no longer has it (a replay seeked back)
		} else {
			o := p.detailOpts(m, m.width, m.bodyH())
			p.det.scroll = max(0, min(p.det.scroll, views.ProcDetailMaxScroll(m.st, m.state, pr, o)))
		}
	}
	rows := p.rows(m)
	p.framed, p.framedOf, p.framedSeq = rows, m.state, m.state.Seq
	p.keep.fit(&p.cursor, len(rows), func(i int) sessions.ProcKey { return rows[i].Key() })
	p.offset = views.Window(p.cursor, p.offset, m.bodyH()-2, len(rows))
}

// resolveUsers names the uids of a live session. The lookups (NSS: /etc/passwd, or LDAP on
// a cluster, which can take seconds) run in their own goroutines: Update holds the session's
// lock, and the tracer must never wait on it for a user name. Names show from the next frame.
func (p *procsTab) resolveUsers(m *Model) {
	if m.ctrl == nil || m.player != nil {
		return
	}
	if p.names == nil {
		p.names = &userNames{names: map[int]string{}, asked: map[int]bool{}}
	}
	for _, pr := range m.state.Procs {
		if pr.Host == "" { // another host's uid is that host's: not looked up here
			p.names.ask(pr.UID)
		}
	}
	if v := p.names.version(); v != p.namesAt {
		p.users, p.namesAt = p.names.snapshot(), v
	}
}

// userNames resolves uids to user names in the background.
type userNames struct {
	mu    sync.Mutex
	names map[int]string
	asked map[int]bool
	ver   int
}

func (u *userNames) ask(uid int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.asked[uid] {
		return
	}
	u.asked[uid] = true
	go func() {
		name := ""
		if usr, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			name = usr.Username
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		if name != "" {
			u.names[uid] = name
			u.ver++
		}
	}()
}

func (u *userNames) version() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ver
}

func (u *userNames) snapshot() map[int]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[int]string, len(u.names))
	for k, v := range u.names {
		out[k] = v
	}
	return out
}

func (p *procsTab) view(m *Model, w, h int) string {
	if p.sig != nil {
		return views.Place(views.SignalDialog(m.st, &p.sig.proc, p.sig.choice, w), w, h)
	}
	if m.state.AtScale() {
		_, ask := m.ctrl.(HostAsker)
		if p.host != "" {
			return views.HostProcesses(m.st, p.host, m.state.HostProcs(p.host), views.HostOptions{Width: w, Height: h, Cursor: p.hostProcCursor})
		}
		rows := views.HostRows(m.state, p.filter)
		return views.Hosts(m.st, m.state, rows, views.HostOptions{Width: w, Height: h, Cursor: p.hostCursor,
			Offset: p.hostOffset, Filter: p.filter, Ask: ask})
	}
	if p.det != nil {
		if pr := m.state.Procs[p.det.key]; pr != nil {
			return views.ProcDetail(m.st, m.state, pr, p.detailOpts(m, w, h))
		}
	}
	rows := p.framed
	if p.framedOf != m.state || p.framedSeq != m.state.Seq {
		rows = p.rows(m) // the State changed since normalize listed them
	}
	return views.Processes(m.st, m.state, rows, p.opts(m, w, h))
}

func (p *procsTab) explain(m *Model) *views.Explanation {
	rows := p.rows(m)
	c := clamp(p.cursor, len(rows))
	if c < 0 {
		return nil
	}
	pr := rows[c].Proc
	for _, g := range m.state.Groups {
		for _, mem := range g.Members {
			if mem.Host == pr.Host && mem.Crash.PID == pr.PID {
				e := views.ExplainGroup(g)
				return &e
			}
		}
	}
	e := views.ExplainProc(pr)
	return &e
}

func (p *procsTab) click(m *Model, x, y int) {
	if p.sig != nil {
		return
	}
	if i := views.ProcessesHit(p.opts(m, m.width, m.bodyH()), len(p.rows(m)), y); i >= 0 {
		p.cursor = i
	}
}

// seekMatch moves the cursor off a row shown only as a match's parent.
func (p *procsTab) seekMatch(m *Model) {
	rows := p.rows(m)
	if c := clamp(p.cursor, len(rows)); c >= 0 && rows[c].Context {
		p.cursor = nextMatch(c, len(rows), 1, func(i int) bool { return !rows[i].Context })
	}
}

func (p *procsTab) escape(m *Model) {
	if p.host != "" {
		p.host = "" // back to the hosts' rows
		return
	}
	if p.det != nil || p.sig != nil {
		p.det, p.sig = nil, nil
		return
	}
	p.filter = ""
}
func (p *procsTab) filterRef(m *Model) *string { return &p.filter }
func (p *procsTab) sorts() bool                { return true }
func (p *procsTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	if p.sig != nil {
		return []key.Binding{
			key.NewBinding(key.WithKeys("left", "right"), key.WithHelp("←/→", "signal")),
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "send")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		}
	}
	if m.state.AtScale() {
		if p.host != "" {
			return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "hosts"))}
		}
		bs := []key.Binding{k.Filter}
		if _, ok := m.ctrl.(HostAsker); ok {
			bs = append(bs, key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "host's processes")))
		}
		return bs
	}
	if p.det != nil {
		bs := []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")), key.NewBinding(key.WithKeys("j", "k"), key.WithHelp("j/k", "scroll"))}
		if m.live() {
			bs = append(bs, k.Signal, k.Debug)
		}
		return append(bs, k.Copy)
	}
	bs := []key.Binding{k.Filter}
	if m.live() {
		bs = append(bs, k.Signal, k.Debug)
	}
	if p.filter != "" {
		bs = append(bs, k.NextMatch)
	}
	return append(bs, key.NewBinding(key.WithKeys("left", "right"), key.WithHelp("←/→", "fold")), k.Sort, k.Reverse, k.Explain,
		key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")))
}
