package main

import "io"

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	return usageErr("demo: not yet implemented")
}
