package demo

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestProgramKeepsItsSource: a compiled demo program's debug info names a source file that
// exists, beside the program, so that the Stacks and Crashes tabs can show its lines.
func TestProgramKeepsItsSource(t *testing.T) {
	bin, err := Program("rank")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(bin), "rank.c")
	r := d.Reader()
	found := false
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			r.SkipChildren()
			continue
		}
		for _, file := range lr.Files() {
			if file != nil && file.Name == want {
				found = true
			}
		}
		r.SkipChildren()
	}
	if !found {
		t.Fatalf("the debug info of %s does not name %s", bin, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("the source is not beside the program: %v", err)
	}
}
