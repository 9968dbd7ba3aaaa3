package lineedit

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestEditing(t *testing.T) {
	var m Model
	for _, r := range "amqp.channel == 2" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	key := func(code rune, mod tea.KeyMod) { m.Update(tea.KeyPressMsg{Code: code, Mod: mod}) }
	key(tea.KeyLeft, 0)
	key(tea.KeyBackspace, 0)
	if m.Value != "amqp.channel ==2" || m.Cursor != 15 {
		t.Fatalf("%q %d", m.Value, m.Cursor)
	}
	key('w', tea.ModCtrl)
	if m.Value != "amqp.channel 2" {
		t.Fatalf("ctrl+w: %q", m.Value)
	}
	key('a', tea.ModCtrl)
	m.Update(tea.KeyPressMsg{Code: '!', Text: "!"})
	if m.Value != "!amqp.channel 2" {
		t.Fatalf("insert at home: %q", m.Value)
	}
	if m.Update(tea.KeyPressMsg{Code: 'x', Mod: tea.ModCtrl}) {
		t.Fatal("ctrl+x inserted text")
	}
	key('u', tea.ModCtrl) // deletes the "!" before the cursor
	if m.Value != "amqp.channel 2" || m.Cursor != 0 {
		t.Fatalf("ctrl+u: %q %d", m.Value, m.Cursor)
	}
	m.Replace(0, "frame")
	if m.Value != "frameamqp.channel 2" {
		t.Fatalf("replace: %q", m.Value)
	}
}
