package views

import (
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// TestFrameSourceLines: a frame's source is drawn with its line marked and tabs expanded, an
// unreadable file says so, and its code is decoded from its function's start with the frame's
// instruction marked: at a pc, the instruction there; for a caller (a return address), the
// call that ends there, not the instruction after it.
func TestFrameSourceLines(t *testing.T) {
	// push %rbp; mov %rsp,%rbp; call .+5; pop %rbp; ret, at 0x1000.
	code := []byte{0x55, 0x48, 0x89, 0xe5, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x5d, 0xc3}
	src := sessions.FrameSource{First: 9, Lines: []string{"int f(void)", "{", "\treturn g();\x1b[2J", "}"},
		Code: code, CodeAt: 0x1000, Arch: "amd64"}
	f := sessions.StackFrame{Function: "f", Module: "/x", Offset: 0x1004, FuncOff: 4, File: "/x.c", Line: 11}
	marked := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if strings.HasPrefix(l, ">") {
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
		}
		return out
	}
	out := FrameSourceLines(Plain(), f, false, src)
	if got := marked(out); len(got) != 2 || !strings.HasPrefix(got[0], "> 11 return g();") || !strings.HasPrefix(got[1], "> 0x1004 callq") {
		t.Errorf("at the pc: marked %q in\n%s", got, strings.Join(out, "\n"))
	}
	if joined := strings.Join(out, "\n"); strings.ContainsRune(joined, 0x1b) || !strings.Contains(joined, "    9  int f(void)") || !strings.Contains(joined, "0x1009") {
		t.Errorf("lines:\n%s", joined)
	}
	f.Offset = 0x1009 // the return address: the caller is in the call before it
	if got := marked(FrameSourceLines(Plain(), f, true, src)); len(got) != 2 || !strings.HasPrefix(got[1], "> 0x1004 callq") {
		t.Errorf("a caller: marked %q", got)
	}
	if got := marked(FrameSourceLines(Plain(), f, false, src)); len(got) != 2 || !strings.HasPrefix(got[1], "> 0x1009 pop") {
		t.Errorf("the same pc, not a caller: marked %q", got)
	}
	un := FrameSourceLines(Plain(), f, false, sessions.FrameSource{Unread: "source /x.c:11 is not readable here"})
	if len(un) != 1 || un[0] != "source /x.c:11 is not readable here" {
		t.Errorf("unreadable: %q", un)
	}
	if got := FrameSourceLines(Plain(), f, false, sessions.FrameSource{}); len(got) != 0 {
		t.Errorf("nothing read: %q", got)
	}
}
