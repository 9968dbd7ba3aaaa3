package filterbar

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/components/lineedit"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Lang is the display-filter language, as the filter bar needs it. The
// TUI wires decode/filter into it.
type Lang struct {
	// Compile parses expr; the matcher it returns is safe for concurrent use.
	Compile func(expr string) (func(*decode.Unit) bool, error)
	// ErrorSpan returns where in expr err points (byte offset and length).
	ErrorSpan func(err error) (pos, n int)
	// Complete returns the candidates for the word ending at cursor and
	// the offset where that word starts.
	Complete func(expr string, cursor int) (from int, cands []string)
	// Search reports whether u's summary or field values contain text.
	Search func(u *decode.Unit, text string) bool
	// Shallow, when set, reports whether expr's matcher reads only the
	// plain fields a unit's record keeps, so that scans may hand it
	// frozen units as shells of their records (decode/filter's
	// Filter.Shallow); nil means never.
	Shallow func(expr string) bool
}

// Mode says what the bar edits.
type Mode uint8

const (
	ModeFilter Mode = iota
	ModeSearch
)

// ChangedMsg reports a filter that compiles after an edit (Match nil: no
// filter). The TUI starts filtering with it at once, cancelling the run
// the previous keypress started.
type ChangedMsg struct {
	Expr  string
	Match func(*decode.Unit) bool
}

// AppliedMsg reports enter: the bar closes keeping Expr.
type AppliedMsg struct {
	Mode  Mode
	Expr  string
	Match func(*decode.Unit) bool
}

// CancelledMsg reports esc: the bar closes and the filter reverts to Prev.
type CancelledMsg struct {
	Mode Mode
	Prev string
}

// Model is the bar.
type Model struct {
	Mode   Mode
	Active bool

	edit   lineedit.Model
	prev   string
	lang   *Lang
	keys   *keys.KeyMap
	st     *styles.Styles
	width  int
	err    error
	errPos int
	errLen int
	match  func(*decode.Unit) bool

	cands    []string
	candFrom int
	candSel  int
}

// New returns a closed bar.
func New(lang *Lang, km *keys.KeyMap, st *styles.Styles) Model {
	return Model{lang: lang, keys: km, st: st}
}

// SetSize sets the bar's width.
func (m *Model) SetSize(w, _ int) { m.width = w }

// Open shows the bar in mode with text.
func (m *Model) Open(mode Mode, text string) {
	m.Mode, m.Active, m.prev = mode, true, text
	m.edit.Set(text)
	m.cands = nil
	m.validate()
}

// Value returns the text being edited.
func (m *Model) Value() string { return m.edit.Value }

// Err returns the current validation error, if any.
func (m *Model) Err() error { return m.err }

func (m *Model) validate() {
	m.err, m.match, m.errPos, m.errLen = nil, nil, 0, 0
	if m.Mode != ModeFilter || strings.TrimSpace(m.edit.Value) == "" || m.lang == nil || m.lang.Compile == nil {
		return
	}
	m.match, m.err = m.lang.Compile(m.edit.Value)
	if m.err != nil && m.lang.ErrorSpan != nil {
		m.errPos, m.errLen = m.lang.ErrorSpan(m.err)
	}
}

func msg(v tea.Msg) tea.Cmd { return func() tea.Msg { return v } }

// Update handles a key while the bar is open. Its command, if any, only
// returns a ChangedMsg, AppliedMsg or CancelledMsg: the root runs it at
// once so that reports follow key order.
func (m Model) Update(k tea.KeyPressMsg) (Model, tea.Cmd) {
	switch k.String() {
	case "enter":
		if m.err != nil {
			return m, nil
		}
		m.Active = false
		return m, msg(AppliedMsg{m.Mode, m.edit.Value, m.match})
	case "esc":
		m.Active = false
		return m, msg(CancelledMsg{m.Mode, m.prev})
	case "tab", "shift+tab":
		if m.Mode == ModeFilter {
			m.complete(k.String() == "tab")
			return m, m.changed()
		}
		return m, nil
	}
	if !m.edit.Update(k) {
		return m, nil
	}
	m.cands = nil
	return m, m.changed()
}

func (m *Model) changed() tea.Cmd {
	m.validate()
	if m.Mode != ModeFilter || m.err != nil {
		return nil
	}
	return msg(ChangedMsg{m.edit.Value, m.match})
}

func (m *Model) complete(forward bool) {
	if m.lang == nil || m.lang.Complete == nil {
		return
	}
	if len(m.cands) > 1 {
		if forward {
			m.candSel = (m.candSel + 1) % len(m.cands)
		} else {
			m.candSel = (m.candSel + len(m.cands) - 1) % len(m.cands)
		}
		m.edit.Replace(m.candFrom, m.cands[m.candSel])
		return
	}
	from, cands := m.lang.Complete(m.edit.Value, m.edit.Cursor)
	switch len(cands) {
	case 0:
		return
	case 1:
		m.edit.Replace(from, cands[0])
		m.cands = nil
		return
	}
	m.cands, m.candFrom, m.candSel = cands, from, -1
	if p := commonPrefix(cands); len(p) > m.edit.Cursor-from {
		m.edit.Replace(from, p)
	}
}

func commonPrefix(ss []string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// View renders the bar (one line, or two with completion candidates).
func (m Model) View() string {
	prompt := "/"
	if m.Mode == ModeSearch {
		prompt = "search: "
	}
	errLen := m.errLen
	if m.err == nil {
		errLen = -1
	}
	text := m.st.Input
	if m.err != nil {
		text = m.st.InputErr
	}
	line := m.st.Prompt.Render(prompt) + m.edit.View(text, m.st.ErrColumn, m.errPos, errLen, m.Active)
	if m.err != nil {
		line += "  " + m.st.StatusErr.Render(m.err.Error())
	}
	line = truncate(line, m.width)
	if len(m.cands) == 0 {
		return line
	}
	// Start the list late enough that the chosen candidate is on screen.
	start, w := 0, 0
	for i := max(m.candSel, 0); i >= 0; i-- {
		w += len(m.cands[i]) + 1
		if w > m.width && m.width > 0 {
			break
		}
		start = i
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("… ")
	}
	for i, c := range m.cands[start:] {
		if i > 0 {
			b.WriteByte(' ')
		}
		if start+i == m.candSel {
			b.WriteString(m.st.CompletionSel.Render(c))
		} else {
			b.WriteString(m.st.Completion.Render(c))
		}
	}
	return truncate(b.String(), m.width) + "\n" + line
}

func truncate(s string, w int) string {
	if w <= 0 {
		return s
	}
	return ansi.Truncate(s, w, "…")
}
