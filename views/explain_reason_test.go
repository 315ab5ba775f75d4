package views

import (
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// TestMatrixReasonsByName: each reason the tracer reports (sessions.Reason*) names its rule
// and where the kernel applies it; a reason outside that set (a recording from another build
// or tool) is reported as it is, sanitised, and matched to no rule.
func TestMatrixReasonsByName(t *testing.T) {
	for _, reason := range []sessions.Reason{sessions.ReasonSeccomp, sessions.ReasonUID, sessions.ReasonDumpable, sessions.ReasonCapabilities,
		sessions.ReasonPidNS, sessions.ReasonUserNS, sessions.ReasonYama, sessions.ReasonENOSYS, sessions.ReasonExited} {
		rr, ok := reasonRules[reason]
		if !ok || rr.rule == "" || rr.kernel == "" {
			t.Errorf("reason %q: no rule (%+v)", reason, rr)
			continue
		}
		r := reason
		if ex := ExplainCell(&sessions.Cell{From: 1, To: 2, Reason: &r}); ex.Rule != rr.rule || ex.Kernel != rr.kernel {
			t.Errorf("reason %q: rule %q kernel %q", reason, ex.Rule, ex.Kernel)
		}
	}
	for _, odd := range []sessions.Reason{"SELinux denial", "moon phase\x1b[2J"} {
		r := odd
		ex := ExplainCell(&sessions.Cell{From: 1, To: 2, Reason: &r})
		if !strings.HasPrefix(ex.Rule, "Reason reported by the tracer: ") || strings.ContainsRune(ex.Rule, 0x1b) || ex.Fix != "" {
			t.Errorf("reason %q: rule %q fix %q", odd, ex.Rule, ex.Fix)
		}
	}
}
