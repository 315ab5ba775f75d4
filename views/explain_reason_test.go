package views

import (
	"strings"
	"testing"
)

// TestMatrixReasonsByName: each reason the tracer reports (tracer/access Reason*) names its
// rule exactly, the same rule its keywords found before; a reason outside that set is still
// matched by keyword, and one matching nothing is reported as it is.
func TestMatrixReasonsByName(t *testing.T) {
	byKeyword := func(reason string) string {
		for _, rr := range reasonRules {
			for _, k := range rr.keys {
				if strings.Contains(reason, k) {
					return rr.kernel
				}
			}
		}
		return ""
	}
	for _, reason := range []string{"seccomp", "uid", "dumpable", "capabilities", "pidns", "userns", "yama", "enosys", "exited"} {
		rr, ok := reasonOf(reason)
		if !ok || rr.reason != reason || rr.kernel != byKeyword(reason) {
			t.Errorf("reason %q: rule %q (%v) for %q; by keyword %q", reason, rr.kernel, ok, rr.reason, byKeyword(reason))
		}
	}
	if rr, ok := reasonOf("SELinux denial"); !ok || rr.kernel != "security_ptrace_access_check" {
		t.Errorf("a reason outside the set: %q %v, want the LSM rule by keyword", rr.kernel, ok)
	}
	if _, ok := reasonOf("moon phase"); ok {
		t.Error("a reason matching no rule found one")
	}
}
