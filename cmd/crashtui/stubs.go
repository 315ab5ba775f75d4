package main

import (
	"context"
	"fmt"

	"github.com/crashtui/crashtui/tracer"
)

// runTUI is replaced when the TUI lands.
func runTUI(ctx context.Context, c *common, s *session, t *tracer.Tracer, mode string) error {
	fmt.Println("crashtui: the TUI comes next; showing --json output instead")
	return waitJob(ctx, t)
}
