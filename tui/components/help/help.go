package help

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/tui/internal/textview"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Commands documents the ":" command line.
var Commands = [][2]string{
	{":goto N", "go to unit N (also NG)"},
	{":filter EXPR", "apply a display filter (empty: clear)"},
	{":search TEXT", "search summaries and field values"},
	{":conn N", "show connection N only (0: all)"},
	{":save FILE.pcapng", "save the shown units (or the connection) as pcapng"},
	{":export FILE.json", "export the shown units as JSON lines"},
	{":definitions export FILE", "broker: write its definitions (RabbitMQ's JSON)"},
	{":follow", "follow new units"},
	{":stats", "statistics view"},
	{":broker", "broker panel (also b)"},
	{":route [-v VHOST] EXCHANGE KEY [H=V ...]", "broker: explain how a publish would be routed"},
	{":fault", "proxy: list the fault rules, with what each injected"},
	{":fault off N / on N", "proxy: turn fault rule N off or on, live"},
	{":fault add RULE", "proxy: add a fault rule (e.g. delay 50ms, drop when FILTER)"},
	{":q", "quit"},
}

// Model is the screen.
type Model struct {
	sty    *styles.Styles
	km     *keys.KeyMap
	lines  []string
	offset int
	w, h   int
}

// New builds the screen from km.
func New(km *keys.KeyMap, sty *styles.Styles) Model {
	m := Model{km: km, sty: sty}
	m.build()
	return m
}

func (m *Model) build() {
	sy := m.sty
	var l []string
	for _, s := range m.km.Sections() {
		l = append(l, sy.HelpSection.Render(s.Title))
		for _, b := range s.Bindings {
			h := b.Help()
			l = append(l, "  "+sy.HelpKey.Render(pad(h.Key, 20))+sy.HelpDesc.Render(h.Desc))
		}
		l = append(l, "")
	}
	l = append(l, sy.HelpSection.Render("Mouse"),
		"  "+sy.HelpKey.Render(pad("click", 20))+"select a row or pane (click again: expand / collapse)",
		"  "+sy.HelpKey.Render(pad("wheel", 20))+"scroll the pane under the pointer", "")
	l = append(l, sy.HelpSection.Render("Commands (:)"))
	for _, c := range Commands {
		l = append(l, "  "+sy.HelpKey.Render(pad(c[0], 20))+c[1])
	}
	l = append(l, "", sy.HelpSection.Render("Display filter (/)"),
		`  amqp.method == "basic.publish"   amqp.channel == 2   pgsql.type == "DataRow"`,
		`  amqp.checksum == "mismatch"   frame.len > 1000   && || ! ( )   contains   matches "re"`,
		"  tab completes field names; the failing part of an expression is underlined.", "",
		sy.HelpSection.Render("Badges"),
		"  "+sy.ChecksumOK.Render(sy.Sym.ChecksumOK)+" checksum ok   "+sy.ChecksumMismatch.Render(sy.Sym.ChecksumMismatch)+" checksum mismatch   "+
			sy.ChecksumAbsent.Render(sy.Sym.ChecksumAbsent)+" checksum absent   "+sy.Warning.Render(sy.Sym.Warning)+" warning   "+sy.Error.Render(sy.Sym.Error)+" error",
		"  "+sy.Sym.Collapsed+"/"+sy.Sym.Expanded+" CompressedMessages with its B* messages (collapsed / expanded)")
	m.lines = l
}

// SetSize sets the screen's size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Update scrolls.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch km := m.km; {
		case key.Matches(msg, km.Down):
			m.offset++
		case key.Matches(msg, km.Up):
			m.offset--
		case key.Matches(msg, km.PageDown, km.HalfDown):
			m.offset += max(1, m.h/2)
		case key.Matches(msg, km.PageUp, km.HalfUp):
			m.offset -= max(1, m.h/2)
		case key.Matches(msg, km.Top):
			m.offset = 0
		}
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelDown {
			m.offset += 3
		} else if msg.Button == tea.MouseWheelUp {
			m.offset -= 3
		}
	}
	m.offset = max(0, min(m.offset, len(m.lines)-m.h))
	return m, nil
}

// View renders the visible part.
func (m Model) View() string {
	return textview.Render(m.lines, m.offset, m.w, m.h)
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s + " "
}
