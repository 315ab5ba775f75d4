package sessions

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Hex is an address or offset; it travels as a "0x..." string so that 64-bit values survive
// JSON consumers that use float64 numbers.
type Hex uint64

func (h Hex) String() string { return "0x" + strconv.FormatUint(uint64(h), 16) }

// MarshalJSON implements json.Marshaler.
func (h Hex) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 20)
	b = append(b, `"0x`...)
	b = strconv.AppendUint(b, uint64(h), 16)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts "0x1f", "1f" or a plain JSON number.
func (h *Hex) UnmarshalJSON(b []byte) error {
	// The common form, read without json's machinery: an agent's stream has a few dozen
	// per crash (registers, frames).
	if n := len(b); n > 2 && b[0] == '"' && b[n-1] == '"' {
		digits := b[1 : n-1]
		if len(digits) > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
			digits = digits[2:]
		}
		if v, err := strconv.ParseUint(string(digits), 16, 64); err == nil {
			*h = Hex(v)
			return nil
		}
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n uint64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("hex value %s: %w", b, err)
		}
		*h = Hex(n)
		return nil
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64)
	if err != nil {
		return fmt.Errorf("hex value %q: %w", s, err)
	}
	*h = Hex(v)
	return nil
}

// Rank is an MPI-style rank read from a process's environment, NoRank when it has none.
// It travels as a number or null.
type Rank int

// NoRank marks a process without a rank variable in its environment.
const NoRank Rank = -1

// MarshalJSON implements json.Marshaler.
func (r Rank) MarshalJSON() ([]byte, error) {
	if r < 0 {
		return []byte("null"), nil
	}
	return []byte(strconv.Itoa(int(r))), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Rank) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = NoRank
		return nil
	}
	if n, err := strconv.Atoi(string(b)); err == nil {
		*r = Rank(n)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("rank %s: %w", b, err)
	}
	*r = Rank(n)
	return nil
}

func (r Rank) String() string {
	if r < 0 {
		return "-"
	}
	return strconv.Itoa(int(r))
}
