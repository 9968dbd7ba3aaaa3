package unitlist

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/store"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Model is the list.
type Model struct {
	st  *store.Store
	sty *styles.Styles
	km  *keys.KeyMap

	base     store.Rows // rows before groups are expanded
	flat     bool       // base already lists nested units (a filter result)
	rows     *shown     // what is shown
	expanded map[int32]bool

	cursor, offset int
	w, h           int
	Focused        bool
	// Follow keeps the cursor on the newest unit as units arrive.
	Follow bool

	marks map[int32]byte
}

// New returns an empty list over st.
func New(st *store.Store, km *keys.KeyMap, sty *styles.Styles) Model {
	return Model{st: st, km: km, sty: sty, expanded: map[int32]bool{}, marks: map[int32]byte{}, rows: &shown{}}
}

// SetSize sets the pane's inner size; the first line is the header.
func (m *Model) SetSize(w, h int) {
	m.w, m.h = w, h
	m.clamp()
}

func (m *Model) page() int {
	if m.h <= 1 {
		return 1
	}
	return m.h - 1
}

// Len returns the number of rows shown.
func (m *Model) Len() int { return m.rows.Len() }

// Rows returns the unit indices shown, in order; it does not change as the
// list does, so a background search may read it.
func (m *Model) Rows() store.Seq { return m.rows }

// Cursor returns the cursor's row.
func (m *Model) Cursor() int { return m.cursor }

// Selected returns the unit index under the cursor, or -1.
func (m *Model) Selected() int32 {
	if m.cursor < 0 || m.cursor >= m.rows.Len() {
		return -1
	}
	return m.rows.At(m.cursor)
}

// SetMark records (or, with letter 0, clears) the mark shown on unit ix.
func (m *Model) SetMark(ix int32, letter byte) {
	for k, v := range m.marks {
		if v == letter {
			delete(m.marks, k)
		}
	}
	if letter != 0 {
		m.marks[ix] = letter
	}
}

// SetBase replaces the rows (store.Top() when unfiltered, or a filter's
// result with flat set), keeping the selected unit when it is still there.
func (m *Model) SetBase(base store.Rows, flat bool) {
	sel := m.Selected()
	m.base, m.flat = base, flat
	m.rebuild()
	if sel >= 0 && !m.Follow {
		if p := m.find(sel); p >= 0 {
			m.cursor = p
			m.offset = p - m.page()/2
		}
	}
	if m.Follow {
		m.cursor = m.rows.Len() - 1
	}
	m.clamp()
}

// Grow extends the base (new units of a live source). It costs
// O(expanded groups).
func (m *Model) Grow(base store.Rows) {
	if base.Len() < m.base.Len() {
		m.SetBase(base, m.flat)
		return
	}
	m.base = base
	m.rebuild()
	if m.Follow {
		m.cursor = m.rows.Len() - 1
	}
	m.clamp()
}

func (m *Model) anyExpanded() bool { return len(m.expanded) > 0 && !m.flat }

func (m *Model) rebuild() { m.rows = newShown(m.base, m.st, m.expanded, m.flat) }

func (m *Model) find(ix int32) int {
	// The cursor's neighbourhood first: jumps are usually short.
	for d := 0; d < 64; d++ {
		for _, p := range [2]int{m.cursor + d, m.cursor - d} {
			if p >= 0 && p < m.rows.Len() && m.rows.At(p) == ix {
				return p
			}
		}
	}
	return m.rows.find(ix)
}

// Select moves the cursor to unit ix, expanding its container if it is
// collapsed. It reports whether ix is in the list.
func (m *Model) Select(ix int32) bool {
	p := m.find(ix)
	if p < 0 && !m.flat {
		if parent := m.st.Parent(ix); parent >= 0 && !m.expanded[parent] {
			m.expanded[parent] = true
			m.rebuild()
			p = m.find(ix)
		}
	}
	if p < 0 {
		return false
	}
	m.Follow = false
	m.cursor = p
	m.clamp()
	return true
}

// SetCursor moves the cursor to row p.
func (m *Model) SetCursor(p int) {
	m.cursor = p
	m.clamp()
}

func (m *Model) clamp() {
	n := m.rows.Len()
	if m.cursor >= n {
		m.cursor = n - 1
	}
	if m.cursor < 0 {
		m.cursor = 0
	}
	pg := m.page()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+pg {
		m.offset = m.cursor - pg + 1
	}
	if m.offset > n-pg {
		m.offset = n - pg
	}
	if m.offset < 0 {
		m.offset = 0
	}
}

// Toggle expands or collapses the group under the cursor; on a nested
// row it collapses the container and moves to it.
func (m *Model) Toggle() { m.setOpen(!m.expanded[m.Selected()] || !m.st.HasKids(m.Selected())) }

func (m *Model) setOpen(open bool) {
	ix := m.Selected()
	if ix < 0 || m.flat {
		return
	}
	if !m.st.HasKids(ix) {
		if open {
			return
		}
		parent := m.st.Parent(ix)
		if parent < 0 {
			return
		}
		ix = parent
	}
	if m.expanded[ix] == open {
		if !open {
			m.Select(ix)
		}
		return
	}
	if open {
		m.expanded[ix] = true
	} else {
		delete(m.expanded, ix)
	}
	m.rebuild()
	m.Select(ix)
	if open { // show the group's rows too, if they fit
		if end := m.cursor + len(m.st.Kids(ix)); end >= m.offset+m.page() {
			m.offset = min(m.cursor, end-m.page()+1)
		}
	}
}

// ToggleAll expands every group, or collapses them all if any is open.
func (m *Model) ToggleAll() {
	if m.flat {
		return
	}
	sel := m.Selected()
	if len(m.expanded) > 0 {
		clear(m.expanded)
		if p := m.st.Parent(sel); p >= 0 {
			sel = p
		}
	} else {
		m.base.Range(0, m.base.Len(), func(_ int, ix int32) bool {
			if m.st.HasKids(ix) {
				m.expanded[ix] = true
			}
			return true
		})
	}
	m.rebuild()
	m.Select(sel)
}

// Update handles keys and mouse events for the list. The root reads the
// selection with Selected after each update.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		km := m.km
		switch {
		case key.Matches(msg, km.Down):
			m.move(1)
		case key.Matches(msg, km.Up):
			m.move(-1)
		case key.Matches(msg, km.HalfDown):
			m.move(m.page() / 2)
		case key.Matches(msg, km.HalfUp):
			m.move(-m.page() / 2)
		case key.Matches(msg, km.PageDown):
			m.move(m.page())
		case key.Matches(msg, km.PageUp):
			m.move(-m.page())
		case key.Matches(msg, km.Top):
			m.Follow = false
			m.SetCursor(0)
		case key.Matches(msg, km.Bottom):
			m.SetCursor(m.rows.Len() - 1)
		case key.Matches(msg, km.Expand):
			m.setOpen(true)
		case key.Matches(msg, km.Collapse):
			m.setOpen(false)
		case key.Matches(msg, km.Toggle):
			m.Toggle()
		case key.Matches(msg, km.ExpandAll):
			m.ToggleAll()
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelDown:
			m.scroll(3)
		case tea.MouseWheelUp:
			m.scroll(-3)
		}
	case tea.MouseClickMsg:
		// Y is relative to the pane's inner area (the root translates it).
		if row := m.offset + msg.Y - 1; msg.Y >= 1 && row < m.rows.Len() {
			if row == m.cursor && msg.Button == tea.MouseLeft {
				m.Toggle()
			} else {
				m.SetCursor(row)
			}
		}
	}
	return m, nil
}

func (m *Model) move(d int) {
	if d < 0 {
		m.Follow = false
	}
	m.SetCursor(m.cursor + d)
}

// scroll moves the view (and the cursor with it, vim's ctrl-e/ctrl-y).
func (m *Model) scroll(d int) {
	if d < 0 {
		m.Follow = false
	}
	m.offset += d
	m.cursor += d
	m.clamp()
}

// Columns (display cells).
const (
	colNo   = 8
	colTime = 11
	colConn = 3
	colDir  = 3
	colCh   = 4
	colFlag = 2
	colType = 22
)

func (m *Model) wide() bool { return m.w >= 90 }

// View renders the header and the visible rows.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow((m.w + 16) * m.h)
	var line []byte
	line = append(line, ' ', ' ')
	line = padLeft(line, "No.", colNo)
	if m.wide() {
		line = append(line, ' ')
		line = padLeft(line, "Time", colTime)
	}
	line = append(line, ' ')
	line = padLeft(line, "C", colConn-1)
	line = append(line, ' ')
	line = padRight(line, "Dir", colDir+1)
	if m.wide() {
		line = padRight(line, "Ch", colCh)
	}
	line = padRight(line, "✓!", colFlag+1)
	line = padRight(line, "Type", colType+1)
	line = append(line, "Summary"...)
	b.WriteString(m.sty.Header.Render(fit(string(line), m.w)))
	first := m.st.First()
	end := min(m.offset+m.page(), m.rows.Len())
	for p := m.offset; p < end; p++ {
		b.WriteByte('\n')
		ix := m.rows.At(p)
		b.WriteString(m.row(ix, p == m.cursor, first.UnixNano()))
	}
	for p := end - m.offset; p < m.page(); p++ {
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *Model) row(ix int32, selected bool, first int64) string {
	u := m.st.Unit(ix)
	sy := m.sty
	nested := u.Parent != nil
	plain := selected // the selected row is one style, so no inner styles
	var b strings.Builder
	style := func(s string, st interface{ Render(...string) string }) {
		if plain {
			b.WriteString(s)
		} else {
			b.WriteString(st.Render(s))
		}
	}
	var num [24]byte
	// The cursor is also a glyph, so it shows without colour or reverse video.
	if selected {
		b.WriteString("▶")
	} else {
		b.WriteByte(' ')
	}
	if mk := m.marks[ix]; mk != 0 {
		style(string(rune(mk)), sy.Mark)
	} else {
		b.WriteByte(' ')
	}
	b.Write(padLeft(num[:0], strconv.Itoa(u.N), colNo))
	if m.wide() {
		b.WriteByte(' ')
		ts := relTime(num[:0], u.UnixNano()-first)
		style(string(padLeft(ts[:0:0], string(ts), colTime)), sy.Time)
	}
	b.WriteByte(' ')
	cid := 0
	if u.Conn != nil {
		cid = u.Conn.ID
	}
	b.Write(padLeft(num[:0], strconv.Itoa(cid), colConn-1))
	b.WriteByte(' ')
	dir := u.Dir.String()
	dst := sy.DirF
	if u.Dir == decode.DirB {
		dst = sy.DirB
	}
	if nested {
		dir += "*"
	}
	style(string(padRight(num[:0], dir, colDir)), dst)
	b.WriteByte(' ')
	if m.wide() {
		ch := ""
		if u.HasChannel {
			ch = strconv.Itoa(int(u.Channel))
		}
		b.Write(padRight(num[:0], ch, colCh))
	}
	// Badges: checksum, then problem.
	switch ck := u.Checksum(); {
	case ck == nil:
		b.WriteByte(' ')
	case ck.Status == decode.ChecksumOK:
		style(sy.Sym.ChecksumOK, sy.ChecksumOK)
	case ck.Status == decode.ChecksumMismatch:
		style(sy.Sym.ChecksumMismatch, sy.ChecksumMismatch)
	default:
		style(sy.Sym.ChecksumAbsent, sy.ChecksumAbsent)
	}
	switch {
	case u.Err() != "":
		style(sy.Sym.Error, sy.Error)
	case len(u.Warnings()) > 0:
		style(sy.Sym.Warning, sy.Warning)
	default:
		b.WriteByte(' ')
	}
	b.WriteByte(' ')
	var typ []byte
	switch {
	case nested:
		typ = append(typ, "  "+sy.Sym.Nested+" "...)
	case !m.flat && m.st.HasKids(ix):
		if m.expanded[ix] {
			typ = append(typ, sy.Sym.Expanded+" "...)
		} else {
			typ = append(typ, sy.Sym.Collapsed+" "...)
		}
	}
	typ = append(typ, text.OneLine(u.Type)...)
	style(fit(string(typ), colType), sy.Type)
	b.WriteByte(' ')
	b.WriteString(text.OneLine(u.Summary))
	s := b.String()
	if selected {
		st := sy.Selected
		if !m.Focused {
			st = sy.SelectedBlur
		}
		return st.Render(fit(s, m.w))
	}
	return ansi.Truncate(s, m.w, "…")
}

// relTime formats nanoseconds as seconds with microseconds.
func relTime(dst []byte, ns int64) []byte {
	if ns < 0 {
		dst = append(dst, '-')
		ns = -ns
	}
	dst = strconv.AppendInt(dst, ns/1e9, 10)
	dst = append(dst, '.')
	us := (ns % 1e9) / 1e3
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = byte('0' + us%10)
		us /= 10
	}
	return append(dst, d[:]...)
}

func padLeft(dst []byte, s string, w int) []byte {
	for i := ansi.StringWidth(s); i < w; i++ {
		dst = append(dst, ' ')
	}
	return append(dst, s...)
}

func padRight(dst []byte, s string, w int) []byte {
	dst = append(dst, s...)
	for i := ansi.StringWidth(s); i < w; i++ {
		dst = append(dst, ' ')
	}
	return dst
}

// fit truncates or pads s to exactly w cells.
func fit(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}
