package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

const matrixSynopsis = "matrix [--json] [--measure=false] JOB"

func cmdMatrix(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signalContext() // held for the whole command: see signalContext
	defer stop()
	var measure *bool
	c, spec, err := parseJobCommand("matrix", matrixSynopsis, args, stderr, func(fs *flag.FlagSet) {
		measure = fs.Bool("measure", true, "also run kcmp and process_vm_readv inside each process (stops one process at a time, briefly)")
	})
	if err != nil {
		return err
	}
	job, err := c.parseJob(spec)
	if err != nil {
		return err
	}
	// A signal (or a closed --json reader) during the attach skips the measurement.
	var m sessions.Matrix
	return attachOnce(ctx, c, stdout, "matrix", job,
		func(t jobOps) (err error) { m, err = t.Matrix(*measure); return err },
		func(st *sessions.State) { printMatrix(stdout, m, st) }, nil)
}

// printMatrix writes the matrix as a grid (one row per reader A, one column per target B)
// followed by every refused pair with its reason and fix.
func printMatrix(w io.Writer, m sessions.Matrix, st *sessions.State) {
	if len(m.PIDs) < 2 {
		fmt.Fprintf(w, "the job has %d process(es) (%v): no pair to check; the matrix is about who may read whose memory.\n", len(m.PIDs), m.PIDs)
		return
	}
	cells := map[[2]int]sessions.Cell{}
	for _, c := range m.Cells {
		cells[[2]int{c.From, c.To}] = c
	}
	label := func(pid int) string {
		if p := st.Procs[sessions.ProcKey{PID: pid}]; p != nil {
			name := truncRunes(sessions.Sanitize(p.Comm), 12)
			if p.Rank >= 0 {
				return fmt.Sprintf("%d %s r%d", pid, name, p.Rank)
			}
			return fmt.Sprintf("%d %s", pid, name)
		}
		return fmt.Sprint(pid)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "A \\ B\t")
	for _, b := range m.PIDs {
		fmt.Fprintf(tw, "%d\t", b)
	}
	fmt.Fprintln(tw)
	for _, a := range m.PIDs {
		fmt.Fprintf(tw, "%s\t", label(a))
		for _, b := range m.PIDs {
			if a == b {
				fmt.Fprint(tw, "·\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t", cellMark(cells[[2]int{a, b}]))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	how := "predicted from /proc"
	if m.Measured {
		how = "measured inside A (predicted where it could not run)"
	}
	fmt.Fprintf(w, "\nlegend: first mark process_vm_readv, second kcmp(KCMP_VM); + allowed, x denied, ! measured differs from predicted; %s\n", how)
	var bad []sessions.Cell
	for _, c := range m.Cells {
		// A call that was not run in a measured matrix is named too: its "allowed" is only
		// a prediction, and the user asked for a measurement.
		if !ok(c.VMReadv) || !ok(c.Kcmp) || c.Disagrees() || len(views.CellNotRun(c)) > 0 {
			bad = append(bad, c)
		}
	}
	sort.SliceStable(bad, func(i, j int) bool {
		if bad[i].From != bad[j].From {
			return bad[i].From < bad[j].From
		}
		return bad[i].To < bad[j].To
	})
	if len(bad) == 0 {
		if m.Measured {
			fmt.Fprintln(w, "every process may read every other, measured inside each: Open MPI's single-copy (CMA) transport will work.")
		} else {
			fmt.Fprintln(w, "/proc predicts that every process may read every other (not measured: --measure runs the calls inside each process).")
		}
		return
	}
	// One paragraph per distinct reason (with its explanation and fix), naming the pairs it
	// covers: the same sentence is not repeated for every denied cell.
	type group struct {
		head, explain, disagree string
		notRun                  []string
		pairs                   []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, c := range bad {
		reason := "-"
		if c.Reason != nil {
			reason = sessions.Sanitize(string(*c.Reason))
		}
		head := fmt.Sprintf("vm_readv %s  kcmp %s  openmpi %s  reason %s", verdict(c.VMReadv), verdict(c.Kcmp), yesNo(c.OpenMPI), reason)
		notRun := views.CellNotRun(c)
		explain, disagree := views.CellWhy(&c), views.CellDisagree(&c)
		key := head + "\x00" + explain + "\x00" + disagree + "\x00" + strings.Join(notRun, "\x00")
		g := byKey[key]
		if g == nil {
			g = &group{head: head, explain: explain, disagree: disagree, notRun: notRun}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.pairs = append(g.pairs, fmt.Sprintf("%d->%d", c.From, c.To))
	}
	for _, g := range groups {
		n := fmt.Sprintf("%d pairs", len(g.pairs))
		if len(g.pairs) == 1 {
			n = "1 pair"
		}
		fmt.Fprintf(w, "\n%s: %s\n", n, g.head)
		fmt.Fprintf(w, "    %s\n", wrap(strings.Join(g.pairs, " "), 96, "    "))
		if g.explain != "" {
			fmt.Fprintf(w, "    %s\n", wrap(g.explain, 96, "    "))
		}
		if g.disagree != "" {
			fmt.Fprintf(w, "    ! %s\n", wrap(g.disagree, 94, "      "))
		}
		for _, n := range g.notRun {
			fmt.Fprintf(w, "    not run: %s\n", wrap(n, 87, "      "))
		}
	}
}

// truncRunes keeps the first n runes of s: cutting bytes would split a UTF-8 sequence of a
// non-ASCII comm and print half a character.
func truncRunes(s string, n int) string {
	i := 0
	for at := range s {
		if i == n {
			return s[:at]
		}
		i++
	}
	return s
}

// ok is the final answer of a check: measured when measured, else predicted.
func ok(c sessions.Check) bool {
	if c.Measured != nil {
		return *c.Measured
	}
	return c.Predicted
}

// cellMark is a cell as the TUI's Matrix tab draws it (views/matrix.go, glyph): one mark for
// process_vm_readv and one for kcmp, + allowed and x denied, then ! when a measurement
// disagreed with the prediction.
func cellMark(c sessions.Cell) string {
	mark := func(ch sessions.Check) string {
		if ok(ch) {
			return "+"
		}
		return "x"
	}
	differs := func(ch sessions.Check) bool { return ch.Measured != nil && *ch.Measured != ch.Predicted }
	m := mark(c.VMReadv) + mark(c.Kcmp)
	if differs(c.VMReadv) || differs(c.Kcmp) {
		m += "!"
	}
	return m
}

func verdict(c sessions.Check) string {
	s := "denied"
	if ok(c) {
		s = "allowed"
	}
	if c.Errno != nil {
		s += " (" + *c.Errno + ")"
	}
	if c.Measured == nil {
		s += " [predicted]"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "uses CMA"
	}
	return "refuses CMA"
}

// wrap breaks s into lines of at most width runes, indenting continuation lines.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if line+1+len(word) > width {
				b.WriteString("\n" + indent)
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
