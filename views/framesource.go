package views

import (
	"fmt"
	"strings"

	"github.com/crashtui/crashtui/arch"
	"github.com/crashtui/crashtui/sessions"
)

// FrameSourceLines draws what the files say about a frame (sessions.FrameSource): its source
// line in context, marked, or why it could not be read; then the instructions around its pc,
// decoded from its function's start (x86 instructions only line up from a boundary), the
// frame's own marked: for a caller (whose pc is a return address) the call it is in, the
// instruction that ends at that address.
func FrameSourceLines(st *Styles, f sessions.StackFrame, caller bool, src sessions.FrameSource) []string {
	var out []string
	for i, l := range src.Lines {
		no := src.First + i
		line := fmt.Sprintf("  %5d  %s", no, sessions.Sanitize(strings.ReplaceAll(l, "\t", "    ")))
		if no == f.Line {
			line = st.Bold.Render(">" + line[1:])
		}
		out = append(out, line)
	}
	if src.Unread != "" {
		out = append(out, st.Dim.Render(sessions.Sanitize(src.Unread)))
	}
	return append(out, frameCode(st, f, caller, src)...)
}

// frameCode is the instructions around the frame's pc, at most three either side.
func frameCode(st *Styles, f sessions.StackFrame, caller bool, src sessions.FrameSource) []string {
	if len(src.Code) == 0 {
		return nil
	}
	insts := arch.Disasm(arch.Arch(src.Arch), src.Code, uint64(src.CodeAt), 4096)
	pc := uint64(f.Offset)
	at := -1
	for i, in := range insts {
		end := in.PC + uint64(len(in.Bytes))
		if caller && end == pc {
			at = i // the call this caller is in
		}
		if at < 0 && in.PC <= pc && pc < end {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	var out []string
	for i := max(0, at-3); i < min(len(insts), at+3); i++ {
		in := insts[i]
		line := fmt.Sprintf("  %#x  %s", in.PC, sessions.Sanitize(in.Text))
		if i == at {
			line = st.Bold.Render(">" + line[1:])
		}
		out = append(out, line)
	}
	return out
}
