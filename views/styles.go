package views

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// Styles is the palette every view draws with (gh-dash style: one shared struct, no globals).
// Meaning never rests on colour alone: denied cells, crashes and selections also differ in
// their glyphs or markers, so NO_COLOR and monochrome terminals lose nothing.
type Styles struct {
	R        *lipgloss.Renderer
	Title    lipgloss.Style
	Bold     lipgloss.Style
	Dim      lipgloss.Style
	Bad      lipgloss.Style // denied, crashed
	Good     lipgloss.Style // allowed, ok
	Warn     lipgloss.Style // handled, unknown, disagreement
	Info     lipgloss.Style
	Selected lipgloss.Style
	TabOn    lipgloss.Style
	TabOff   lipgloss.Style
	Box      lipgloss.Style
	Head     lipgloss.Style // table header

	cells [256]string // matrix cells pre-rendered by code: a 1000-process frame draws thousands
	// plain: the renderer draws no attributes at all (NO_COLOR, a dumb terminal), so reverse
	// video cannot show the cursor row: Cursor marks it with a ">" instead.
	plain bool
}

// Cursor renders line, w cells wide, as the list's cursor row: reverse video, and when the
// terminal shows no attributes (NO_COLOR) a leading ">" that survives them.
func (s *Styles) Cursor(line string, w int) string {
	if s.plain {
		// The marker takes the place of a leading space, so the row stays aligned with the
		// others.
		return cut(">"+strings.TrimPrefix(ansi.Strip(line), " "), w)
	}
	return s.Selected.Render(pad(line, w))
}

// NewStyles builds the palette for a renderer (lipgloss.DefaultRenderer() or one bound to the
// program's output).
func NewStyles(r *lipgloss.Renderer) *Styles {
	s := &Styles{R: r, plain: r.ColorProfile() == termenv.Ascii}
	// Bright ANSI colours on a dark background, their dark counterparts on a light one
	// (bright yellow and cyan are unreadable on white): the renderer tells which it has.
	s.Title = r.NewStyle().Bold(true).Foreground(lipgloss.AdaptiveColor{Light: "4", Dark: "12"})
	s.Bold = r.NewStyle().Bold(true)
	s.Dim = r.NewStyle().Faint(true)
	s.Bad = r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "1", Dark: "9"}).Bold(true)
	s.Good = r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "2", Dark: "10"})
	s.Warn = r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "3", Dark: "11"})
	s.Info = r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "6", Dark: "14"})
	s.Selected = r.NewStyle().Reverse(true)
	s.TabOn = r.NewStyle().Bold(true).Reverse(true)
	s.TabOff = r.NewStyle()
	s.Box = r.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	s.Head = r.NewStyle().Bold(true).Underline(true)
	for c := range s.cells {
		s.cells[c] = s.renderCell(uint8(c))
	}
	return s
}

// Plain is the palette on the ASCII profile (no colour, no attributes): golden tests and
// NO_COLOR.
func Plain() *Styles { return NewStyles(PlainRenderer(io.Discard)) }

// PlainRenderer is a renderer that never emits colour or attributes.
func PlainRenderer(w io.Writer) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w)
	r.SetColorProfile(termenv.Ascii)
	return r
}

// fit returns exactly h lines, each cut to width w (no line may wrap: a wrapped line shifts
// the whole frame and flickers).
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = cut(l, w)
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// cellWidth is how many cells s takes on a terminal: ansi.StringWidth, whose grapheme walk
// costs (a list of a thousand processes measured every cell of every row each frame), with
// printable ASCII counted a byte a cell as it is.
func cellWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// cut truncates one line to w cells, marking the cut with "…".
func cut(l string, w int) string {
	if w <= 0 {
		return ""
	}
	if cellWidth(l) <= w {
		return l
	}
	return ansi.Truncate(l, w, "…")
}

// pad right-pads (or cuts) plain text to w cells.
func pad(s string, w int) string {
	n := cellWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// Fit is fit for the tui's frame composition.
func Fit(s string, w, h int) string { return fit(s, w, h) }

// window returns the first index of a window of h rows that keeps cursor visible, given the
// previous offset.
func window(cursor, offset, h, n int) int {
	if h <= 0 {
		return 0
	}
	if cursor < offset {
		offset = cursor
	}
	if cursor >= offset+h {
		offset = cursor - h + 1
	}
	if offset > n-h {
		offset = n - h
	}
	if offset < 0 {
		offset = 0
	}
	return offset
}

// Window is window for the tui (mouse clicks map screen rows back to items).
func Window(cursor, offset, h, n int) int { return window(cursor, offset, h, n) }

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func lipglossWidth(s string) int { return cellWidth(s) }

// stripForSelect removes styling inside a line that is about to be drawn reversed, so the
// highlight covers the whole row evenly.
func stripForSelect(s string) string { return ansi.Strip(s) }
