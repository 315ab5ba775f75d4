package tui

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// The tabs, in number-key order (views.TabNames).
const (
	tabProcs = iota
	tabMatrix
	tabCrashes
	tabThreads
	tabStacks
	tabLog
	tabOutput // only when the ranks' output is read (Options.RanksLog)
	nTabs
)

// overlay is what covers the body, if anything.
type overlay int

const (
	noOverlay overlay = iota
	helpOverlay
	explainOverlay
	checkpointOverlay
	quitOverlay
	naiveOverlay // confirm a naive restore of a job crashtui did not start
)

// Frame geometry: two header lines and the tab bar above the body, one footer line below.
const (
	headerH = 2
	bodyTop = headerH + 1
	chromeH = headerH + 1 + 1
	minW    = 30
	minH    = 8
)

// Messages.
type (
	// eventsMsg carries every event that was queued when the wait returned (batched so that
	// a burst costs one frame, not one per event).
	eventsMsg struct {
		evs    []sessions.Event
		closed bool
		at     time.Time // when the batch was taken (the next waits eventFrame from it)
	}
	// tickMsg drives the replay player.
	tickMsg struct {
		seq int
		at  time.Time
	}
	// ctrlMsg is the answer of a Controller call.
	ctrlMsg struct {
		op   string
		err  error
		took time.Duration
	}
)

// maxBatch bounds the events applied per message, so input stays responsive under a flood.
const maxBatch = 1024

// eventFrame is the least time between two batches of events: each batch is an Update and a
// View under the State's lock, and a job's storm of events (a fork+exec loop: five each)
// drawn one by one took the CPU the job and the tracer needed on a 2-CPU machine
// (BenchmarkJobTime's tui mode). A frame of the Processes tab is most of a millisecond of
// CPU, which a job on the same CPUs pays: at 30 screens a second crashtui's CPU for a fork
// x300 job was 0.216 s, at 10 0.186, at 3 0.164 (medians of 10, run in tmux). Ten screens
// a second is still more than a person reads of a storm (top draws one every 3 s). A batch
// after a quiet spell is drawn at once; keys are answered at once.
const eventFrame = time.Second / 10

// waitEvents blocks (in its own goroutine, as a tea.Cmd) for the next event, waits until
// eventFrame has passed since the last batch (prev) came, then drains whatever else is
// queued.
func waitEvents(ch <-chan sessions.Event, prev time.Time) tea.Cmd {
	return func() tea.Msg {
		e, ok := <-ch
		if !ok {
			return eventsMsg{closed: true}
		}
		if wait := eventFrame - time.Since(prev); wait > 0 {
			time.Sleep(wait)
		}
		evs := []sessions.Event{e}
		for len(evs) < maxBatch {
			select {
			case e, ok := <-ch:
				if !ok {
					return eventsMsg{evs: evs, closed: true}
				}
				evs = append(evs, e)
			default:
				return eventsMsg{evs: evs, at: time.Now()}
			}
		}
		return eventsMsg{evs: evs, at: time.Now()}
	}
}

// waitChanged is waitEvents for a session whose owner reduces the events into the State
// the TUI reads: it blocks for a change, then waits until eventFrame has passed since prev.
// The wake carries no event, so a storm costs the session's owner a channel send that
// finds the channel full, and this goroutine one wake a frame.
func waitChanged(ch <-chan struct{}, prev time.Time) tea.Cmd {
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return eventsMsg{closed: true}
		}
		if wait := eventFrame - time.Since(prev); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case _, ok := <-ch:
			return eventsMsg{closed: !ok, at: time.Now()}
		default:
			return eventsMsg{at: time.Now()}
		}
	}
}

// Model is the whole program's state (glow style: a small enum of tabs and overlays routes
// Update and View). It implements tea.Model on a pointer.
type Model struct {
	st    *views.Styles
	keys  KeyMap
	help  help.Model
	state *sessions.State

	header    sessions.Header
	mode      string
	recording string
	ctrl      Controller
	events    <-chan sessions.Event
	changed   <-chan struct{} // Options.Changed: the wake of a State the session's owner reduces
	finished  bool
	detached  bool
	message   string

	// ended is closed when Run's program has ended (nil for a Model tests drive): what a
	// command waits for in a loop of its own stops then.
	ended <-chan struct{}

	// lock guards state when it is the session's own (Options.State); nil when the Model
	// reduces the events itself (replay, tests).
	lock sync.Locker

	player  *sessions.Player
	replay  []sessions.Event
	tickSeq int
	now     func() time.Time

	cast interface{ Resize(w, h int) error }

	width, height int
	tab           int
	overlay       overlay
	explanation   views.Explanation
	explainFrom   int  // first line of the explanation shown (it scrolls)
	helpFrom      int  // first line of the help shown (it scrolls when it does not fit)
	tour          int  // the guided tour's step, -1 when not touring (tour.go)
	tourFrom      int  // the first line of the tour's band shown (it scrolls)
	tourFetched   bool // the current step has asked the tracer for what it shows
	tourWaiting   bool // the current step had nothing to show yet: new events may bring it
	ckChoice      int
	filtering     bool // the footer is a filter prompt for the active tab
	// confirm is the footer's open y/n question (debug.go), nil when none.
	confirm *confirmation
	// handing is the pid being let go of for a debugger (0: none): keys typed meanwhile are
	// counted in ignored and dropped, never queued for the debugger.
	handing, ignored int
	// term is the terminal, for the clipboard's OSC 52 (copy.go); mouseOff says M turned
	// the mouse reporting off.
	term     io.Writer
	mouseOff bool
	ranksLog string
	// ckAsked is the checkpoint asked for and not yet seen (its policy, "" when none) and
	// ckLast the State's newest checkpoint when it was asked: a controller that only passes
	// the request on (the guest's agent) returns before its threads come.
	ckAsked sessions.Policy
	ckLast  *sessions.Checkpoint
	ckTook  time.Duration
	ckSeen  bool
	started time.Time // when the program started
	// story is a recording's title (views.StoryTitle), on the footer while the replay is
	// paused at its first frame (storyAt events).
	story   string
	storyAt int

	// The tabs (tab.go): each owns its cursor, keys and view.
	proc  *procsTab
	mx    *matrixTab
	crash *crashesTab
	thr   *threadsTab
	stk   *stacksTab
	// deferred are the commands normalize started (Update returns them).
	deferred []tea.Cmd
	log      *logTab
	out      *outputTab
}

// ntabs is how many tabs this session has: Output only when the ranks' output is read.
func (m *Model) ntabs() int {
	if m.out.path == "" {
		return nTabs - 1
	}
	return nTabs
}

// NewModel builds the program's model. Tests drive it with Update and read View.
func NewModel(o Options, st *views.Styles) *Model {
	m := &Model{st: st, keys: DefaultKeyMap(), help: help.New(), state: sessions.NewState(),
		header: o.Header, mode: o.Mode, recording: o.Recording, ctrl: o.Control, events: o.Events, changed: o.Changed,
		now: time.Now, width: 80, height: 24}
	m.help.Styles.ShortKey = st.Bold
	m.help.Styles.FullKey = st.Bold
	m.help.Styles.ShortDesc = st.Dim
	m.help.Styles.FullDesc = st.Dim
	m.help.Styles.ShortSeparator = st.Dim
	m.help.Styles.FullSeparator = st.Dim
	m.help.Styles.Ellipsis = st.Dim
	m.proc, m.crash, m.thr, m.log = &procsTab{}, &crashesTab{}, &threadsTab{following: true}, &logTab{following: true}
	m.mx = &matrixTab{expanded: map[int]bool{}}
	m.out = &outputTab{path: o.RanksLog, following: true, title: "ranks' stdout and stderr"}
	if o.GuestLog != "" {
		m.out.path, m.out.title, m.out.guest = o.GuestLog, "the guest's build and boot log", true
	}
	m.ranksLog = m.out.path
	if m.ranksLog != "" {
		m.message = ranksMessage(m.out, m.width)
	}
	m.stk = &stacksTab{collapsed: map[string]bool{}, mergedAt: -1, every: o.SampleEvery, auto: o.SampleEvery > 0, read: o.Source}
	m.started = m.now()
	m.tour = -1
	if o.Tour {
		m.tour = 0
	}
	if o.State != nil && o.Lock != nil && o.Replay == nil {
		m.state, m.lock = o.State, o.Lock
	} else {
		m.changed = nil // a State of its own is reduced from Events
	}
	if o.Replay != nil || o.Mode == "replay" {
		m.mode = "replay"
		m.replay = o.Replay
		m.player = sessions.NewPlayer(o.Replay)
		m.events, m.changed = nil, nil
		m.story = views.StoryTitle(o.Replay)
		if !o.Tour {
			// A recording opens at its first frame, paused: the job as crashtui found it, its
			// story's title on the footer; space plays it, . steps through it.
			m.player.SetPaused(m.now(), true)
			for range views.FirstFrame(o.Replay) {
				m.apply(m.player.Step())
			}
			m.storyAt = m.player.Index()
		}
	}
	if m.events == nil && m.changed == nil && m.player == nil {
		m.finished = true // nothing will ever arrive
	}
	return m
}

// State is the State the events reduced into so far.
func (m *Model) State() *sessions.State { return m.state }

const (
	ranksPrefix = "the ranks' output goes to "
	guestPrefix = "the guest's build and boot log goes to "
)

// ranksMessage names the Output tab's file at the start, its path cut in the middle to fit in
// width beside the footer's "? help": the file's name stays.
func ranksMessage(o *outputTab, width int) string {
	const tail = " (7: Output)"
	prefix := ranksPrefix
	if o.guest {
		prefix = guestPrefix
	}
	room := max(width-len(prefix)-len(tail)-10, 12)
	return prefix + views.MidEllipsis(sessions.Sanitize(o.path), room) + tail
}

// ownsJob says whether crashtui started the job (run, demo): quitting ends it, rather than
// detaching and leaving it running.
func (m *Model) ownsJob() bool { return m.mode == "run" || m.mode == "demo" }

// live reports whether a tracer is on the other end and still running.
func (m *Model) live() bool { return m.player == nil && m.ctrl != nil && !m.finished }

// Init starts waiting for events, or starts the replay clock, and reading the ranks' output.
func (m *Model) Init() tea.Cmd {
	if m.tour == 0 {
		return tea.Batch(m.initWait(), m.out.start(), func() tea.Msg { return tourStartMsg{} })
	}
	return tea.Batch(m.initWait(), m.out.start())
}

// tourStartMsg starts the tour once the program runs.
type tourStartMsg struct{}

func (m *Model) initWait() tea.Cmd {
	if m.player != nil {
		return m.tick(0)
	}
	return m.waitMore(time.Time{})
}

// waitMore waits for what the session does next, eventFrame after prev: a change of the
// session's own State, or events to reduce.
func (m *Model) waitMore(prev time.Time) tea.Cmd {
	switch {
	case m.changed != nil:
		return waitChanged(m.changed, prev)
	case m.events != nil:
		return waitEvents(m.events, prev)
	}
	return nil
}

func (m *Model) tick(d time.Duration) tea.Cmd {
	m.tickSeq++
	seq := m.tickSeq
	if d <= 0 {
		return func() tea.Msg { return tickMsg{seq, m.now()} }
	}
	return tea.Tick(d, func(t time.Time) tea.Msg { return tickMsg{seq, m.now()} })
}

// schedule arranges the next replay tick: at the next event's due time, but at least every
// 250 ms so the position in the header moves.
func (m *Model) schedule() tea.Cmd {
	d, ok := m.player.NextDue()
	if !ok {
		return nil
	}
	if d > 250*time.Millisecond {
		d = 250 * time.Millisecond
	}
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return m.tick(d)
}

func (m *Model) apply(evs []sessions.Event) {
	if m.lock != nil {
		return // the session's owner has reduced them already
	}
	for _, e := range evs {
		m.state.Apply(e)
	}
}

// normalize lets the active tab fit its cursor to the State after a message: View only
// draws. A hidden tab is fitted when it is shown (the message that switches to it); Update
// holds the State's lock, which the tracer's events wait for, so hidden tabs cost nothing.
func (m *Model) normalize() {
	if m.tab != tabProcs {
		m.proc.sig = nil // the signal dialog belongs to the Processes tab
	}
	m.active().normalize(m)
}

func (m *Model) ctrlCmd(op string, f func() error) tea.Cmd {
	return func() tea.Msg {
		start := time.Now()
		err := f()
		return ctrlMsg{op: op, err: err, took: time.Since(start)}
	}
}

// Update handles one message; it never blocks. Every tab's cursor is fitted to the State
// afterwards, so View changes nothing.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if m.lock != nil {
		m.lock.Lock()
		defer m.lock.Unlock()
	}
	_, cmd := m.update(msg)
	m.normalize()
	if len(m.deferred) > 0 {
		cmd = tea.Batch(append(m.deferred, cmd)...)
		m.deferred = nil
	}
	return m, cmd
}

// later runs cmd after this Update returns (normalize has no command of its own to return).
func (m *Model) later(cmd tea.Cmd) { m.deferred = append(m.deferred, cmd) }

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		if m.ranksLog != "" && (strings.HasPrefix(m.message, ranksPrefix) || strings.HasPrefix(m.message, guestPrefix)) {
			m.message = ranksMessage(m.out, msg.Width) // said at the start: fitted to the width
		}
		m.help.Width = msg.Width
		if m.cast != nil {
			m.cast.Resize(msg.Width, msg.Height)
		}
		return m, nil
	case eventsMsg:
		m.apply(msg.evs)
		if m.ckAsked != "" {
			m.checkpointSeen()
		}
		var tour tea.Cmd
		if m.tour >= 0 && m.tourWaiting {
			tour = m.tourShow() // what the step waits for may have come (the job's processes, a crash)
		}
		if msg.closed {
			m.finished = true
			m.events, m.changed = nil, nil
			if m.overlay == quitOverlay {
				m.overlay = noOverlay
			}
			return m, tour
		}
		return m, tea.Batch(m.waitMore(msg.at), tour)
	case sourceMsg:
		if m.stk.sourceOf == msg.key {
			m.stk.source = append([]string{}, msg.lines...) // never nil: nil asks for a read
		}
		return m, nil
	case tickMsg:
		if m.player == nil || msg.seq != m.tickSeq {
			return m, nil
		}
		m.apply(m.player.Advance(msg.at))
		return m, m.schedule()
	case ctrlMsg:
		// The controller returns when the request is done: the status line says so, with
		// what it took, never "requested".
		took := msg.took.Round(100 * time.Microsecond)
		switch {
		case msg.err != nil:
			m.message = fmt.Sprintf("%s failed after %v: %v", msg.op, took, msg.err)
		case strings.HasPrefix(msg.op, "checkpoint"):
			m.ckTook = took
			m.checkpointSeen()
		default:
			m.message = fmt.Sprintf("%s done in %v", msg.op, took)
		}
		if msg.op == "detach" {
			m.detached = true
		}
		if m.tour >= 0 && m.tourFetched {
			return m, m.tourShow() // what the step asked for has come
		}
		return m, nil
	case tourStartMsg:
		return m, m.startTour()
	case releasedMsg:
		return m, m.runDebugger(msg)
	case outputMsg:
		return m, m.out.take(m, msg)
	case procDetailMsg:
		return m, m.proc.detailMsg(m, msg)
	case procDetailTick:
		return m, m.proc.detailTick(m, msg)
	case debuggerDoneMsg:
		m.message = fmt.Sprintf("%s exited; taking pid %d back…", msg.name, msg.pid)
		pid := msg.pid
		return m, tea.Batch(m.mouseBack(), m.ctrlCmd(fmt.Sprintf("pid %d traced again:", pid), func() error { return m.ctrl.Reacquire(pid) }))
	case tea.MouseMsg:
		return m, m.mouse(msg)
	case tea.KeyMsg:
		return m, m.keyRunes(msg)
	}
	return m, nil
}

// keyRunes handles a key message once per rune: Bubble Tea delivers runes typed faster than it
// reads them (a held key over ssh, jjjjj in one burst) as one KeyRunes message, and every
// binding must act once per rune. Text typed into the filter keeps its runes together.
func (m *Model) keyRunes(msg tea.KeyMsg) tea.Cmd {
	if msg.Type != tea.KeyRunes || len(msg.Runes) < 2 || msg.Paste || m.filtering {
		return m.key(msg)
	}
	var cmds []tea.Cmd
	for _, r := range msg.Runes {
		one := msg
		one.Runes = []rune{r}
		if cmd := m.key(one); cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	return tea.Sequence(cmds...)
}

// quit detaches (when a tracer is attached) and ends the program.
func (m *Model) quit() tea.Cmd {
	if m.ctrl != nil && m.player == nil && !m.detached {
		m.detached = true
		return tea.Sequence(m.ctrlCmd("detach", m.ctrl.Detach), tea.Quit)
	}
	return tea.Quit
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	m.message = "" // a message lasts until the next key
	if m.ckSeen {
		m.ckAsked = "" // said: the threads that come later are the Threads tab's
	}
	if key.Matches(msg, k.ForceQuit) {
		return m.quit()
	}
	if m.handing != 0 {
		m.ignored++
		m.message = fmt.Sprintf("letting go of pid %d for a debugger… (%s until it starts)", m.handing, views.Count(m.ignored, "key ignored", "keys ignored"))
		return nil
	}
	if m.confirm != nil {
		return m.confirmKey(msg)
	}
	if m.filtering {
		return m.filterKey(msg)
	}
	if m.tour >= 0 && m.overlay == noOverlay {
		return m.tourKey(msg)
	}
	switch m.overlay {
	case helpOverlay, explainOverlay:
		if d := m.delta(msg); d != 0 && m.overlay == helpOverlay {
			m.helpFrom = max(0, m.helpFrom+d)
			_, m.helpFrom = views.Help(m.st, m.helpKeys().HelpGroups(), m.width, m.bodyH(), m.helpFrom)
			return nil
		}
		if d := m.delta(msg); d != 0 && m.overlay == explainOverlay {
			m.explainFrom = max(0, m.explainFrom+d) // clamped when drawn (RenderExplanationFrom)
			_, m.explainFrom = views.RenderExplanationFrom(m.st, m.explanation, m.width, m.bodyH(), m.explainFrom)
			return nil
		}
		if key.Matches(msg, k.Back, k.Help, k.Explain, k.Enter) {
			m.overlay = noOverlay
		} else if key.Matches(msg, k.Quit) {
			m.overlay = noOverlay
			return m.askQuit()
		}
		return nil
	case quitOverlay:
		switch msg.String() {
		case "y", "Y", "q", "enter":
			m.overlay = noOverlay
			return m.quit()
		case "n", "N", "esc":
			m.overlay = noOverlay
		}
		return nil
	case checkpointOverlay:
		switch {
		case key.Matches(msg, k.Up):
			m.ckChoice = (m.ckChoice + len(sessions.Policies) - 1) % len(sessions.Policies)
		case key.Matches(msg, k.Down):
			m.ckChoice = (m.ckChoice + 1) % len(sessions.Policies)
		case key.Matches(msg, k.Back):
			m.overlay = noOverlay
		case key.Matches(msg, k.Enter):
			m.overlay = noOverlay
			policy := sessions.Policies[m.ckChoice]
			m.tab = tabThreads
			if m.ctrl == nil || m.player != nil {
				m.message = "checkpoint needs a live session (no tracer in replay or view)"
				return nil
			}
			if (policy == sessions.PolicyNaive || (policy == sessions.PolicySCOnly && m.header.Arch == "ppc64le")) && !m.ownsJob() {
				m.overlay = naiveOverlay // the job is not crashtui's to break without asking
				return nil
			}
			return m.checkpoint(policy)
		}
		return nil
	case naiveOverlay:
		m.overlay = noOverlay
		if msg.String() == "y" || msg.String() == "Y" {
			return m.checkpoint(sessions.Policies[m.ckChoice])
		}
		m.message = "naive restore cancelled"
		return nil
	}

	// A tab's own dialog (Processes' K) is modal: it takes every key but ctrl+c.
	if d, ok := m.active().(interface{ dialog() bool }); ok && d.dialog() {
		return m.active().key(m, msg, 0)
	}
	if cmd, ok := m.replayKey(msg); ok {
		return cmd
	}
	for i, b := range k.Tabs[:m.ntabs()] {
		if key.Matches(msg, b) {
			m.tab = i
			return nil
		}
	}
	c := m.active()
	switch {
	case key.Matches(msg, k.Quit):
		return m.askQuit()
	case key.Matches(msg, k.NextTab):
		m.tab = (m.tab + 1) % m.ntabs()
	case key.Matches(msg, k.PrevTab):
		m.tab = (m.tab + m.ntabs() - 1) % m.ntabs()
	case key.Matches(msg, k.Help):
		m.overlay, m.helpFrom = helpOverlay, 0
	case key.Matches(msg, k.Explain):
		m.explain()
	case key.Matches(msg, k.Copy):
		return m.copySelection()
	case key.Matches(msg, k.Tour):
		return m.startTour()
	case key.Matches(msg, k.Mouse):
		return m.toggleMouse()
	case key.Matches(msg, k.Checkpoint):
		if m.ctrl == nil || m.player != nil {
			m.message = "checkpoint needs a live session (no tracer in replay or view)"
			return nil
		}
		m.overlay = checkpointOverlay
	case key.Matches(msg, k.Measure):
		if m.ctrl == nil || m.player != nil {
			m.message = "measuring needs a live session (no tracer in replay or view)"
			return nil
		}
		m.message = "measuring the access matrix…"
		return m.ctrlCmd("measure", m.ctrl.Measure)
	case key.Matches(msg, k.Sample) && m.tab != tabStacks:
		m.tab = tabStacks // S samples from anywhere and shows the result
		return m.stk.key(m, msg, 0)
	case key.Matches(msg, k.Filter) && c.filterRef(m) != nil:
		m.filtering = true
	case key.Matches(msg, k.Filter):
		// Said, not silently ignored (the filter is for the lists).
		m.message = "/ filters the lists (tabs 1, 3, 4, 5, 6); this tab has no filter"
	case key.Matches(msg, k.Sort, k.Reverse) && !c.sorts():
		m.message = "s and r sort the lists (tabs 1, 3, 4, 5, 6); this tab keeps its own order"
	case key.Matches(msg, k.NextMatch, k.PrevMatch) && (c.filterRef(m) == nil || *c.filterRef(m) == ""):
		m.message = "n and N go to the next and previous match of a filter: / first"
	case key.Matches(msg, k.Back):
		c.escape(m)
	default:
		return c.key(m, msg, m.delta(msg))
	}
	return nil
}

// checkpoint runs a simulated checkpoint with policy through the controller.
func (m *Model) checkpoint(policy sessions.Policy) tea.Cmd {
	m.message = "checkpoint (" + string(policy) + ") running…"
	m.ckAsked, m.ckLast, m.ckTook, m.ckSeen = policy, nil, 0, false
	if n := len(m.state.Checkpoints); n > 0 {
		m.ckLast = m.state.Checkpoints[n-1]
	}
	return m.ctrlCmd("checkpoint "+string(policy), func() error { return m.ctrl.Checkpoint(policy) })
}

// checkpointSeen says what the checkpoint asked for did, once its threads are in the State:
// the checkpoints after the one that was newest when it was asked.
func (m *Model) checkpointSeen() {
	cks := m.state.Checkpoints
	from := 0
	for i, ck := range cks {
		if ck == m.ckLast {
			from = i + 1
		}
	}
	// (When the one it followed was dropped, MaxCheckpoints, from is 0: all are newer.)
	threads := 0
	var last *sessions.Checkpoint
	for _, ck := range cks[min(from, len(cks)):] {
		threads += len(ck.Threads)
		last = ck
	}
	took := ""
	if m.ckTook > 0 {
		took = fmt.Sprintf(", %v", m.ckTook)
	}
	if last == nil {
		m.message = fmt.Sprintf("checkpoint (%s) asked%s: waiting for its threads…", m.ckAsked, took)
		return
	}
	id := ""
	if last.ID > 0 {
		id = fmt.Sprintf(" #%d", last.ID)
	}
	m.message = fmt.Sprintf("checkpoint%s (%s): %s%s", id, m.ckAsked, views.Count(threads, "thread", "threads"), took)
	m.ckSeen = true
}

func (m *Model) askQuit() tea.Cmd {
	if n, _ := m.state.Live(); m.live() && n > 0 { // nothing left to detach from: no question
		m.overlay = quitOverlay
		return nil
	}
	return m.quit()
}

func (m *Model) filterKey(msg tea.KeyMsg) tea.Cmd {
	f := m.active().filterRef(m)
	if f == nil {
		m.filtering = false
		return nil
	}
	switch msg.Type {
	case tea.KeyEnter:
		m.filtering = false
	case tea.KeyEsc:
		m.filtering = false
		*f = ""
	case tea.KeyBackspace:
		if r := []rune(*f); len(r) > 0 {
			*f = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		*f += sessions.Sanitize(string(msg.Runes))
	}
	// The tab's cursor stays on its row while that row matches (follow); in a tree, a row
	// kept only as a match's caller is not a match: the cursor goes on to the next one.
	m.active().normalize(m)
	if s, ok := m.active().(interface{ seekMatch(m *Model) }); ok {
		s.seekMatch(m)
	}
	return nil
}

// replayKey handles the player's keys; ok is false when msg is not one of them.
func (m *Model) replayKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	if m.player == nil {
		return nil, false
	}
	k, p, now := &m.keys, m.player, m.now()
	switch {
	case key.Matches(msg, k.Pause):
		p.SetPaused(now, !p.Paused())
		if !p.Paused() {
			return m.tick(0), true
		}
		m.tickSeq++ // drop the pending tick
		return nil, true
	case key.Matches(msg, k.Step):
		// Only . steps: → moves (or opens) on every tab, as in a live session.
		if !p.Paused() {
			p.SetPaused(now, true)
			m.tickSeq++
		}
		m.apply(p.Step())
		return nil, true
	case key.Matches(msg, k.Faster):
		p.Faster(now)
	case key.Matches(msg, k.Slower):
		p.Slower(now)
	case key.Matches(msg, k.SeekBack):
		m.seek(p.Position() - 10*time.Second)
	case key.Matches(msg, k.SeekFwd):
		m.seek(p.Position() + 10*time.Second)
	case key.Matches(msg, k.SeekStart):
		m.seek(0)
	case key.Matches(msg, k.SeekEnd):
		m.seek(p.Length())
	default:
		return nil, false
	}
	if p.Paused() {
		return nil, true
	}
	return m.tick(0), true
}

// seek moves the player; a backwards seek rebuilds the State from the start, because the
// reducer only goes forwards.
func (m *Model) seek(to time.Duration) {
	m.player.SetPaused(m.now(), m.player.Paused()) // account the time played so far
	evs, reset := m.player.Seek(to)
	if reset {
		m.state = sessions.NewState()
		m.mx.ix = nil
		m.stk.mergedAt = -1
	}
	m.apply(evs)
}

// bodyH is the height left for the active tab.
func (m *Model) bodyH() int { return max(m.height-chromeH, 1) }

// explain opens the teaching overlay for whatever is under the cursor.
func (m *Model) explain() {
	ex := m.active().explain(m)
	if ex == nil {
		m.message = "nothing to explain here: select a cell, a crash group, a thread or a stack frame"
		return
	}
	m.explanation = *ex
	m.overlay = explainOverlay
	m.explainFrom = 0
}

func (m *Model) status() views.Status {
	s := views.Status{Mode: m.mode, Recording: m.recording, Finished: m.finished && m.player == nil}
	if p := m.player; p != nil {
		s.Replay = &views.ReplayStatus{Pos: p.Position(), Len: p.Length(), Speed: p.Speed(),
			Paused: p.Paused(), Done: p.Done(), Index: p.Index(), Total: p.Total()}
	}
	return s
}

// View draws the frame: header, tabs, body (or an overlay), footer. Every line is cut to the
// width and the frame is exactly the height, so nothing wraps or scrolls.
func (m *Model) View() string {
	if m.lock != nil {
		m.lock.Lock()
		defer m.lock.Unlock()
	}
	w, h := m.width, m.height
	if w < minW || h < minH {
		return views.Fit(fmt.Sprintf("too small: %d×%d (need %d×%d) · q quits", w, h, minW, minH), w, h)
	}
	header := views.Header(m.st, m.state, m.header, m.status(), w)
	tabs, _ := views.Tabs(m.st, m.state, m.tab, m.ntabs(), w)
	bh := m.bodyH()
	var body string
	switch m.overlay {
	case helpOverlay:
		box, _ := views.Help(m.st, m.helpKeys().HelpGroups(), w, bh, m.helpFrom)
		body = views.Place(box, w, bh)
	case explainOverlay:
		box, _ := views.RenderExplanationFrom(m.st, m.explanation, w, bh, m.explainFrom)
		body = views.Place(box, w, bh)
	case checkpointOverlay:
		body = views.Place(views.CheckpointDialog(m.st, m.ckChoice, w, bh), w, bh)
	case naiveOverlay:
		q := "A naive restore breaks this job: its threads interrupted in a syscall will see ERESTART* codes (glibc's sem_wait aborts). crashtui did not start it. Do it? (y / any key cancels)"
		if sessions.Policies[m.ckChoice] == sessions.PolicySCOnly {
			q = "An sc-only restore (CRIU before criu#2261) breaks this job on POWER9/10: its threads interrupted in scv will see errno 512. crashtui did not start it. Do it? (y / any key cancels)"
		}
		body = views.Place(views.Confirm(m.st, q, w), w, bh)
	case quitOverlay:
		n, _ := m.state.Live()
		q := fmt.Sprintf("Detach from %s and quit? The job keeps running.", views.Count(n, "process", "processes"))
		if m.ownsJob() {
			q = fmt.Sprintf("End the %s crashtui started and quit?", views.Count(n, "process", "processes"))
		}
		body = views.Place(views.Confirm(m.st, q, w), w, bh)
	case noOverlay:
		if m.tour >= 0 {
			// The tour's band at the bottom; the tab above it, with what the step selected.
			bandH := tourBandH(bh)
			band, _ := views.TourBand(m.st, m.tourExplanation(), w, bandH, m.tourFrom)
			body = views.Fit(m.body(w, bh-bandH), w, bh-bandH) + "\n" + band
		} else {
			body = m.body(w, bh)
		}
	default:
		body = m.body(w, bh)
	}
	var footer string
	if m.confirm != nil {
		footer = m.st.Warn.Render(m.confirm.prompt)
	} else if f := m.active().filterRef(m); m.filtering && f != nil {
		footer = "/" + *f + "█  " + m.st.Dim.Render("enter keep · esc clear")
	} else {
		var keys []views.HelpKey
		for _, b := range m.helpKeys().ShortHelp() {
			keys = append(keys, views.HelpKey{Key: b.Help().Key, Desc: b.Help().Desc})
		}
		msg := m.message
		if msg == "" && m.story != "" && m.player.Paused() && m.player.Index() == m.storyAt && m.tour < 0 {
			msg = "⏸ " + m.story + " · space plays, . steps"
		}
		footer = views.Footer(m.st, sessions.Sanitize(msg), keys, w)
	}
	var b strings.Builder
	b.Grow(w * h * 2)
	b.WriteString(header)
	b.WriteString("\n")
	b.WriteString(tabs)
	b.WriteString("\n")
	b.WriteString(views.Fit(body, w, bh))
	b.WriteString("\n")
	b.WriteString(views.Fit(footer, w, 1))
	return b.String()
}

func (m *Model) helpKeys() helpKeys {
	d, ok := m.active().(interface{ dialog() bool })
	return helpKeys{k: &m.keys, tab: m.active().shortHelp(m), name: views.TabNames[m.tab],
		replay: m.player != nil, paused: m.player != nil && m.player.Paused(), live: m.live(), owns: m.ownsJob(), ntabs: m.ntabs(),
		modal: ok && d.dialog()}
}

func (m *Model) body(w, h int) string { return m.active().view(m, w, h) }

// mouse: the wheel moves the cursor, a click on the tab bar switches tabs, a click on a row
// selects it.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.overlay != noOverlay || msg.Action != tea.MouseActionPress {
		return nil
	}
	switch msg.Button {
	case tea.MouseButtonWheelUp:
		return m.active().key(m, tea.KeyMsg{Type: tea.KeyUp}, -1)
	case tea.MouseButtonWheelDown:
		return m.active().key(m, tea.KeyMsg{Type: tea.KeyDown}, 1)
	case tea.MouseButtonLeft:
	default:
		return nil
	}
	if msg.Y == headerH {
		_, spans := views.Tabs(m.st, m.state, m.tab, m.ntabs(), m.width)
		for i, s := range spans {
			if msg.X >= s.From && msg.X < s.To {
				m.tab = i
			}
		}
		return nil
	}
	if msg.Y >= bodyTop {
		m.active().click(m, msg.X, msg.Y-bodyTop)
	}
	return nil
}
