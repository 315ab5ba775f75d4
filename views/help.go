package views

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
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
			kw = max(kw, ansi.StringWidth(k.Key))
			dw = max(dw, ansi.StringWidth(k.Desc))
		}
		w := min(max(kw+2+dw, ansi.StringWidth(g.Title)), inner)
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
					cell += strings.Repeat(" ", c.w-ansi.StringWidth(cell)+gap)
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
		w = max(w, ansi.StringWidth(l))
	}
	return st.Box.Render(fit(strings.Join(shown, "\n"), min(w, inner), len(shown))), from
}
