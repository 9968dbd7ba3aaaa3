package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// lowerPriority sets the niceness of every thread of this process to n
// and their scheduling policy to SCHED_IDLE: the kernel then
// runs them when nothing else wants the processor, and a thread of any
// other policy that wakes takes the processor from them at once, where a
// thread of nice 19 may keep it for the rest of its slice (a millisecond
// or more, which the forwarding's latency would show). On Linux both
// belong to each thread, and a new thread takes its creator's: the
// runtime's threads started before this call are set here (twice over,
// for one being made meanwhile), the later ones inherit them.
func lowerPriority(n int) {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: schedIdle, Nice: int32(n)}
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			unix.Setpriority(unix.PRIO_PROCESS, 0, n)
			return
		}
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.Setpriority(unix.PRIO_PROCESS, tid, n)
				unix.SchedSetAttr(tid, &attr, 0)
			}
		}
	}
}

// lowerGroupPriority gives this process's autogroup the niceness n.
// Where the kernel groups tasks by session (sched_autogroup_enabled, the
// default of most distributions' kernels outside systemd's CPU
// controller), it shares the CPU fairly between sessions first and by
// niceness only within one: RabbitMQ, its clients and the decoding
// process, each in a session of its own, would share it alike whatever
// the decoding process's threads' niceness. So the decoding process is
// started in a session of its own (startDecoder) and that session's
// group is given the lowest priority here; without autogroups the file
// is missing and the threads' niceness is what counts.
func lowerGroupPriority(n int) {
	os.WriteFile("/proc/self/autogroup", []byte(strconv.Itoa(n)), 0)
}

// growPipe asks for a 1 MiB pipe buffer (the most an unprivileged process
// may have by default), so that a decoding process busy for a moment does
// not stop the forwarding process's writer at 64 KiB.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
	}
}
