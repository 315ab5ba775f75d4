package tui

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// outputTab is Output (7, crashtui run only): what the ranks write to their stdout and
// stderr, read from the files they write as they grow (tail -f), filterable, with a cursor
// that follows the newest line until moved. The ranks write the files directly, so that they
// never depend on crashtui reading them (a pipe would block them, or kill them with SIGPIPE
// when crashtui is killed). Under run each rank has its own file (rank-N.log in a
// directory), so each line is told by its rank; demo --guest's log is one file.
type outputTab struct {
	path           string
	title          string // what the file holds
	guest          bool   // it is demo --guest's build and boot log
	tail           *ranksTail
	lines          []views.OutputLine
	dropped        int
	err            string
	cursor, offset int
	following      bool
	perRank        bool // the lines come with their rank (outputMsg.perRank)
	filter         string
	keep           follow[int] // the selected line, by its number since the start
}

// maxOutputLines bounds the lines kept; the file has all of them.
const maxOutputLines = 20000

// outputEvery is how often the file is read for new lines.
const outputEvery = 300 * time.Millisecond

// tailer reads a file as it grows. Only one read runs at a time: the next is asked for when
// the last one's lines have been taken.
type tailer struct {
	path    string
	rank    int // the rank whose file it is, -1 for one shared file
	f       *os.File
	off     int64
	partial []byte
	size    int64 // the file's size when last looked at: unchanged, it is not read
}

// outputMsg is one read's new lines.
type outputMsg struct {
	lines []views.OutputLine
	err   error
	// perRank: the lines are from a directory of rank files (ranksTail's, read off Update:
	// the tab keeps its own copy, never reads the tail's fields from View).
	perRank bool
}

// ranksTail reads a directory of rank-N.log files (or one file) as they grow, rank by rank.
type ranksTail struct {
	path  string
	dir   bool
	files []*tailer
}

func (rt *ranksTail) read() tea.Msg {
	if rt.files == nil {
		st, err := os.Lstat(rt.path)
		if err != nil {
			return outputMsg{err: fmt.Errorf("ranks' output %s: %w", rt.path, err)}
		}
		rt.dir = st.IsDir()
		if !rt.dir {
			rt.files = []*tailer{{path: rt.path, rank: -1, size: -1}}
		}
	}
	if rt.dir {
		// Every rank's file, once: run creates them all before the ranks start.
		have := map[int]bool{}
		for _, t := range rt.files {
			have[t.rank] = true
		}
		ents, err := os.ReadDir(rt.path)
		if err != nil {
			return outputMsg{err: fmt.Errorf("ranks' output %s: %w", rt.path, err)}
		}
		for _, e := range ents {
			var r int
			if n, _ := fmt.Sscanf(e.Name(), "rank-%d.log", &r); n == 1 && e.Type().IsRegular() && !have[r] && e.Name() == fmt.Sprintf("rank-%d.log", r) {
				rt.files = append(rt.files, &tailer{path: filepath.Join(rt.path, e.Name()), rank: r, size: -1})
			}
		}
		slices.SortFunc(rt.files, func(a, b *tailer) int { return a.rank - b.rank })
	}
	out := outputMsg{perRank: rt.dir}
	for _, t := range rt.files {
		// A stat first: of thousands of ranks few write between two reads, and a file that
		// has not grown costs no read (of a 256 KiB buffer, made and cleared for nothing).
		if st, err := os.Lstat(t.path); err == nil && st.Size() == t.size {
			continue
		} else if err == nil {
			t.size = st.Size()
		}
		m := t.read().(outputMsg)
		if m.err != nil && out.err == nil {
			out.err = m.err
		}
		out.lines = append(out.lines, m.lines...)
	}
	return out
}

func (t *tailer) read() tea.Msg {
	if t.f == nil {
		// The file is crashtui's own; O_NOFOLLOW: never read through a link put in its place.
		f, err := os.OpenFile(t.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return outputMsg{err: fmt.Errorf("ranks' output %s: %w", t.path, err)}
		}
		t.f = f
	}
	buf := make([]byte, 256<<10)
	n, err := t.f.ReadAt(buf, t.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return outputMsg{err: fmt.Errorf("ranks' output %s: %w", t.path, err)}
	}
	t.off += int64(n)
	data := append(t.partial, buf[:n]...)
	var lines []views.OutputLine
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, views.OutputLine{Rank: t.rank, Text: sessions.Sanitize(string(bytes.TrimRight(data[:i], "\r")))})
		data = data[i+1:]
	}
	if len(data) > 4096 { // a line that never ends is shown in pieces
		lines = append(lines, views.OutputLine{Rank: t.rank, Text: sessions.Sanitize(string(data))})
		data = nil
	}
	t.partial = append([]byte(nil), data...)
	return outputMsg{lines: lines}
}

// start begins reading the file.
func (o *outputTab) start() tea.Cmd {
	if o.path == "" {
		return nil
	}
	o.tail = &ranksTail{path: o.path}
	return o.tail.read
}

// take adds a read's lines, and asks for the next read.
func (o *outputTab) take(m *Model, msg outputMsg) tea.Cmd {
	at := m.now()
	if msg.err != nil {
		o.err = msg.err.Error()
	} else {
		o.err = ""
		o.perRank = msg.perRank
	}
	for _, l := range msg.lines {
		l.At = at
		o.lines = append(o.lines, l)
	}
	if over := len(o.lines) - maxOutputLines; over > 0 {
		o.lines = append(o.lines[:0:0], o.lines[over+maxOutputLines/4:]...)
		o.dropped += over + maxOutputLines/4
	}
	t, failed := o.tail, msg.err != nil
	if m.ended == nil || o.guest {
		// Every read is a message (and so a frame): the guest's waiting line counts the
		// seconds since the start.
		return tea.Tick(outputEvery, func(time.Time) tea.Msg { return t.read() })
	}
	// The ranks' file is read every outputEvery, but the screen is told only of what
	// changed (new lines, an error, or its end): an idle job's output costs no frame.
	ended := m.ended
	return func() tea.Msg {
		for {
			select {
			case <-ended:
				return nil
			case <-time.After(outputEvery):
			}
			if msg := t.read().(outputMsg); len(msg.lines) > 0 || (msg.err != nil) != failed {
				return msg
			}
		}
	}
}

func (o *outputTab) rows(m *Model) []int { return views.OutputRows(o.lines, o.filter, m.width) }

func (o *outputTab) key(m *Model, msg tea.KeyMsg, d int) tea.Cmd {
	k := &m.keys
	rows := o.rows(m)
	switch {
	case m.matchDir(msg) != 0:
		if len(rows) > 0 {
			o.cursor = nextMatch(clamp(o.cursor, len(rows)), len(rows), m.matchDir(msg), func(int) bool { return true })
			o.following = false
		}
		return nil
	case key.Matches(msg, k.Bottom):
		o.following = true
		return nil
	}
	if d != 0 {
		o.cursor += d
		o.following = false
	}
	return nil
}

func (o *outputTab) normalize(m *Model) {
	rows := o.rows(m)
	if o.following {
		o.cursor = len(rows) - 1
		o.keep.has = false
	}
	o.keep.fit(&o.cursor, len(rows), func(i int) int { return o.dropped + rows[i] })
	if !o.following && len(rows) > 0 && o.cursor == len(rows)-1 {
		o.following = true
	}
	o.offset = views.Window(max(o.cursor, 0), o.offset, m.bodyH()-2, len(rows))
}

func (o *outputTab) view(m *Model, w, h int) string {
	return views.Output(m.st, o.lines, o.rows(m), views.OutputOptions{Width: w, Height: h, Path: o.path, Title: o.title, Cursor: o.cursor,
		Offset: o.offset, Filter: o.filter, Following: o.following, Err: o.err, Dropped: o.dropped,
		PerRank: o.perRank})
}

func (o *outputTab) explain(m *Model) *views.Explanation { return nil }

func (o *outputTab) click(m *Model, x, y int) {
	if y >= 2 {
		if i := o.offset + y - 2; i < len(o.rows(m)) {
			o.cursor, o.following = i, false
		}
	}
}

func (o *outputTab) escape(m *Model)            { o.filter = "" }
func (o *outputTab) filterRef(m *Model) *string { return &o.filter }
func (o *outputTab) sorts() bool                { return false }
func (o *outputTab) shortHelp(m *Model) []key.Binding {
	k := &m.keys
	bs := []key.Binding{k.Filter}
	if o.filter != "" {
		bs = append(bs, k.NextMatch)
	}
	return append(bs, k.Bottom, k.Copy)
}

func (o *outputTab) copyText(m *Model) (string, string) {
	rows := o.rows(m)
	if c := clamp(o.cursor, len(rows)); c >= 0 {
		return "the line", o.lines[rows[c]].Text
	}
	return "", ""
}

// latest is the newest line read, "" when none.
func (o *outputTab) latest() string {
	if len(o.lines) == 0 {
		return ""
	}
	return o.lines[len(o.lines)-1].Text
}
