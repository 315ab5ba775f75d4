package views

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Finding and sorting, shared by the list views: a filter (/) is a case-insensitive text the
// rows must contain, shown highlighted in them; a sort is a column, ascending or reversed,
// marked in the header with ▲ or ▼.

// Matches says whether text contains the filter, ignoring case ("" matches everything).
func Matches(text, filter string) bool {
	f := strings.ToLower(strings.TrimSpace(filter))
	return f == "" || strings.Contains(strings.ToLower(text), f)
}

// SortMark is the header's marker of the column sorted by: ▲ ascending, ▼ descending. Counts
// and times sort the largest and the latest first; reverse flips either.
func SortMark(by string, reverse bool) string {
	if descending[by] != reverse {
		return "▼"
	}
	return "▲"
}

// descending are the sorts whose own order is the largest (or the latest) first.
var descending = map[string]bool{"count": true, "threads": true, "faults": true, "last": true, "procs": true}

// listRow draws one row of a list: text (plain, cut to w) in base, the filter's matches
// highlighted, and as the cursor row when cursor is set (reverse video, or a leading ">"
// when the terminal shows no attributes).
func (st *Styles) listRow(text string, filter string, base lipgloss.Style, cursor bool, w int) string {
	text = cut(text, w)
	if cursor {
		if st.plain {
			return st.Cursor(text, w)
		}
		text, base = pad(text, w), st.Selected
	}
	return st.highlight(text, filter, base)
}

// highlight renders plain text in base with every occurrence of filter (ignoring case) also
// underlined and bold.
func (st *Styles) highlight(text, filter string, base lipgloss.Style) string {
	f := strings.ToLower(strings.TrimSpace(filter))
	if f == "" || st.plain {
		return base.Render(text)
	}
	lower := strings.ToLower(text)
	if len(lower) != len(text) { // a case mapping that changes lengths: no highlight, no harm
		return base.Render(text)
	}
	match := base.Underline(true).Bold(true)
	var b strings.Builder
	for {
		i := strings.Index(lower, f)
		if i < 0 {
			b.WriteString(base.Render(text))
			return b.String()
		}
		if i > 0 {
			b.WriteString(base.Render(text[:i]))
		}
		b.WriteString(match.Render(text[i : i+len(f)]))
		text, lower = text[i+len(f):], lower[i+len(f):]
		if text == "" {
			return b.String()
		}
	}
}

// visibleMatch says whether the filter occurs in the part of text that a row of w cells shows
// (a match in what the cut hides would list a row whose reason for being there is not seen).
func visibleMatch(text, filter string, w int) bool {
	f := strings.ToLower(strings.TrimSpace(filter))
	if f == "" {
		return true
	}
	lower := strings.ToLower(text)
	i := strings.Index(lower, f)
	if i < 0 {
		return false
	}
	if cellWidth(text) <= w {
		return true
	}
	// The row is cut at w-1 cells and "…" added: the match must end before the cut.
	return len(lower) == len(text) && cellWidth(text[:i+len(f)]) <= w-1
}
