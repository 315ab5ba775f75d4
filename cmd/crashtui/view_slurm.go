package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crashtui/crashtui/sessions"
)

// A tree of views launched by Slurm (issue 27, design.md "Beyond one machine"): crashtui adds
// no daemon and no network of its own. From a login node (or a batch script), `crashtui
// attach slurm:ID` asks Slurm for the job's nodes and starts, with srun inside the job
// (--overlap: beside its running steps), one agent per node; above --fanout nodes it starts
// a reducing view on the first node of each group of nodes instead, which starts its group's
// agents (or, above fanout groups, views) the same way:
//
//	root (attach, this machine)
//	 ├─ srun -w n001 view --json --reduce slurm:ID@n[001-032]   (on n001)
//	 │    ├─ srun -w n001 agent --json --control slurm:ID        (on n001)
//	 │    ...
//	 │    └─ srun -w n032 agent --json --control slurm:ID        (on n032)
//	 ├─ srun -w n033 view --json --reduce slurm:ID@n[033-064]   (on n033)
//	 ...
//
// Every stream travels up as srun's stdout (one agent or view per srun: see plan); requests
// travel down as srun's stdin. The source "slurm:ID@HOSTS" of a view is one subtree: the agents of
// HOSTS (agent hosts: a node, or node/K for the K-th of --agents-per-node agents sharing a
// node's tasks). crashtui must be at the same path on the job's nodes (a shared file system),
// as any tool srun starts.

// slurmTree is how a tree is launched.
type slurmTree struct {
	job     string // the JOB the agents attach: slurm:ID or slurm:ID.STEP
	id      string // the job id srun joins
	fanout  int
	shares  int // agents per node
	control bool
	self    string // crashtui's executable
	asked   bool   // --fanout or --agents-per-node was given
	// sampleEvery is the agents' --sample-every ("": theirs, 5 s).
	sampleEvery string
	// orphanAfter is how long an agent or view under this one goes on without a request
	// line before it takes its parent for dead and detaches (views say alive every quarter
	// of it).
	orphanAfter time.Duration
}

// defaultOrphanAfter is a tree's --orphan-after: a view SIGKILLed, its agents let go of
// their tasks within it.
const defaultOrphanAfter = 30 * time.Second

// defaultFanout is --fanout's default: a view reads at most this many streams.
const defaultFanout = 32

func newSlurmTree() *slurmTree {
	return &slurmTree{fanout: defaultFanout, shares: 1, orphanAfter: defaultOrphanAfter}
}

// register adds attach's tree flags; giving either asks for a tree even on the job's own node.
func (t *slurmTree) register(fs *flag.FlagSet) {
	fs.Func("fanout", "slurm:ID: at most `K` streams per view of the tree of agents and views srun starts (default 32; given, a tree even on the job's node)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			return fmt.Errorf("want a number of at least 2")
		}
		t.fanout, t.asked = n, true
		return nil
	})
	fs.Func("agents-per-node", "slurm:ID: `N` agents per node, each tracing the tasks whose SLURM_LOCALID is its share (default 1)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("want a number of at least 1")
		}
		t.shares, t.asked = n, true
		return nil
	})
}

// attachTree is attach slurm:ID from outside the job's nodes (or with --fanout or
// --agents-per-node): the root of a tree of agents and views that srun starts on the job's
// nodes. through is false for a job this attach traces itself (on its own node), or when
// Slurm cannot be asked and no tree was asked for.
func attachTree(c *common, t *slurmTree, spec string, stdout io.Writer) (through bool, err error) {
	if !strings.HasPrefix(spec, "slurm:") {
		if t.asked {
			return true, usageErr("attach: --fanout and --agents-per-node are for slurm:ID (a tree of agents on the job's nodes)")
		}
		return false, nil
	}
	id, err := jobID(spec)
	if err != nil {
		return false, nil // the JOB's own parse says what is wrong with it
	}
	nodes, err := slurmNodes(id)
	switch {
	case err != nil && t.asked:
		return true, &exitError{2, fmt.Errorf("attach %s: %w", spec, err)}
	case err != nil, !t.asked && thisNode(nodes):
		return false, nil
	}
	if !c.json {
		if err := needTerminal("attach"); err != nil {
			return true, err
		}
	}
	if t.self, err = os.Executable(); err != nil {
		return true, fmt.Errorf("attach: crashtui's own executable, for srun: %w", err)
	}
	t.job, t.id, t.control = spec, id, true
	if c.sampleEvery >= 0 {
		t.sampleEvery = c.sampleEvery.String()
	}
	hosts := agentHosts(nodes, t.shares)
	return true, viewSession(c, viewOptions{mode: "attach", label: spec, aliveEvery: t.orphanAfter / 4}, stdout, func(s *session) ([]*source, error) {
		return t.sources(hosts, func(line string) {
			s.emit(sessions.Event{Time: time.Now(), Host: s.header.Host, Body: sessions.Error{Op: "srun", Message: line}})
		})
	})
}

// slurmSourceSpec parses a view SOURCE "slurm:ID[.STEP]@HOSTS".
func slurmSourceSpec(s string) (job string, hosts sessions.HostSet, ok bool, err error) {
	job, list, found := strings.Cut(s, "@")
	if !found || !strings.HasPrefix(job, "slurm:") {
		return "", hosts, false, nil
	}
	if _, err := jobID(job); err != nil {
		return "", hosts, true, err
	}
	hosts, err = sessions.ParseHostSet(list)
	if err == nil && hosts.Empty() {
		err = fmt.Errorf("no hosts after @")
	}
	return job, hosts, true, err
}

// jobID is the id of slurm:ID[.STEP].
func jobID(job string) (string, error) {
	id, _, _ := strings.Cut(strings.TrimPrefix(job, "slurm:"), ".")
	if n, err := strconv.Atoi(id); err != nil || n <= 0 {
		return "", fmt.Errorf("%s: not slurm:ID", job)
	}
	return id, nil
}

// agentHosts are the agent hosts of nodes, shares agents each.
func agentHosts(nodes []string, shares int) sessions.HostSet {
	var hs []string
	for _, n := range nodes {
		if shares <= 1 {
			hs = append(hs, n)
			continue
		}
		for k := 0; k < shares; k++ {
			hs = append(hs, n+"/"+strconv.Itoa(k))
		}
	}
	return sessions.HostSetOf(hs...)
}

// splitAgentHost is node and share of an agent host ("n1/2": n1, 2; "n1": n1, 0).
func splitAgentHost(h string) (node string, share int) {
	if i := strings.LastIndexByte(h, '/'); i > 0 {
		if k, err := strconv.Atoi(h[i+1:]); err == nil {
			return h[:i], k
		}
	}
	return h, 0
}

// plan is what one view launches for hosts: srun command lines (without the executable's
// path settled) and the hosts each speaks for.
type plannedSource struct {
	argv   []string
	expect sessions.HostSet
	label  string
}

func (t *slurmTree) plan(hosts sessions.HostSet) []plannedSource {
	list := hosts.Hosts()
	srun := []string{"srun", "--overlap", "--jobid", t.id, "--quiet"}
	if len(list) <= t.fanout {
		// Agents: one srun for each. slurmstepd forwards a task's output in messages of at
		// most 1 KiB (io_hdr.h MAX_MSG_LEN) and srun writes them as they come, so the
		// lines of two tasks of one step can be cut into each other: an agent's stream
		// (crash events are kilobytes) must be a step's only task.
		var out []plannedSource
		for _, h := range list {
			n, k := splitAgentHost(h)
			argv := append(cloneArgs(srun), "-w", n, "-N1", "-n1", t.self, "agent", "--json")
			if t.control {
				argv = append(argv, "--control")
			}
			host := "%n"
			if t.shares > 1 {
				host = "%n/" + strconv.Itoa(k)
				argv = append(argv, "--share", fmt.Sprintf("%d/%d", k, t.shares))
			}
			if t.sampleEvery != "" {
				argv = append(argv, "--sample-every", t.sampleEvery)
			}
			if t.control && t.orphanAfter > 0 {
				argv = append(argv, "--orphan-after", t.orphanAfter.String())
			}
			argv = append(argv, "--host", host, t.job)
			out = append(out, plannedSource{argv: argv, expect: sessions.HostSetOf(h), label: "agent@" + h})
		}
		return out
	}
	// Views: up to fanout groups of consecutive hosts, as even as they divide.
	groups := t.fanout
	var out []plannedSource
	for g, start := 0, 0; g < groups && start < len(list); g++ {
		n := (len(list) - start + groups - g - 1) / (groups - g)
		part := sessions.HostSetOf(list[start : start+n]...)
		start += n
		first, _ := splitAgentHost(part.Hosts()[0])
		argv := append(cloneArgs(srun), "-w", first, "-N1", "-n1", t.self, "view", "--json", "--reduce",
			"--fanout", strconv.Itoa(t.fanout), "--agents-per-node", strconv.Itoa(t.shares), "--host", "view@"+part.String())
		if t.control {
			argv = append(argv, "--control")
		}
		if t.sampleEvery != "" {
			argv = append(argv, "--sample-every", t.sampleEvery)
		}
		if t.control && t.orphanAfter > 0 {
			argv = append(argv, "--orphan-after", t.orphanAfter.String())
		}
		argv = append(argv, t.job+"@"+part.String())
		out = append(out, plannedSource{argv: argv, expect: part, label: "view@" + part.String()})
	}
	return out
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

// launch starts a planned source: srun, its stdout the source's stream, its stdin the
// requests down, its stderr lines error events.
func (t *slurmTree) launch(p plannedSource, errs func(string)) (*source, error) {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	// If this view dies (SIGKILL, a crash), srun gets SIGTERM, which it passes on to its
	// task: an agent detaches and ends, a view does the same to its own subtree. Without it,
	// the agents under a dead view would hold their tasks until the job ends: slurmstepd
	// keeps a step whose srun is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var in io.WriteCloser
	if t.control {
		if in, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(p.argv[:min(len(p.argv), 8)], " "), err)
	}
	if f, ok := out.(*os.File); ok {
		growPipe(f)
	}
	go func() {
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			errs(p.label + ": " + sc.Text())
		}
	}()
	src := &source{label: p.label, r: out, expect: p.expect, requests: in}
	src.wait = func() error {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("srun exited %d", ee.ExitCode())
		}
		return err
	}
	src.kill = func() {
		// srun passes SIGTERM on to its tasks: agents detach and end, views end theirs.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
			}
		}()
		src.waitOnce()
		close(done)
	}
	return src, nil
}

// sources launches what a view of hosts reads.
func (t *slurmTree) sources(hosts sessions.HostSet, errs func(string)) ([]*source, error) {
	var out []*source
	for _, p := range t.plan(hosts) {
		s, err := t.launch(p, errs)
		if err != nil {
			for _, o := range out {
				o.close()
			}
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// slurmNodes are the nodes of a running job, as Slurm names them.
func slurmNodes(id string) ([]string, error) {
	out, err := exec.Command("squeue", "-h", "-j", id, "-o", "%T %N").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("squeue -j %s: %s", id, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("squeue -j %s: %w", id, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 || f[0] != "RUNNING" {
		return nil, fmt.Errorf("job %s is not running (squeue says %q)", id, strings.TrimSpace(string(out)))
	}
	names, err := exec.Command("scontrol", "show", "hostnames", f[1]).Output()
	if err != nil {
		return nil, fmt.Errorf("scontrol show hostnames %s: %w", f[1], err)
	}
	return strings.Fields(string(names)), nil
}

// thisNode says whether nodes are this machine alone.
func thisNode(nodes []string) bool {
	h, _ := os.Hostname()
	short, _, _ := strings.Cut(h, ".")
	return len(nodes) == 1 && (nodes[0] == h || nodes[0] == short || nodes[0] == os.Getenv("SLURMD_NODENAME"))
}
