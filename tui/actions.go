package tui

import (
	"iter"
	"os"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/components/cmdline"
	"github.com/wiretap-dev/wiretap/tui/components/filterbar"
	"github.com/wiretap-dev/wiretap/tui/components/stats"
	"github.com/wiretap-dev/wiretap/tui/store"
)

// jumpTo selects unit ix, remembering where the cursor was so that Back
// returns there.
func (m *Model) jumpTo(ix int32, remember bool) bool {
	from := m.units.Selected()
	if !m.units.Select(ix) {
		m.setStatus("#"+strconv.Itoa(m.st.Unit(ix).N)+" is hidden by the filter or connection choice (esc clears them)", true)
		return false
	}
	if remember && from >= 0 && from != ix {
		m.jumps = append(m.jumps, from)
		if len(m.jumps) > 256 {
			m.jumps = m.jumps[1:]
		}
	}
	return true
}

func (m *Model) back() {
	if len(m.jumps) == 0 {
		m.setStatus("no earlier position", true)
		return
	}
	ix := m.jumps[len(m.jumps)-1]
	m.jumps = m.jumps[:len(m.jumps)-1]
	m.jumpTo(ix, false)
}

// jumpPair goes from a request to its answer (answer true) or from an
// answer to its request.
func (m *Model) jumpPair(answer bool) {
	ix := m.units.Selected()
	if ix < 0 {
		return
	}
	u := m.st.Unit(ix)
	var to int32
	if answer {
		to = m.st.Answer(ix)
	} else {
		to = m.st.Request(ix)
	}
	if to < 0 {
		what := "no answer to " + u.Type + " #" + strconv.Itoa(u.N) + " found"
		if req := m.st.Request(ix); answer && req >= 0 {
			what = u.Type + " #" + strconv.Itoa(u.N) + " is the answer to " + m.st.Unit(req).Type + " #" + strconv.Itoa(m.st.Unit(req).N) + " (A goes there)"
		}
		if !answer {
			what = u.Type + " #" + strconv.Itoa(u.N) + " answers no request found"
		}
		m.setStatus(what, true)
		return
	}
	if m.jumpTo(to, true) {
		t := m.st.Unit(to)
		d := t.Time().Sub(u.Time())
		if d < 0 {
			d = -d
		}
		m.setStatus(u.Type+" #"+strconv.Itoa(u.N)+" ↔ "+t.Type+" #"+strconv.Itoa(t.N)+" in "+d.String()+"  (ctrl+o: back)", false)
	}
}

func (m *Model) gotoN(n int) {
	ix := m.st.IndexOfN(n)
	if ix < 0 {
		m.setStatus("no unit #"+strconv.Itoa(n), true)
		return
	}
	m.units.Follow = false
	m.jumpTo(ix, true)
}

// openStats shows the statistics view and computes its numbers in the
// background (pairing a million units takes a moment).
func (m *Model) openStats() tea.Cmd {
	m.screen = screenStats
	m.layout()
	m.stats.SetComputing(true)
	units, conns, width := m.st.Snapshot(), m.st.Conns(), stats.ChartWidth(m.w-2)
	notes := m.connNotes()
	if m.opt.Warnings != nil {
		m.stats.SetWarnings(m.opt.Warnings())
	}
	src := m.opt.Broker
	return func() tea.Msg {
		msg := statsMsg{store.StatsOf(units, width), conns[:len(conns):len(conns)], notes, nil}
		if src != nil {
			msg.brokerLat = []stats.BrokerLatency{}
			for _, q := range src.Queues() {
				msg.brokerLat = append(msg.brokerLat, stats.BrokerLatency{What: "queue '" + q.Name + "' in vhost '" + q.VHost + "'",
					PublishToDeliver: q.PublishToDeliver, DeliverToAck: q.DeliverToAck})
			}
			for _, x := range src.Exchanges() {
				n := x.Name
				if n == "" {
					n = "(AMQP default)"
				}
				msg.brokerLat = append(msg.brokerLat, stats.BrokerLatency{What: "exchange '" + n + "' in vhost '" + x.VHost + "'",
					PublishToDeliver: x.PublishToDeliver, DeliverToAck: x.DeliverToAck})
			}
		}
		return msg
	}
}

// connNotes copies the connections' reports (compression ratios, TLS,
// deliveries left open). Decoders write them when a connection ends, on
// the source's goroutine, so they are read only once the source has
// closed its channel; a live source's notes show when it stops.
func (m *Model) connNotes() []stats.Note {
	if !m.done {
		return nil
	}
	var out []stats.Note
	for _, c := range m.st.Conns() {
		for _, n := range c.Notes {
			out = append(out, stats.Note{Conn: c.ID, Text: n})
		}
	}
	return out
}

type statsMsg struct {
	st        store.Stats
	conns     []*decode.Conn
	notes     []stats.Note
	brokerLat []stats.BrokerLatency // nil without a broker
}

func (m *Model) barApplied(msg filterbar.AppliedMsg) tea.Cmd {
	m.layout()
	if msg.Mode == filterbar.ModeSearch {
		m.search.text = msg.Expr
		if msg.Expr == "" {
			return nil
		}
		return m.find(+1)
	}
	if msg.Expr != m.flt.expr {
		return m.setFilter(msg.Expr, msg.Match)
	}
	return nil
}

// exec runs a ":" command.
func (m *Model) exec(c cmdline.ExecMsg) tea.Cmd {
	switch c.Name {
	case "quit":
		return tea.Quit
	case "goto":
		n, err := strconv.Atoi(strings.TrimPrefix(c.Arg, "#"))
		if err != nil {
			m.setStatus("goto: want a unit number", true)
			return nil
		}
		m.gotoN(n)
	case "filter":
		if strings.TrimSpace(c.Arg) == "" {
			return m.setFilter("", nil)
		}
		match, err := m.lang.Compile(c.Arg)
		if err != nil {
			m.setStatus(err.Error(), true)
			return nil
		}
		return m.setFilter(c.Arg, match)
	case "search":
		m.search.text = c.Arg
		return m.find(+1)
	case "conn":
		n, err := strconv.Atoi(c.Arg)
		ci := m.st.ConnByID(n)
		switch total := len(m.st.Conns()); {
		case err != nil || n < 0:
			m.setStatus("conn: want a connection number, or 0 for all", true)
			return nil
		case n != 0 && ci < 0 && total == 0:
			m.setStatus("conn "+c.Arg+": no connection yet", true)
			return nil
		case n != 0 && ci < 0 && total == 1:
			m.setStatus("conn "+c.Arg+": there is one connection, 1 (0 shows all)", true)
			return nil
		case n != 0 && ci < 0:
			m.setStatus("conn "+c.Arg+": connections are 1 to "+strconv.Itoa(total)+" (0 shows all)", true)
			return nil
		}
		m.conns.Choose(ci)
	case "follow":
		m.setFollow(true)
	case "stats":
		return m.openStats()
	case "broker":
		return m.openBroker()
	case "route":
		return m.route(c.Arg)
	case "fault":
		return m.fault(c.Arg)
	case "help":
		m.screen = screenHelp
	case "save", "save!":
		if m.opt.ExportPcapng == nil {
			m.setStatus("pcapng export is not available for this source", true)
			return nil
		}
		if c.Arg == "" {
			m.setStatus("save: want a file name (:save FILE.pcapng)", true)
			return nil
		}
		write := m.opt.ExportPcapng
		m.setStatus("saving "+c.Arg+"…", false)
		return exportCmd(c.Arg, c.Name == "save!", m.selectionNote(), ":save!", m.exportUnits(true), func(f *os.File, us iter.Seq[*decode.Unit]) error { return write(f, us) })
	case "definitions":
		if m.opt.ExportDefinitions == nil {
			m.setStatus("definitions: this source is not the broker", true)
			return nil
		}
		verb, path, _ := strings.Cut(strings.TrimSpace(c.Arg), " ")
		path = strings.TrimSpace(path)
		if verb != "export" || path == "" {
			m.setStatus("definitions: want :definitions export FILE.json", true)
			return nil
		}
		m.setStatus("writing definitions to "+path+"…", false)
		return definitionsCmd(path, m.opt.ExportDefinitions)
	case "export", "export!":
		if c.Arg == "" {
			m.setStatus("export: want a file name (:export FILE.json)", true)
			return nil
		}
		write := m.opt.ExportJSON
		if write == nil {
			write = writeJSON
		}
		m.setStatus("exporting "+c.Arg+"…", false)
		return exportCmd(c.Arg, c.Name == "export!", "", ":export!", m.exportUnits(false), func(f *os.File, us iter.Seq[*decode.Unit]) error { return write(f, us) })
	}
	return nil
}

// selectionNote says what a capture saved from a filtered view leaves out:
// only the matching frames are in it, so a message's other frames (a
// publish's content header and body, say) are not, and reading the file
// back may warn of incomplete messages.
func (m *Model) selectionNote() string {
	if m.flt.match == nil {
		return ""
	}
	return "only the frames the filter matches: their messages' other frames are left out, so reading the file back may warn of incomplete messages"
}
