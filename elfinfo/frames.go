package elfinfo

import "github.com/crashtui/crashtui/sessions"

// SessionFrames turns unwound frames into the frames events carry, innermost first. Code
// inlined into its callers becomes one frame per function, as gdb shows them (the callers'
// call lines are not in crashtui's tables: file and line stay empty). An alias of the same
// code (__libc_read inlined into __libc_read) is not a frame.
func SessionFrames(frames []Frame) []sessions.Frame {
	out := make([]sessions.Frame, 0, len(frames))
	for _, f := range frames {
		fr := sessions.Frame{PC: sessions.Hex(f.PC), Module: f.Module, Offset: sessions.Hex(f.Offset),
			Function: f.Function, File: f.File, Line: f.Line}
		if f.Function != "" {
			fr.FuncOff = sessions.Hex(f.FuncOff)
		}
		var names []string
		prev := fr.Function
		for _, n := range f.InlinedInto {
			if n != prev {
				names = append(names, n)
				prev = n
			}
		}
		fr.Inlined = len(names) > 0
		out = append(out, fr)
		for i, name := range names {
			out = append(out, sessions.Frame{PC: fr.PC, Module: fr.Module, Offset: fr.Offset,
				Function: name, Inlined: i < len(names)-1})
		}
	}
	return out
}
