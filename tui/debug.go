package tui

import (
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/sys/unix"

	"github.com/crashtui/crashtui/sessions"
	"github.com/crashtui/crashtui/views"
)

// The debugger keys (D): in Stacks and Processes D hands one live process to gdb (dlv for a
// Go program), in Crashes it opens gdb on the group's core. Each asks first on the footer's
// line, naming the pid and the rank, because the terminal then belongs to gdb: a key meant
// for crashtui (g for the top, as everywhere) must never start it.

// confirmation is a one-line question on the footer: y (or enter) runs yes, any other key
// cancels. It takes every key but ctrl+c while it is open.
type confirmation struct {
	prompt string
	yes    func() tea.Cmd
}

// ask opens a confirmation.
func (m *Model) ask(prompt string, yes func() tea.Cmd) {
	m.confirm = &confirmation{prompt: prompt, yes: yes}
}

func (m *Model) confirmKey(msg tea.KeyMsg) tea.Cmd {
	c := m.confirm
	m.confirm = nil
	switch msg.String() {
	case "y", "Y", "enter":
		return c.yes()
	}
	m.message = "cancelled: nothing was started"
	return nil
}

type (
	// releasedMsg: the tracer let go of pid (or could not) for a debugger.
	releasedMsg struct {
		pid      int
		exe      string
		err      error
		released bool // Release was asked (false: no debugger to hand it to)
		name     string
		argv     []string
	}
	// debuggerDoneMsg: the debugger the user ran on pid has exited.
	debuggerDoneMsg struct {
		pid  int
		name string
		err  error
	}
)

// debugger is the command that attaches to pid: dlv for a Go program when it is installed,
// gdb otherwise.
func debugger(pid int, exe string) (string, []string, error) {
	if exe != "" {
		if _, err := buildinfo.ReadFile(exe); err == nil {
			if dlv, err := exec.LookPath("dlv"); err == nil {
				return "dlv", []string{dlv, "attach", strconv.Itoa(pid)}, nil
			}
		}
	}
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		return "", nil, fmt.Errorf("no debugger: gdb is not installed (apt-get install gdb)")
	}
	return "gdb", []string{gdb, "-q", "-p", strconv.Itoa(pid)}, nil
}

// debugClass asks to hand the selected class's first process to a debugger.
func (m *Model) debugClass() tea.Cmd {
	if m.ctrl == nil || m.player != nil {
		m.message = "D needs a live session: it hands one process to gdb and takes it back"
		return nil
	}
	lines := m.stk.lines()
	c := clamp(m.stk.cursor, len(lines))
	if c < 0 {
		m.message = "no stacks yet: S samples"
		return nil
	}
	cl := views.StackNodeClass(m.stk.merged, lines[c].Node)
	if cl == nil || len(cl.PIDs) == 0 {
		return nil
	}
	host := ""
	if len(cl.Hosts) > 0 {
		host = cl.Hosts[0]
	}
	p := m.state.Procs[sessions.ProcKey{Host: host, PID: cl.PIDs[0]}]
	if p == nil {
		m.message = fmt.Sprintf("pid %d is not in this session's processes", cl.PIDs[0])
		return nil
	}
	return m.debugProc(p)
}

// debugProc asks, on the footer, to hand p to a debugger.
func (m *Model) debugProc(p *sessions.Proc) tea.Cmd {
	switch {
	case m.ctrl == nil || m.player != nil:
		m.message = "D needs a live session: it hands one process to gdb and takes it back"
		return nil
	case !m.live():
		m.message = "D needs a live session: the tracer has finished"
		return nil
	case !p.Alive:
		m.message = fmt.Sprintf("pid %d has ended: there is nothing to attach a debugger to", p.PID)
		return nil
	case p.Host != "":
		m.message = fmt.Sprintf("pid %d runs on %s: a debugger runs here only (ssh there, or attach crashtui there)", p.PID, sessions.Sanitize(p.Host))
		return nil
	}
	pid, exe, rank := p.PID, p.Exe, p.Rank
	m.ask(fmt.Sprintf("Hand pid %d (%s, %s) to a debugger? y/n · crashtui lets go of it until the debugger exits",
		pid, sessions.Sanitize(p.Comm), rankWord(rank)), func() tea.Cmd {
		m.handing, m.ignored = pid, 0
		m.message = fmt.Sprintf("letting go of pid %d (%s) for a debugger…", pid, rankWord(rank))
		ctrl := m.ctrl
		// Which debugger reads the executable's build info: off Update, as the release is.
		return func() tea.Msg {
			name, argv, err := debugger(pid, exe)
			if err != nil {
				return releasedMsg{pid: pid, exe: exe, err: err}
			}
			return releasedMsg{pid: pid, exe: exe, err: ctrl.Release(pid), released: true, name: name, argv: argv}
		}
	})
	return nil
}

func (m *Model) runDebugger(msg releasedMsg) tea.Cmd {
	m.handing = 0
	if msg.err != nil && !msg.released {
		m.message = msg.err.Error() // no debugger: nothing was let go of
		return nil
	}
	if msg.err != nil {
		m.message = fmt.Sprintf("could not let go of pid %d: %v", msg.pid, msg.err)
		pid := msg.pid
		return m.ctrlCmd(fmt.Sprintf("pid %d traced again:", pid), func() error { return m.ctrl.Reacquire(pid) })
	}
	cmd := exec.Command(msg.argv[0], msg.argv[1:]...)
	return tea.Exec(flushedCmd{cmd}, func(err error) tea.Msg {
		return debuggerDoneMsg{pid: msg.pid, name: msg.name, err: err}
	})
}

// flushedCmd runs a program on the terminal after discarding the input nobody has read yet:
// keys typed while crashtui let go of the process (or while Bubble Tea handed over the
// terminal) were meant for crashtui, and must not become gdb's first command.
type flushedCmd struct{ *exec.Cmd }

func (c flushedCmd) SetStdin(r io.Reader)  { c.Stdin = r }
func (c flushedCmd) SetStdout(w io.Writer) { c.Stdout = w }
func (c flushedCmd) SetStderr(w io.Writer) { c.Stderr = w }

func (c flushedCmd) Run() error {
	if f, ok := c.Stdin.(*os.File); ok {
		// TCIFLUSH drops what the terminal received but no one read (tcflush(3)); on a
		// file or a pipe it fails with ENOTTY, and there is nothing to drop.
		unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH)
	}
	return c.Cmd.Run()
}

// rankWord is "rank 3", or "no rank" for a process without one.
func rankWord(r sessions.Rank) string {
	if r < 0 {
		return "no rank"
	}
	return "rank " + r.String()
}
