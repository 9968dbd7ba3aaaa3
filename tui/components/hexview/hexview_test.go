package hexview

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

func TestDumpAndHighlight(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(76, 3)
	raw := []byte("AMQP\x00\x00\x09\x01" + strings.Repeat("x", 100))
	m.SetBytes(raw)
	got := ansi.Strip(m.View())
	want := "0000  41 4d 51 50 00 00 09 01  78 78 78 78 78 78 78 78  AMQP....xxxxxxxx"
	if first := strings.Split(got, "\n")[0]; first != want {
		t.Fatalf("first line\n%q\nwant\n%q", first, want)
	}
	// Highlighting bytes 4..8 styles exactly that hex and text.
	m.Highlight(4, 4)
	v := m.View()
	if ansi.Strip(v) != got {
		t.Fatal("highlight changed the text")
	}
	line := strings.Split(v, "\n")[0]
	if !strings.Contains(line, "\x1b[") || strings.Count(line, "\x1b[") < 2 {
		t.Fatalf("no highlight: %q", line)
	}
	// A field on the last line scrolls into view.
	m.Highlight(100, 2)
	if !strings.Contains(ansi.Strip(m.View()), "\n0060") {
		t.Fatalf("not scrolled: %q", ansi.Strip(m.View()))
	}
	// Narrow panes show 8 bytes a line.
	m.SetSize(50, 3)
	if l := strings.Split(ansi.Strip(m.View()), "\n")[0]; !strings.HasSuffix(l, "  xxxxxxxx") || strings.Count(l, " 78") != 8 {
		t.Fatalf("narrow: %q", l)
	}
}
