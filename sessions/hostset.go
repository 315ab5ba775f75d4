package sessions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// HostSet is a set of host names written as Slurm writes a node list: "node[001-032,040],login1".
// Reduced events carry the hosts they cover as one (design.md "Beyond one machine"); a tree of
// a thousand nodes names them in a few bytes when they are named as clusters name them.
//
// Host names come from untrusted streams: the characters the syntax uses ("[],%") and
// controls are written %XX, so every name round-trips. The zero value is the empty set.
type HostSet struct {
	hosts []string // sorted, unique
}

// MaxHosts bounds a parsed host list ("n[0-99999999]" is refused, not expanded).
const MaxHosts = 1 << 20

// HostSetOf is the set of the names given ("" left out).
func HostSetOf(hosts ...string) HostSet {
	v := slices.Clone(hosts)
	slices.Sort(v)
	v = slices.Compact(v)
	if len(v) > 0 && v[0] == "" {
		v = v[1:]
	}
	return HostSet{hosts: v}
}

// Len is the number of hosts.
func (s HostSet) Len() int { return len(s.hosts) }

// Empty says whether the set has no host.
func (s HostSet) Empty() bool { return len(s.hosts) == 0 }

// IsZero is Empty (json's omitzero).
func (s HostSet) IsZero() bool { return len(s.hosts) == 0 }

// Hosts are the names, sorted (the caller must not change them).
func (s HostSet) Hosts() []string { return s.hosts }

// Contains says whether h is in the set.
func (s HostSet) Contains(h string) bool {
	_, ok := slices.BinarySearch(s.hosts, h)
	return ok
}

// Union is the set of the hosts in s or t.
func (s HostSet) Union(t HostSet) HostSet {
	switch {
	case len(t.hosts) == 0:
		return s
	case len(s.hosts) == 0:
		return t
	}
	out := make([]string, 0, len(s.hosts)+len(t.hosts))
	i, j := 0, 0
	for i < len(s.hosts) || j < len(t.hosts) {
		switch {
		case j >= len(t.hosts) || (i < len(s.hosts) && s.hosts[i] < t.hosts[j]):
			out = append(out, s.hosts[i])
			i++
		case i >= len(s.hosts) || t.hosts[j] < s.hosts[i]:
			out = append(out, t.hosts[j])
			j++
		default:
			out = append(out, s.hosts[i])
			i, j = i+1, j+1
		}
	}
	return HostSet{hosts: out}
}

// Minus is the set of the hosts in s and not in t.
func (s HostSet) Minus(t HostSet) HostSet {
	var out []string
	for _, h := range s.hosts {
		if !t.Contains(h) {
			out = append(out, h)
		}
	}
	return HostSet{hosts: out}
}

// Intersects says whether s and t have a host in common.
func (s HostSet) Intersects(t HostSet) bool {
	for _, h := range s.hosts {
		if t.Contains(h) {
			return true
		}
	}
	return false
}

// hostNum splits a name into its prefix and trailing number: "node017" is ("node", 17, 3)
// where width 3 means zero-padded to three digits, 0 a number written without padding.
func hostNum(h string) (prefix string, n, width int, ok bool) {
	i := len(h)
	for i > 0 && h[i-1] >= '0' && h[i-1] <= '9' {
		i--
	}
	digits := h[i:]
	if digits == "" || len(digits) > 9 {
		return "", 0, 0, false
	}
	n, _ = strconv.Atoi(digits)
	if len(digits) > 1 && digits[0] == '0' {
		width = len(digits)
	}
	return h[:i], n, width, true
}

// String writes the set as a host list: names that differ only in a trailing number are one
// "prefix[ranges]" term.
func (s HostSet) String() string {
	type group struct {
		prefix string
		width  int
		nums   []int
	}
	var groups []*group
	at := map[string]*group{}
	var terms []string
	// A number written without padding joins the padded numbers of its prefix when it has
	// as many digits (node09 and node10 are node[09-10], as Slurm writes them).
	padded := map[string]bool{}
	for _, h := range s.hosts {
		if prefix, _, width, ok := hostNum(h); ok && width > 0 {
			padded[prefix+"\x00"+strconv.Itoa(width)] = true
		}
	}
	for _, h := range s.hosts {
		prefix, n, width, ok := hostNum(h)
		if !ok {
			terms = append(terms, escapeHost(h))
			continue
		}
		if digits := len(h) - len(prefix); width == 0 && padded[prefix+"\x00"+strconv.Itoa(digits)] {
			width = digits
		}
		k := prefix + "\x00" + strconv.Itoa(width)
		g := at[k]
		if g == nil {
			g = &group{prefix: prefix, width: width}
			at[k] = g
			groups = append(groups, g)
		}
		g.nums = append(g.nums, n)
	}
	for _, g := range groups {
		num := func(n int) string {
			t := strconv.Itoa(n)
			for len(t) < g.width {
				t = "0" + t
			}
			return t
		}
		if len(g.nums) == 1 {
			terms = append(terms, escapeHost(g.prefix)+num(g.nums[0]))
			continue
		}
		slices.Sort(g.nums)
		var rs []string
		for i := 0; i < len(g.nums); {
			j := i
			for j+1 < len(g.nums) && g.nums[j+1] == g.nums[j]+1 {
				j++
			}
			if j > i {
				rs = append(rs, num(g.nums[i])+"-"+num(g.nums[j]))
			} else {
				rs = append(rs, num(g.nums[i]))
			}
			i = j + 1
		}
		terms = append(terms, escapeHost(g.prefix)+"["+strings.Join(rs, ",")+"]")
	}
	slices.Sort(terms)
	return strings.Join(terms, ",")
}

// escapeHost writes the characters a host list uses, '%' and controls as %XX.
func escapeHost(h string) string {
	if !strings.ContainsAny(h, "[],% \t") && !hasControl(h) {
		return h
	}
	var b strings.Builder
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c == '[' || c == ']' || c == ',' || c == '%' || c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func unescapeHost(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+3 > len(s) {
			return "", fmt.Errorf("bad escape in %q", Sanitize(clip(s, 32)))
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", Sanitize(clip(s, 32)))
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}

// ParseHostSet reads a host list as String writes it (and Slurm's forms: "n[1-4]-ib",
// "n[01-04]"). It refuses more than MaxHosts names.
func ParseHostSet(str string) (HostSet, error) {
	var hosts []string
	bad := func(why string) (HostSet, error) {
		return HostSet{}, fmt.Errorf("host list %q: %s", Sanitize(clip(str, 64)), why)
	}
	for len(str) > 0 {
		// One term: up to a comma outside brackets.
		end, depth := len(str), 0
		for i := 0; i < len(str); i++ {
			switch str[i] {
			case '[':
				depth++
			case ']':
				depth--
			case ',':
				if depth == 0 {
					end = i
				}
			}
			if end != len(str) {
				break
			}
		}
		term := str[:end]
		str = strings.TrimPrefix(str[end:], ",")
		open := strings.IndexByte(term, '[')
		if open < 0 {
			if strings.ContainsRune(term, ']') {
				return bad("a ']' without '['")
			}
			h, err := unescapeHost(term)
			if err != nil {
				return HostSet{}, err
			}
			if h == "" {
				return bad("an empty name")
			}
			hosts = append(hosts, h)
			continue
		}
		closing := strings.IndexByte(term, ']')
		if closing < open || strings.Count(term, "[") != 1 || strings.Count(term, "]") != 1 {
			return bad("brackets do not pair")
		}
		prefix, err := unescapeHost(term[:open])
		if err != nil {
			return HostSet{}, err
		}
		suffix, err := unescapeHost(term[closing+1:])
		if err != nil {
			return HostSet{}, err
		}
		for _, r := range strings.Split(term[open+1:closing], ",") {
			loText, hiText, ranged := strings.Cut(r, "-")
			if !ranged {
				hiText = loText
			}
			lo, err1 := strconv.Atoi(loText)
			hi, err2 := strconv.Atoi(hiText)
			if err1 != nil || err2 != nil || lo < 0 || hi < lo || len(loText) > 9 || len(hiText) > 9 {
				return bad("bad range " + strconv.Quote(clip(r, 16)))
			}
			if len(hosts)+hi-lo >= MaxHosts {
				return bad(fmt.Sprintf("more than %d hosts", MaxHosts))
			}
			width := 0
			if len(loText) > 1 && loText[0] == '0' {
				width = len(loText)
			}
			for n := lo; n <= hi; n++ {
				t := strconv.Itoa(n)
				for len(t) < width {
					t = "0" + t
				}
				hosts = append(hosts, prefix+t+suffix)
			}
		}
	}
	if len(hosts) > MaxHosts {
		return bad(fmt.Sprintf("more than %d hosts", MaxHosts))
	}
	return HostSetOf(hosts...), nil
}

// MarshalJSON writes the set as its host list.
func (s HostSet) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a host list, or a list of names as summaries wrote them before sets.
func (s *HostSet) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("host list: %w", err)
		}
		if len(list) > MaxHosts {
			return fmt.Errorf("host list: more than %d hosts", MaxHosts)
		}
		*s = HostSetOf(list...)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("host set: %w", err)
	}
	v, err := ParseHostSet(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}
