//go:build !arm64

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "svcprog: svc helper runs on arm64 only")
	os.Exit(2)
}
