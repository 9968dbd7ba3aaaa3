package filterbar

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// lang is a toy language: "ok" and names starting with "name." compile.
var lang = &Lang{
	Compile: func(expr string) (func(*decode.Unit) bool, error) {
		if expr == "ok" || strings.HasPrefix(expr, "name.") {
			return func(*decode.Unit) bool { return true }, nil
		}
		return nil, errors.New("bad")
	},
	ErrorSpan: func(error) (int, int) { return 1, 2 },
	Complete: func(expr string, cursor int) (int, []string) {
		return 0, []string{"name.alpha", "name.beta", "name.gamma"}
	},
}

func TestBar(t *testing.T) {
	m := New(lang, keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(30, 1)
	m.Open(ModeFilter, "")
	typeKey := func(k tea.KeyPressMsg) tea.Msg {
		var cmd tea.Cmd
		m, cmd = m.Update(k)
		if cmd == nil {
			return nil
		}
		return cmd()
	}
	if msg := typeKey(tea.KeyPressMsg{Code: 'x', Text: "x"}); msg != nil || m.Err() == nil {
		t.Fatalf("invalid text: %v %v", msg, m.Err())
	}
	if msg := typeKey(tea.KeyPressMsg{Code: tea.KeyEnter}); msg != nil || !m.Active {
		t.Fatal("enter accepted an invalid filter")
	}
	// Three candidates sharing "name.": the prefix is inserted, then tab cycles.
	msg := typeKey(tea.KeyPressMsg{Code: tea.KeyTab})
	if m.Value() != "name." {
		t.Fatalf("common prefix: %q", m.Value())
	}
	if _, ok := msg.(ChangedMsg); !ok {
		t.Fatalf("valid after completion, got %T", msg)
	}
	typeKey(tea.KeyPressMsg{Code: tea.KeyTab})
	typeKey(tea.KeyPressMsg{Code: tea.KeyTab})
	typeKey(tea.KeyPressMsg{Code: tea.KeyTab})
	if m.Value() != "name.gamma" {
		t.Fatalf("cycled to %q", m.Value())
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(strings.Split(v, "\n")[0], "name.gamma") {
		t.Fatalf("chosen candidate not on screen: %q", v)
	}
	if msg := typeKey(tea.KeyPressMsg{Code: tea.KeyEnter}); msg.(AppliedMsg).Expr != "name.gamma" || m.Active {
		t.Fatalf("enter: %#v", msg)
	}
	m.Open(ModeFilter, "ok")
	typeKey(tea.KeyPressMsg{Code: 'z', Text: "z"})
	if msg := typeKey(tea.KeyPressMsg{Code: tea.KeyEscape}); msg.(CancelledMsg).Prev != "ok" {
		t.Fatalf("esc: %#v", msg)
	}
}
