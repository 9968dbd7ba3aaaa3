package store

import (
	"os"
	"syscall"
)

// freeSpace returns the bytes free to an unprivileged writer on f's
// filesystem, and the filesystem's size.
func freeSpace(f *os.File) (free, size int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, nil
}
