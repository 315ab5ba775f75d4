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
	// keep follows the selected thread (by host and tid) across checkpoints.
	keep follow[sessions.TaskKey]
}

func (t *threadsTab) opts(w, h int) views.ThreadOptions {
	ck := t.ckpt
	if t.following {
		ck = -1
	}
	return views.ThreadOptions{Width: w, Height: h, Cursor: t.cursor, Checkpoint: ck, Detail: t.detail, Scroll: t.scroll}
}

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
	ts := views.ThreadListOf(m.state, t.opts(0, 0).Checkpoint)
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
	ts := views.ThreadListOf(m.state, t.opts(0, 0).Checkpoint)
	if c := clamp(t.cursor, len(ts)); c >= 0 {
		e := views.ExplainThread(ts[c].Thread)
		return &e
	}
	return nil
}

func (t *threadsTab) click(m *Model, x, y int) {
	n := len(views.ThreadListOf(m.state, t.opts(0, 0).Checkpoint))
	if i := views.ThreadsHit(t.opts(m.width, m.bodyH()), n, y); i >= 0 {
		t.cursor = i
	}
}

func (t *threadsTab) escape(m *Model)            { t.detail = false }
func (t *threadsTab) filterRef(m *Model) *string { return nil }
func (t *threadsTab) sorts() bool                { return false }
func (t *threadsTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Enter, k.Explain}
	if len(m.state.Checkpoints) > 1 {
		bs = append(bs, k.Earlier, k.Later)
	}
	if m.live() {
		bs = append(bs, k.Checkpoint)
	}
	return bs
}
