package views

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// wrap word-wraps text (it may carry styles) to w cells: lines break between words only,
// never inside one ("rax=-4", "0x87619" stay whole); a word longer than a line (a path, a
// crash key) is broken after one of its separators (/ | + , : =), and only where it has none
// within the line, at the line's end. A line's leading spaces indent its continuations.
func wrap(s string, w int) string {
	if w < 10 {
		w = 10
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		out = append(out, wrapLine(para, w)...)
	}
	return strings.Join(out, "\n")
}

func wrapLine(s string, w int) []string {
	s = strings.TrimRight(s, " ")
	if cellWidth(s) <= w {
		return []string{s}
	}
	indent := s[:len(s)-len(strings.TrimLeft(s, " "))]
	if len(indent) > w/2 {
		indent = indent[:w/2]
	}
	var lines []string
	cur, curW := indent, len(indent)
	flush := func() {
		lines = append(lines, strings.TrimRight(cur, " "))
		cur, curW = indent, len(indent)
	}
	for _, word := range strings.Fields(s) {
		ww := cellWidth(word)
		sep := 0
		if curW > len(indent) {
			sep = 1
		}
		switch {
		case curW+sep+ww <= w:
			if sep == 1 {
				cur += " "
			}
			cur += word
			curW += sep + ww
			continue
		case ww <= w-len(indent):
			flush()
			cur += word
			curW += ww
			continue
		}
		// A word longer than a whole line: start it here when a useful part fits.
		room := w - curW - sep
		if room < 8 {
			flush()
			room, sep = w-curW, 0
		}
		if sep == 1 {
			cur += " "
			curW++
		}
		for _, piece := range splitToken(ansi.Strip(word), room, w-len(indent)) {
			if curW > len(indent) {
				flush()
			}
			cur += piece
			curW += cellWidth(piece)
		}
	}
	if curW > len(indent) {
		flush()
	}
	return lines
}

// tokenBreaks are where a word too long for a line may break: after a path's or a key's
// separators.
const tokenBreaks = "/|+,:= "

// splitToken cuts a word (plain text) into pieces of at most first cells, then rest cells
// each, each ending after a separator when one is in its second half.
func splitToken(tok string, first, rest int) []string {
	var out []string
	r := []rune(tok)
	limit := max(first, 1)
	for len(r) > 0 {
		if cellWidth(string(r)) <= limit {
			return append(out, string(r))
		}
		cutAt, w := 0, 0
		for i, c := range r {
			cw := cellWidth(string(c))
			if w+cw > limit {
				break
			}
			w += cw
			cutAt = i + 1
		}
		for i := cutAt - 1; i >= cutAt/2 && i > 0; i-- {
			if strings.ContainsRune(tokenBreaks, r[i]) {
				cutAt = i + 1
				break
			}
		}
		cutAt = max(cutAt, 1)
		out = append(out, string(r[:cutAt]))
		r = r[cutAt:]
		limit = max(rest, 1)
	}
	return out
}

// column is one column of a table laid out by content (layout).
type column struct {
	head  string
	want  int  // the widest cell
	cap   int  // at most this wide (0: no cap)
	min   int  // the last column: how narrow it may get before others are dropped
	drop  int  // dropped when the row does not fit, lowest first (0: never)
	right bool // right-aligned (numbers)
}

// layout gives each column the width its content needs (its header's at least, its cap at
// most); the last column, the free text (a command, a site, an outcome), takes what is left.
// When the row is wider than width, the free text shrinks to its min, then the optional
// columns are dropped (lowest drop first) until it fits, and only then is the free text cut
// further. A width of 0 means dropped.
func layout(cols []column, width int) []int {
	ws := make([]int, len(cols))
	for i, c := range cols {
		ws[i] = max(c.want, cellWidth(c.head))
		if c.cap > 0 {
			ws[i] = min(ws[i], max(c.cap, cellWidth(c.head)))
		}
	}
	total := func() int {
		t, n := 0, 0
		for _, w := range ws {
			if w > 0 {
				t += w
				n++
			}
		}
		return 1 + t + max(n-1, 0) // a leading space, one between columns
	}
	last := len(cols) - 1
	if over := total() - width; over > 0 {
		ws[last] = max(ws[last]-over, max(cols[last].min, cellWidth(cols[last].head)))
	}
	for total() > width {
		drop := -1
		for i, c := range cols[:last] {
			if c.drop > 0 && ws[i] > 0 && (drop < 0 || c.drop < cols[drop].drop) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		ws[drop] = 0
	}
	if over := total() - width; over > 0 {
		ws[last] = max(ws[last]-over, 1)
	}
	if t := total(); t < width {
		ws[last] += width - t
	}
	return ws
}

// row lays cells out in the widths (a 0 width drops its cell), cutting the ones that are too
// wide, one space apart, after a leading space.
func row(cols []column, ws []int, cells []string) string {
	var b strings.Builder
	b.WriteString(" ")
	first := true
	for i, c := range cells {
		if ws[i] == 0 {
			continue
		}
		if !first {
			b.WriteString(" ")
		}
		first = false
		switch {
		case i == len(cells)-1:
			b.WriteString(cut(c, ws[i]))
		case cols[i].right:
			c = cut(c, ws[i])
			b.WriteString(strings.Repeat(" ", ws[i]-cellWidth(c)) + c)
		default:
			b.WriteString(pad(c, ws[i]))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// heads is the header row of cols.
func heads(cols []column, ws []int) string {
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = c.head
	}
	return row(cols, ws, cells)
}
