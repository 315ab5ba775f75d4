package main

import "io"

func cmdReplay(args []string, stdout, stderr io.Writer) error {
	return usageErr("replay: not yet implemented")
}
