// Package views renders crashtui's screens as strings: each view is a pure function of a
// *sessions.State and view options (sizes, cursor, filter) to text styled with lipgloss.
//
// views knows lipgloss, not the kernel: it must not do I/O, read the clock, import tracer or
// call ptrace, and it must pass every string that came from a process or a recording
// (comm, argv, exe, paths, abort messages, reasons) through sessions.Sanitize before it is
// drawn. It also holds the generic teaching text (what a signal code, an access-matrix reason
// or a restart code means) that complements the Explain text the tracer puts in events.
package views
