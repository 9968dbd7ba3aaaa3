package hexview

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

const hexdigits = "0123456789abcdef"

// Model is the pane.
type Model struct {
	sty *styles.Styles
	km  *keys.KeyMap

	raw     []byte
	hiFrom  int
	hiLen   int
	offset  int // first line shown
	w, h    int
	Focused bool
	perLine int
}

// New returns an empty pane.
func New(km *keys.KeyMap, sty *styles.Styles) Model {
	return Model{km: km, sty: sty, perLine: 16}
}

// SetSize sets the pane's inner size; the bytes per line follow the width.
func (m *Model) SetSize(w, h int) {
	m.w, m.h = w, h
	m.perLine = 16
	if w < 75 {
		m.perLine = 8
	}
	m.clamp()
}

// SetBytes shows raw, scrolled to the top.
func (m *Model) SetBytes(raw []byte) {
	m.raw, m.offset, m.hiFrom, m.hiLen = raw, 0, 0, 0
}

// Highlight marks raw[from:from+n] and scrolls it into view.
func (m *Model) Highlight(from, n int) {
	if from < 0 || n <= 0 || from >= len(m.raw) {
		m.hiFrom, m.hiLen = 0, 0
		return
	}
	m.hiFrom, m.hiLen = from, min(n, len(m.raw)-from)
	first := from / m.perLine
	if first < m.offset || first >= m.offset+m.h {
		m.offset = first
		m.clamp()
	}
}

func (m *Model) lines() int { return (len(m.raw) + m.perLine - 1) / m.perLine }

func (m *Model) clamp() {
	if m.offset > m.lines()-m.h {
		m.offset = m.lines() - m.h
	}
	if m.offset < 0 {
		m.offset = 0
	}
}

// Update scrolls.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		km := m.km
		switch {
		case key.Matches(msg, km.Down):
			m.offset++
		case key.Matches(msg, km.Up):
			m.offset--
		case key.Matches(msg, km.HalfDown, km.PageDown):
			m.offset += max(1, m.h/2)
		case key.Matches(msg, km.HalfUp, km.PageUp):
			m.offset -= max(1, m.h/2)
		case key.Matches(msg, km.Top):
			m.offset = 0
		case key.Matches(msg, km.Bottom):
			m.offset = m.lines()
		}
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelDown {
			m.offset += 3
		} else if msg.Button == tea.MouseWheelUp {
			m.offset -= 3
		}
	}
	m.clamp()
	return m, nil
}

// View renders the visible lines of the dump.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	var b strings.Builder
	if len(m.raw) == 0 {
		b.WriteString(m.sty.Dim.Render("no bytes"))
	}
	last := min(m.offset+m.h, m.lines())
	hiEnd := m.hiFrom + m.hiLen
	in := func(i int) bool { return i >= m.hiFrom && i < hiEnd }
	var off [8]byte
	for l := m.offset; l < last; l++ {
		if l > m.offset {
			b.WriteByte('\n')
		}
		start := l * m.perLine
		end := min(start+m.perLine, len(m.raw))
		v := start
		for i := 7; i >= 0; i-- {
			off[i] = hexdigits[v&15]
			v >>= 4
		}
		b.WriteString(m.sty.HexOffset.Render(string(off[4:])))
		b.WriteString("  ")
		// Runs of highlighted and plain bytes are rendered as one string
		// each, to keep escape sequences few.
		var run []byte
		hi := false
		flush := func() {
			if len(run) == 0 {
				return
			}
			if hi {
				b.WriteString(m.sty.HexHighlight.Render(string(run)))
			} else {
				b.Write(run)
			}
			run = run[:0]
		}
		for i := start; i < start+m.perLine; i++ {
			if i > start {
				sep := []byte(" ")
				if i-start == 8 {
					sep = []byte("  ")
				}
				if hi && in(i) {
					run = append(run, sep...)
				} else {
					flush()
					hi = false
					run = append(run, sep...)
				}
			}
			if i >= end {
				run = append(run, ' ', ' ')
				continue
			}
			if in(i) != hi {
				flush()
				hi = in(i)
			}
			c := m.raw[i]
			run = append(run, hexdigits[c>>4], hexdigits[c&15])
		}
		flush()
		hi = false
		run = append(run, ' ', ' ')
		for i := start; i < end; i++ {
			if in(i) != hi {
				flush()
				hi = in(i)
			}
			c := m.raw[i]
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			run = append(run, c)
		}
		flush()
	}
	for l := max(last-m.offset, 1); l < m.h; l++ {
		b.WriteByte('\n')
	}
	return b.String()
}
