package sessions

import (
	"testing"
	"time"
)

// TestGroupNoCore: a group says why it has no core while every member without one gave the
// same reason, "mixed" when they differ, and nothing once a member's core arrives; the
// summary carries it.
func TestGroupNoCore(t *testing.T) {
	crash := func(pid int, why NoCore, core *string) Event {
		return Event{Time: time.Unix(int64(pid), 0), Body: Crash{PID: pid, TID: pid, Rank: NoRank, Exe: "/x",
			Signal: "SIGSEGV", Module: "/x", Offset: 0x10, NoCore: why, Core: core}}
	}
	core := "/cores/core.1.3"
	for _, tc := range []struct {
		name string
		evs  []Event
		want NoCore
	}{
		{"all rlimit", []Event{crash(1, NoCoreRlimit, nil), crash(2, NoCoreRlimit, nil)}, NoCoreRlimit},
		{"mixed", []Event{crash(1, NoCoreRlimit, nil), crash(2, NoCoreNonDumpable, nil)}, NoCoreMixed},
		{"then a core", []Event{crash(1, NoCoreRlimit, nil), crash(3, "", &core), crash(4, "", nil)}, ""},
		{"not asked", []Event{crash(1, "", nil)}, ""},
	} {
		s := NewState()
		for _, e := range tc.evs {
			s.Apply(e)
		}
		if g := s.Groups[0]; g.NoCore != tc.want {
			t.Errorf("%s: group no_core %q, want %q", tc.name, g.NoCore, tc.want)
		}
		if g := s.Summary().Groups[0]; g.NoCore != tc.want {
			t.Errorf("%s: summary no_core %q, want %q", tc.name, g.NoCore, tc.want)
		}
	}
}
