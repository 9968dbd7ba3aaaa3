package detail

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

func TestTree(t *testing.T) {
	leaf := &decode.Field{Key: "routing-key", Value: "orders", Encoding: "shortstr", Offset: 11, Length: 6}
	args := &decode.Field{Key: "arguments", Kind: decode.KindMap, Kids: []*decode.Field{leaf}}
	u := &decode.Unit{N: 7, Type: "basic.publish", Dissect: func(*decode.Unit) []*decode.Field { return []*decode.Field{args} }}
	u.SetChecksum(&decode.Checksum{Algorithm: "crc-32", Status: decode.ChecksumMismatch, Expected: 1, Actual: 2})
	u.SetWarnings([]string{"odd"})
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(80, 10)
	m.SetUnit(u)
	v := ansi.Strip(m.View())
	for _, want := range []string{"#7", "✗ checksum MISMATCH (crc-32: footer says 0x00000001, bytes give 0x00000002)", "! odd", "▾ arguments", `routing-key: "orders"  (shortstr)`} {
		if !strings.Contains(v, want) {
			t.Fatalf("view lacks %q:\n%s", want, v)
		}
	}
	if m.Field() != args {
		t.Fatal("cursor not on the first field")
	}
	key := func(k rune) { m, _ = m.Update(tea.KeyPressMsg{Code: k, Text: string(k)}) }
	key('j')
	if m.Field() != leaf {
		t.Fatal("j")
	}
	key('h') // leaf: to the parent
	key('h') // collapse
	if v := ansi.Strip(m.View()); strings.Contains(v, "routing-key") || !strings.Contains(v, "▸ arguments {1}") {
		t.Fatalf("collapse:\n%s", v)
	}
	key('l')
	if !strings.Contains(ansi.Strip(m.View()), "routing-key") {
		t.Fatal("expand")
	}
}
