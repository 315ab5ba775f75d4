// Package views renders crashtui's screens as strings: each view is a pure function of a
// *sessions.State and view options (sizes, cursor, filter) to text styled with lipgloss.
//
// views knows lipgloss, not the kernel: it must not do I/O, read the clock, import tracer or
// call ptrace, and it must pass every string that came from a process or a recording
// (comm, argv, exe, paths, abort messages, reasons) through sessions.Sanitize before it is
// drawn. It also holds the teaching text (what a signal code, an access-matrix reason or a
// restart code means) and writes every sentence about a checkpoint from the facts in its thread
// events (the held stop, the signal and its handler, the outcome): the tracer emits facts,
// views write sentences. For the kernel's restart rule it runs package arch's pure decoder on
// the registers and instruction bytes an event carries, as the tracer did.
package views
