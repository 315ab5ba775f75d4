package sessions

import (
	"fmt"
	"strings"
)

// Policy is a simulated checkpoint's restore policy: the restorer whose effect
// arch.ApplyPolicy writes into each thread in place (Thread.Policy, Thread.Applied; the
// --restore flag, the TUI's checkpoint dialog, agent --control's checkpoint request). Its
// values are the strings of the JSON Lines and of recordings.
type Policy string

const (
	// PolicyCorrect: the CRIU dump fix-up (compel get_task_regs / ppc64 handle_syscall after
	// 59fcfa80), then the kernel's own pending restart is cancelled, as rt_sigreturn does.
	PolicyCorrect Policy = "correct"
	// PolicyNaive: save and restore the registers with no fix-up; the kernel's restart is
	// cancelled (as rt_sigreturn does after a real restore) and the return register leaks.
	PolicyNaive Policy = "naive"
	// PolicySCOnly: the restorer as it was before CRIU's fix (checkpoint-restore/criu#2261):
	// compel recognised an interrupted syscall only by sc's trap 0xc00 with CR0.SO set, so a
	// thread interrupted in sc is rewound (correct) and one interrupted in scv (trap 0x3000)
	// is written back as captured (naive). On amd64 and arm64 it is correct.
	PolicySCOnly Policy = "sc-only"
	// PolicyNone: do not touch the thread.
	PolicyNone Policy = "none"
)

// Policies are the restore policies, in the order they are offered (the checkpoint dialog).
var Policies = []Policy{PolicyCorrect, PolicyNaive, PolicySCOnly, PolicyNone}

// Valid says whether p is one of Policies.
func (p Policy) Valid() bool {
	for _, q := range Policies {
		if p == q {
			return true
		}
	}
	return false
}

// ParsePolicy reads a policy as a user types it (any case).
func ParsePolicy(s string) (Policy, error) {
	p := Policy(strings.ToLower(s))
	if !p.Valid() {
		return "", fmt.Errorf("unknown restore policy %q (want %s)", s, PolicyList())
	}
	return p, nil
}

// PolicyList is the policies as a usage message names them: "correct|naive|sc-only|none".
func PolicyList() string {
	names := make([]string, len(Policies))
	for i, p := range Policies {
		names[i] = string(p)
	}
	return strings.Join(names, "|")
}
