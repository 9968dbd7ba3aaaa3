//go:build !linux

package store

import (
	"errors"
	"os"
)

// freeSpace is not known off Linux: only a limit set with SetDiskLimit
// bounds the files there.
func freeSpace(*os.File) (free, size int64, err error) {
	return 0, 0, errors.New("store: free space unknown on this system")
}
