package views

import (
	"fmt"
	"sort"
	"strings"

	"github.com/crashtui/crashtui/sessions"
)

// StoryTitle says in a line what a recording shows, from its events: the demo, a checkpoint
// and its restore policy (the CRIU story), crashes grouped by site (Spindle's), who can read
// whose memory and why not (Open MPI's), where every rank is (STAT's). A replay opens with it.
func StoryTitle(evs []sessions.Event) string {
	var mode, job, arch string
	crashes, handled, samples := 0, 0, 0
	sites := map[string]bool{}
	var policy sessions.Policy
	insn := ""
	denied, pairs := 0, 0
	reasons := map[sessions.Reason]bool{}
	for _, e := range evs {
		switch b := e.Body.(type) {
		case sessions.Session:
			mode, job, arch = b.Mode, b.Job, b.Arch
		case sessions.Crash:
			crashes++
			sites[e.Host+"|"+sessions.SiteKey(b)] = true
		case sessions.Handled:
			handled++
		case sessions.Sample:
			samples++
		case sessions.Thread:
			if policy == "" {
				policy = b.Policy
				if policy == "" {
					policy = b.Applied
				}
			}
			if b.InSyscall && b.Insn != "" && insn != "scv" {
				insn = b.Insn
			}
		case sessions.Matrix:
			denied, pairs = 0, len(b.Cells)
			for _, c := range b.Cells {
				if c.Reason != nil && *c.Reason != "" {
					denied++
					reasons[*c.Reason] = true
				}
			}
		}
	}
	job = sessions.Sanitize(job)
	switch {
	case mode == "demo":
		return "crashtui's demo job: its crashes grouped by site, who may read whose memory, a checkpoint, where every rank is"
	case policy != "":
		on := sessions.Sanitize(arch)
		if insn != "" {
			on += " (" + sessions.Sanitize(insn) + ")"
		}
		what := map[sessions.Policy]string{
			sessions.PolicyCorrect: "restored correctly: every interrupted syscall is run again",
			sessions.PolicyNaive:   "restored naively, the registers as captured: the program sees ERESTART codes",
			sessions.PolicySCOnly:  "restored as CRIU did before its fix (criu#2261), which knew sc but not scv",
			sessions.PolicyNone:    "resumed as stopped: the kernel's own restart decides",
		}[policy]
		if what == "" {
			what = "restored with policy " + sessions.Sanitize(string(policy))
		}
		if policy == sessions.PolicySCOnly && insn == "sc" {
			what += ": with sc, the job survives"
		} else if policy == sessions.PolicySCOnly && insn == "scv" {
			what += ": with scv, the job sees errno 512"
		}
		return fmt.Sprintf("a checkpoint of %s on %s, %s", job, on, what)
	case crashes > 0:
		s := fmt.Sprintf("%s of %s in %s, grouped by site as Spindle keys them", Count(crashes, "crash", "crashes"), job, Count(len(sites), "group", "groups"))
		if handled > 0 {
			s += fmt.Sprintf("; %s repaired by the program are not crashes", Count(handled, "fault", "faults"))
		}
		return s
	case pairs > 0:
		var rs []string
		for r := range reasons {
			rs = append(rs, sessions.Sanitize(string(r)))
		}
		sort.Strings(rs)
		if denied == 0 {
			return fmt.Sprintf("who may read whose memory in %s: all %d pairs may", job, pairs)
		}
		return fmt.Sprintf("who may read whose memory in %s: %d of %d pairs may not (%s), the check Open MPI's CMA needs", job, denied, pairs, strings.Join(rs, ", "))
	case samples > 0:
		return fmt.Sprintf("where every rank of %s is: %s merged into one tree, as STAT does", job, Count(samples, "stack sample", "stack samples"))
	}
	return "a recorded session of " + job
}

// FirstFrame is how many of a recording's first events make its first frame: the session and
// the job as crashtui found it (its processes and their threads), before anything happens.
func FirstFrame(evs []sessions.Event) int {
	n := 0
	for n < len(evs) {
		switch evs[n].Body.(type) {
		case sessions.Session, sessions.Process, sessions.Task, sessions.Exec:
			n++
			continue
		}
		break
	}
	return n
}
