//go:build unix

package ttyin

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// readable reports whether f has input to read within d.
func readable(f *os.File, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	ms := int((d + time.Millisecond - 1) / time.Millisecond)
	for {
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		// On an error, say there is more: the caller then leaves the ESC
		// to the parser's own timeout, which is slower but never wrong.
		return err != nil || n > 0
	}
}
