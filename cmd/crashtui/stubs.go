package main

import (
	"context"
	"fmt"
	"io"

	"github.com/crashtui/crashtui/tracer"
)

// runTUI is replaced when the TUI lands.
func runTUI(ctx context.Context, c *common, s *session, t *tracer.Tracer, mode string) error {
	fmt.Println("crashtui: the TUI comes next; showing --json output instead")
	return waitJob(ctx, t)
}

func cmdDemo(args []string, stdout, stderr io.Writer) error   { return usageErr("demo: not yet") }
func cmdReplay(args []string, stdout, stderr io.Writer) error { return usageErr("replay: not yet") }
func cmdMatrix(args []string, stdout, stderr io.Writer) error { return usageErr("matrix: not yet") }
func cmdCheckpoint(args []string, stdout, stderr io.Writer) error {
	return usageErr("checkpoint: not yet")
}
