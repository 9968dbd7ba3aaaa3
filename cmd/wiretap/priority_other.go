//go:build !linux

package main

import (
	"os"
	"syscall"
)

// lowerPriority sets the niceness of this process to n (Linux's
// SCHED_IDLE has no equivalent here).
func lowerPriority(n int) { syscall.Setpriority(syscall.PRIO_PROCESS, 0, n) }

// lowerGroupPriority does nothing: only Linux groups tasks by session.
func lowerGroupPriority(int) {}

// growPipe leaves the pipe as it is: only Linux lets it grow.
func growPipe(*os.File) {}
