package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// threadsTab is Threads: every thread's syscall restart state at one checkpoint (the latest
// unless the user went back to an earlier one), and one thread's detail.
type threadsTab struct {
	cursor int
	// ckpt is the checkpoint shown (an index into State.Checkpoints); following says it
	// follows the latest.
	ckpt      int
	following bool
	detail    bool
	scroll    int
	filter    string
	sort      int // index into views.ThreadSorts
	reverse   bool
	// keep follows the selected thread (by host and tid) across checkpoints.
	keep follow[sessions.TaskKey]
}

func (t *threadsTab) opts(w, h int) views.ThreadOptions {
	ck := t.ckpt
	if t.following {
		ck = -1
	}
	return views.ThreadOptions{Width: w, Height: h, Cursor: t.cursor, Checkpoint: ck, Detail: t.detail, Scroll: t.scroll,
		Filter: t.filter, Sort: views.ThreadSorts[t.sort], Reverse: t.reverse}
}

// rows are the threads listed: the checkpoint's, filtered and sorted.
func (t *threadsTab) rows(m *Model) []views.ThreadRef { return views.ThreadRows(m.state, t.opts(0, 0)) }

func (t *threadsTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	n := len(m.state.Checkpoints)
	switch {
	case key.Matches(msg, k.Earlier):
		t.ckpt, t.following = max(0, views.CheckpointIndex(m.state, t.opts(0, 0).Checkpoint)-1), false
		t.scroll = 0 // the cursor stays on the same thread, when that checkpoint has it
		return nil
	case key.Matches(msg, k.Later):
		t.ckpt = views.CheckpointIndex(m.state, t.opts(0, 0).Checkpoint) + 1
		t.following = t.ckpt >= n-1
		t.scroll = 0
		return nil
	case key.Matches(msg, k.Sort) && !t.detail:
		t.sort = (t.sort + 1) % len(views.ThreadSorts)
		return nil
	case key.Matches(msg, k.Reverse) && !t.detail:
		t.reverse = !t.reverse
		return nil
	case m.matchDir(msg) != 0 && !t.detail:
		if n := len(t.rows(m)); n > 0 {
			t.cursor = nextMatch(clamp(t.cursor, n), n, m.matchDir(msg), func(int) bool { return true })
		}
		return nil
	case key.Matches(msg, k.Enter) || (key.Matches(msg, k.Right) && !t.detail):
		t.detail, t.scroll = !t.detail, 0
		return nil
	case key.Matches(msg, k.Left) && t.detail:
		t.detail = false
		return nil
	}
	if t.detail {
		t.scroll += d
		return nil
	}
	t.cursor += d
	return nil
}

func (t *threadsTab) normalize(m *Model) {
	if len(m.state.Checkpoints) == 0 || t.ckpt >= len(m.state.Checkpoints) {
		t.following = true
	}
	ts := t.rows(m)
	n := len(ts)
	t.keep.fit(&t.cursor, n, func(i int) sessions.TaskKey { return sessions.TaskKey{Host: ts[i].Host, TID: ts[i].TID} })
	if n == 0 {
		t.detail = false
	}
	if t.detail {
		o := t.opts(m.width, m.bodyH())
		t.scroll = max(0, min(t.scroll, views.ThreadDetailLen(m.st, m.state, o)-m.bodyH()))
	}
}

func (t *threadsTab) view(m *Model, w, h int) string {
	return views.Threads(m.st, m.state, t.opts(w, h))
}

func (t *threadsTab) explain(m *Model) *views.Explanation {
	ts := t.rows(m)
	if c := clamp(t.cursor, len(ts)); c >= 0 {
		e := views.ExplainThread(ts[c].Thread)
		return &e
	}
	return nil
}

func (t *threadsTab) click(m *Model, x, y int) {
	n := len(t.rows(m))
	if i := views.ThreadsHit(t.opts(m.width, m.bodyH()), n, y); i >= 0 {
		t.cursor = i
	}
}

// escape closes the detail, or clears the filter.
func (t *threadsTab) escape(m *Model) {
	if t.detail {
		t.detail = false
		return
	}
	t.filter = ""
}
func (t *threadsTab) filterRef(m *Model) *string { return &t.filter }
func (t *threadsTab) sorts() bool                { return true }
func (t *threadsTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Enter, k.Explain, k.Filter}
	if t.filter != "" {
		bs = append(bs, k.NextMatch)
	}
	bs = append(bs, k.Sort, k.Reverse)
	if len(m.state.Checkpoints) > 1 {
		bs = append(bs, k.Earlier, k.Later)
	}
	if m.live() {
		bs = append(bs, k.Checkpoint)
	}
	return bs
}
