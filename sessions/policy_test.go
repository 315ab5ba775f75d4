package sessions

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPolicy: the restore policies are one typed list; ParsePolicy takes each as a user types
// it and refuses anything else, naming them; on the wire they are the strings recordings have
// always carried.
func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
	}{{"correct", PolicyCorrect}, {"NAIVE", PolicyNaive}, {"sc-only", PolicySCOnly}, {"None", PolicyNone}} {
		if p, err := ParsePolicy(tc.in); err != nil || p != tc.want || !p.Valid() {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", tc.in, p, err, tc.want)
		}
	}
	for _, bad := range []string{"", "sloppy", "sc_only", "correct "} {
		if p, err := ParsePolicy(bad); err == nil || p != "" || !strings.Contains(err.Error(), "correct|naive|sc-only|none") {
			t.Errorf("ParsePolicy(%q) = %q, %v; want an error naming the policies", bad, p, err)
		}
	}
	if Policy("sloppy").Valid() {
		t.Error("an unknown policy is valid")
	}
	b, err := json.Marshal(Thread{Policy: PolicySCOnly, Applied: PolicyNaive})
	if err != nil || !strings.Contains(string(b), `"applied":"naive"`) || !strings.Contains(string(b), `"policy":"sc-only"`) {
		t.Errorf("thread JSON %s (%v)", b, err)
	}
}
