package main

import "io"

func cmdMatrix(args []string, stdout, stderr io.Writer) error {
	return usageErr("matrix: not yet implemented")
}
