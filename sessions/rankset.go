package sessions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RankSet is a set of ranks written as runs: "0-63,65,128-1022/2" (every second rank from 128
// to 1022). A crash group or a stack class of a million tasks is a few runs, not a million
// numbers: this is what a reducing view passes on instead of member lists (design.md "Beyond
// one machine"). Its text is canonical: the same set is always written the same way (greedy
// runs over the sorted ranks), so two trees that saw the same ranks say the same string.
//
// The zero value is the empty set. A RankSet is a value: Union returns a new one.
type RankSet struct {
	runs []rankRun
}

// rankRun is lo, lo+step, ..., hi (hi == lo for one rank).
type rankRun struct{ Lo, Hi, Step int }

func (r rankRun) n() int { return (r.Hi-r.Lo)/r.Step + 1 }

// MaxRank bounds a rank in a RankSet: far above any job's size, and it bounds the work a
// hostile set can ask of a union (a run is walked rank by rank only where it overlaps
// another).
const MaxRank = 1<<24 - 1

// Len is the number of ranks in the set.
func (s RankSet) Len() int {
	n := 0
	for _, r := range s.runs {
		n += r.n()
	}
	return n
}

// Empty says whether the set has no rank.
func (s RankSet) Empty() bool { return len(s.runs) == 0 }

// IsZero is Empty (json's omitzero).
func (s RankSet) IsZero() bool { return len(s.runs) == 0 }

// Runs is how many runs the set is written as (its size on the wire).
func (s RankSet) Runs() int { return len(s.runs) }

// First is the smallest rank, -1 for the empty set.
func (s RankSet) First() int {
	if len(s.runs) == 0 {
		return -1
	}
	return s.runs[0].Lo
}

// Contains says whether rank r is in the set.
func (s RankSet) Contains(r int) bool {
	i, _ := slices.BinarySearchFunc(s.runs, r, func(x rankRun, r int) int {
		switch {
		case x.Hi < r:
			return -1
		case x.Lo > r:
			return 1
		}
		return 0
	})
	if i >= len(s.runs) {
		return false
	}
	x := s.runs[i]
	return r >= x.Lo && r <= x.Hi && (r-x.Lo)%x.Step == 0
}

// Each calls fn with every rank in increasing order until fn returns false.
func (s RankSet) Each(fn func(int) bool) {
	for _, r := range s.runs {
		for v := r.Lo; v <= r.Hi; v += r.Step {
			if !fn(v) {
				return
			}
		}
	}
}

// String writes the set: runs separated by commas, "" for the empty set.
func (s RankSet) String() string {
	var b strings.Builder
	for i, r := range s.runs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r.Lo))
		if r.Hi != r.Lo {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(r.Hi))
			if r.Step != 1 {
				b.WriteByte('/')
				b.WriteString(strconv.Itoa(r.Step))
			}
		}
	}
	return b.String()
}

// MarshalJSON writes the set as its string.
func (s RankSet) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a string written by MarshalJSON (or any set ParseRankSet accepts), or
// a list of ranks (null for none) as summaries wrote them before sets.
func (s *RankSet) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var list []Rank
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("rank list: %w", err)
		}
		ranks := make([]int, 0, len(list))
		for _, r := range list {
			ranks = append(ranks, int(r))
		}
		*s = RankSetOf(ranks...)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("rank set: %w", err)
	}
	v, err := ParseRankSet(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseRankSet reads "0-63,65,128-1022/2": ranks, ranges lo-hi and strided ranges lo-hi/step,
// in any order, overlapping or not. Ranks above MaxRank are an error.
func ParseRankSet(str string) (RankSet, error) {
	if str == "" {
		return RankSet{}, nil
	}
	var runs []rankRun
	for _, term := range strings.Split(str, ",") {
		r, err := parseRun(term)
		if err != nil {
			return RankSet{}, fmt.Errorf("rank set %q: %w", Sanitize(clip(str, 64)), err)
		}
		runs = append(runs, r)
	}
	// Canonical form: the union of the runs, in order.
	slices.SortFunc(runs, func(a, b rankRun) int { return a.Lo - b.Lo })
	var out RankSet
	for i := 0; i < len(runs); {
		// Runs that do not overlap the ones after them go in at once; overlapping ones
		// through Union.
		j := i + 1
		for j < len(runs) && runs[j].Lo > runs[j-1].Hi {
			j++
		}
		out = out.Union(RankSet{runs: canonRuns(runs[i:j])})
		i = j
	}
	return out, nil
}

// canonRuns rewrites sorted, non-overlapping runs in canonical form.
func canonRuns(runs []rankRun) []rankRun {
	var b rankBuilder
	for _, r := range runs {
		b.pushRun(r)
	}
	return b.done()
}

func parseRun(term string) (rankRun, error) {
	num := func(s string) (int, error) {
		if s == "" || len(s) > 8 || strings.TrimLeft(s, "0123456789") != "" {
			return 0, fmt.Errorf("bad number %q", Sanitize(clip(s, 16)))
		}
		v, _ := strconv.Atoi(s)
		if v > MaxRank {
			return 0, fmt.Errorf("rank %d above %d", v, MaxRank)
		}
		return v, nil
	}
	body, stepText, strided := strings.Cut(term, "/")
	loText, hiText, ranged := strings.Cut(body, "-")
	lo, err := num(loText)
	if err != nil {
		return rankRun{}, err
	}
	if !ranged {
		if strided {
			return rankRun{}, fmt.Errorf("a step needs a range: %q", Sanitize(clip(term, 32)))
		}
		return rankRun{lo, lo, 1}, nil
	}
	hi, err := num(hiText)
	if err != nil {
		return rankRun{}, err
	}
	step := 1
	if strided {
		if step, err = num(stepText); err != nil || step == 0 {
			return rankRun{}, fmt.Errorf("bad step in %q", Sanitize(clip(term, 32)))
		}
	}
	if hi < lo {
		return rankRun{}, fmt.Errorf("range %d-%d goes down", lo, hi)
	}
	hi -= (hi - lo) % step // the last rank the run reaches
	return rankRun{lo, hi, step}, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// RankSetOf is the set of the ranks given (any order, duplicates allowed; negative ones,
// NoRank, left out).
func RankSetOf(ranks ...int) RankSet {
	v := slices.Clone(ranks)
	slices.Sort(v)
	var b rankBuilder
	for i, r := range v {
		if r >= 0 && r <= MaxRank && (i == 0 || r != v[i-1]) {
			b.push(r)
		}
	}
	return RankSet{runs: b.done()}
}

// Union is the set of the ranks in s or t. It works run by run: a run that no run of the
// other set reaches into, or one with step 1 (which holds every rank of its span), goes in at
// once; only two strided runs that interleave are walked rank by rank (at most MaxRank).
func (s RankSet) Union(t RankSet) RankSet {
	switch {
	case len(t.runs) == 0:
		return s
	case len(s.runs) == 0:
		return t
	}
	var b rankBuilder
	x, y := &runCursor{runs: s.runs}, &runCursor{runs: t.runs}
	x.start()
	y.start()
	for !x.done() || !y.done() {
		if y.done() || (!x.done() && x.v <= y.v) {
			x, y = y, x
		}
		// y holds the smaller rank; x the other side's next (or none).
		r := y.runs[y.i]
		switch {
		case x.done() || x.v > r.Hi:
			b.pushRun(rankRun{y.v, r.Hi, r.Step}) // nothing of x in its span
			y.next()
		case r.Step == 1:
			b.pushRun(rankRun{y.v, r.Hi, 1}) // every rank of the span: x's are in it
			x.skipTo(r.Hi + 1)
			y.next()
		default:
			// Strided, and x has ranks in its span: y's ranks below x's, then one rank.
			if below := x.v - 1 - (x.v-1-y.v)%r.Step; below >= y.v && x.v > y.v {
				b.pushRun(rankRun{y.v, below, r.Step})
				y.skipTo(below + 1)
				continue
			}
			b.push(y.v)
			x.skipTo(y.v + 1)
			y.skipTo(y.v + 1)
		}
	}
	return RankSet{runs: b.done()}
}

// UnionAll is the union of every set given, as a chain of Unions would make it, in one
// walk over them all. A chain builds each set on the way: the classes of a stack tree's node
// interleave (ranks 0,3,6... waiting here, 1,4,7... there), and the union of two of three is
// a run a rank pair before the third fills it in.
func UnionAll(sets ...RankSet) RankSet {
	var cs []*runCursor
	for _, s := range sets {
		if len(s.runs) > 0 {
			c := &runCursor{runs: s.runs}
			c.start()
			cs = append(cs, c)
		}
	}
	switch len(cs) {
	case 0:
		return RankSet{}
	case 1:
		return RankSet{runs: cs[0].runs}
	}
	var b rankBuilder
	for {
		// y is at the smallest rank; xv is the smallest rank of the others (any: there is
		// one). As Union, with the other side the others together.
		var y *runCursor
		for _, c := range cs {
			if !c.done() && (y == nil || c.v < y.v) {
				y = c
			}
		}
		if y == nil {
			break
		}
		xv, any := 0, false
		for _, c := range cs {
			if c != y && !c.done() && (!any || c.v < xv) {
				xv, any = c.v, true
			}
		}
		r := y.runs[y.i]
		switch {
		case !any || xv > r.Hi:
			b.pushRun(rankRun{y.v, r.Hi, r.Step})
			y.next()
		case r.Step == 1:
			b.pushRun(rankRun{y.v, r.Hi, 1})
			for _, c := range cs {
				if c != y {
					c.skipTo(r.Hi + 1)
				}
			}
			y.next()
		default:
			if below := xv - 1 - (xv-1-y.v)%r.Step; below >= y.v && xv > y.v {
				b.pushRun(rankRun{y.v, below, r.Step})
				y.skipTo(below + 1)
				continue
			}
			v := y.v
			b.push(v)
			for _, c := range cs {
				c.skipTo(v + 1)
			}
		}
	}
	return RankSet{runs: b.done()}
}

// runCursor walks the ranks of a list of runs: v is the current rank of runs[i].
type runCursor struct {
	runs []rankRun
	i, v int
}

func (c *runCursor) start() {
	if len(c.runs) > 0 {
		c.v = c.runs[0].Lo
	}
}

func (c *runCursor) done() bool { return c.i >= len(c.runs) }

// next moves to the first rank of the next run.
func (c *runCursor) next() {
	c.i++
	if c.i < len(c.runs) {
		c.v = c.runs[c.i].Lo
	}
}

// skipTo moves to the first rank >= v, in constant time per run passed.
func (c *runCursor) skipTo(v int) {
	for !c.done() {
		r := c.runs[c.i]
		if r.Hi < v {
			c.next()
			continue
		}
		if c.v < v {
			c.v = r.Lo + (v-r.Lo+r.Step-1)/r.Step*r.Step
		}
		return
	}
}

// rankBuilder makes the canonical runs of an increasing sequence of ranks: greedily, a run
// is as long as its step holds; a run of two ranks with a step over one is two single ranks.
type rankBuilder struct {
	out          []rankRun
	lo, hi, step int
	n            int // ranks in the open run
}

func (b *rankBuilder) push(v int) {
	switch {
	case b.n == 0:
		b.lo, b.hi, b.n = v, v, 1
	case b.n == 1:
		b.step, b.hi, b.n = v-b.hi, v, 2
	case v-b.hi == b.step:
		b.hi = v
		b.n++
	default:
		if b.n == 2 && b.step > 1 {
			// Two ranks far apart are no run: the first stands alone, the second may
			// start one with v.
			b.out = append(b.out, rankRun{b.lo, b.lo, 1})
			b.lo, b.step, b.hi, b.n = b.hi, v-b.hi, v, 2
			return
		}
		b.close()
		b.lo, b.hi, b.n = v, v, 1
	}
}

// pushRun pushes every rank of r, in constant time after its first three.
func (b *rankBuilder) pushRun(r rankRun) {
	v := r.Lo
	for k := 0; k < 3 && v <= r.Hi; k++ {
		b.push(v)
		v += r.Step
	}
	if v <= r.Hi {
		// The open run now has r's step and ends at v-step: the rest extends it.
		b.n += (r.Hi-v)/r.Step + 1
		b.hi = r.Hi
	}
}

func (b *rankBuilder) close() {
	switch {
	case b.n == 0:
	case b.n == 1:
		b.out = append(b.out, rankRun{b.lo, b.lo, 1})
	case b.n == 2 && b.step > 1:
		b.out = append(b.out, rankRun{b.lo, b.lo, 1}, rankRun{b.hi, b.hi, 1})
	default:
		b.out = append(b.out, rankRun{b.lo, b.hi, b.step})
	}
	b.n = 0
}

func (b *rankBuilder) done() []rankRun {
	b.close()
	return b.out
}

// RankAdder collects ranks in any order into a RankSet, in memory bounded by the set's runs
// and a small buffer.
type RankAdder struct {
	set RankSet
	buf []int
}

// Add adds rank r (a negative one is ignored).
func (a *RankAdder) Add(r int) {
	if r < 0 || r > MaxRank {
		return
	}
	if n := len(a.buf); n > 0 && a.buf[n-1] == r {
		return
	}
	a.buf = append(a.buf, r)
	if len(a.buf) >= 4096 {
		a.flush()
	}
}

// AddSet adds every rank of t.
func (a *RankAdder) AddSet(t RankSet) {
	a.flush()
	a.set = a.set.Union(t)
}

func (a *RankAdder) flush() {
	if len(a.buf) > 0 {
		a.set = a.set.Union(RankSetOf(a.buf...))
		a.buf = a.buf[:0]
	}
}

// Set is the set of the ranks added so far.
func (a *RankAdder) Set() RankSet {
	a.flush()
	return a.set
}
