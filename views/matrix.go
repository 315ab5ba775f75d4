package views

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// A verdict is one check's answer: the measurement when there is one, else the prediction.
type verdict uint8

const (
	vUnknown verdict = iota
	vAllow
	vDeny
)

func checkVerdict(c sessions.Check) (v verdict, disagree bool) {
	if c.Measured != nil {
		if *c.Measured != c.Predicted {
			disagree = true
		}
		if *c.Measured {
			return vAllow, disagree
		}
		return vDeny, disagree
	}
	if c.Predicted {
		return vAllow, false
	}
	return vDeny, false
}

const (
	codeNone = 18 // no cell for the pair
	codeSelf = 19 // the diagonal
)

// cellCode folds a cell into 0..17: vm_readv verdict, kcmp verdict and a disagreement bit.
func cellCode(c *sessions.Cell) uint8 {
	vm, d1 := checkVerdict(c.VMReadv)
	kc, d2 := checkVerdict(c.Kcmp)
	code := uint8(vm)*3 + uint8(kc)
	if d1 || d2 || c.Disagrees() {
		code += 9
	}
	return code
}

// MatrixIndex is a Matrix event indexed for drawing: an N×N grid of cell codes and the
// partition of its processes into equivalence classes (STAT's idea: processes whose rows and
// columns are identical are one class). Build it once per Matrix event; a frame then costs
// only the visible cells.
type MatrixIndex struct {
	Host      string
	M         *sessions.Matrix
	PIDs      []int
	pos       map[int]int
	code      []uint8 // N*N
	cell      []int32 // N*N index into M.Cells, -1 when absent
	Classes   []Class
	classOf   []int
	classCode []uint8 // K*K: the code shared by all pairs of two classes, 254 when mixed
	// Omitted is how many of the matrix's processes were left out (MaxMatrixPIDs).
	Omitted int
}

// MaxMatrixPIDs bounds the processes one host's matrix index holds: the index is dense (N*N
// codes), and a recording or an agent's stream is untrusted input that may name any number of
// pids. 4096 processes take 84 MB; the rest are left out and the header says so.
const MaxMatrixPIDs = 4096

// Class is a set of processes (indices into PIDs) with identical rows and columns.
type Class struct {
	ID      int
	Members []int
}

// IndexMatrix indexes the matrix m of host (nil gives an empty index).
func IndexMatrix(host string, m *sessions.Matrix) *MatrixIndex {
	ix := &MatrixIndex{Host: host, M: m, pos: map[int]int{}}
	if m == nil {
		return ix
	}
	for _, p := range m.PIDs {
		if _, dup := ix.pos[p]; !dup {
			if len(ix.PIDs) == MaxMatrixPIDs {
				ix.Omitted++
				continue
			}
			ix.pos[p] = len(ix.PIDs)
			ix.PIDs = append(ix.PIDs, p)
		}
	}
	n := len(ix.PIDs)
	ix.code = make([]uint8, n*n)
	ix.cell = make([]int32, n*n)
	for i := range ix.code {
		ix.code[i] = codeNone
		ix.cell[i] = -1
	}
	for i := 0; i < n; i++ {
		ix.code[i*n+i] = codeSelf
	}
	lastFrom, a, ok1 := 0, 0, false
	for k := range m.Cells {
		c := &m.Cells[k]
		if k == 0 || c.From != lastFrom { // cells come row by row: one lookup per row
			lastFrom = c.From
			a, ok1 = ix.pos[c.From]
		}
		b, ok2 := 0, false
		if nb := k % max(n, 1); nb < n && ix.PIDs[nb] == c.To {
			b, ok2 = nb, true // the usual full row-major layout
		} else {
			b, ok2 = ix.pos[c.To]
		}
		if !ok1 || !ok2 {
			continue
		}
		ix.cell[a*n+b] = int32(k)
		if a != b {
			ix.code[a*n+b] = cellCode(c)
		}
	}
	ix.classify()
	return ix
}

// classify groups processes whose rows and columns are identical apart from the pair itself
// (i ~ r when, for every other j, i→j equals r→j and j→i equals j→r, and i→r equals r→i).
// Processes are bucketed first by the multiset of their row and column codes, which equivalent
// processes share, and compared with each bucket's class representatives only.
func (ix *MatrixIndex) classify() {
	n := len(ix.PIDs)
	ix.classOf = make([]int, n)
	type bucket struct{ reps []int } // representative index of each class in the bucket
	buckets := map[[2 * 20]uint16]*bucket{}
	var reps []int // class -> representative
	for i := 0; i < n; i++ {
		var key [2 * 20]uint16
		for j := 0; j < n; j++ {
			if j != i {
				key[ix.code[i*n+j]]++
				key[20+ix.code[j*n+i]]++
			}
		}
		b := buckets[key]
		if b == nil {
			b = &bucket{}
			buckets[key] = b
		}
		class := -1
		if len(b.reps) < 256 { // beyond that the classes are too many to help the eye
			for _, c := range b.reps {
				if ix.equivalent(i, reps[c]) {
					class = c
					break
				}
			}
		}
		if class < 0 {
			class = len(reps)
			reps = append(reps, i)
			b.reps = append(b.reps, class)
		}
		ix.classOf[i] = class
	}
	ix.Classes = make([]Class, len(reps))
	for i, c := range ix.classOf {
		ix.Classes[c].Members = append(ix.Classes[c].Members, i)
	}
	// Classes are numbered in the order of their first member, which follows the matrix's pids.
	for c := range ix.Classes {
		ix.Classes[c].ID = c + 1
	}
	// The code of each pair of classes, so that a frame of classes costs one lookup per cell.
	k := len(ix.Classes)
	ix.classCode = make([]uint8, k*k)
	for i := range ix.classCode {
		ix.classCode[i] = 255
	}
	for i := 0; i < n; i++ {
		ci := ix.classOf[i] * k
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			p := &ix.classCode[ci+ix.classOf[j]]
			switch c := ix.code[i*n+j]; {
			case *p == 255:
				*p = c
			case *p != c:
				*p = 254
			}
		}
	}
	for i := range ix.classCode {
		if ix.classCode[i] == 255 { // a one-member class against itself
			ix.classCode[i] = codeSelf
		}
	}
}

func (ix *MatrixIndex) equivalent(i, r int) bool {
	n := len(ix.PIDs)
	code := ix.code
	if code[i*n+r] != code[r*n+i] {
		return false
	}
	ri, rr := code[i*n:i*n+n], code[r*n:r*n+n]
	for j := 0; j < n; j++ {
		if j == i || j == r {
			continue
		}
		if ri[j] != rr[j] || code[j*n+i] != code[j*n+r] {
			return false
		}
	}
	return true
}

// ClassOf is the class (index into Classes) of the process at index i.
func (ix *MatrixIndex) ClassOf(i int) int { return ix.classOf[i] }

// Unit is one row/column of the drawn matrix: a single process (Member ≥ 0, an index into
// PIDs) or a whole collapsed class (Member < 0).
type Unit struct {
	Class  int // index into Classes
	Member int
}

// MatrixOptions are the matrix view's options.
type MatrixOptions struct {
	Width, Height int
	Row, Col      int          // cursor, in units
	Group         int          // 0 auto (collapse when the job is wider than the screen), 1 always, -1 never
	Expanded      map[int]bool // class IDs shown member by member
	Host          string
}

const (
	matrixLabelW = 14
	matrixCellW  = 3
	matrixDetail = 6 // lines under the grid on a tall screen
)

// geometry is the matrix view's layout for o: rows of cells, lines of detail, columns of cells.
func geometry(o MatrixOptions) (gridH, detailH, cols int) {
	detailH = matrixDetail
	if o.Height < 18 {
		detailH = max(2, o.Height/3)
	}
	gridH = max(o.Height-2-detailH, 1)
	cols = max((o.Width-matrixLabelW)/matrixCellW, 1)
	return
}

// Grouped reports whether the matrix is drawn by classes with these options.
func Grouped(ix *MatrixIndex, o MatrixOptions) bool {
	switch {
	case o.Group > 0:
		return true
	case o.Group < 0:
		return false
	}
	n := len(ix.PIDs)
	gridH, _, cols := geometry(o)
	return n > cols || n > gridH
}

// Units lists the rows (and columns) drawn with these options.
func Units(ix *MatrixIndex, o MatrixOptions) []Unit {
	var us []Unit
	if !Grouped(ix, o) {
		for i := range ix.PIDs {
			us = append(us, Unit{ix.classOf[i], i})
		}
		return us
	}
	for ci, c := range ix.Classes {
		if len(c.Members) == 1 || o.Expanded[c.ID] {
			for _, m := range c.Members {
				us = append(us, Unit{ci, m})
			}
		} else {
			us = append(us, Unit{ci, -1})
		}
	}
	return us
}

// UnitPID is the unit's first process: what the cursor follows when the matrix is measured
// again and its classes change.
func (ix *MatrixIndex) UnitPID(u Unit) int {
	if ms := ix.members(u); len(ms) > 0 {
		return ix.PIDs[ms[0]]
	}
	return -1
}

func (ix *MatrixIndex) members(u Unit) []int {
	if u.Member >= 0 {
		return []int{u.Member}
	}
	return ix.Classes[u.Class].Members
}

// PairCell is the cell under the cursor: for two processes the cell itself; for classes the
// first off-diagonal pair (all pairs of two classes look alike, that is what a class is).
// It returns nil for the diagonal or when the matrix lacks the pair.
func (ix *MatrixIndex) PairCell(a, b Unit) *sessions.Cell {
	n := len(ix.PIDs)
	for _, i := range ix.members(a) {
		for _, j := range ix.members(b) {
			if i == j {
				continue
			}
			if k := ix.cell[i*n+j]; k >= 0 {
				return &ix.M.Cells[k]
			}
			return nil
		}
	}
	return nil
}

// unitCode is the code shared by every pair of two units, or 255 when they differ (only
// possible for an expanded class against a class, where pairs can still be mixed).
func (ix *MatrixIndex) unitCode(a, b Unit) uint8 {
	n := len(ix.PIDs)
	switch {
	case a.Member >= 0 && b.Member >= 0:
		return ix.code[a.Member*n+b.Member]
	case a.Member < 0 && b.Member < 0:
		return ix.classCode[a.Class*len(ix.Classes)+b.Class]
	}
	var code uint8 = 255
	for _, i := range ix.members(a) {
		for _, j := range ix.members(b) {
			if i == j {
				continue
			}
			c := ix.code[i*n+j]
			if code == 255 {
				code = c
			} else if code != c {
				return 254
			}
		}
	}
	if code == 255 {
		return codeSelf
	}
	return code
}

// MatrixHosts lists the hosts that have a matrix, sorted.
func MatrixHosts(s *sessions.State) []string {
	var hs []string
	for h := range s.Matrix {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}

// MatrixFor picks the matrix of host (or the first host's when host has none) and says whose
// it is.
func MatrixFor(s *sessions.State, host string) (string, *sessions.Matrix) {
	if m, ok := s.Matrix[host]; ok {
		return host, m
	}
	if hs := MatrixHosts(s); len(hs) > 0 {
		return hs[0], s.Matrix[hs[0]]
	}
	return host, nil
}

func glyph(v verdict) byte {
	switch v {
	case vAllow:
		return '+'
	case vDeny:
		return 'x'
	}
	return '?'
}

func (st *Styles) cellText(code uint8) string { return st.cells[code] }

func (st *Styles) renderCell(code uint8) string {
	switch code {
	case codeSelf:
		return st.Dim.Render("·· ")
	case codeNone:
		return st.Dim.Render("   ")
	case 254:
		return st.Warn.Render("~~ ")
	}
	if code >= 18 {
		return "   "
	}
	vm, kc, dis := verdict(code%9/3), verdict(code%3), code >= 9
	t := string([]byte{glyph(vm), glyph(kc), ' '})
	if dis {
		t = t[:2] + "!"
		return st.Warn.Render(t)
	}
	if vm == vDeny || kc == vDeny {
		return st.Bad.Render(t)
	}
	if vm == vAllow && kc == vAllow {
		return st.Good.Render(t)
	}
	return st.Warn.Render(t)
}

func (ix *MatrixIndex) unitLabel(s *sessions.State, u Unit) string {
	if u.Member < 0 {
		return fmt.Sprintf("C%d×%d", ix.Classes[u.Class].ID, len(ix.Classes[u.Class].Members))
	}
	pid := ix.PIDs[u.Member]
	r := ""
	if p := s.Procs[sessions.ProcKey{Host: ix.Host, PID: pid}]; p != nil && p.Rank >= 0 {
		r = fmt.Sprintf("r%d ", p.Rank)
	}
	return fmt.Sprintf("%s%d", r, pid)
}

// Matrix renders the access matrix of o.Host with the cursor cell explained underneath.
// ix must index the matrix MatrixFor(s, o.Host) returns (IndexMatrix of it; the tui caches it).
func Matrix(st *Styles, s *sessions.State, ix *MatrixIndex, o MatrixOptions) string {
	progress := ""
	if p := s.Measuring[o.Host]; p != nil && p.Total > 0 {
		progress = fmt.Sprintf("measuring inside each process: %d/%d pairs (%d%%)", p.Done, p.Total, p.Done*100/p.Total)
	}
	if ix == nil || ix.M == nil || len(ix.PIDs) == 0 {
		if progress != "" {
			return fit(st.Info.Render(progress), o.Width, o.Height)
		}
		return fit(st.Dim.Render("no access matrix yet — m measures it (needs a live session)"), o.Width, o.Height)
	}
	units := Units(ix, o)
	var b strings.Builder
	what := "predicted from /proc"
	if ix.M.Measured {
		what = "measured inside each process"
	}
	if progress != "" {
		what += " · " + progress
	}
	grouped := ""
	if Grouped(ix, o) {
		grouped = " · " + Count(len(ix.Classes), "class", "classes")
	}
	if ix.Host != "" || len(s.Matrix) > 1 {
		h := ix.Host
		if h == "" {
			h = "this host"
		}
		b.WriteString(st.Bold.Render(sessions.Sanitize(h)) + st.Dim.Render(" (H: next host) "))
	}
	omitted := ""
	if ix.Omitted > 0 {
		omitted = fmt.Sprintf(" (the first of %d: %d left out, more than %d per host)", len(ix.PIDs)+ix.Omitted, ix.Omitted, MaxMatrixPIDs)
	}
	// The legend as long as the width allows (the detail pane and e say the rest).
	title := fmt.Sprintf("%s%s%s · %s", Count(len(ix.PIDs), "process", "processes"), omitted, grouped, what)
	for _, legend := range []string{
		" · row may read column · cell = vm_readv,kcmp: + allowed x denied ! disagreement · < cursor",
		" · row reads column · vm_readv,kcmp: + ok x denied ! disagree",
		" · + ok x denied ! disagree",
		"",
	} {
		if lipglossWidth(title+legend) <= o.Width || legend == "" {
			title += legend
			break
		}
	}
	b.WriteString(st.Dim.Render(title) + "\n")

	gridH, detailH, cols := geometry(o)
	wide := len(units) > 100 // three-digit indices: a line of hundreds above the columns'
	if wide {
		gridH = max(gridH-1, 1)
		var hun strings.Builder
		hun.WriteString(strings.Repeat(" ", matrixLabelW))
		coff := window(clampI(o.Col, len(units)), 0, cols, len(units))
		for j := coff; j < len(units) && j < coff+cols; j++ {
			if j == coff || j%100 == 0 {
				hun.WriteString(fmt.Sprintf("%-3s", strconv.Itoa(j/100)+"··"))
			} else {
				hun.WriteString("   ")
			}
		}
		b.WriteString(st.Dim.Render(cut(hun.String(), o.Width)) + "\n")
	}
	row, col := clampI(o.Row, len(units)), clampI(o.Col, len(units))
	roff := window(row, 0, gridH, len(units))
	coff := window(col, 0, cols, len(units))

	// Column header: unit numbers (their last two digits; the hundreds are on the line above
	// when there are more than 100), the labels are on the rows, numbered the same way.
	var hdr strings.Builder
	hdr.WriteString(strings.Repeat(" ", matrixLabelW))
	for j := coff; j < len(units) && j < coff+cols; j++ {
		t := fmt.Sprintf("%2d ", j%100)
		if j == col {
			t = st.Bold.Render(fmt.Sprintf("%2d<", j%100))
		}
		hdr.WriteString(t)
	}
	b.WriteString(cut(hdr.String(), o.Width) + "\n")
	for i := roff; i < len(units) && i < roff+gridH; i++ {
		num := fmt.Sprintf("%2d", i)
		if wide {
			num = fmt.Sprintf("%3d", i)
		}
		label := pad(num+" "+ix.unitLabel(s, units[i]), matrixLabelW-1) + " "
		if i == row {
			label = st.Bold.Render(pad(num+" "+ix.unitLabel(s, units[i]), matrixLabelW-1) + ">")
		}
		var line strings.Builder
		line.WriteString(label)
		for j := coff; j < len(units) && j < coff+cols; j++ {
			code := ix.unitCode(units[i], units[j])
			if i == row && j == col {
				vm, kc := verdict(code%9/3), verdict(code%3)
				t := string([]byte{glyph(vm), glyph(kc)})
				switch code {
				case codeSelf:
					t = "··"
				case codeNone:
					t = "  "
				case 254:
					t = "~~"
				}
				line.WriteString(st.Selected.Render(t + "<"))
				continue
			}
			line.WriteString(st.cellText(code))
		}
		b.WriteString(cut(line.String(), o.Width) + "\n")
	}
	grid := fit(strings.TrimSuffix(b.String(), "\n"), o.Width, o.Height-detailH)
	detail := matrixDetailText(st, s, ix, units, row, col, o.Width)
	return grid + "\n" + fit(detail, o.Width, detailH)
}

func clampI(v, n int) int {
	if v >= n {
		v = n - 1
	}
	if v < 0 {
		v = 0
	}
	return v
}

func checkText(c sessions.Check) string {
	p := "allowed"
	if !c.Predicted {
		p = "denied"
	}
	s := "predicted " + p
	if c.Measured != nil {
		m := "allowed"
		if !*c.Measured {
			m = "denied"
		}
		s += ", measured " + m
	} else {
		s += ", not measured"
	}
	if c.Errno != nil && *c.Errno != "" {
		s += " (" + sessions.Sanitize(*c.Errno) + ")"
	}
	return s
}

func matrixDetailText(st *Styles, s *sessions.State, ix *MatrixIndex, units []Unit, row, col, width int) string {
	a, b := units[row], units[col]
	var out []string
	out = append(out, st.Dim.Render(strings.Repeat("─", max(0, width))))
	names := func(u Unit) string {
		if u.Member >= 0 {
			pid := ix.PIDs[u.Member]
			if p := s.Procs[sessions.ProcKey{Host: ix.Host, PID: pid}]; p != nil && p.Rank >= 0 {
				return fmt.Sprintf("rank %d (pid %d)", p.Rank, pid)
			}
			return fmt.Sprintf("pid %d", pid)
		}
		c := ix.Classes[u.Class]
		var ps []string
		for k, m := range c.Members {
			if k == 4 {
				ps = append(ps, "…")
				break
			}
			ps = append(ps, fmt.Sprint(ix.PIDs[m]))
		}
		return fmt.Sprintf("class C%d (%s: %s; enter expands)", c.ID, Count(len(c.Members), "process", "processes"), strings.Join(ps, " "))
	}
	cell := ix.PairCell(a, b)
	if cell == nil {
		if a == b || ix.unitCode(a, b) == codeSelf {
			out = append(out, names(a)+" → itself: always allowed (same mm, mm_access skips the check)")
		} else {
			out = append(out, names(a)+" → "+names(b)+": not in the matrix")
		}
		return strings.Join(out, "\n")
	}
	out = append(out, st.Bold.Render(names(a)+" → "+names(b)))
	out = append(out, "process_vm_readv: "+checkText(cell.VMReadv)+" · kcmp: "+checkText(cell.Kcmp))
	reason := "none"
	if cell.Reason != nil && *cell.Reason != "" {
		reason = sessions.Sanitize(string(*cell.Reason))
	}
	omp := "no"
	if cell.OpenMPI {
		omp = "yes"
	}
	out = append(out, "reason: "+reason+" · Open MPI would use CMA: "+omp)
	line := CellWhy(cell)
	if line == "" {
		line = cellWhat(cell)
	}
	if d := CellDisagree(cell); d != "" {
		line = st.Warn.Render("disagreement: "+d) + " " + line
	}
	out = append(out, line+st.Dim.Render(" (e explains)"))
	if nr := CellNotRun(*cell); len(nr) > 0 {
		out = append(out, st.Warn.Render("not run: "+strings.Join(nr, " ")))
	}
	return strings.Join(out, "\n")
}

// MatrixHit maps a click at column x of grid line y (0 = the first row of cells) to the unit
// row and column under it, or -1s.
func MatrixHit(ix *MatrixIndex, units []Unit, o MatrixOptions, x, y int) (row, col int) {
	n := len(units)
	if ix == nil || n == 0 || x < matrixLabelW || y < 0 {
		return -1, -1
	}
	gridH, _, cols := geometry(o)
	y -= 2 // the title and the column numbers
	if n > 100 {
		gridH, y = max(gridH-1, 1), y-1 // and the hundreds
	}
	if y < 0 {
		return -1, -1
	}
	roff := window(clampI(o.Row, n), 0, gridH, n)
	coff := window(clampI(o.Col, n), 0, cols, n)
	row, col = roff+y, coff+(x-matrixLabelW)/matrixCellW
	if y >= gridH || row >= n || col >= n || col >= coff+cols {
		return -1, -1
	}
	return row, col
}

// CellText is a cell in one line, for the clipboard: who reads whom, both checks and the
// reason.
func CellText(c *sessions.Cell) string {
	s := fmt.Sprintf("pid %d → pid %d: process_vm_readv %s; kcmp %s", c.From, c.To, checkText(c.VMReadv), checkText(c.Kcmp))
	if c.Reason != nil && *c.Reason != "" {
		s += "; reason " + sessions.Sanitize(string(*c.Reason))
	}
	return s
}
