package views

import (
	"strings"
	"testing"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// TestNoCoreSentence: the crash detail says why a group has no core, from the tracer's
// reason; a reason from a recording that this build does not know is shown sanitised.
func TestNoCoreSentence(t *testing.T) {
	for _, tc := range []struct {
		why  sessions.NoCore
		want string
	}{
		{"", "crashtui keeps one per crash site with --cores DIR"},
		{sessions.NoCoreRlimit, "no core: every member has RLIMIT_CORE 0; ulimit -c unlimited before starting the job"},
		{sessions.NoCoreNonDumpable, "not dumpable"},
		{sessions.NoCoreDumpableUnknown, "cannot be told from outside"},
		{sessions.NoCoreWriteFailed, "writing it failed"},
		{sessions.NoCoreMixed, "different reasons"},
		{"evil\x1b[2J", "no core: evil"},
	} {
		s := sessions.NewState()
		s.Apply(sessions.Event{Time: time.Unix(1, 0), Body: sessions.Crash{PID: 7, TID: 7, Rank: 0, Exe: "/bin/x",
			Signal: "SIGSEGV", Module: "/bin/x", Offset: 0x10, NoCore: tc.why}})
		lines := Crashes(Plain(), s, CrashOptions{Width: 200, Height: 40, Detail: true})
		if !strings.Contains(lines, tc.want) || strings.ContainsRune(lines, 0x1b) {
			t.Errorf("no_core %q: detail\n%s\nwant it to say %q", tc.why, lines, tc.want)
		}
	}
}
