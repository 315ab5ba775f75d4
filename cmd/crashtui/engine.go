package main

import (
	"github.com/crashtui/crashtui/elfinfo"
	"github.com/crashtui/crashtui/tracer"
	"github.com/crashtui/crashtui/tracer/access"
	"github.com/crashtui/crashtui/tracer/checkpoint"
	"github.com/crashtui/crashtui/tracer/crash"
	"github.com/crashtui/crashtui/tracer/stacks"
)

// tracing is one engine and the features a command uses, wired together: the crash feature
// is the engine's watcher (when crashes are handled), and it shares its symbol caches with
// stack sampling.
type tracing struct {
	*tracer.Tracer
	crashes     *crash.Crashes // nil when crashes are not handled
	access      *access.Access
	checkpoints *checkpoint.Checkpoints
	stacks      *stacks.Stacks
}

// newTracing starts an engine with o and its features; with co, crashes are handled.
func newTracing(o tracer.Options, co *crash.Options) *tracing {
	res := elfinfo.NewResolver()
	tr := &tracing{}
	if co != nil {
		co.Resolver = res
		tr.crashes = crash.New(*co)
		o.Watcher = tr.crashes
	}
	tr.Tracer = tracer.New(o)
	tr.access = access.New(tr.Tracer)
	tr.checkpoints = checkpoint.New(tr.Tracer)
	tr.stacks = stacks.New(tr.Tracer, res)
	return tr
}
