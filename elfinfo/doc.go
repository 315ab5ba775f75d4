// Package elfinfo turns raw addresses of a traced process into things a person (and a crash-site
// key) can use: the module and link-time offset of a PC (the Spindle key, kernel.md §C, seed 001),
// the function and file:line with the frames gdb shows for inlined calls and tail calls (its own
// index of the DWARF for C and other non-Go code, delve's BinaryInfo for Go; .symtab/.dynsym
// without DWARF), a CFI unwind (delve's pkg/dwarf/frame over .eh_frame/.debug_frame,
// frame-pointer fallback) that crosses the kernel's signal frames, the goroutines of a Go process read from its memory (GoReader, delve's
// pkg/proc over a read-only process), runtime addresses of symbols such as glibc's __abort_msg,
// and ELF core files that gdb reads.
//
// It reads /proc/PID/maps, /proc/PID/{root,map_files,exe} and ELF/DWARF files only. It must not
// call ptrace or read tracee memory itself: memory comes through a caller-provided MemReader,
// and registers are passed in as values or raw user_regs_struct words. Parsed files are cached by
// build-id (or path+dev+inode+mtime when a file has none), so every rank of a job running the
// same binary costs one parse. Delve must never write to the terminal: its logger is silenced
// and it is only asked to load files that carry DWARF (otherwise it prints a warning to stderr).
package elfinfo
