// Package peertest builds and drives demo/access/peer for tests: it is imported only by
// _test.go files (tracer/access, tracer, cmd/crashtui) that need real processes in chosen
// identities as ground truth for the access matrix (kernel.md §A).
//
// It builds the peer once per call into a world-readable directory, starts it with the
// SysProcAttr the test gives (other uid, namespaces), waits for its "ready PID ADDR" line,
// and asks it to run kcmp and process_vm_readv itself ("probe PID ADDR"). Every process it
// starts is killed by pid and reaped in t.Cleanup.
//
// It must not be imported by non-test code, must not call ptrace, and must not import
// tracer/access: that package's own tests import this one, which would be a cycle.
package peertest
