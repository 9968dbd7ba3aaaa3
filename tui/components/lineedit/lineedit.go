package lineedit

import (
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// Model is the editor state. Positions are byte offsets into Value.
type Model struct {
	Value  string
	Cursor int
}

// Set replaces the text and puts the cursor at its end.
func (m *Model) Set(s string) { m.Value, m.Cursor = s, len(s) }

// Replace substitutes Value[from:m.Cursor] with s, leaving the cursor after it.
func (m *Model) Replace(from int, s string) {
	if from < 0 || from > m.Cursor {
		from = m.Cursor
	}
	m.Value = m.Value[:from] + s + m.Value[m.Cursor:]
	m.Cursor = from + len(s)
}

// Update applies an editing key and reports whether the text changed.
func (m *Model) Update(k tea.KeyPressMsg) (changed bool) {
	v, c := m.Value, m.Cursor
	switch k.String() {
	case "left", "ctrl+b":
		if c > 0 {
			_, n := utf8.DecodeLastRuneInString(v[:c])
			m.Cursor -= n
		}
	case "right", "ctrl+f":
		if c < len(v) {
			_, n := utf8.DecodeRuneInString(v[c:])
			m.Cursor += n
		}
	case "home", "ctrl+a":
		m.Cursor = 0
	case "end", "ctrl+e":
		m.Cursor = len(v)
	case "backspace", "ctrl+h":
		if c > 0 {
			_, n := utf8.DecodeLastRuneInString(v[:c])
			m.Value, m.Cursor = v[:c-n]+v[c:], c-n
		}
	case "delete", "ctrl+d":
		if c < len(v) {
			_, n := utf8.DecodeRuneInString(v[c:])
			m.Value = v[:c] + v[c+n:]
		}
	case "ctrl+u":
		m.Value, m.Cursor = v[c:], 0
	case "ctrl+k":
		m.Value = v[:c]
	case "ctrl+w", "alt+backspace":
		// Back over spaces, then over a word or a run of operators.
		j := len(strings.TrimRight(v[:c], " "))
		if j > 0 {
			word := isWord(v[j-1])
			for j > 0 && v[j-1] != ' ' && isWord(v[j-1]) == word {
				j--
			}
		}
		m.Value, m.Cursor = v[:j]+v[c:], j
	default:
		if k.Text == "" || k.Mod&^(tea.ModShift|tea.ModCapsLock) != 0 { // printable; shift allowed
			return false
		}
		m.Value, m.Cursor = v[:c]+k.Text+v[c:], c+len(k.Text)
	}
	return m.Value != v
}

// View renders the text with a block cursor, underlining bytes
// [errFrom, errFrom+errLen) in errStyle when errLen > 0 (a zero-length
// error at the end underlines a space).
func (m Model) View(text, errStyle lipgloss.Style, errFrom, errLen int, focused bool) string {
	v := m.Value
	var b strings.Builder
	cursorStyle := lipgloss.NewStyle().Reverse(true)
	if errLen == 0 && errFrom >= 0 && errFrom >= len(v) {
		errLen = 1
	}
	for i := 0; i <= len(v); {
		r, n := ' ', 1
		if i < len(v) {
			r, n = utf8.DecodeRuneInString(v[i:])
		} else if !(focused && i == m.Cursor) && !(errLen > 0 && i >= errFrom && i < errFrom+errLen) {
			break
		}
		st := text
		if errLen > 0 && i >= errFrom && i < errFrom+errLen {
			st = errStyle
		}
		if focused && i == m.Cursor {
			st = st.Inherit(cursorStyle).Reverse(true)
		}
		b.WriteString(st.Render(string(r)))
		i += n
	}
	return b.String()
}

func isWord(c byte) bool {
	return c >= 0x80 || c == '.' || c == '_' || c == '-' || c == '"' ||
		'0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
