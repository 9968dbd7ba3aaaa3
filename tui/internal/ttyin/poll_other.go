//go:build !unix

package ttyin

import (
	"os"
	"time"
)

// readable says there is more input, leaving a lone ESC to the parser's
// own timeout: there is no portable poll here.
func readable(*os.File, time.Duration) bool { return true }
