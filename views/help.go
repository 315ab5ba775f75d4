package views

import (
	"fmt"
	"strings"
)

// HelpGroup is one column of the help overlay: a title and its keys with what they do.
type HelpGroup struct {
	Title string
	Keys  []HelpKey
}

// HelpKey is one key ("enter", "↑/k") and what it does.
type HelpKey struct{ Key, Desc string }

// Help lays the groups out for a width×height body: one column per group, as many side by
// side as fit, the rest in rows of columns below; when that is taller than the body it
// scrolls from line from (clamped), and the last line says how. It returns the box and the
// first line shown.
func Help(st *Styles, groups []HelpGroup, width, height, from int) (string, int) {
	inner := max(width-4, 10) // the box's border and padding
	const gap = 3
	type col struct {
		w     int
		lines []string
	}
	var cols []col
	for _, g := range groups {
		kw, dw := 0, 0
		for _, k := range g.Keys {
			kw = max(kw, cellWidth(k.Key))
			dw = max(dw, cellWidth(k.Desc))
		}
		w := min(max(kw+2+dw, cellWidth(g.Title)), inner)
		c := col{w: w, lines: []string{st.Title.Render(cut(g.Title, w))}}
		for _, k := range g.Keys {
			line := st.Bold.Render(pad(k.Key, kw)) + "  " + st.Dim.Render(cut(k.Desc, max(w-kw-2, 1)))
			c.lines = append(c.lines, line)
		}
		cols = append(cols, c)
	}
	// Rows of columns: a column goes to the right of the last while it fits.
	var lines []string
	for i := 0; i < len(cols); {
		j, used := i, 0
		for j < len(cols) && (j == i || used+gap+cols[j].w <= inner) {
			if j > i {
				used += gap
			}
			used += cols[j].w
			j++
		}
		row := cols[i:j]
		n := 0
		for _, c := range row {
			n = max(n, len(c.lines))
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		for l := 0; l < n; l++ {
			var b strings.Builder
			for k, c := range row {
				cell := ""
				if l < len(c.lines) {
					cell = c.lines[l]
				}
				if k < len(row)-1 {
					cell += strings.Repeat(" ", c.w-cellWidth(cell)+gap)
				}
				b.WriteString(cell)
			}
			lines = append(lines, strings.TrimRight(b.String(), " "))
		}
		i = j
	}
	room := max(height-3, 1) // the box's borders and the hint line
	from = max(0, min(from, len(lines)-room))
	shown := lines[from:min(len(lines), from+room)]
	hint := "esc closes"
	if len(lines) > room {
		if rest := len(lines) - from - len(shown); rest > 0 {
			hint += fmt.Sprintf(" · j/k scroll (%d more below)", rest)
		} else {
			hint += " · k scrolls back"
		}
	}
	shown = append(shown, st.Dim.Render(hint))
	w := 0
	for _, l := range shown {
		w = max(w, cellWidth(l))
	}
	return st.Box.Render(fit(strings.Join(shown, "\n"), min(w, inner), len(shown))), from
}

// Footer is the bottom line: the message, if any, then the keys that fit in width. The
// first key (? help) always stays, and the last (q) too unless a message needs its room; the
// others are kept in order while they fit, so a narrow terminal loses the least important
// ones, never the way to the help.
func Footer(st *Styles, message string, keys []HelpKey, width int) string {
	sep := " • "
	sepW := cellWidth(sep)
	item := func(k HelpKey) string { return st.Bold.Render(k.Key) + " " + st.Dim.Render(k.Desc) }
	itemW := func(k HelpKey) int { return cellWidth(k.Key) + 1 + cellWidth(k.Desc) }
	if len(keys) == 0 {
		return cut(st.Info.Render(message), width)
	}
	keep := make([]bool, len(keys))
	keep[0] = true
	room := width - itemW(keys[0])
	if message != "" {
		mw := min(cellWidth(message), max(room-2, 0))
		if mw > 0 {
			message = cut(message, mw)
			room -= mw + 2
		}
	}
	lastW := 0
	if len(keys) > 1 {
		lastW = sepW + itemW(keys[len(keys)-1])
	}
	if lastW > 0 && lastW <= room {
		keep[len(keys)-1] = true
		room -= lastW
	}
	for i := 1; i < len(keys)-1; i++ {
		if w := sepW + itemW(keys[i]); w <= room {
			keep[i] = true
			room -= w
		} else {
			break // in order: a later key never jumps one that did not fit
		}
	}
	var parts []string
	for i, k := range keys {
		if keep[i] {
			parts = append(parts, item(k))
		}
	}
	out := strings.Join(parts, st.Dim.Render(sep))
	if message != "" {
		out = st.Info.Render(message) + "  " + out
	}
	return cut(out, width)
}
