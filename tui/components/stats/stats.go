package stats

import (
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
	"github.com/wiretap-dev/wiretap/tui/internal/textview"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/store"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// BucketNames label store.LatencyBounds and the overflow bucket.
var BucketNames = [...]string{"<=1ms", "<=5ms", "<=50ms", "<=500ms", "<=1000ms", ">1s"}

// Model is the view.
type Model struct {
	sty *styles.Styles
	km  *keys.KeyMap

	stats     store.Stats
	conns     []*decode.Conn
	notes     []Note
	brokerLat []BrokerLatency
	warnings  []string
	ended     bool
	computing bool
	lines     []string
	offset    int
	w, h      int
}

// New returns an empty view.
func New(km *keys.KeyMap, sty *styles.Styles) Model { return Model{km: km, sty: sty} }

// ChartWidth is how many rate intervals the view wants for width w.
func ChartWidth(w int) int { return max(10, w-12) }

// SetSize sets the view's size.
func (m *Model) SetSize(w, h int) {
	m.w, m.h = w, h
	m.render()
}

// SetStats shows st; conns are the store's connections, in the same order
// as st.PerConn.
func (m *Model) SetStats(st store.Stats, conns []*decode.Conn) {
	m.stats, m.conns, m.computing = st, conns, false
	m.render()
}

// Note is a connection's report (decode.Conn.Notes): a compression ratio,
// a TLS switch, deliveries left unsettled.
type Note struct {
	Conn int // connection ID
	Text string
}

// SetNotes shows the connections' reports; ended says the source has
// ended (a live source's connections report when it stops).
func (m *Model) SetNotes(notes []Note, ended bool) {
	m.notes, m.ended = notes, ended
	m.render()
}

// BrokerLatency is a queue's or exchange's latency inside the embedded
// broker.
type BrokerLatency struct {
	What string // "queue 'work' in vhost '/'"
	// PublishToDeliver and DeliverToAck as the broker measured them.
	PublishToDeliver, DeliverToAck state.Latency
}

// SetBrokerLatency shows the broker's own latency histograms (nil: no
// broker, and no section).
func (m *Model) SetBrokerLatency(ls []BrokerLatency) {
	m.brokerLat = ls
	m.render()
}

// SetWarnings shows the source's warnings (a capture cut short, a limit
// reached): what `read` prints on stderr.
func (m *Model) SetWarnings(ws []string) {
	m.warnings = ws
	m.render()
}

// SetComputing shows that new numbers are on their way.
func (m *Model) SetComputing(on bool) {
	m.computing = on
	m.render()
}

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
		case key.Matches(msg, km.Bottom):
			m.offset = len(m.lines)
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

func (m *Model) render() {
	sy, st := m.sty, m.stats
	var l []string
	add := func(s ...string) { l = append(l, s...) }
	if m.computing {
		add(sy.Dim.Render("computing…"), "")
	}
	add(sy.HelpSection.Render("Traffic"),
		"  "+strconv.Itoa(st.Units)+" units, "+decode.FormatBytes(st.Bytes)+" over "+st.Span.Round(time.Millisecond).String(), "")

	if len(m.warnings) > 0 {
		add(sy.HelpSection.Render("Source warnings"))
		for _, w := range m.warnings {
			add("  " + sy.Warning.Render(sy.Sym.Warning) + " " + text.OneLine(w))
		}
		add("")
	}
	add(sy.HelpSection.Render("Units per type"))
	add(sy.Header.Render(pad("  proto", 12) + pad("type", 26) + lpad("units", 10) + lpad("bytes", 12)))
	// Every type: the view scrolls (j/k, pgup/pgdn).
	for _, t := range st.Types {
		add(pad("  "+t.Proto, 12) + pad(text.OneLine(t.Type), 26) + lpad(strconv.Itoa(t.Units), 10) + lpad(decode.FormatBytes(t.Bytes), 12))
	}
	add("")

	add(sy.HelpSection.Render("Units over time") + "  (one column = " + st.RateStep.Round(time.Microsecond).String() + ")")
	add(m.chart(st.Rate, 6)...)
	add("")

	add(sy.HelpSection.Render("Request → answer latency"))
	add(m.histogram("all connections", st.Overall)...)
	for i, lat := range st.PerConn {
		if lat.N == 0 || i >= len(m.conns) {
			continue
		}
		c := m.conns[i]
		add("")
		add(m.histogram("conn "+strconv.Itoa(c.ID)+" "+c.Proto.String()+" "+c.Client.String()+" → "+c.Server.String(), lat)...)
	}
	if m.brokerLat != nil {
		add("", sy.HelpSection.Render("Latency inside the broker"))
		n := 0
		for _, b := range m.brokerLat {
			for _, h := range []struct {
				name string
				l    state.Latency
			}{{"publish→deliver", b.PublishToDeliver}, {"deliver→ack", b.DeliverToAck}} {
				if h.l.Count == 0 {
					continue
				}
				n++
				line := "  " + text.OneLine(b.What) + " " + h.name + ": " + strconv.FormatUint(h.l.Count, 10) +
					"  p50 " + h.l.P50.String() + "  p99 " + h.l.P99.String() + " "
				for i, c := range h.l.Buckets {
					line += " " + state.LatencyBuckets[i] + " " + strconv.FormatUint(c, 10)
				}
				add(line)
			}
		}
		if n == 0 {
			add(sy.Dim.Render("  nothing delivered yet"))
		}
	}
	add("", sy.HelpSection.Render("Connection notes"))
	switch {
	case len(m.notes) > 0:
		for _, n := range m.notes {
			add("  conn " + strconv.Itoa(n.Conn) + ": " + text.OneLine(n.Text))
		}
	case m.ended:
		add(sy.Dim.Render("  none"))
	default:
		add(sy.Dim.Render("  shown when the source ends (decoders report at connection end)"))
	}
	m.lines = l
	m.offset = max(0, min(m.offset, len(l)-m.h))
}

// chart draws counts as columns of height rows, eight levels per cell.
func (m *Model) chart(counts []int, rows int) []string {
	peak := 0
	for _, c := range counts {
		peak = max(peak, c)
	}
	bars := m.sty.Sym.Bars
	levels := len(bars) - 1
	out := make([]string, 0, rows+1)
	for r := rows - 1; r >= 0; r-- {
		var b strings.Builder
		label := ""
		if r == rows-1 {
			label = strconv.Itoa(peak)
		} else if r == 0 {
			label = "0"
		}
		b.WriteString(m.sty.Axis.Render(lpad(label, 8) + " │"))
		var row strings.Builder
		for _, c := range counts {
			// Eighths of a cell this count reaches above row r.
			e := 0
			if peak > 0 {
				e = c*rows*levels/peak - r*levels
			}
			if c > 0 && e <= 0 && r == 0 {
				e = 1 // a non-zero count is always visible
			}
			e = max(0, min(e, levels))
			row.WriteString(bars[e])
		}
		b.WriteString(m.sty.Bar.Render(row.String()))
		out = append(out, b.String())
	}
	out = append(out, m.sty.Axis.Render(strings.Repeat(" ", 9)+"└"+strings.Repeat("─", len(counts))))
	return out
}

func (m *Model) histogram(title string, lat store.Latency) []string {
	out := []string{"  " + title + ": " + strconv.Itoa(lat.N) + " pairs"}
	if lat.N == 0 {
		return out
	}
	// Past store.ExactLatencies pairs the percentiles come from a
	// histogram: they are marked ≈, with their bound.
	approx, bound := "", ""
	if lat.Approx {
		approx = "≈"
		bound = "  (percentiles within " + strconv.FormatFloat(100*store.LatencyError, 'f', 1, 64) + "%)"
	}
	out[0] += "   p50 " + approx + dur(lat.P50) + "  p90 " + approx + dur(lat.P90) + "  p99 " + approx + dur(lat.P99) + "  max " + dur(lat.Max) + bound
	peak := 0
	for _, n := range lat.Buckets {
		peak = max(peak, n)
	}
	width := max(10, m.w-34)
	for i, n := range lat.Buckets {
		cells := 0
		if peak > 0 {
			cells = n * width / peak
		}
		if n > 0 && cells == 0 {
			cells = 1
		}
		pct := strconv.FormatFloat(100*float64(n)/float64(lat.N), 'f', 1, 64) + "%"
		out = append(out, "    "+pad(BucketNames[i], 10)+lpad(strconv.Itoa(n), 8)+lpad(pct, 7)+" "+m.sty.Bar.Render(strings.Repeat("█", cells)))
	}
	return out
}

func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e3, 'f', 0, 64) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
}

// View renders the visible part.
func (m Model) View() string {
	return textview.Render(m.lines, m.offset, m.w, m.h)
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func lpad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}
