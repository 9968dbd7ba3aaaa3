// Package textview renders a scrolled window over pre-rendered lines, the
// view shared by the components that show text rather than rows (help,
// stats).
package textview

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Render returns lines[offset:offset+h], each cut to w cells, padded with
// empty lines to exactly h lines.
func Render(lines []string, offset, w, h int) string {
	var b strings.Builder
	end := min(offset+h, len(lines))
	for i := offset; i < end; i++ {
		if i > offset {
			b.WriteByte('\n')
		}
		b.WriteString(ansi.Truncate(lines[i], w, "…"))
	}
	for i := max(end-offset, 1); i < h; i++ {
		b.WriteByte('\n')
	}
	return b.String()
}
