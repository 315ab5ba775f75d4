package main

import "io"

func cmdCheckpoint(args []string, stdout, stderr io.Writer) error { return usageErr("checkpoint: not yet implemented") }
