package brokerpanel

import (
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Section is one of the panel's views.
type Section uint8

const (
	SectionOverview Section = iota
	SectionExchanges
	SectionQueues
	SectionBindings
	SectionConnections
	SectionChannels
	SectionConsumers
	SectionUsers // users and vhosts
	SectionPermissions
	SectionRoute   // the last :route explained
	SectionLatency // publish-to-deliver and deliver-to-ack histograms
	NumSections
)

var sectionNames = [NumSections]string{"Overview", "Exchanges", "Queues", "Bindings", "Connections",
	"Channels", "Consumers", "Users & vhosts", "Permissions", "Route", "Latency"}

func (s Section) String() string {
	if s < NumSections {
		return sectionNames[s]
	}
	return "Section(" + strconv.Itoa(int(s)) + ")"
}

// tabName is the section's name in the section bar, shorter than String
// where it has to be for eleven tabs to fit 140 columns.
func (s Section) tabName() string {
	switch s {
	case SectionUsers:
		return "Users"
	case SectionPermissions:
		return "Perms"
	}
	return s.String()
}

// key is the digit that selects the section.
func (s Section) key() string {
	if s == SectionLatency {
		return "L"
	}
	return strconv.Itoa((int(s) + 1) % 10)
}

// JumpMsg asks the root to show units: those of connection Flow (its
// number in the unit list) when Flow > 0, else those a display filter
// built for Queue or Exchange matches.
type JumpMsg struct {
	Flow         int
	Connection   string // the connection's RabbitMQ name, for the status line
	VHost        string
	Queue        string
	ConsumerTags []string // the queue's consumers, whose deliveries name no queue
	Exchange     string
	IsExchange   bool // Exchange is meant, even "" (the default exchange)
}

// Filter is the display filter for a queue or exchange jump.
func (j JumpMsg) Filter() string {
	if j.IsExchange {
		return ExchangeFilter(j.Exchange)
	}
	return QueueFilter(j.Queue, j.ConsumerTags)
}

type row struct {
	text string
	id   string   // keeps the selection on the same item across refreshes
	jump *JumpMsg // what enter does; nil: nothing
}

// Model is the panel.
type Model struct {
	sty *styles.Styles
	km  *keys.KeyMap

	snap    Snapshot
	ovRates [3]rate // publish, deliver, ack
	qRates  map[string]queueRates
	has     bool // a snapshot was set

	route    *state.Route
	routeErr string
	routeQ   string // the command line explained

	sec    Section
	cursor [NumSections]int
	offset [NumSections]int
	header string
	rows   []row
	text   bool // the section is text to scroll, not rows to select
	w, h   int
}

// New returns an empty panel on the overview.
func New(km *keys.KeyMap, sty *styles.Styles) Model {
	m := Model{km: km, sty: sty}
	m.build()
	return m
}

// SetSize sets the panel's size.
func (m *Model) SetSize(w, h int) {
	m.w, m.h = w, h
	m.clamp()
}

// SetSnapshot shows s, with rates against the snapshot shown before.
func (m *Model) SetSnapshot(s Snapshot) {
	var prev *Snapshot
	if m.has {
		prev = &m.snap
	}
	m.ovRates, m.qRates = rates(prev, &s)
	m.snap, m.has = s, true
	m.build()
}

// SetRoute shows a route explained for the command line query (or the
// error explaining it), and switches to the route section.
func (m *Model) SetRoute(query string, r state.Route, err error) {
	m.routeQ = query
	if err != nil {
		m.route, m.routeErr = nil, err.Error()
	} else {
		m.route, m.routeErr = &r, ""
	}
	m.sec = SectionRoute
	m.cursor[SectionRoute], m.offset[SectionRoute] = 0, 0
	m.build()
}

// Section returns the section shown.
func (m *Model) Section() Section { return m.sec }

// SetSection shows section s.
func (m *Model) SetSection(s Section) {
	if s < NumSections {
		m.sec = s
		m.build()
	}
}

// Selected returns the jump under the cursor, if any.
func (m *Model) Selected() (JumpMsg, bool) {
	if m.text || m.cursor[m.sec] >= len(m.rows) {
		return JumpMsg{}, false
	}
	if j := m.rows[m.cursor[m.sec]].jump; j != nil {
		return *j, true
	}
	return JumpMsg{}, false
}

// Update moves the cursor, switches sections, and on enter returns a
// command that reports the selected row's JumpMsg.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	c := &m.cursor[m.sec]
	page := max(1, m.listHeight()-1)
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch km := m.km; {
		case key.Matches(msg, km.BrokerSection):
			s := msg.String()
			n := Section(s[0] - '1')
			if s == "0" {
				n = SectionRoute
			}
			m.SetSection(n)
			return m, nil
		case key.Matches(msg, km.BrokerLatency):
			m.SetSection(SectionLatency)
			return m, nil
		case key.Matches(msg, km.BrokerNext):
			m.SetSection((m.sec + 1) % NumSections)
			return m, nil
		case key.Matches(msg, km.BrokerPrev):
			m.SetSection((m.sec + NumSections - 1) % NumSections)
			return m, nil
		case key.Matches(msg, km.BrokerJump):
			if j, ok := m.Selected(); ok {
				return m, func() tea.Msg { return j }
			}
			return m, nil
		case key.Matches(msg, km.Down):
			*c++
		case key.Matches(msg, km.Up):
			*c--
		case key.Matches(msg, km.PageDown):
			*c += page
		case key.Matches(msg, km.PageUp):
			*c -= page
		case key.Matches(msg, km.HalfDown):
			*c += max(1, page/2)
		case key.Matches(msg, km.HalfUp):
			*c -= max(1, page/2)
		case key.Matches(msg, km.Top):
			*c = 0
		case key.Matches(msg, km.Bottom):
			*c = len(m.rows)
		}
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelDown {
			*c += 3
		} else if msg.Button == tea.MouseWheelUp {
			*c -= 3
		}
	}
	m.clamp()
	return m, nil
}

// listHeight is the rows' share of the panel: below the tabs and the
// header.
func (m *Model) listHeight() int {
	h := m.h - 2
	if m.header != "" {
		h--
	}
	return max(1, h)
}

// clamp keeps the cursor on a row and the row on the screen. In a text
// section the cursor is the first line shown.
func (m *Model) clamp() {
	s, lh := m.sec, m.listHeight()
	c, off := &m.cursor[s], &m.offset[s]
	if m.text {
		*c = max(0, min(*c, len(m.rows)-lh))
		*off = *c
		return
	}
	*c = max(0, min(*c, len(m.rows)-1))
	if *c < *off {
		*off = *c
	}
	if *c >= *off+lh {
		*off = *c - lh + 1
	}
	*off = max(0, min(*off, len(m.rows)-lh))
}

// build renders the section's rows, keeping the cursor on the item it
// was on.
func (m *Model) build() {
	var was string
	if c := m.cursor[m.sec]; c < len(m.rows) && !m.text {
		was = m.rows[c].id
	}
	m.header, m.rows, m.text = "", m.rows[:0:0], false
	switch m.sec {
	case SectionOverview:
		m.text = true
		m.overview()
	case SectionExchanges:
		m.exchanges()
	case SectionQueues:
		m.queues()
	case SectionBindings:
		m.bindings()
	case SectionConnections:
		m.connections()
	case SectionChannels:
		m.channels()
	case SectionConsumers:
		m.consumers()
	case SectionUsers:
		m.users()
	case SectionPermissions:
		m.permissions()
	case SectionRoute:
		m.text = true
		m.routeLines()
	case SectionLatency:
		m.latency()
	}
	if was != "" {
		for i, r := range m.rows {
			if r.id == was {
				m.cursor[m.sec] = i
				break
			}
		}
	}
	m.clamp()
}

// count is how many items a section lists, for its tab.
func (m *Model) count(s Section) int {
	switch s {
	case SectionExchanges:
		return len(m.snap.Exchanges)
	case SectionQueues:
		return len(m.snap.Queues)
	case SectionBindings:
		return len(m.snap.Bindings)
	case SectionConnections:
		return len(m.snap.Connections)
	case SectionChannels:
		return len(m.snap.Channels)
	case SectionConsumers:
		return len(m.snap.Consumers)
	case SectionUsers:
		return len(m.snap.Users)
	case SectionPermissions:
		return len(m.snap.Permissions)
	}
	return -1
}

// tabs is the section bar; when it does not fit, sections other than
// the current one shrink to their digit.
func (m *Model) tabs() string {
	sy := m.sty
	// level 2: names and counts, 1: names, 0: digits.
	label := func(s Section, level int) string {
		l := s.key()
		if level > 0 {
			l += " " + s.tabName()
		}
		if n := m.count(s); n >= 0 && level > 1 {
			l += " (" + strconv.Itoa(n) + ")"
		}
		return l
	}
	var out string
	for level := 2; level >= 0; level-- {
		var b strings.Builder
		for s := Section(0); s < NumSections; s++ {
			if s == m.sec {
				b.WriteString(sy.PaneTitleFocused.Render("[" + label(s, 2) + "]"))
			} else {
				b.WriteString(sy.Dim.Render(" " + label(s, level) + " "))
			}
		}
		if out = b.String(); ansi.StringWidth(out) <= m.w {
			break
		}
	}
	return out
}

// View renders the panel: the section bar, the header, the rows.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	sy := m.sty
	lines := make([]string, 0, m.h)
	lines = append(lines, ansi.Truncate(m.tabs(), m.w, "…"), "")
	if m.header != "" {
		lines = append(lines, sy.Header.Render(ansi.Truncate(m.header, m.w, "…")))
	}
	lh := m.listHeight()
	off := m.offset[m.sec]
	for i := off; i < min(off+lh, len(m.rows)); i++ {
		l := m.rows[i].text
		if !m.text && i == m.cursor[m.sec] {
			l = sy.Selected.Render(fit("›"+l, m.w))
		} else {
			l = " " + l
		}
		lines = append(lines, ansi.Truncate(l, m.w, "…"))
	}
	for len(lines) < m.h {
		lines = append(lines, "")
	}
	return strings.Join(lines[:m.h], "\n")
}

func fit(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return ansi.Truncate(s, w, "…")
}

func (m *Model) add(text, id string, j *JumpMsg) { m.rows = append(m.rows, row{text, id, j}) }

func (m *Model) none(what string) {
	m.add(m.sty.Dim.Render("no "+what), "", nil)
}

// since says how long ago t was at the snapshot's time.
func (m *Model) since(t time.Time) string {
	if t.IsZero() || m.snap.At.IsZero() {
		return "-"
	}
	return m.snap.At.Sub(t).Round(time.Second).String()
}
