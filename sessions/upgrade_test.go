package sessions

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// testdata/v1-checkpoint.jsonl is a recording of format version 1, written by the tracer of
// 093ef09 (the last to write sentences) checkpointing demo/restart/restart.c on amd64: threads
// held at SIGUSR1 (SA_RESTART) and SIGUSR2 (without), a process whose every thread was held at a
// signal, a job in a group-stop, then naive and correct restores with their outcomes.
func readV1(t *testing.T) (Header, []Thread) {
	t.Helper()
	f, err := os.Open("testdata/v1-checkpoint.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, evs, err := ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	var ths []Thread
	for _, e := range evs {
		ths = append(ths, e.Body.(Thread))
	}
	return h, ths
}

func hexp(v uint64) *Hex { h := Hex(v); return &h }
func intp(v int) *int    { return &v }
func i64p(v int64) *int64 {
	return &v
}

// TestReadV1Recording: reading a version 1 recording derives the facts of version 2 from its
// sentences and keeps the sentences.
func TestReadV1Recording(t *testing.T) {
	h, ths := readV1(t)
	if h.Version != 1 || len(ths) == 0 {
		t.Fatalf("header %+v, %d thread events; want a version 1 recording with threads", h, len(ths))
	}
	interrupt := Thread{Stop: StopInterrupt, Handler: HandlerNone}
	group := Thread{Stop: StopGroup, Handler: HandlerNone}
	type key struct {
		tid     int
		outcome bool
	}
	want := map[key]Thread{
		{15863, false}: interrupt,
		{15865, false}: {Stop: StopSignal, Signal: "SIGUSR1", Disposition: DispCaught, Handler: HandlerRestart,
			Sigaction: &Sigaction{TID: 15863, Flags: hexp(0x14000000)}},
		{15866, false}: {Stop: StopSignal, Signal: "SIGUSR2", Disposition: DispCaught, Handler: HandlerNoRestart,
			Sigaction: &Sigaction{TID: 15863, Flags: hexp(0x4000000)}},
		{15869, false}: {Stop: StopSignal, Signal: "SIGUSR1", Disposition: DispCaught, Handler: HandlerRestart,
			Sigaction: &Sigaction{TID: 15863, Flags: hexp(0x14000000)}},
		{15901, false}: {Stop: StopSignal, Signal: "SIGUSR1", Disposition: DispCaught, Handler: HandlerUnknown, Sigaction: &Sigaction{AllHeld: true}},
		{15911, false}: group,
		{15911, true}:  {Stop: StopGroup, Handler: HandlerNone, OutcomeKind: OutcomeJobStopped},
		{15957, true}: {Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeERESTARTLeaked, Returned: i64p(-512),
			NextNr: intp(0), NextSyscall: "read"},
		{15962, true}: {Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeERESTARTLeaked, Returned: i64p(-512)},
		{15965, true}: {Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeERESTARTLeaked, Returned: i64p(-514)},
		{15967, true}: {Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeERESTARTLeaked, Returned: i64p(-516)},
		{15975, true}: {Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeRestarted, NextNr: intp(0), NextSyscall: "read"},
		{15980, true}: {Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeEINTR, Returned: i64p(-4)},
	}
	facts := func(th Thread) Thread {
		return Thread{Stop: th.Stop, Signal: th.Signal, Disposition: th.Disposition, Handler: th.Handler, Sigaction: th.Sigaction,
			OutcomeKind: th.OutcomeKind, Returned: th.Returned, NextNr: th.NextNr, NextSyscall: th.NextSyscall, Exited: th.Exited}
	}
	seen := map[key]bool{}
	for _, th := range ths {
		if th.Stop == "" || th.Handler == "" || th.Explain == "" {
			t.Errorf("thread %d: stop %q handler %q explain %q: every thread event of 093ef09 has a stop", th.TID, th.Stop, th.Handler, th.Explain)
		}
		if (th.Outcome != "") != (th.OutcomeKind != "") {
			t.Errorf("thread %d: outcome %q gave kind %q", th.TID, th.Outcome, th.OutcomeKind)
		}
		k := key{th.TID, th.Outcome != ""}
		w, ok := want[k]
		if !ok {
			continue
		}
		seen[k] = true
		if got := facts(th); !reflect.DeepEqual(got, w) {
			t.Errorf("thread %d (outcome %v): derived\n%+v\nwant\n%+v\nfrom %q / %q", th.TID, k.outcome, got, w, th.Explain, th.Outcome)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("no thread event %+v in the recording", k)
		}
	}
}

// TestStreamUpgrades: a live stream is upgraded after a version 1 header or with no header,
// and a version 2 stream is taken as it is.
func TestStreamUpgrades(t *testing.T) {
	line := `{"event":"thread","pid":1,"tid":1,"arch":"amd64","in_syscall":true,"syscall":"read","nr":0,"code":"ERESTARTSYS","outcome":"back in read: the syscall was restarted and the program never noticed","explain":"With no handler, the kernel restarts read."}`
	for _, tc := range []struct {
		name, head string
		kind       OutcomeKind
		stop       StopKind
	}{
		{"version 1", `{"format":"crashtui-session","version":1}`, OutcomeRestarted, StopInterrupt},
		{"no header", "", OutcomeRestarted, StopInterrupt},
		{"version 2", `{"format":"crashtui-session","version":2}`, "", ""},
	} {
		var got []Thread
		err := StreamEvents(strings.NewReader(tc.head+"\n"+line+"\n"), func(e Event) { got = append(got, e.Body.(Thread)) }, func(le *LineError) { t.Error(le) })
		if err != nil || len(got) != 1 || got[0].OutcomeKind != tc.kind || got[0].Stop != tc.stop || got[0].Outcome == "" {
			t.Errorf("%s: %v, %+v; want kind %q stop %q and the sentence kept", tc.name, err, got, tc.kind, tc.stop)
		}
	}
}

// TestDeriveV1Sentences: every sentence the tracer wrote up to version 1, including the
// earliest wording of a leak and the stops 093ef09's recording does not have.
func TestDeriveV1Sentences(t *testing.T) {
	base := Thread{TID: 7, PID: 7, Nr: 0, Syscall: "read", InSyscall: true, Code: "ERESTARTSYS"}
	rule := " With no handler, arch_do_signal_or_restart restarts read."
	for _, tc := range []struct {
		explain, outcome string
		want             Thread
	}{
		{"The thread is exiting (PTRACE_EVENT_EXIT): it never returns to user space." + rule, "",
			Thread{Stop: StopExit, Handler: HandlerNone}},
		{"SIGTERM is ignored (SigIgn), so the kernel decides as with no handler." + rule, "",
			Thread{Stop: StopSignal, Signal: "SIGTERM", Disposition: DispIgnored, Handler: HandlerNone}},
		{"SIGTSTP's default action is stop, so the kernel decides as with no handler once the thread continues." + rule, "",
			Thread{Stop: StopSignal, Signal: "SIGTSTP", Disposition: DispDefaultStop, Handler: HandlerNone}},
		{"SIGWINCH's default action is to ignore it, so the kernel decides as with no handler." + rule, "",
			Thread{Stop: StopSignal, Signal: "SIGWINCH", Disposition: DispDefaultIgnore, Handler: HandlerNone}},
		{"SIGTERM's default action kills the process: the syscall never returns." + rule, "",
			Thread{Stop: StopSignal, Signal: "SIGTERM", Disposition: DispDefaultKill, Handler: HandlerNone}},
		{"SIGUSR1 is caught (SigCgt); whether its handler has SA_RESTART is kernel-private (only rt_sigaction inside the process reads it). (rt_sigaction inside the process, thread 9, now returns SIG_IGN: the handler was just removed.)" + rule, "",
			Thread{Stop: StopSignal, Signal: "SIGUSR1", Disposition: DispCaught, Handler: HandlerUnknown, Sigaction: &Sigaction{TID: 9, Handler: hexp(1)}}},
		{"SIG40 is caught (SigCgt); whether its handler has SA_RESTART is kernel-private (only rt_sigaction inside the process reads it). (Running rt_sigaction inside the process to read it failed: process 7 is gone.)" + rule, "",
			Thread{Stop: StopSignal, Signal: "SIG40", Disposition: DispCaught, Handler: HandlerUnknown, Sigaction: &Sigaction{Error: "process 7 is gone"}}},
		{"In read (orig_rax=0) but rax=-11 is not an ERESTART* code.", "left read and the thread exited",
			Thread{Stop: StopInterrupt, Handler: HandlerNone, OutcomeKind: OutcomeLeft, Exited: true}},
		{"", "left read (it completed, or a handler ran)", Thread{OutcomeKind: OutcomeLeft}},
		{"", "read returned ERESTARTSYS (512) to the program, the seed 002 bug; the thread then exited",
			Thread{OutcomeKind: OutcomeERESTARTLeaked, Returned: i64p(-512), Exited: true}},
		{"", "read returned EINTR, as after a real restore (a restart block cannot be carried over); the program then called read again",
			Thread{OutcomeKind: OutcomeEINTR, Returned: i64p(-4), NextNr: intp(0), NextSyscall: "read"}},
		{"", "read returned -1 errno 512 (a sentence no crashtui wrote)", Thread{}},
		{"SIGUSR1 is loved by the moon.", "", Thread{}},
	} {
		th := base
		th.Explain, th.Outcome = tc.explain, tc.outcome
		upgradeThread(&th)
		got := Thread{Stop: th.Stop, Signal: th.Signal, Disposition: th.Disposition, Handler: th.Handler, Sigaction: th.Sigaction,
			OutcomeKind: th.OutcomeKind, Returned: th.Returned, NextNr: th.NextNr, NextSyscall: th.NextSyscall, Exited: th.Exited}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q / %q: derived\n%+v\nwant\n%+v", tc.explain, tc.outcome, got, tc.want)
		}
		if th.Explain != tc.explain || th.Outcome != tc.outcome {
			t.Errorf("%q / %q: sentences changed to %q / %q", tc.explain, tc.outcome, th.Explain, th.Outcome)
		}
	}
}

// TestRecorderWritesCurrentVersion: what this build records, it reads back unchanged (no
// upgrade of current events), facts and all, and a matrix cell is recorded as facts alone.
func TestRecorderWritesCurrentVersion(t *testing.T) {
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf, Header{Job: "pid:1"})
	if err != nil {
		t.Fatal(err)
	}
	th := Thread{PID: 1, TID: 2, Arch: "amd64", InSyscall: true, Syscall: "read", Code: "ERESTARTSYS", OnResume: "eintr", Restore: "rewind",
		Stop: StopSignal, Signal: "SIGUSR2", Disposition: DispCaught, Handler: HandlerNoRestart,
		Sigaction: &Sigaction{TID: 1, Handler: hexp(0x401000), Flags: hexp(0x4000000)}, InsnBytes: "0f05",
		OutcomeKind: OutcomeLeft, NextNr: intp(1), NextSyscall: "write"}
	rec.Record(Event{Body: th})
	uid := ReasonUID
	m := Matrix{PIDs: []int{1, 2}, Measured: true, Cells: []Cell{{From: 1, To: 2, Reason: &uid,
		Rule:          Rule{Row: RowIDs, Call: "process_vm_readv", AUID: 1000, AGID: 1000, BUID: [3]uint32{0, 0, 1000}, BGID: [3]uint32{0, 0, 0}},
		Disagreements: []Disagreement{{Kind: DisagreeCMAFails, Errno: "EPERM", Reason: ReasonUID}}},
		{From: 2, To: 1, Rule: Rule{Row: RowDumpable, Call: "kcmp", SuidDumpable: -1, Missing: 0x3000}}}}
	rec.Record(Event{Body: m})
	if strings.Contains(buf.String(), `"explain"`) || strings.Contains(buf.String(), `"disagree"`) {
		t.Errorf("the recording has sentences:\n%s", buf.String())
	}
	h, evs, err := ReadRecording(&buf)
	if err != nil || h.Version != FormatVersion || FormatVersion != 3 || len(evs) != 2 {
		t.Fatalf("read back: %v, header %+v, %d events", err, h, len(evs))
	}
	if got := evs[0].Body.(Thread); !reflect.DeepEqual(got, th) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, th)
	}
	if got := evs[1].Body.(Matrix); !reflect.DeepEqual(got, m) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, m)
	}
}

// TestOlderCellsKeepTheirWords: a matrix cell of a recording of format version 2 or older
// carries the tracer's sentences and no rule: it is read as it is, sentences kept (views show
// them as recorded), nothing derived.
func TestOlderCellsKeepTheirWords(t *testing.T) {
	const cell = `{"from":1,"to":2,"vm_readv":{"predicted":false,"measured":null,"errno":"EPERM"},"kcmp":{"predicted":false,"measured":null,"errno":"EPERM"},"openmpi":false,"reason":"uid","explain":"A (uid 1000 gid 1000) may not read B (uid 0 gid 0): x. Fix: y.","disagree":"z"}`
	for _, v := range []int{1, 2} {
		in := fmt.Sprintf(`{"format":"crashtui-session","version":%d}`, v) + "\n" + `{"event":"matrix","pids":[1,2],"cells":[` + cell + `],"measured":false}` + "\n"
		_, evs, err := ReadRecording(strings.NewReader(in))
		if err != nil || len(evs) != 1 {
			t.Fatalf("version %d: %v, %d events", v, err, len(evs))
		}
		c := evs[0].Body.(Matrix).Cells[0]
		if c.Explain != "A (uid 1000 gid 1000) may not read B (uid 0 gid 0): x. Fix: y." || c.Disagree != "z" || c.Rule != (Rule{}) || c.Disagreements != nil || *c.Reason != ReasonUID {
			t.Errorf("version %d: %+v", v, c)
		}
	}
}
