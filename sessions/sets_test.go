package sessions

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func TestRankSetString(t *testing.T) {
	for _, c := range []struct {
		name  string
		ranks []int
		want  string
	}{
		{"empty", nil, ""},
		{"one", []int{7}, "7"},
		{"a range and one", append(seq(0, 63, 1), 65), "0-63,65"},
		{"two apart are two ranks", []int{0, 5}, "0,5"},
		{"two consecutive are a range", []int{4, 5}, "4-5"},
		{"even ranks", seq(0, 1022, 2), "0-1022/2"},
		{"every fourth of a million", seq(3, 1<<20-1, 4), "3-1048575/4"},
		{"a range then a stride", append(seq(0, 2, 1), 4, 6, 8), "0-2,4-8/2"},
		{"duplicates and disorder", []int{9, 1, 5, 1, 9, 5, -1}, "1-9/4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := RankSetOf(c.ranks...)
			if got := s.String(); got != c.want {
				t.Errorf("RankSetOf(%v) = %q, want %q", c.ranks, got, c.want)
			}
			back, err := ParseRankSet(c.want)
			if err != nil || back.String() != c.want {
				t.Errorf("ParseRankSet(%q) = %q, %v", c.want, back.String(), err)
			}
		})
	}
}

func seq(lo, hi, step int) []int {
	var out []int
	for v := lo; v <= hi; v += step {
		out = append(out, v)
	}
	return out
}

// TestRankSetUnionModel checks Union, Len, Contains and the canonical text against plain
// sorted slices, on random sets made of runs, strides and scattered ranks.
func TestRankSetUnionModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randSet := func() []int {
		var v []int
		for k := rng.Intn(5); k >= 0; k-- {
			lo, step := rng.Intn(300), 1+rng.Intn(4)
			v = append(v, seq(lo, lo+rng.Intn(60), step)...)
		}
		for k := rng.Intn(8); k > 0; k-- {
			v = append(v, rng.Intn(400))
		}
		return v
	}
	for i := 0; i < 3000; i++ {
		a, b := randSet(), randSet()
		want := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
		u := RankSetOf(a...).Union(RankSetOf(b...))
		var got []int
		u.Each(func(r int) bool { got = append(got, r); return true })
		if !slices.Equal(got, want) {
			t.Fatalf("union of %v and %v: %v, want %v", RankSetOf(a...), RankSetOf(b...), u, want)
		}
		if u.String() != RankSetOf(want...).String() {
			t.Fatalf("union %q is not canonical: %q", u, RankSetOf(want...))
		}
		if u.Len() != len(want) {
			t.Fatalf("Len %d, want %d", u.Len(), len(want))
		}
		for r := -1; r < 420; r++ {
			if u.Contains(r) != slices.Contains(want, r) {
				t.Fatalf("%v: Contains(%d) = %v", u, r, u.Contains(r))
			}
		}
		c := randSet()
		all := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(want), c...))))
		if u3 := UnionAll(RankSetOf(a...), RankSet{}, RankSetOf(b...), RankSetOf(c...)); u3.String() != RankSetOf(all...).String() {
			t.Fatalf("UnionAll of %v, %v and %v: %q, want %q", RankSetOf(a...), RankSetOf(b...), RankSetOf(c...), u3, RankSetOf(all...))
		}
		if u1 := UnionAll(RankSetOf(a...)); u1.String() != RankSetOf(a...).String() {
			t.Fatalf("UnionAll of %v alone: %q", RankSetOf(a...), u1)
		}
		var add RankAdder
		for _, r := range rng.Perm(len(want)) {
			add.Add(want[r])
		}
		if add.Set().String() != u.String() {
			t.Fatalf("RankAdder: %q, want %q", add.Set(), u)
		}
	}
}

// TestRankSetUnionBig: a union of huge runs costs runs, not ranks.
func TestRankSetUnionBig(t *testing.T) {
	all, err := ParseRankSet("0-16777215")
	if err != nil {
		t.Fatal(err)
	}
	odd, _ := ParseRankSet("1-16777215/2")
	if u := all.Union(odd); u.String() != "0-16777215" {
		t.Errorf("union %q", u)
	}
	even, _ := ParseRankSet("0-16777214/2")
	if u := odd.Union(even); u.String() != "0-16777215" || u.Len() != 1<<24 {
		t.Errorf("odd ∪ even = %q (%d)", u, u.Len())
	}
	third := func(k int) RankSet { s, _ := ParseRankSet(fmt.Sprintf("%d-16777215/3", k)); return s }
	if u := UnionAll(third(0), third(1), third(2)); u.String() != "0-16777215" {
		t.Errorf("the three thirds: %q", u)
	}
	if _, err := ParseRankSet("0-16777216"); err == nil {
		t.Error("a rank above MaxRank parsed")
	}
}

func TestParseRankSetErrors(t *testing.T) {
	for _, bad := range []string{",", "1-", "-1", "a", "5-3", "1/2", "1-9/0", "1-9/", "0x10", " 1", "123456789"} {
		if s, err := ParseRankSet(bad); err == nil {
			t.Errorf("ParseRankSet(%q) = %q, want an error", bad, s)
		}
	}
	s, err := ParseRankSet("5,1-3,2-9/3,2")
	if err != nil || s.String() != "1-3,5,8" {
		t.Errorf("overlapping terms: %q, %v", s, err)
	}
}

func FuzzParseRankSet(f *testing.F) {
	for _, s := range []string{"0-63,65", "0-1022/2", "5,1-3,2-9/3", "16777215", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRankSet(s)
		if err != nil {
			return
		}
		again, err := ParseRankSet(v.String())
		if err != nil || again.String() != v.String() || again.Len() != v.Len() {
			t.Fatalf("%q → %q → %q, %v", s, v, again, err)
		}
	})
}

func TestHostSetString(t *testing.T) {
	var nodes []string
	for i := 1; i <= 32; i++ {
		nodes = append(nodes, "node"+pad3(i))
	}
	for _, c := range []struct {
		name  string
		hosts []string
		want  string
	}{
		{"empty", nil, ""},
		{"one", []string{"login1"}, "login1"},
		{"a cluster's nodes", append(nodes, "node040", "login1"), "login1,node[001-032,040]"},
		{"unpadded", []string{"n9", "n10", "n11", "n2"}, "n[2,9-11]"},
		{"padded and not", []string{"n09", "n10", "n100"}, "n100,n[09-10]"},
		{"no number", []string{"b", "a", "a"}, "a,b"},
		{"agents of one node", []string{"c1/0", "c1/1", "c1/2"}, "c1/[0-2]"},
		{"names with the syntax", []string{"x[1]", "a,b", "p%q"}, "a%2Cb,p%25q,x%5B1%5D"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := HostSetOf(c.hosts...)
			if got := s.String(); got != c.want {
				t.Errorf("HostSetOf(%q) = %q, want %q", c.hosts, got, c.want)
			}
			back, err := ParseHostSet(c.want)
			if err != nil || !slices.Equal(back.Hosts(), s.Hosts()) {
				t.Errorf("ParseHostSet(%q) = %q, %v; want %q", c.want, back.Hosts(), err, s.Hosts())
			}
		})
	}
	s, err := ParseHostSet("r[1-2]-ib,n[01-03]")
	if err != nil || strings.Join(s.Hosts(), " ") != "n01 n02 n03 r1-ib r2-ib" {
		t.Errorf("Slurm's forms: %q, %v", s.Hosts(), err)
	}
	for _, bad := range []string{"n[1-", "n]1", "n[a]", "n[3-1]", "n[0-99999999]", "a,,b", "%zz"} {
		if s, err := ParseHostSet(bad); err == nil {
			t.Errorf("ParseHostSet(%q) = %q, want an error", bad, s.Hosts())
		}
	}
}

func pad3(i int) string { return fmt.Sprintf("%03d", i) }

func FuzzParseHostSet(f *testing.F) {
	for _, s := range []string{"login1,node[001-032,040]", "n[1-4]-ib", "a%2Cb", "c1/[0-2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseHostSet(s)
		if err != nil {
			return
		}
		again, err := ParseHostSet(v.String())
		if err != nil || !slices.Equal(again.Hosts(), v.Hosts()) {
			t.Fatalf("%q → %q → %q, %v", s, v.String(), again.String(), err)
		}
	})
}

// TestSetsReadOldSummaries: summaries written before sets had lists; they still read.
func TestSetsReadOldSummaries(t *testing.T) {
	var g GroupSummary
	err := json.Unmarshal([]byte(`{"pids":[412,413,415],"ranks":[0,null,2,4],"hosts":["n2","n1","n2"]}`), &g)
	if err != nil || g.PIDs.String() != "412-413,415" || g.Ranks.String() != "0-4/2" || g.Hosts.String() != "n[1-2]" {
		t.Errorf("old summary: %+v %v", g, err)
	}
}
