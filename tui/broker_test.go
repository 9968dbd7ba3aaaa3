package tui

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/tui/components/brokerpanel"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// fakeBroker is a state.Source and state.RouteExplainer over lists the
// tests change.
type fakeBroker struct {
	ov     state.Overview
	conns  []state.Connection
	queues []state.Queue
	cons   []state.Consumer
	asked  []string // ExplainRoute's arguments
	route  state.Route
	err    error
}

func (f *fakeBroker) Overview() state.Overview { return f.ov }
func (f *fakeBroker) Connections() []state.Connection {
	return append([]state.Connection(nil), f.conns...)
}
func (f *fakeBroker) Channels() []state.Channel { return nil }
func (f *fakeBroker) Exchanges() []state.Exchange {
	return []state.Exchange{{VHost: "/", Name: "amq.direct", Type: "direct"}}
}
func (f *fakeBroker) Queues() []state.Queue       { return append([]state.Queue(nil), f.queues...) }
func (f *fakeBroker) Consumers() []state.Consumer { return append([]state.Consumer(nil), f.cons...) }
func (f *fakeBroker) Bindings() []state.Binding   { return nil }
func (f *fakeBroker) Users() []state.User {
	return []state.User{{Name: "guest", Tags: []string{"administrator"}}}
}
func (f *fakeBroker) VHosts() []state.VHost               { return []state.VHost{{Name: "/"}} }
func (f *fakeBroker) Permissions() []state.Permission     { return nil }
func (f *fakeBroker) CloseConnection(string, string) bool { return false }

func (f *fakeBroker) ExplainRoute(vhost, exchange, key string, headers map[string]any) (state.Route, error) {
	a := vhost + "|" + exchange + "|" + key
	for k, v := range headers {
		a += "|" + k + "=" + brokerValue(v)
	}
	f.asked = append(f.asked, a)
	r := f.route
	r.VHost, r.Exchange, r.RoutingKey = vhost, exchange, key
	return r, f.err
}

func brokerValue(v any) string {
	switch v := v.(type) {
	case string:
		return "s:" + v
	case int64:
		return "i:" + strconv.FormatInt(v, 10)
	}
	return "?"
}

func newFakeBroker() *fakeBroker {
	return &fakeBroker{
		ov: state.Overview{Product: "RabbitMQ", Version: "3.10.8", Node: "wiretap@test", Connections: 2, Queues: 2,
			Started: time.Unix(0, 0), Listeners: []string{"127.0.0.1:5672"}, Blocked: true, MemoryUsed: 1 << 20, MemoryLimit: 4 << 20},
		conns: []state.Connection{
			{Name: "127.0.0.1:40001 -> 127.0.0.1:5672", Flow: 1, User: "guest", VHost: "/", State: "running", Channels: 1,
				ClientProperties: map[string]any{"product": "wiretap bench"}},
			{Name: "127.0.0.1:40002 -> 127.0.0.1:5672", Flow: 2, User: "guest", VHost: "/", State: "blocked", Channels: 1},
		},
		queues: []state.Queue{
			{VHost: "/", Name: "orders", Ready: 5, Unacked: 2, Consumers: 1, Published: 10, Delivered: 4},
			{VHost: "/", Name: "payments", Ready: 0},
		},
		cons: []state.Consumer{{VHost: "/", Queue: "orders", Tag: "amq.ctag-orders", Connection: "127.0.0.1:40001 -> 127.0.0.1:5672", Channel: 1, Active: true}},
	}
}

func brokerDriver(t *testing.T, fb *fakeBroker, w, h int) *driver {
	d := newDriver(t, Options{Title: "broker 127.0.0.1:5672", Live: true, Broker: fb, Routes: fb}, w, h)
	d.feed(fake.Generate(400, 1), false)
	return d
}

// refresh delivers a snapshot taken at at, as the panel's tick does.
func (d *driver) refresh(fb *fakeBroker, at time.Time) {
	d.send(brokerSnapMsg{brokerpanel.Take(fb, at)})
}

func TestBrokerPanelShowsTheBroker(t *testing.T) {
	fb := newFakeBroker()
	d := brokerDriver(t, fb, 140, 30)
	d.contains("b broker")
	d.keys("b")
	d.contains("Broker: Overview", "RabbitMQ 3.10.8", "wiretap@test", "127.0.0.1:5672", "2 connections", "! publishers are blocked", "25.0%")
	d.keys("5")
	d.contains("Broker: Connections", "127.0.0.1:40001", "wiretap bench", "!blocked")
	d.keys("3")
	d.contains("orders", "payments")
	// Rates need two refreshes; the counters change between them.
	t0 := time.Unix(100, 0)
	d.refresh(fb, t0)
	d.lacks("/s")
	fb.queues[0].Published += 50
	fb.queues[0].Delivered += 20
	d.refresh(fb, t0.Add(5*time.Second))
	d.contains("10.0/s", "4.0/s")
	d.golden("brokerqueues")
	// Closed, refreshes stop being shown and esc/q/b all return.
	d.keys("esc")
	d.lacks("Broker:")
	d.keys("b")
	d.contains("Broker: Queues") // the section is remembered
	d.keys("q")
	d.lacks("Broker:")
	d.keys(":")
	d.typeText("broker")
	d.keys("enter")
	d.contains("Broker: Queues")
	d.keys("b")
	d.lacks("Broker:")
}

func TestBrokerPanelWithoutBroker(t *testing.T) {
	d := withUnits(t, 10, 120, 30)
	d.keys("b")
	d.contains("no broker for this source")
	d.lacks("Broker:")
	d.keys(":")
	d.typeText("route amq.direct k")
	d.keys("enter")
	d.contains("route: no broker for this source")
}

func TestBrokerJumpToConnection(t *testing.T) {
	fb := newFakeBroker()
	d := brokerDriver(t, fb, 140, 30)
	conns := d.m.st.Conns()
	if len(conns) < 2 {
		t.Fatal("the fake has fewer than two connections")
	}
	target := conns[1].ID
	fb.conns[1].Flow = target
	d.keys("b", "5")
	// Connections are sorted by conn number: the target is the second.
	d.keys("j", "enter")
	d.lacks("Broker:")
	d.contains("conn "+strconv.Itoa(target)+" 127.0.0.1:40002", "b: back to the broker")
	if d.m.units.Len() == 0 {
		t.Fatal("no units shown")
	}
	for _, ix := range seqSlice(d.m.units.Rows()) {
		if u := d.m.st.Unit(ix); u.Conn == nil || u.Conn.ID != target {
			t.Fatalf("unit #%d of another connection", u.N)
		}
	}
	// An untapped connection says so and stays in the panel.
	fb.conns[0].Flow = 0
	d.keys("b")
	d.refresh(fb, time.Now())
	d.keys("g", "enter")
	d.contains("Broker:", "is not tapped")
}

func TestBrokerJumpToQueue(t *testing.T) {
	fb := newFakeBroker()
	d := brokerDriver(t, fb, 140, 30)
	d.keys("b", "3", "g", "enter")
	d.lacks("Broker:")
	d.contains(`filter amqp.method.arguments.queue == "orders"`)
	types := map[string]bool{}
	for _, ix := range seqSlice(d.m.units.Rows()) {
		u := d.m.st.Unit(ix)
		if !strings.Contains(u.Summary, "orders") {
			t.Fatalf("unit #%d %s %q is not the queue's", u.N, u.Type, u.Summary)
		}
		types[u.Type] = true
	}
	if !types["queue.declare"] || !types["basic.publish"] {
		t.Fatalf("types shown: %v (want its declares and the publishes to it)", types)
	}
	all := 0
	for _, u := range d.m.st.Snapshot().All() {
		if strings.Contains(u.Summary, "queue=orders") || strings.Contains(u.Summary, "routing-key=orders") {
			all++
		}
	}
	if d.m.units.Len() != all {
		t.Fatalf("%d rows, %d units name the queue", d.m.units.Len(), all)
	}
}

func TestRouteCommand(t *testing.T) {
	fb := newFakeBroker()
	fb.route = state.Route{Lines: []string{"exchange amq.direct (direct): no binding has key k"}, Unroutable: true}
	d := brokerDriver(t, fb, 140, 30)
	d.keys(":")
	d.typeText("route amq.direct k")
	d.keys("enter")
	d.contains("Broker: Route", ":route amq.direct k", "no binding has key k", "unroutable", "312 NO_ROUTE")
	d.golden("brokerroute")
	if len(fb.asked) != 1 || fb.asked[0] != "/|amq.direct|k" {
		t.Fatalf("asked %v", fb.asked)
	}
	fb.route = state.Route{Lines: []string{"binding to orders matches"}, Queues: []string{"orders"}}
	d.keys(":") // the command line works inside the panel
	d.typeText(`route -v other amq.headers "" x=s`)
	d.keys("enter")
	d.contains("routed to 1 queue: orders")
	d.lacks("unroutable")
	if fb.asked[1] != "other|amq.headers||x=s:s" {
		t.Fatalf("asked %v", fb.asked[1])
	}
	fb.err = errors.New("no exchange 'nope' in vhost '/'")
	d.keys(":")
	d.typeText("route nope k")
	d.keys("enter")
	d.contains("no exchange 'nope'")
	d.keys(":")
	d.typeText("route")
	d.keys("enter")
	d.contains("route wants")
}

func TestBrokerScreenFitsTerminal(t *testing.T) {
	for _, sz := range [][2]int{{160, 50}, {100, 30}, {80, 24}, {60, 20}} {
		fb := newFakeBroker()
		d := brokerDriver(t, fb, sz[0], sz[1])
		d.keys("b")
		for _, s := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "0"} {
			d.keys(s)
			lines := strings.Split(d.screen(), "\n")
			if len(lines) != sz[1] {
				t.Fatalf("%v section %s: %d lines", sz, s, len(lines))
			}
			for i, l := range lines {
				if w := len([]rune(l)); w != sz[0] {
					t.Fatalf("%v section %s: line %d is %d wide: %q", sz, s, i, w, l)
				}
			}
		}
	}
}
