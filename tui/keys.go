package tui

import (
	"github.com/charmbracelet/bubbles/key"

	"github.com/crashtui/crashtui/views"
)

// KeyMap is every binding of the program (soft-serve style: bubbles/key bindings, shown by
// bubbles/help as a short footer and a full overlay on ?).
type KeyMap struct {
	Up, Down, Left, Right, PageUp, PageDown, Top, Bottom key.Binding
	NextTab, PrevTab                                     key.Binding
	Tabs                                                 [7]key.Binding
	TabKeys                                              key.Binding // 1-6, for help only
	Enter, Back, Filter, Sort, Reverse, Explain          key.Binding
	NextMatch, PrevMatch, Copy, Mouse, Tour              key.Binding
	Measure, Checkpoint, Group, Host                     key.Binding
	Sample, Auto, Frames, Debug                          key.Binding
	Signal, Handled                                      key.Binding // Processes: K; Crashes: t
	Earlier, Later                                       key.Binding // Threads: other checkpoints
	Pause, Step, Faster, Slower, SeekBack, SeekFwd       key.Binding
	SeekStart, SeekEnd                                   key.Binding
	Help, Quit, ForceQuit                                key.Binding
}

// DefaultKeyMap is vim keys plus arrows; number keys pick tabs.
func DefaultKeyMap() KeyMap {
	k := KeyMap{
		Up:         key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("↓/j", "down")),
		Left:       key.NewBinding(key.WithKeys("h", "left"), key.WithHelp("←/h", "left")),
		Right:      key.NewBinding(key.WithKeys("l", "right"), key.WithHelp("→/l", "right")),
		PageUp:     key.NewBinding(key.WithKeys("pgup", "ctrl+u", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown", "ctrl+d", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:        key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:     key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom/follow")),
		NextTab:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "tabs")),
		PrevTab:    key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev tab")),
		Enter:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Filter:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Reverse:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reverse")),
		Copy:       key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy")),
		Mouse:      key.NewBinding(key.WithKeys("M"), key.WithHelp("M", "mouse on/off")),
		Tour:       key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "guided tour")),
		NextMatch:  key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/prev match")),
		PrevMatch:  key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "previous match")),
		Explain:    key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "explain")),
		Measure:    key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "measure matrix")),
		Checkpoint: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "checkpoint")),
		Group:      key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "classes")),
		Host:       key.NewBinding(key.WithKeys("H"), key.WithHelp("H", "next host")),
		Sample:     key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "sample")),
		Auto:       key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "auto")),
		Frames:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "frames by")),
		Debug:      key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "debugger")),
		Signal:     key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "signal")), // K: k is "up" in the vim keys
		Handled:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "crashes/handled faults")),
		Earlier:    key.NewBinding(key.WithKeys("<"), key.WithHelp("<", "earlier checkpoint")),
		Later:      key.NewBinding(key.WithKeys(">"), key.WithHelp(">", "later checkpoint")),
		Pause:      key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "pause")),
		Step:       key.NewBinding(key.WithKeys("."), key.WithHelp(".", "step")),
		Faster:     key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Slower:     key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "slower")),
		SeekBack:   key.NewBinding(key.WithKeys("["), key.WithHelp("[", "-10s")),
		SeekFwd:    key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "+10s")),
		SeekStart:  key.NewBinding(key.WithKeys("{"), key.WithHelp("{", "start")),
		SeekEnd:    key.NewBinding(key.WithKeys("}"), key.WithHelp("}", "end")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:       key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "detach & quit")),
		ForceQuit:  key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "detach & quit now")),
	}
	k.TabKeys = key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6"), key.WithHelp("1-6", "tabs"))
	for i := range k.Tabs {
		n := string(rune('1' + i))
		k.Tabs[i] = key.NewBinding(key.WithKeys(n), key.WithHelp(n, "tab "+n))
	}
	return k
}

// helpKeys adapts the KeyMap to bubbles/help for the active tab and mode.
type helpKeys struct {
	k      *KeyMap
	tab    []key.Binding // the active tab's own keys (component.shortHelp)
	name   string        // the active tab's name
	replay bool
	paused bool
	live   bool
	owns   bool // crashtui started the job (run, demo): q ends it
	ntabs  int  // 6, or 7 with the ranks' Output
	modal  bool // a tab's dialog is open: only its own keys apply
}

// modeKeys are the keys whose help depends on the mode: in a replay q only quits (there is
// nothing to detach), in run and demo it ends the job crashtui started, and space says what
// it will do (pause, or play when paused).
func (h helpKeys) modeKeys() (quit, force, pause key.Binding) {
	quit, force, pause = h.k.Quit, h.k.ForceQuit, h.k.Pause
	switch {
	case h.replay || !h.live:
		quit = key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit"))
		force = key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit now"))
	case h.owns:
		quit = key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "end job & quit"))
		force = key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "end job & quit now"))
	}
	if h.paused {
		pause = key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "play"))
	}
	return quit, force, pause
}

func (h helpKeys) ShortHelp() []key.Binding {
	k := h.k
	quit, _, pause := h.modeKeys()
	if h.modal {
		return h.tab
	}
	bs := append([]key.Binding{k.Help}, h.tab...) // the tab bar shows the tabs' keys
	if h.replay {
		bs = append(bs, pause, k.Step, k.Faster, k.Slower)
	}
	return append(bs, quit)
}

// FullHelp lists the active tab's keys first (?), then moving, tabs, actions and replay.
func (h helpKeys) FullHelp() [][]key.Binding {
	var cols [][]key.Binding
	for _, g := range h.groups() {
		cols = append(cols, g.keys)
	}
	return cols
}

type helpGroup struct {
	title string
	keys  []key.Binding
}

func (h helpKeys) groups() []helpGroup {
	k := h.k
	quit, force, pause := h.modeKeys()
	global := []key.Binding{k.Explain, k.Copy, k.Mouse, k.Tour, k.Help, quit, force}
	if h.live {
		global = append([]key.Binding{k.Measure, k.Checkpoint, k.Sample}, global...)
	}
	gs := []helpGroup{
		{h.name + " keys", h.tab},
		{"move", []key.Binding{k.Up, k.Down, k.Left, k.Right, k.PageUp, k.PageDown, k.Top, k.Bottom}},
		{"tabs", []key.Binding{h.tabKeys(), k.NextTab, k.PrevTab, k.Enter, k.Back}},
		{"actions", global},
	}
	if h.replay {
		gs = append(gs, helpGroup{"replay", []key.Binding{pause, k.Step, k.Faster, k.Slower, k.SeekBack, k.SeekFwd, k.SeekStart, k.SeekEnd}})
	}
	return gs
}

// HelpGroups is the help overlay's content for views.Help.
func (h helpKeys) HelpGroups() []views.HelpGroup {
	var out []views.HelpGroup
	for _, g := range h.groups() {
		vg := views.HelpGroup{Title: g.title}
		for _, b := range g.keys {
			if b.Enabled() {
				vg.Keys = append(vg.Keys, views.HelpKey{Key: b.Help().Key, Desc: b.Help().Desc})
			}
		}
		out = append(out, vg)
	}
	return out
}

// tabKeys is the help's "1-6" (or "1-7" with the Output tab).
func (h helpKeys) tabKeys() key.Binding {
	if h.ntabs == 7 {
		return key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6", "7"), key.WithHelp("1-7", "tabs"))
	}
	return h.k.TabKeys
}
