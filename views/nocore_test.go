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

// TestNoRepresentative: a group none of whose members could have a core has no
// representative (the tracer named none): its detail says so and names no pid, and its row
// shows none; once the tracer names one, both show it.
func TestNoRepresentative(t *testing.T) {
	s := sessions.NewState()
	crash := func(pid int, rep bool) sessions.Event {
		c := sessions.Crash{PID: pid, TID: pid, Rank: sessions.Rank(pid - 7), Exe: "/bin/x", Signal: "SIGSEGV", Module: "/bin/x",
			Offset: 0x10, Group: 1, Representative: rep}
		if !rep {
			c.NoCore = sessions.NoCoreRlimit
		}
		return sessions.Event{Time: time.Unix(int64(pid), 0), Body: c}
	}
	s.Apply(crash(7, false))
	detail := Crashes(Plain(), s, CrashOptions{Width: 200, Height: 40, Detail: true})
	if !strings.Contains(detail, "no representative: no member could have a core") || strings.Contains(detail, "representative pid") ||
		strings.Contains(detail, "(representative)") {
		t.Errorf("a group without a representative:\n%s", detail)
	}
	if got := crashRowText(s.Groups[0]); !strings.Contains(got, " - ") {
		t.Errorf("row %q names a representative", got)
	}
	s.Apply(crash(8, true))
	detail = Crashes(Plain(), s, CrashOptions{Width: 200, Height: 40, Detail: true})
	if !strings.Contains(detail, "representative pid 8 (rank 1)") || !strings.Contains(detail, "8 tid 8 rank 1") {
		t.Errorf("after the tracer named pid 8:\n%s", detail)
	}
}
