package views

import (
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// TestExplainUnrepaired: a fault delivered as if unhandled (its handler never repairs it)
// says so, and names the flag that leaves the loop alone; one left looping says that.
func TestExplainUnrepaired(t *testing.T) {
	for _, tc := range []struct {
		cr   sessions.Crash
		want string
	}{
		{sessions.Crash{Unrepaired: true, HandlerTries: 1}, "delivered the fault as if no handler were installed"},
		{sessions.Crash{HandlerTries: 3}, "3 times"},
	} {
		st := sessions.NewState()
		tc.cr.PID, tc.cr.Signal, tc.cr.Representative, tc.cr.Key = 7, "SIGSEGV", true, "k"
		st.Apply(sessions.Event{Time: time.Unix(1, 0), Body: tc.cr})
		ex := ExplainGroup(st.Groups[0])
		if !strings.Contains(ex.What, tc.want) || !strings.Contains(ex.What, "--unrepaired=leave") {
			t.Errorf("%+v: %q, want %q and the flag", tc.cr, ex.What, tc.want)
		}
	}
}
