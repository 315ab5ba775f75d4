// Package arch knows the per-architecture facts crashtui needs about a stopped thread: the
// layout of the kernel's register struct (amd64 user_regs_struct, arm64 user_pt_regs, ppc64le
// user_pt_regs), syscall numbers and names, whether a thread is inside an interrupted syscall and
// what the kernel will do with it on resume (kernel.md §B), what a checkpoint/restore must write
// back (the CRIU compel fix-ups, seed 002), the guard code an injected syscall runs in
// (guard.go, inject.go) and disassembly via golang.org/x/arch.
//
// Everything here works on raw register words (Regs), so every architecture is decoded and
// tested on every host, and recorded sessions of one architecture replay on another.
//
// This package must not call ptrace or any other syscall, read /proc, or know about the screen:
// package tracer fetches and writes the words (tracer/regs_<goarch>.go) and calls these pure
// functions to decide; views call them again on the words an event carries (a thread's
// registers and instruction bytes) to put the same decision into words.
package arch
