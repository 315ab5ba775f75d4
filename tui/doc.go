// Package tui is crashtui's Bubble Tea program: the key map, focus, layout, and the loop that
// feeds live events (or a replayed recording) into a sessions.State and draws it with views.
//
// tui joins views and sessions; it must not call ptrace or import tracer. Requests from the
// user (measure, checkpoint, detach) go down through the Controller interface, which
// cmd/crashtui implements on top of the tracer; results come back up as events. Update never
// blocks: waiting on the event channel and calling the Controller are tea.Cmds.
package tui
