// Package sessions is crashtui's event vocabulary and the State those events reduce into.
//
// Everything flows one way (design.md): the tracer emits Event values, State.Apply reduces
// them, views render State. The same reducer serves the live TUI, the --json summary and
// replay, so a recorded session replays exactly what was seen live. Events are also the wire
// format between per-node agents and one front end: every event may carry a Host, pids are
// unique only per host, and State accepts events from many hosts interleaved.
//
// This package must not do I/O on processes, call ptrace or render anything. Recording and
// replay of JSON Lines files live here because they are the event format's own encoding.
package sessions
