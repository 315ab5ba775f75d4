package views

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/crashtui/crashtui/sessions"
)

// CheckpointDialog asks for the restore policy of a simulated checkpoint. When every
// policy's description does not fit in height, only the selected one's is shown.
func CheckpointDialog(st *Styles, choice, width, height int) string {
	w := min(width-4, 90)
	render := func(all bool) string {
		var b strings.Builder
		b.WriteString(st.Title.Render("Simulated checkpoint") + "\n")
		b.WriteString(wrap("Freeze the job, capture every thread's restart state, apply a restore policy in place and resume:", w) + "\n\n")
		for i, p := range sessions.Policies {
			mark := "  "
			label := string(p)
			if i == choice {
				mark = "> "
				label = st.Selected.Render(label)
			}
			b.WriteString(mark + label + "\n")
			if all || i == choice {
				b.WriteString(st.Dim.Render(indent(wrap(PolicyText[p], w-4), "    ")) + "\n")
			}
		}
		b.WriteString("\n" + st.Dim.Render("↑/↓ choose · enter run · esc cancel"))
		return st.Box.Render(b.String())
	}
	box := render(true)
	if height > 0 && strings.Count(box, "\n")+1 > height {
		box = render(false)
	}
	return box
}

// Confirm is a yes/no box.
func Confirm(st *Styles, text string, width int) string {
	return st.Box.Render(wrap(text, min(width-4, 70)) + "\n" + st.Dim.Render("y confirm · n/esc cancel"))
}

// Place centres a box in a w×h area (the body of the screen).
func Place(box string, w, h int) string {
	return fit(lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, box), w, h)
}
