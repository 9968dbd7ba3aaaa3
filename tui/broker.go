package tui

import (
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/tui/components/brokerpanel"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
)

// brokerRefresh is how often the open broker panel takes a snapshot:
// RabbitMQ's management UI refreshes every five seconds; a terminal
// watching its own traffic wants it sooner.
const brokerRefresh = time.Second

// brokerSnapMsg carries a snapshot taken off the program's goroutine.
type brokerSnapMsg struct{ snap brokerpanel.Snapshot }

// routeMsg is a route explained.
type routeMsg struct {
	query string
	route state.Route
	err   error
}

// openBroker shows the broker panel with a snapshot taken at once, and
// starts its refreshes.
func (m *Model) openBroker() tea.Cmd {
	if m.opt.Broker == nil {
		m.setStatus("no broker for this source (the broker panel is for wiretap broker)", true)
		return nil
	}
	m.screen = screenBroker
	m.layout()
	m.panel.SetSnapshot(brokerpanel.Take(m.opt.Broker, time.Now()))
	return m.brokerTick()
}

// brokerTick schedules the next refresh, one at a time; tests driving
// the model send brokerSnapMsg themselves.
func (m *Model) brokerTick() tea.Cmd {
	if m.panelTicking || m.driven || m.opt.Broker == nil {
		return nil
	}
	m.panelTicking = true
	src := m.opt.Broker
	return tea.Tick(brokerRefresh, func(t time.Time) tea.Msg {
		return brokerSnapMsg{brokerpanel.Take(src, t)}
	})
}

// brokerRefreshed shows a refresh while the panel is open; once it is
// closed the refreshes stop.
func (m *Model) brokerRefreshed(msg brokerSnapMsg) tea.Cmd {
	m.panelTicking = false
	if m.screen != screenBroker {
		return nil
	}
	m.panel.SetSnapshot(msg.snap)
	return m.brokerTick()
}

// brokerJump closes the panel on the units of a connection (the
// connection choice, as :conn N) or of a queue or exchange (a display
// filter).
func (m *Model) brokerJump(j brokerpanel.JumpMsg) tea.Cmd {
	if j.Queue == "" && !j.IsExchange {
		if j.Flow <= 0 {
			m.setStatus("connection "+text.OneLine(j.Connection)+" is not tapped: no units for it", true)
			return nil
		}
		ci := m.st.ConnByID(j.Flow)
		if ci < 0 {
			m.setStatus("conn "+strconv.Itoa(j.Flow)+" has no units yet", true)
			return nil
		}
		m.screen = screenMain
		m.conns.Choose(ci)
		m.setStatus("conn "+strconv.Itoa(j.Flow)+" "+text.OneLine(j.Connection)+" (esc: all connections, b: back to the broker)", false)
		return nil
	}
	expr := j.Filter()
	match, err := m.lang.Compile(expr)
	if err != nil {
		m.setStatus("broker: "+err.Error(), true)
		return nil
	}
	m.screen = screenMain
	what := "queue " + text.OneLine(j.Queue)
	if j.IsExchange {
		what = "exchange " + text.OneLine(j.Exchange)
	}
	cmd := m.setFilter(expr, match)
	m.setStatus(what+" (esc: clear the filter, b: back to the broker)", false)
	return cmd
}

// route explains :route's arguments on the panel's route section.
func (m *Model) route(arg string) tea.Cmd {
	if m.opt.Routes == nil {
		m.setStatus("route: no broker for this source", true)
		return nil
	}
	q, err := brokerpanel.ParseRoute(arg)
	if err != nil {
		m.setStatus(err.Error(), true)
		return nil
	}
	m.screen = screenBroker
	m.layout()
	var cmd tea.Cmd
	if m.opt.Broker != nil {
		m.panel.SetSnapshot(brokerpanel.Take(m.opt.Broker, time.Now()))
		cmd = m.brokerTick()
	}
	r, err := m.opt.Routes.ExplainRoute(q.VHost, q.Exchange, q.RoutingKey, q.Headers)
	m.panel.SetRoute(arg, r, err)
	return cmd
}
