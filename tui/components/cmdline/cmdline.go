package cmdline

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/tui/components/lineedit"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Names are the commands, with their aliases after the first.
var Names = [][]string{
	{"goto", "g"}, {"filter", "f"}, {"search", "s"}, {"conn", "c"},
	{"save", "w"}, {"save!", "w!"}, {"export", "e"}, {"export!", "e!"}, {"definitions"}, {"follow"}, {"stats"}, {"broker"}, {"route"}, {"fault"}, {"help", "h"}, {"quit", "q", "q!", "wq"},
}

// ExecMsg is an entered command: Name is canonical ("goto"), Arg the rest
// of the line, trimmed.
type ExecMsg struct {
	Name, Arg string
}

// ErrorMsg reports an unknown command.
type ErrorMsg struct{ Text string }

// Model is the line.
type Model struct {
	Active bool
	edit   lineedit.Model
	sty    *styles.Styles
	width  int
}

// New returns a closed line.
func New(sty *styles.Styles) Model { return Model{sty: sty} }

// SetSize sets the width.
func (m *Model) SetSize(w, _ int) { m.width = w }

// Open shows the line with text.
func (m *Model) Open(text string) {
	m.Active = true
	m.edit.Set(text)
}

// Parse splits a command line into its canonical name and argument.
func Parse(line string) (ExecMsg, bool) {
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), ":"))
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	if name != "" && strings.Trim(name, "0123456789") == "" {
		return ExecMsg{"goto", name}, true // ":123"
	}
	for _, n := range Names {
		for _, a := range n {
			if a == name {
				return ExecMsg{n[0], arg}, true
			}
		}
	}
	return ExecMsg{}, false
}

// Update edits the line; enter executes, esc closes. Its command, if any,
// only returns an ExecMsg or ErrorMsg: the root runs it at once.
func (m Model) Update(k tea.KeyPressMsg) (Model, tea.Cmd) {
	switch k.String() {
	case "enter":
		m.Active = false
		line := m.edit.Value
		if strings.TrimSpace(line) == "" {
			return m, nil
		}
		if c, ok := Parse(line); ok {
			return m, func() tea.Msg { return c }
		}
		return m, func() tea.Msg { return ErrorMsg{"unknown command: " + line} }
	case "esc":
		m.Active = false
		return m, nil
	case "tab":
		v := m.edit.Value
		if !strings.Contains(v, " ") {
			for _, n := range Names {
				if strings.HasPrefix(n[0], v) {
					m.edit.Set(n[0] + " ")
					break
				}
			}
		}
		return m, nil
	case "backspace":
		if m.edit.Value == "" {
			m.Active = false
			return m, nil
		}
	}
	m.edit.Update(k)
	return m, nil
}

// View renders the line.
func (m Model) View() string {
	s := m.sty.Prompt.Render(":") + m.edit.View(m.sty.Input, m.sty.ErrColumn, -1, -1, m.Active)
	if m.width > 0 {
		s = ansi.Truncate(s, m.width, "…")
	}
	return s
}
