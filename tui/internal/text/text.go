// Package text makes strings from the wire safe to print on one terminal
// line: control characters (C0, DEL, C1, which could move the cursor or
// start an escape sequence) become visible symbols.
package text

import (
	"strings"
	"unicode/utf8"
)

// OneLine returns s with newlines as ⏎, tabs as a space and other control
// characters as visible pictures (␛ for ESC). It returns s
// itself, without allocating, when there is nothing to replace.
func OneLine(s string) string {
	i := 0
scan:
	for i < len(s) {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			break scan
		case c < 0x80:
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f {
				break scan
			}
			i += n
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for j := i; j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		bad := r == utf8.RuneError && n == 1
		j += n
		switch {
		case r == '\n':
			b.WriteString("⏎")
		case r == '\t':
			b.WriteByte(' ')
		case r == '\r':
		case r < 0x20:
			b.WriteRune(0x2400 + r) // Control Pictures block: ␀ .. ␟
		case r == 0x7f:
			b.WriteString("␡")
		case bad, r >= 0x80 && r <= 0x9f:
			b.WriteString("·")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
