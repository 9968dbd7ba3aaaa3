//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "vmcost: measures Linux's memory and process start; this is not Linux")
	os.Exit(1)
}
