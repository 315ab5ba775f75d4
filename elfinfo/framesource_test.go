package elfinfo

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crashtui/crashtui/sessions"
)

// TestReadFrameSource reads a frame of this very test binary: the source lines around it from
// this file (the first line of a file has no lines above it), and its function's code from the
// ELF file, as the bytes the file holds at that link-time address; an unreadable source file
// says so, and a frame without a function, outside any file or too far from its function's
// start gets no code.
func TestReadFrameSource(t *testing.T) {
	p := buildProgs(t)
	exe := p.pie
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	fn := symValue(t, exe, "exe_func")
	text := ef.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	const off = 4
	want := data[fn-text.Addr : fn-text.Addr+off+32]

	file, err := filepath.Abs(filepath.Join("testdata", "main.c"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")

	f := sessions.StackFrame{Function: "exe_func", Module: exe, Offset: sessions.Hex(fn + off), FuncOff: off, File: file, Line: 1}
	got := ReadFrameSource(f)
	if got.First != 1 || len(got.Lines) != 3 || got.Lines[0] != lines[0] || got.Lines[2] != lines[2] || got.Unread != "" {
		t.Errorf("source of line 1: first %d lines %q unread %q", got.First, got.Lines, got.Unread)
	}
	if !bytes.Equal(got.Code, want) || got.CodeAt != sessions.Hex(fn) || got.Arch != goarchOf[ef.Machine] {
		t.Errorf("code at %s (%s): %x, want %x at %#x", got.CodeAt, got.Arch, got.Code, want, fn)
	}
	f.Line = 10
	if got := ReadFrameSource(f); got.First != 8 || len(got.Lines) != 5 || got.Lines[2] != lines[9] {
		t.Errorf("source of line 10: first %d lines %q", got.First, got.Lines)
	}

	for _, tc := range []struct {
		name       string
		edit       func(*sessions.StackFrame)
		unread     bool
		code, text bool
	}{
		{"unreadable source", func(f *sessions.StackFrame) { f.File = filepath.Join(t.TempDir(), "gone.c") }, true, true, false},
		{"no line", func(f *sessions.StackFrame) { f.Line = 0 }, false, true, false},
		{"no function", func(f *sessions.StackFrame) { f.Function = "" }, false, false, true},
		{"not a file", func(f *sessions.StackFrame) { f.Module = "[vdso]" }, false, false, true},
		{"far from its function", func(f *sessions.StackFrame) { f.FuncOff = maxFuncOff + 1 }, false, false, true},
	} {
		g := f
		tc.edit(&g)
		got := ReadFrameSource(g)
		if (got.Unread != "") != tc.unread || (got.Code != nil) != tc.code || (got.Lines != nil) != tc.text {
			t.Errorf("%s: unread %q, %d code bytes, %d lines", tc.name, got.Unread, len(got.Code), len(got.Lines))
		}
		if tc.unread && !strings.Contains(got.Unread, "gone.c:10 is not readable here") {
			t.Errorf("%s: %q", tc.name, got.Unread)
		}
	}
}
