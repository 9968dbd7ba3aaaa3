package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// lowerPriority sets the niceness of every thread of this process to n.
// On Linux niceness belongs to each thread, and a new thread takes its
// creator's: the runtime's threads started before this call are set here
// (twice over, for one being made meanwhile), the later ones inherit it.
func lowerPriority(n int) {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			unix.Setpriority(unix.PRIO_PROCESS, 0, n)
			return
		}
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.Setpriority(unix.PRIO_PROCESS, tid, n)
			}
		}
	}
}

// growPipe asks for a 1 MiB pipe buffer (the most an unprivileged process
// may have by default), so that a decoding process busy for a moment does
// not stop the forwarding process's writer at 64 KiB.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
	}
}
