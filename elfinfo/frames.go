package elfinfo

import "github.com/crashtui/crashtui/sessions"

// SessionFrames turns unwound frames into the frames events carry, innermost first: one
// frame per function, as gdb shows them: the tail calls that left no frame on the stack,
// then the function at the pc and each one its code was inlined into (at the line of the
// inlined call), all with the frame's pc.
func SessionFrames(frames []Frame) []sessions.Frame {
	out := make([]sessions.Frame, 0, len(frames))
	for _, f := range frames {
		fr := sessions.Frame{PC: sessions.Hex(f.PC), Module: f.Module, Offset: sessions.Hex(f.Offset),
			Function: f.Function, File: f.File, Line: f.Line}
		sf := f.SourceFrames()
		here := len(f.TailCalls) // sf[here] is f.Function
		for i, s := range sf {
			x := fr
			x.Function, x.File, x.Line = s.Function, s.File, s.Line
			if i == here && f.Function != "" {
				x.FuncOff = sessions.Hex(f.FuncOff)
			}
			x.Inlined = i >= here && i < len(sf)-1
			out = append(out, x)
		}
	}
	return out
}
