// Package ttyin wraps the terminal's input so that the Escape key reaches
// the program at once.
//
// A terminal sends the Escape key as a lone ESC byte, which is also how
// every escape sequence (arrows, mouse reports, Alt+key) begins. The input
// parser under bubbletea therefore holds a lone ESC for 50 ms in case the
// rest of a sequence follows, so every esc keypress (leaving the filter
// bar, closing help) costs 50 ms before the program sees it, and bubbletea
// offers no way to shorten that wait.
//
// Terminals write a whole sequence at once, so a read that returns a lone
// ESC with nothing more arriving within a short delay is the Escape key.
// File rewrites such a read to the unambiguous kitty keyboard encoding of
// Escape (CSI 27 u), which the parser reports without waiting. The delay
// defaults to 10 ms and follows the ESCDELAY environment variable
// (milliseconds) that curses programs honour.
package ttyin

import (
	"os"
	"strconv"
	"time"
)

// escKey is the kitty keyboard protocol's encoding of the Escape key.
const escKey = "\x1b[27u"

// DefaultDelay is how long File waits for the rest of a sequence after a
// lone ESC when ESCDELAY is not set.
const DefaultDelay = 10 * time.Millisecond

// File is a terminal's input file whose reads report a lone Escape key
// unambiguously. Everything but Read is the underlying *os.File's, so the
// program can still put the terminal in raw mode and poll it.
type File struct {
	*os.File
	// Delay is how long a lone ESC waits for more input before it is taken
	// for the Escape key. Zero means no wait.
	Delay time.Duration
}

// New wraps f with the delay from the ESCDELAY environment variable, or
// DefaultDelay.
func New(f *os.File) *File {
	return &File{File: f, Delay: Delay(os.Getenv("ESCDELAY"))}
}

// Delay parses an ESCDELAY value in milliseconds; an empty, malformed or
// negative value gives DefaultDelay, and values above a second are capped.
func Delay(env string) time.Duration {
	ms, err := strconv.Atoi(env)
	if env == "" || err != nil || ms < 0 {
		return DefaultDelay
	}
	return time.Duration(min(ms, 1000)) * time.Millisecond
}

// Read reads from the terminal. A read that returns only an ESC byte, with
// no more input readable within Delay, returns the Escape key's CSI 27 u
// encoding instead.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if n == 1 && p[0] == 0x1b && err == nil && len(p) >= len(escKey) && !readable(f.File, f.Delay) {
		return copy(p, escKey), nil
	}
	return n, err
}
