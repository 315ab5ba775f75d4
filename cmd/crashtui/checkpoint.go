package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/sessions/outfile"
	"github.com/crashtui/crashtui/views"
)

var checkpointSynopsis = "checkpoint [--restore=" + sessions.PolicyList() + " [--yes]] [--image FILE] [--json] JOB"

// cmdCheckpoint is the simulated checkpoint (issue 5, seed 002): attach, freeze every thread,
// show its restart state, write back what the chosen restorer would write, resume, detach.
func cmdCheckpoint(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signalContext() // held for the whole command: see signalContext
	defer stop()
	var restore, imagePath *string
	var yes *bool
	c, spec, err := parseJobCommand("checkpoint", checkpointSynopsis, args, stderr, func(fs *flag.FlagSet) {
		restore = fs.String("restore", string(sessions.PolicyNone), "`"+sessions.PolicyList()+"`: what to write back before resuming: correct (CRIU's fix-up: rewind, or EINTR for a restart block), naive (the saved registers as they are: the program sees ERESTART* codes, CRIU's ppc64le scv bug, checkpoint-restore/criu#2261), sc-only (CRIU before that fix: correct for sc, naive for scv; correct on amd64 and arm64) or none (untouched: the kernel restarts as usual)")
		imagePath = fs.String("image", "", "write the checkpoint image (JSON: per-thread registers, syscall, decision) to `FILE`")
		yes = fs.Bool("yes", false, "with --restore=naive: do it, knowing it breaks the job (see the error without it)")
	})
	if err != nil {
		return err
	}
	policy, err := sessions.ParsePolicy(*restore)
	if err != nil {
		return usageErr("--restore=%s: want %s", *restore, strings.ReplaceAll(sessions.PolicyList(), "|", ", "))
	}
	if policy == sessions.PolicySCOnly && arch.Host() == arch.PPC64LE && !*yes {
		return usageErr("--restore=sc-only writes back threads interrupted in scv as captured, as CRIU did before checkpoint-restore/criu#2261: on POWER9 and POWER10, where glibc enters with scv, the program sees errno 512. Pass --yes to do that to this job")
	}
	if policy == sessions.PolicyNaive && !*yes {
		return usageErr("--restore=naive breaks the job by design: every thread interrupted in a syscall is resumed the way a restorer without CRIU's fix-up would, so its program sees ERESTART* codes it was never meant to see (glibc's sem_wait aborts). Pass --yes to do that to this job, or try it on the demo job: crashtui demo, then c")
	}
	job, err := c.parseJob(spec)
	if err != nil {
		return err
	}
	var image io.Writer
	var imageFile *outfile.File
	if *imagePath != "" {
		// An image is written by the tracer that checkpoints: not over a control socket.
		if h, _, err := findHolder(job); err != nil || h != nil {
			if err == nil {
				err = (&asker{h: h, job: job}).noImage()
			}
			return err
		}
		imageFile, err = outfile.Create(*imagePath)
		if err != nil {
			return &exitError{2, fmt.Errorf("image: %w", err)}
		}
		image = imageFile
	}

	// A signal during the attach skips the checkpoint; one during it lets it finish (every
	// thread written back and resumed).
	var threads []sessions.Thread
	err = attachOnce(ctx, c, stdout, "checkpoint", job,
		func(t jobOps) (err error) { threads, err = t.Checkpoint(policy, image); return err },
		func(st *sessions.State) {
			printCheckpoint(stdout, threads, policy, st)
			if *imagePath != "" {
				fmt.Fprintf(stdout, "\ncheckpoint image: %s\n", sessions.Sanitize(*imagePath))
			}
		}, nil)
	if imageFile != nil {
		if cerr := imageFile.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("image: %w", cerr)
		}
	}
	return err
}

// printCheckpoint writes one table row per thread, then each thread's explanation.
func printCheckpoint(w io.Writer, threads []sessions.Thread, policy sessions.Policy, st *sessions.State) {
	if len(threads) == 0 {
		fmt.Fprintln(w, "no thread could be captured")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tTID\tCOMM\tSYSCALL\tINSN\tRET/CODE\tON_RESUME\tRESTORE\tAPPLIED")
	inSyscall := 0
	for _, th := range threads {
		comm := ""
		if p := st.Procs[sessions.ProcKey{PID: th.PID}]; p != nil {
			comm = p.Comm
		}
		call, insn, ret := "-", "-", "-"
		if th.InSyscall {
			inSyscall++
			call = th.Syscall
			if call == "" {
				call = "#" + strconv.Itoa(th.Nr)
			}
			if th.Insn != "" {
				insn = th.Insn
			}
			ret = strconv.FormatInt(th.Ret, 10)
			if th.Code != "" {
				ret += " " + th.Code
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", th.PID, th.TID, truncRunes(sessions.Sanitize(comm), 16),
			sessions.Sanitize(call), sessions.Sanitize(insn), sessions.Sanitize(ret), sessions.Sanitize(th.OnResume),
			sessions.Sanitize(th.Restore), sessions.Sanitize(orDash(string(th.Applied))))
	}
	tw.Flush()
	fmt.Fprintln(w)
	// Threads in the same state share one explanation: "tid tid ...: why".
	var order []string
	tids := map[string][]string{}
	for _, th := range threads {
		e := views.ThreadExplain(&th)
		if e == "" {
			continue
		}
		if tids[e] == nil {
			order = append(order, e)
		}
		tids[e] = append(tids[e], strconv.Itoa(th.TID))
	}
	for _, e := range order {
		fmt.Fprintf(w, "%s: %s\n", strings.Join(tids[e], " "), e)
	}
	// What each thread did next (observed a moment after the restore).
	first := true
	for _, th := range threads {
		o := views.ThreadOutcome(&th)
		if o == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nwhat happened next:")
			first = false
		}
		fmt.Fprintf(w, "  %d: %s\n", th.TID, o)
	}
	fmt.Fprintf(w, "\n%d threads, %d inside a syscall; restore %q applied and every thread resumed.\n", len(threads), inSyscall, string(policy))
	switch policy {
	case sessions.PolicyNaive:
		fmt.Fprintln(w, "naive: the kernel's restart was cancelled and the return registers left as saved, so the interrupted calls now return the ERESTART* codes above to the program, as a restorer without CRIU's fix-up does (checkpoint-restore/criu#2261).")
	case sessions.PolicyCorrect:
		fmt.Fprintln(w, "correct: interrupted calls were rewound to run again; restart blocks (ERESTART_RESTARTBLOCK) return EINTR, as after a real restore.")
	case sessions.PolicySCOnly:
		scv := 0
		for _, th := range threads {
			if th.Insn == "scv" && th.InSyscall {
				scv++
			}
		}
		if arch.Host() != arch.PPC64LE || scv == 0 {
			fmt.Fprintf(w, "sc-only equals correct here: it is CRIU's restorer before checkpoint-restore/criu#2261, which rewound only syscalls entered with sc (trap 0xc00, CR0.SO) and wrote those entered with scv back as captured; no thread of this job was in scv (%s).\n", arch.Host())
		} else {
			fmt.Fprintf(w, "sc-only: %d threads interrupted in scv were written back as captured, as CRIU did before checkpoint-restore/criu#2261: they see errno 512 (ERESTARTSYS); those in sc were rewound. The fix recognises trap 0x3000 (scv) too and rewinds it the same way.\n", scv)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
