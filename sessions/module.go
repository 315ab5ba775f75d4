package sessions

import "path/filepath"

// ModuleBase is the file name of a module (the path of the mapping a pc is in), as crash sites
// and frames are shown ("libc.so.6+0x29d90") and as stack keys hash them: filepath.Base, except
// that an unknown module ("": a pc outside every mapping) stays "" rather than becoming ".".
// A pseudo-path such as "[vdso]" is its own base.
func ModuleBase(module string) string {
	if module == "" {
		return ""
	}
	return filepath.Base(module)
}
