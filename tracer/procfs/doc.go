// Package procfs reads what /proc says of a process and its threads, and reads a process's
// memory from outside (process_vm_readv, /proc/PID/mem): everything the tracer and its
// features learn without a ptrace request. It never calls ptrace and never writes.
//
// Each read is open, read into a reused buffer, close: the loop reads several files per
// process while it attaches and two per thread while it samples stacks, and os.ReadFile adds
// an fstat, reads that grow from 512 bytes (each one regenerates the file in the kernel) and
// allocations, which together cost as much as the kernel's side.
package procfs
