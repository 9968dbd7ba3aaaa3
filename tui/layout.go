package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
)

// rect is a pane's inner area in screen cells.
type rect struct{ x, y, w, h int }

// sideBySide is the width from which detail and bytes share a row.
const sideBySide = 120

// hexOuter is the bytes pane's width when side by side: 16 bytes a line.
const hexOuter = 78

func (m *Model) bodyHeight() int { return max(1, m.h-2) }

// layout sizes every pane for the terminal and the maximised state.
func (m *Model) layout() {
	if m.w <= 0 || m.h <= 0 {
		return
	}
	m.bar.SetSize(m.w, 1)
	m.cmd.SetSize(m.w, 1)
	m.help.SetSize(m.w-2, m.bodyHeight()-2)
	m.stats.SetSize(m.w-2, m.bodyHeight()-2)
	m.panel.SetSize(m.w-2, m.bodyHeight()-2)
	m.rects = [numPanes]rect{}
	m.laidConns = len(m.st.Conns())
	top, bodyH, w := 1, m.bodyHeight(), m.w
	if m.maxed {
		m.place(m.focus, 0, top, w, bodyH)
		return
	}
	connH := min(len(m.st.Conns())+2, max(3, bodyH/5)) + 2
	connH = max(3, connH)
	m.place(PaneConns, 0, top, w, connH)
	rest := bodyH - connH
	y := top + connH
	if w >= sideBySide {
		unitsH := max(3, rest*11/20)
		m.place(PaneUnits, 0, y, w, unitsH)
		bh := max(3, rest-unitsH)
		m.place(PaneDetail, 0, y+unitsH, w-hexOuter, bh)
		m.place(PaneHex, w-hexOuter, y+unitsH, hexOuter, bh)
		return
	}
	if bodyH < compactBelow {
		// Short and narrow: detail and bytes take turns below the units,
		// the bytes when focused.
		unitsH := max(3, rest/2)
		below := PaneDetail
		if m.focus == PaneHex {
			below = PaneHex
		}
		m.place(PaneUnits, 0, y, w, unitsH)
		m.place(below, 0, y+unitsH, w, max(3, rest-unitsH))
		return
	}
	unitsH := max(3, rest*45/100)
	detailH := max(3, rest*30/100)
	hexH := max(3, rest-unitsH-detailH)
	m.place(PaneUnits, 0, y, w, unitsH)
	m.place(PaneDetail, 0, y+unitsH, w, detailH)
	m.place(PaneHex, 0, y+unitsH+detailH, w, hexH)
}

// compactBelow is the body height under which a narrow terminal shows
// detail and bytes in turn rather than both.
const compactBelow = 30

// place gives pane p the outer box (x, y, w, h); its inner area excludes
// the border.
func (m *Model) place(p Pane, x, y, w, h int) {
	r := rect{x + 1, y + 1, max(0, w-2), max(0, h-2)}
	m.rects[p] = r
	switch p {
	case PaneConns:
		m.conns.SetSize(r.w, r.h)
	case PaneUnits:
		m.units.SetSize(r.w, r.h)
	case PaneDetail:
		m.detail.SetSize(r.w, r.h)
	case PaneHex:
		m.hex.SetSize(r.w, r.h)
	}
}

// View renders the program.
func (m Model) View() tea.View {
	screen := m.Render
	if m.pace != nil {
		screen = func() string { return m.pace.render(m.Render) }
	}
	v := tea.NewView(screen())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "wiretap " + m.opt.Title
	return v
}

// Render returns the screen as text (what View shows).
func (m Model) Render() string {
	if m.w <= 0 || m.h <= 0 {
		return "wiretap: starting…"
	}
	lines := make([]string, 0, m.h)
	lines = append(lines, m.titleBar())
	body := m.body()
	if bl := strings.Split(body, "\n"); len(bl) > m.bodyHeight() {
		body = strings.Join(bl[:m.bodyHeight()], "\n")
	}
	lines = append(lines, body)
	bottom := m.bottom()
	if nl := strings.IndexByte(bottom, '\n'); nl >= 0 {
		// Completion candidates cover the body's last line.
		bl := strings.Split(lines[1], "\n")
		bl[len(bl)-1] = bottom[:nl]
		lines[1] = strings.Join(bl, "\n")
		bottom = bottom[nl+1:]
	}
	lines = append(lines, bottom)
	return strings.Join(lines, "\n")
}

func (m *Model) titleBar() string {
	sy := m.sty
	parts := []string{"wiretap"}
	if m.opt.Title != "" {
		parts = append(parts, text.OneLine(m.opt.Title))
	}
	parts = append(parts, group(m.st.Len())+" units")
	if used, budget := m.st.Memory(); budget > 0 {
		mem := "mem " + decode.FormatBytes(used) + "/" + decode.FormatBytes(m.opt.Memory)
		if _, err := m.st.Spilled(); err != nil {
			mem += " (" + err.Error() + ")"
		}
		if n := m.st.Dropped(); n > 0 {
			mem += " " + group(n) + " units not kept"
		}
		parts = append(parts, mem)
	}
	switch {
	case !m.done && m.opt.Progress != nil:
		done, total := m.opt.Progress()
		if total > 0 {
			parts = append(parts, "reading "+strconv.Itoa(int(done*100/total))+"%")
		} else {
			parts = append(parts, "reading "+decode.FormatBytes(done))
		}
	case !m.done && m.opt.Live:
		parts = append(parts, "live")
	case !m.done && m.opt.Units != nil:
		parts = append(parts, "reading…")
	}
	if m.flt.match != nil {
		f := "filter " + m.flt.expr + ": "
		if m.flt.running && m.flt.total > 0 {
			f += "filtering " + strconv.Itoa(int(m.flt.progress.Load()*100/m.flt.total)) + "%"
		} else {
			f += group(m.flt.matched()) + " match"
		}
		parts = append(parts, f)
	}
	if m.units.Follow {
		parts = append(parts, sy.Sym.Follow)
	} else if m.paused {
		parts = append(parts, sy.Sym.Paused)
	}
	if m.opt.ShowSecrets {
		parts = append(parts, "secrets shown")
	}
	if p := m.st.Problems(); p > 0 {
		parts = append(parts, sy.Sym.Warning+" "+group(p)+" with problems")
	}
	if m.opt.Dropped != nil {
		if n := m.opt.Dropped(); n > 0 {
			parts = append(parts, sy.Sym.Warning+" "+group(int(n))+" packets dropped")
		}
	}
	s := " " + strings.Join(parts, " │ ")
	return sy.Title.Render(fitLine(s, m.w))
}

func (m *Model) body() string {
	bodyH := m.bodyHeight()
	switch m.screen {
	case screenHelp:
		return m.frame("Help: every key (esc closes)", m.help.View(), m.w, bodyH, true)
	case screenStats:
		return m.frame("Statistics (esc closes)", m.stats.View(), m.w, bodyH, true)
	case screenBroker:
		return m.frame("Broker: "+m.panel.Section().String()+" (esc closes)", m.panel.View(), m.w, bodyH, true)
	}
	if m.maxed {
		return m.pane(m.focus, m.w, bodyH)
	}
	r := m.rects
	out := []string{m.pane(PaneConns, r[PaneConns].w+2, r[PaneConns].h+2), m.pane(PaneUnits, r[PaneUnits].w+2, r[PaneUnits].h+2)}
	switch {
	case r[PaneDetail].w == 0 || r[PaneHex].w == 0: // compact: one of them
		p := PaneDetail
		if r[PaneDetail].w == 0 {
			p = PaneHex
		}
		out = append(out, m.pane(p, r[p].w+2, r[p].h+2))
	case r[PaneDetail].y == r[PaneHex].y:
		out = append(out, lipgloss.JoinHorizontal(lipgloss.Top,
			m.pane(PaneDetail, r[PaneDetail].w+2, r[PaneDetail].h+2), m.pane(PaneHex, r[PaneHex].w+2, r[PaneHex].h+2)))
	default:
		out = append(out, m.pane(PaneDetail, r[PaneDetail].w+2, r[PaneDetail].h+2), m.pane(PaneHex, r[PaneHex].w+2, r[PaneHex].h+2))
	}
	return strings.Join(out, "\n")
}

func (m *Model) pane(p Pane, w, h int) string {
	title := paneNames[p]
	var content string
	switch p {
	case PaneConns:
		title += " (" + strconv.Itoa(len(m.st.Conns())) + ")"
		content = m.conns.View()
	case PaneUnits:
		title += " " + group(m.units.Len())
		if m.connSel >= 0 || m.flt.match != nil {
			title += " of " + group(m.st.Len())
		}
		if m.st.Len() == 0 {
			content = m.sty.Dim.Render(" waiting for units…")
		} else {
			content = m.units.View()
		}
	case PaneDetail:
		if u := m.detail.Unit(); u != nil {
			title += " #" + strconv.Itoa(u.N)
		}
		content = m.detail.View()
	case PaneHex:
		if u := m.detail.Unit(); u != nil {
			title += " (" + strconv.Itoa(len(u.Raw)) + " bytes)"
		}
		if m.field != nil && m.field.Length > 0 {
			title += " " + text.OneLine(m.field.Key) + " [" + strconv.Itoa(m.field.Offset) + ":" + strconv.Itoa(m.field.Offset+m.field.Length) + "]"
		}
		content = m.hex.View()
	}
	return m.frame(title, content, w, h, m.focus == p)
}

// frame draws a rounded border of outer size w×h around content, with
// title in the top edge.
func (m *Model) frame(title, content string, w, h int, focused bool) string {
	if w < 2 || h < 2 {
		return ""
	}
	bs, ts := m.sty.Border, m.sty.PaneTitle
	if focused {
		bs, ts = m.sty.BorderFocused, m.sty.PaneTitleFocused
	}
	inner := w - 2
	title = ansi.Truncate(" "+title+" ", max(0, inner-2), "…")
	var b strings.Builder
	b.WriteString(bs.Render("╭─"))
	b.WriteString(ts.Render(title))
	b.WriteString(bs.Render(strings.Repeat("─", max(0, inner-1-ansi.StringWidth(title))) + "╮"))
	lines := strings.Split(content, "\n")
	side := bs.Render("│")
	for i := 0; i < h-2; i++ {
		b.WriteByte('\n')
		b.WriteString(side)
		l := ""
		if i < len(lines) {
			l = lines[i]
		}
		b.WriteString(fitLine(l, inner))
		b.WriteString(side)
	}
	b.WriteByte('\n')
	b.WriteString(bs.Render("╰" + strings.Repeat("─", inner) + "╯"))
	return b.String()
}

func (m *Model) bottom() string {
	switch {
	case m.bar.Active:
		return m.bar.View()
	case m.cmd.Active:
		return m.cmd.View()
	case m.status != "":
		st := m.sty.Status
		if m.isErr {
			st = m.sty.StatusErr
		}
		return st.Render(fitLine(" "+m.status, m.w))
	}
	hints := " ? help  / filter  s search  : command  tab pane  z maximise  a answer  m mark  S stats  q quit"
	if m.opt.Broker != nil {
		hints = " ? help  / filter  s search  : command  tab pane  z maximise  a answer  b broker  S stats  q quit"
	}
	switch m.screen {
	case screenBroker:
		hints = " 1-9 0 section  tab next  j/k select  enter show its units  : route EXCHANGE KEY  esc back"
	case screenStats, screenHelp:
		hints = " esc back  j/k scroll  q back"
	}
	return m.sty.Dim.Render(fitLine(hints, m.w))
}

// fitLine truncates or pads s (which may hold escape sequences) to w cells.
func fitLine(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}

// group formats n with thousands separators.
func group(n int) string {
	s := strconv.Itoa(n)
	if n < 10000 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	b.WriteString(s[:pre])
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
