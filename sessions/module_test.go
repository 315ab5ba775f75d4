package sessions

import "testing"

func TestModuleBase(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"unknown module", "", ""},
		{"library", "/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"},
		{"already a base", "libc.so.6", "libc.so.6"},
		{"pseudo-path", "[vdso]", "[vdso]"},
		{"deleted file", "/tmp/job (deleted)", "job (deleted)"},
		{"trailing slash", "/opt/app/", "app"},
		{"root", "/", "/"},
	} {
		if got := ModuleBase(c.in); got != c.want {
			t.Errorf("%s: ModuleBase(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}
