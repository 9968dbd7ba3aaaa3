package connlist

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/store"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// ckWidth fits three verdict counts of a large capture.
const ckWidth = 24

// Model is the pane.
type Model struct {
	st  *store.Store
	sty *styles.Styles
	km  *keys.KeyMap

	cursor, offset int
	w, h           int
	Focused        bool
}

// New returns the pane over st.
func New(st *store.Store, km *keys.KeyMap, sty *styles.Styles) Model {
	return Model{st: st, km: km, sty: sty}
}

// SetSize sets the pane's inner size (first line: header).
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h; m.clamp() }

// Chosen returns the connection index (a position in store.Conns) under
// the cursor, -1 for all. Rows are in connection-number order.
func (m *Model) Chosen() int {
	if m.cursor == 0 {
		return -1
	}
	return m.st.ConnsByID()[m.cursor-1]
}

// Choose moves the cursor to connection index c (-1: all).
func (m *Model) Choose(c int) {
	m.cursor = 0
	for r, ci := range m.st.ConnsByID() {
		if ci == c {
			m.cursor = r + 1
		}
	}
	m.clamp()
}

func (m *Model) clamp() {
	n := len(m.st.Conns()) + 1
	m.cursor = max(0, min(m.cursor, n-1))
	rows := max(1, m.h-1)
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+rows {
		m.offset = m.cursor - rows + 1
	}
}

// narrow panes leave out the server column (usually the same broker or
// database for every row).
func (m *Model) narrow() bool { return m.w < 110 }

func (m *Model) ckWidth() int {
	if m.narrow() {
		return ckWidth - 8
	}
	return ckWidth
}

// Update handles keys and the mouse. The root reads the choice with
// Chosen after each update.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch km := m.km; {
		case key.Matches(msg, km.Down):
			m.cursor++
		case key.Matches(msg, km.Up):
			m.cursor--
		case key.Matches(msg, km.Top):
			m.cursor = 0
		case key.Matches(msg, km.Bottom):
			m.cursor = len(m.st.Conns())
		case key.Matches(msg, km.PageDown, km.HalfDown):
			m.cursor += max(1, m.h/2)
		case key.Matches(msg, km.PageUp, km.HalfUp):
			m.cursor -= max(1, m.h/2)
		}
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelDown {
			m.cursor++
		} else if msg.Button == tea.MouseWheelUp {
			m.cursor--
		}
	case tea.MouseClickMsg:
		if msg.Y >= 1 {
			m.cursor = m.offset + msg.Y - 1
		}
	}
	m.clamp()
	return m, nil
}

// View renders the header and visible rows.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	var b strings.Builder
	hdr := pad("#", 4) + pad("client", 23) + pad("server", 23)
	if m.narrow() {
		hdr = pad("#", 4) + pad("client", 23)
	}
	if m.narrow() {
		hdr += pad("proto", 10) + pad("units", 9) + pad("bytes", 10)
	} else {
		hdr += pad("proto", 10) + pad("units F/B", 16) + pad("bytes", 10)
	}
	hdr += pad("checksums", m.ckWidth()) + "problems"
	b.WriteString(m.sty.Header.Render(fit(hdr, m.w)))
	conns := m.st.Conns()
	rows := max(1, m.h-1)
	for r := m.offset; r < min(m.offset+rows, len(conns)+1); r++ {
		b.WriteByte('\n')
		b.WriteString(m.row(r, conns))
	}
	for r := min(m.offset+rows, len(conns)+1) - m.offset; r < rows; r++ {
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *Model) row(r int, conns []*decode.Conn) string {
	sy := m.sty
	sel := r == m.cursor
	var line string
	var n store.Counts
	if r == 0 {
		for c := range conns {
			n.Add(m.st.ConnCounts(c))
		}
		addrs := 46
		if m.narrow() {
			addrs = 23
		}
		line = pad("*", 4) + pad("all ("+strconv.Itoa(len(conns))+")", addrs) + pad("", 10)
	} else {
		ci := m.st.ConnsByID()[r-1]
		c := conns[ci]
		n = m.st.ConnCounts(ci)
		line = pad(strconv.Itoa(c.ID), 4) + pad(c.Client.String(), 23)
		if !m.narrow() {
			line += pad(c.Server.String(), 23)
		}
		line += pad(c.Proto.String(), 10)
	}
	if m.narrow() {
		line += pad(strconv.Itoa(n.Units[0]+n.Units[1]), 9)
	} else {
		line += pad(strconv.Itoa(n.Units[0])+"/"+strconv.Itoa(n.Units[1]), 16)
	}
	line += pad(decode.FormatBytes(n.Bytes[0]+n.Bytes[1]), 10) +
		m.checksums(n.Checksums, sel) + m.problems(n.Warnings, n.Errors, sel) + m.event(n, sel)
	if sel {
		st := sy.Selected
		if !m.Focused {
			st = sy.SelectedBlur
		}
		return st.Render(fit(line, m.w))
	}
	return ansi.Truncate(line, m.w, "…")
}

func (m *Model) checksums(ck [3]int, plain bool) string {
	cw := m.ckWidth()
	if ck[0]+ck[1]+ck[2] == 0 {
		return pad("", cw)
	}
	sy := m.sty
	parts := []struct {
		sym string
		n   int
		st  interface{ Render(...string) string }
	}{{sy.Sym.ChecksumOK, ck[decode.ChecksumOK], sy.ChecksumOK}, {sy.Sym.ChecksumMismatch, ck[decode.ChecksumMismatch], sy.ChecksumMismatch}, {sy.Sym.ChecksumAbsent, ck[decode.ChecksumAbsent], sy.ChecksumAbsent}}
	var b strings.Builder
	w := 0
	for _, p := range parts {
		s := p.sym + strconv.Itoa(p.n) + " "
		w += ansi.StringWidth(s)
		if plain || p.n == 0 {
			b.WriteString(s)
		} else {
			b.WriteString(p.st.Render(s))
		}
	}
	if w < cw {
		b.WriteString(strings.Repeat(" ", cw-w))
	}
	return b.String()
}

func (m *Model) problems(warn, errs int, plain bool) string {
	sy := m.sty
	var s []string
	if errs > 0 {
		t := sy.Sym.Error + strconv.Itoa(errs)
		if !plain {
			t = sy.Error.Render(t)
		}
		s = append(s, t)
	}
	if warn > 0 {
		t := sy.Sym.Warning + strconv.Itoa(warn)
		if !plain {
			t = sy.Warning.Render(t)
		}
		s = append(s, t)
	}
	return strings.Join(s, " ")
}

// event is what the proxy said last of a connection (a fault it
// injected, an upstream that refused, a reset), after its problems; the
// all row counts the faults.
func (m *Model) event(n store.Counts, plain bool) string {
	var s string
	if n.Faults > 0 {
		s = " faults " + strconv.Itoa(n.Faults)
	}
	if n.Event != "" {
		s += " " + n.Event
	}
	if s == "" || plain {
		return s
	}
	return m.sty.Warning.Render(s)
}

func pad(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw >= w {
		return ansi.Truncate(s, w-1, "…") + " "
	}
	return s + strings.Repeat(" ", w-sw)
}

func fit(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}
