//go:build !linux

package main

import (
	"os"
	"syscall"
)

// lowerPriority sets the niceness of this process to n.
func lowerPriority(n int) { syscall.Setpriority(syscall.PRIO_PROCESS, 0, n) }

// growPipe leaves the pipe as it is: only Linux lets it grow.
func growPipe(*os.File) {}
