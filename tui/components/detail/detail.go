package detail

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

type line struct {
	text  string // header lines
	style int    // 0 plain, 1 warning, 2 error, 3 checksum ok, 4 mismatch, 5 absent
	f     *decode.Field
	depth int
}

// Model is the pane.
type Model struct {
	sty *styles.Styles
	km  *keys.KeyMap

	unit   *decode.Unit
	fields []*decode.Field
	closed map[*decode.Field]bool
	lines  []line
	head   int // header lines before the tree

	cursor, offset int
	w, h           int
	Focused        bool
}

// New returns an empty pane.
func New(km *keys.KeyMap, sty *styles.Styles) Model {
	return Model{km: km, sty: sty, closed: map[*decode.Field]bool{}}
}

// SetSize sets the pane's inner size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h; m.clamp() }

// Unit returns the unit shown.
func (m *Model) Unit() *decode.Unit { return m.unit }

// SetUnit shows u, decoding its field tree now. Containers deeper than
// two levels start collapsed.
func (m *Model) SetUnit(u *decode.Unit) {
	if u == m.unit {
		return
	}
	m.unit = u
	m.fields = nil
	clear(m.closed)
	if u != nil {
		m.fields = u.Fields()
		var walk func(fs []*decode.Field, depth int)
		walk = func(fs []*decode.Field, depth int) {
			for _, f := range fs {
				if len(f.Kids) > 0 && depth >= 2 {
					m.closed[f] = true
				}
				walk(f.Kids, depth+1)
			}
		}
		walk(m.fields, 0)
	}
	m.cursor, m.offset = 0, 0
	m.build()
	m.cursor = m.head
	m.clamp()
}

// Field returns the field under the cursor, or nil.
func (m *Model) Field() *decode.Field {
	if m.cursor >= 0 && m.cursor < len(m.lines) {
		return m.lines[m.cursor].f
	}
	return nil
}

func (m *Model) build() {
	m.lines = m.lines[:0]
	u := m.unit
	if u == nil {
		m.head = 0
		return
	}
	add := func(style int, s string) { m.lines = append(m.lines, line{text: text.OneLine(s), style: style}) }
	conn := ""
	if c := u.Conn; c != nil {
		conn = "conn " + strconv.Itoa(c.ID) + " " + c.Client.String() + " → " + c.Server.String() + "  "
	}
	dir := u.Dir.String()
	if u.Parent != nil {
		dir += "* (in CompressedMessages #" + strconv.Itoa(u.Parent.N) + ")"
	}
	add(0, "#"+strconv.Itoa(u.N)+" "+u.Proto.String()+" "+u.Type+"  "+dir)
	add(0, conn+u.Time().UTC().Format("2006-01-02 15:04:05.000000")+"  "+strconv.Itoa(u.Len)+" bytes")
	if u.HasChannel {
		m.lines[len(m.lines)-1].text += "  channel " + strconv.Itoa(int(u.Channel))
	}
	if u.MessageID() != "" {
		add(0, "message-id "+u.MessageID())
	}
	if c := u.Checksum(); c != nil {
		s := m.sty.Sym
		switch c.Status {
		case decode.ChecksumOK:
			add(3, s.ChecksumOK+" checksum ok ("+c.Algorithm+" 0x"+hex32(c.Actual)+")")
		case decode.ChecksumMismatch:
			add(4, s.ChecksumMismatch+" checksum MISMATCH ("+c.Algorithm+": footer says 0x"+hex32(c.Expected)+", bytes give 0x"+hex32(c.Actual)+")")
		default:
			add(5, s.ChecksumAbsent+" checksum absent")
		}
	}
	for _, w := range u.Warnings() {
		add(1, m.sty.Sym.Warning+" "+w)
	}
	if u.Err() != "" {
		add(2, m.sty.Sym.Error+" "+u.Err())
	}
	if u.Secret {
		add(1, "carries credentials (redacted unless --show-secrets)")
	}
	m.head = len(m.lines)
	var walk func(fs []*decode.Field, depth int)
	walk = func(fs []*decode.Field, depth int) {
		for _, f := range fs {
			m.lines = append(m.lines, line{f: f, depth: depth})
			if !m.closed[f] {
				walk(f.Kids, depth+1)
			}
		}
	}
	walk(m.fields, 0)
}

func hex32(v uint32) string {
	s := strconv.FormatUint(uint64(v), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

func (m *Model) clamp() {
	if m.cursor >= len(m.lines) {
		m.cursor = len(m.lines) - 1
	}
	if m.cursor < 0 {
		m.cursor = 0
	}
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.h > 0 && m.cursor >= m.offset+m.h {
		m.offset = m.cursor - m.h + 1
	}
	if m.offset > len(m.lines)-m.h {
		m.offset = max(0, len(m.lines)-m.h)
	}
}

func (m *Model) setOpen(open bool) {
	f := m.Field()
	if f == nil {
		return
	}
	if len(f.Kids) == 0 || m.closed[f] == !open {
		if !open { // on a leaf or closed node: go to the parent
			d := m.lines[m.cursor].depth
			for p := m.cursor - 1; p >= m.head; p-- {
				if m.lines[p].depth < d {
					m.cursor = p
					break
				}
			}
		}
		return
	}
	if open {
		delete(m.closed, f)
	} else {
		m.closed[f] = true
	}
	m.build()
}

// Update handles keys and mouse events. The root reads the field under
// the cursor with Field after each update.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		km := m.km
		switch {
		case key.Matches(msg, km.Down):
			m.cursor++
		case key.Matches(msg, km.Up):
			m.cursor--
		case key.Matches(msg, km.HalfDown, km.PageDown):
			m.cursor += max(1, m.h/2)
		case key.Matches(msg, km.HalfUp, km.PageUp):
			m.cursor -= max(1, m.h/2)
		case key.Matches(msg, km.Top):
			m.cursor = 0
		case key.Matches(msg, km.Bottom):
			m.cursor = len(m.lines) - 1
		case key.Matches(msg, km.Expand):
			m.setOpen(true)
		case key.Matches(msg, km.Collapse):
			m.setOpen(false)
		case key.Matches(msg, km.Toggle):
			if f := m.Field(); f != nil {
				m.setOpen(m.closed[f])
			}
		case key.Matches(msg, km.ExpandAll):
			m.toggleAll()
		}
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelDown {
			m.cursor += 3
		} else if msg.Button == tea.MouseWheelUp {
			m.cursor -= 3
		}
	case tea.MouseClickMsg:
		if p := m.offset + msg.Y; p < len(m.lines) {
			if p == m.cursor {
				if f := m.Field(); f != nil {
					m.setOpen(m.closed[f])
				}
			}
			m.cursor = p
		}
	}
	m.clamp()
	return m, nil
}

func (m *Model) toggleAll() {
	if len(m.closed) == 0 {
		decode.Walk(m.fields, func(f *decode.Field) bool {
			if len(f.Kids) > 0 {
				m.closed[f] = true
			}
			return true
		})
	} else {
		clear(m.closed)
	}
	f := m.Field()
	m.build()
	for p, l := range m.lines {
		if l.f == f && f != nil {
			m.cursor = p
		}
	}
	m.clamp()
}

// View renders the visible lines.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	var b strings.Builder
	sy := m.sty
	if m.unit == nil {
		b.WriteString(sy.Dim.Render("no unit selected"))
	}
	end := min(m.offset+m.h, len(m.lines))
	for p := m.offset; p < end; p++ {
		if p > m.offset {
			b.WriteByte('\n')
		}
		l := m.lines[p]
		selected := p == m.cursor
		var s string
		if l.f == nil {
			s = l.text
			if !selected {
				switch l.style {
				case 1:
					s = sy.Warning.Render(s)
				case 2:
					s = sy.Error.Render(s)
				case 3:
					s = sy.ChecksumOK.Render(s)
				case 4:
					s = sy.ChecksumMismatch.Render(s)
				case 5:
					s = sy.ChecksumAbsent.Render(s)
				default:
					if p == 0 {
						s = sy.Type.Render(s)
					}
				}
			}
		} else {
			s = m.fieldLine(l, selected)
		}
		if selected {
			st := sy.Selected
			if !m.Focused {
				st = sy.SelectedBlur
			}
			s = st.Render(fit(s, m.w))
		} else {
			s = ansi.Truncate(s, m.w, "…")
		}
		b.WriteString(s)
	}
	for p := max(end-m.offset, 1); p < m.h; p++ {
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *Model) fieldLine(l line, plain bool) string {
	f, sy := l.f, m.sty
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", l.depth))
	switch {
	case len(f.Kids) == 0:
		b.WriteString(sy.Sym.Leaf)
	case m.closed[f]:
		b.WriteString(sy.Sym.Collapsed)
	default:
		b.WriteString(sy.Sym.Expanded)
	}
	b.WriteByte(' ')
	render := func(st interface{ Render(...string) string }, s string) {
		if plain {
			b.WriteString(s)
		} else {
			b.WriteString(st.Render(s))
		}
	}
	render(sy.FieldKey, text.OneLine(f.Key))
	if v := f.Text(); v != "" {
		b.WriteString(": ")
		render(sy.FieldValue, text.OneLine(v))
	} else if len(f.Kids) > 0 && m.closed[f] {
		render(sy.Dim, " {"+strconv.Itoa(len(f.Kids))+"}")
	}
	if f.Encoding != "" {
		b.WriteString("  ")
		render(sy.FieldEnc, "("+text.OneLine(f.Encoding)+")")
	}
	return b.String()
}

func fit(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}
