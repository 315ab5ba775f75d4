// Package tui is crashtui's Bubble Tea program: the key map, focus, layout, and the loop that
// feeds live events (or a replayed recording) into a sessions.State and draws it with views.
//
// tui joins views and sessions; it must not call ptrace or import tracer. Requests from the
// user (measure, checkpoint, detach) go down through the Controller interface, which
// cmd/crashtui implements on top of the tracer; results come back up as events. What files
// say (a frame's source and code) is read by the function it is given (Options.Source), not
// by tui itself. Update never blocks: waiting on the event channel, calling the Controller
// and reading files are tea.Cmds.
package tui
