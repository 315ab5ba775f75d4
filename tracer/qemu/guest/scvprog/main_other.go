//go:build !ppc64le

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "scvprog: sc/scv helper runs on ppc64le only")
	os.Exit(2)
}
