package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// OutputLine is one line the ranks wrote (sanitised by the reader), with when it was read
// and the rank whose file it is in (-1: one file the ranks share).
type OutputLine struct {
	At   time.Time
	Rank int
	Text string
}

// OutputOptions lay out the Output tab: the ranks' stdout and stderr as crashtui run's log
// file has them.
type OutputOptions struct {
	Width, Height  int
	Path           string // the log file
	Title          string // what it holds: "ranks' stdout and stderr"
	Cursor, Offset int
	Filter         string
	Following      bool
	Err            string // why the file could not be read, "" when it could
	Dropped        int    // lines dropped from the front (only the newest are kept)
	PerRank        bool   // Path is a directory of one file per rank
}

// OutputRows are the lines whose row (as w cells show it) contains filter.
func OutputRows(lines []OutputLine, filter string, w int) []int {
	out := make([]int, 0, len(lines))
	for i, l := range lines {
		if filter == "" || visibleMatch(outputRow(l), filter, w-1) {
			out = append(out, i)
		}
	}
	return out
}

func outputRow(l OutputLine) string {
	if l.Rank >= 0 {
		return fmt.Sprintf("%s r%-3d %s", hms(l.At), l.Rank, l.Text)
	}
	return hms(l.At) + " " + l.Text
}

// Output renders the ranks' output, newest at the bottom, the cursor's row marked.
func Output(st *Styles, lines []OutputLine, rows []int, o OutputOptions) string {
	h := o.Height - 2
	var b strings.Builder
	title := fmt.Sprintf("%s · %s", o.Title, Count(len(lines), "line", "lines"))

	if o.Filter != "" {
		title = fmt.Sprintf("%d of %s match · filter: %s", len(rows), Count(len(lines), "line", "lines"), sessions.Sanitize(o.Filter))
	}
	if o.Dropped > 0 {
		title += fmt.Sprintf(" (the %d before them are in the file)", o.Dropped)
	}
	if !o.Following && len(rows) > 0 {
		title += " · G follows the newest"
	}
	cur := min(o.Cursor, len(rows)-1)
	b.WriteString(st.Dim.Render(leftRight(title, Position(cur, len(rows), h), o.Width)) + "\n")
	// Where the rest is, and what to open outside crashtui: a directory of rank-N.log files
	// (each line above says its rank: / r3 finds rank 3's), or one file.
	where := "file "
	if o.PerRank {
		where = "rank-N.log in "
	}
	b.WriteString(st.Dim.Render(where + midEllipsis(sessions.Sanitize(o.Path), max(o.Width-len(where), 8))))
	switch {
	case o.Err != "":
		b.WriteString("\n" + st.Warn.Render(cut(" "+sessions.Sanitize(o.Err), o.Width)))
	case len(lines) == 0:
		b.WriteString("\n" + st.Dim.Render(" nothing written yet"))
	case len(rows) == 0:
		b.WriteString("\n" + st.Dim.Render(" no line matches the filter (esc clears it)"))
	}
	off := window(max(cur, 0), o.Offset, h, len(rows))
	for i := off; i < len(rows) && i < off+h; i++ {
		b.WriteString("\n" + st.listRow(" "+outputRow(lines[rows[i]]), o.Filter, st.R.NewStyle(), i == cur, o.Width))
	}
	return fit(b.String(), o.Width, o.Height)
}
