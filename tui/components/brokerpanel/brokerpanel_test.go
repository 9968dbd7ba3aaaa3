package brokerpanel

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// source is a state.Source over fixed lists, changed by the tests.
type source struct {
	ov    state.Overview
	conns []state.Connection
	chans []state.Channel
	exs   []state.Exchange
	qs    []state.Queue
	cons  []state.Consumer
	binds []state.Binding
	users []state.User
	vhs   []state.VHost
	perms []state.Permission
}

func (s *source) Overview() state.Overview         { return s.ov }
func (s *source) Connections() []state.Connection  { return append([]state.Connection(nil), s.conns...) }
func (s *source) Channels() []state.Channel        { return append([]state.Channel(nil), s.chans...) }
func (s *source) Exchanges() []state.Exchange      { return append([]state.Exchange(nil), s.exs...) }
func (s *source) Queues() []state.Queue            { return append([]state.Queue(nil), s.qs...) }
func (s *source) Consumers() []state.Consumer      { return append([]state.Consumer(nil), s.cons...) }
func (s *source) Bindings() []state.Binding        { return append([]state.Binding(nil), s.binds...) }
func (s *source) Users() []state.User              { return append([]state.User(nil), s.users...) }
func (s *source) VHosts() []state.VHost            { return append([]state.VHost(nil), s.vhs...) }
func (s *source) Permissions() []state.Permission  { return append([]state.Permission(nil), s.perms...) }
func (s *source) CloseConnection(_, _ string) bool { return false }

func testSource() *source {
	return &source{
		ov: state.Overview{Product: "RabbitMQ", Version: "3.10.8", Node: "wiretap@box", Connections: 2, Queues: 2,
			MemoryUsed: 512 << 20, MemoryLimit: 1 << 30, Blocked: true, Listeners: []string{"127.0.0.1:5672"}},
		conns: []state.Connection{
			{Name: "127.0.0.1:50002 -> 127.0.0.1:5672", Flow: 2, User: "guest", VHost: "/", State: "blocked", Channels: 1,
				ClientProperties: map[string]any{"product": "amqp091-go", "version": "1.16.0"}},
			{Name: "127.0.0.1:50001 -> 127.0.0.1:5672", Flow: 1, User: "guest", VHost: "/", State: "running", Channels: 1},
		},
		chans: []state.Channel{{Connection: "127.0.0.1:50001 -> 127.0.0.1:5672", Number: 1, Prefetch: 10, GlobalPrefetch: 50, Unacked: 3, Confirm: true, State: "running"}},
		exs:   []state.Exchange{{VHost: "/", Name: "amq.direct", Type: "direct", Durable: true}, {VHost: "/", Name: "", Type: "direct", Durable: true}},
		qs: []state.Queue{
			{VHost: "/", Name: "work", Ready: 7, Unacked: 3, Consumers: 1, Published: 100, Delivered: 50, Arguments: map[string]any{"x-max-length": int64(10)}},
			{VHost: "/", Name: "idle"},
		},
		cons:  []state.Consumer{{VHost: "/", Queue: "work", Tag: "amq.ctag-1", Connection: "127.0.0.1:50001 -> 127.0.0.1:5672", Channel: 1, Active: true}},
		binds: []state.Binding{{VHost: "/", Source: "amq.headers", Destination: "work", DestinationType: "queue", Arguments: map[string]any{"x-match": "all", "k": int64(1)}}},
		users: []state.User{{Name: "guest", Tags: []string{"administrator"}}},
		vhs:   []state.VHost{{Name: "/"}},
		perms: []state.Permission{{User: "guest", VHost: "/", Configure: ".*", Write: ".*", Read: ".*"}},
	}
}

func newPanel(w, h int) Model {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(w, h)
	return m
}

func press(m Model, k string) (Model, tea.Cmd) {
	msg := tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
	switch k {
	case "enter":
		msg = tea.KeyPressMsg{Code: tea.KeyEnter}
	case "tab":
		msg = tea.KeyPressMsg{Code: tea.KeyTab}
	}
	return m.Update(msg)
}

func view(m Model) string { return ansi.Strip(m.View()) }

func has(t *testing.T, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("view lacks %q:\n%s", w, s)
		}
	}
}

func TestSectionsShowTheSnapshot(t *testing.T) {
	src := testSource()
	m := newPanel(200, 30)
	t0 := time.Unix(1000, 0)
	m.SetSnapshot(Take(src, t0))
	has(t, view(m), "RabbitMQ 3.10.8", "wiretap@box", "127.0.0.1:5672", "512.0MiB of 1.0GiB", "50.0%", "! publishers are blocked",
		"[1 Overview]", "3 Queues (2)")
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"2", []string{"(AMQP default)", "amq.direct"}},
		{"3", []string{"work", "idle", "x-max-length=10"}},
		{"4", []string{"amq.headers", "k=1 x-match=all"}},
		{"5", []string{"!blocked", "amqp091-go 1.16.0", "running"}},
		{"6", []string{"confirm", "50"}},
		{"7", []string{"amq.ctag-1", "active"}},
		{"8", []string{"guest", "administrator", "vhost"}},
		{"9", []string{".*"}},
		{"0", []string{"no route explained yet"}},
	} {
		m, _ = press(m, c.key)
		has(t, view(m), c.want...)
	}
}

func TestQueueRatesFromTwoSnapshots(t *testing.T) {
	src := testSource()
	m := newPanel(160, 20)
	m, _ = press(m, "3")
	t0 := time.Unix(1000, 0)
	m.SetSnapshot(Take(src, t0))
	if v := view(m); strings.Contains(v, "/s") {
		t.Fatalf("rates before a second snapshot:\n%s", v)
	}
	src.qs[0].Published += 30
	src.qs[0].Delivered += 10
	src.ov.Published, src.ov.Delivered, src.ov.Acked = 40, 20, 4
	m.SetSnapshot(Take(src, t0.Add(2*time.Second)))
	has(t, view(m), "15.0/s", "5.0/s")
	m, _ = press(m, "1")
	has(t, view(m), "publish 20.0/s", "deliver 10.0/s", "ack 2.0/s")

	// A counter that went back (the queue declared again) has no rate.
	src.qs[0].Published = 0
	src.qs[0].Delivered += 10
	m.SetSnapshot(Take(src, t0.Add(3*time.Second)))
	m, _ = press(m, "3")
	if v := view(m); strings.Contains(v, "15.0/s") || !strings.Contains(v, "         -    10.0/s") {
		t.Fatalf("after the reset:\n%s", v)
	}
}

func TestEnterReportsJump(t *testing.T) {
	src := testSource()
	m := newPanel(160, 20)
	m.SetSnapshot(Take(src, time.Unix(1, 0)))
	m, _ = press(m, "5")
	// Sorted by conn number: conn 1 first.
	m, _ = press(m, "j")
	_, cmd := press(m, "enter")
	if cmd == nil {
		t.Fatal("no jump")
	}
	if j := cmd().(JumpMsg); j.Flow != 2 || j.Connection != src.conns[0].Name {
		t.Fatalf("jump %+v", j)
	}
	m, _ = press(m, "3")
	m, _ = press(m, "G")
	_, cmd = press(m, "enter")
	j := cmd().(JumpMsg)
	if j.Queue != "work" || len(j.ConsumerTags) != 1 || j.ConsumerTags[0] != "amq.ctag-1" {
		t.Fatalf("queue jump %+v", j)
	}
	if f := j.Filter(); !strings.Contains(f, `queue == "work"`) || !strings.Contains(f, `"amq.ctag-1"`) {
		t.Fatalf("filter %s", f)
	}
	// The selection follows its item when rows come and go.
	src.qs = append(src.qs, state.Queue{VHost: "/", Name: "aaa"})
	m.SetSnapshot(Take(src, time.Unix(2, 0)))
	if j, _ := m.Selected(); j.Queue != "work" {
		t.Fatalf("selection moved to %+v", j)
	}
	// Text sections select nothing.
	m, _ = press(m, "1")
	if _, cmd := press(m, "enter"); cmd != nil {
		t.Fatal("enter on the overview jumps")
	}
}

func TestScrollKeepsCursorVisible(t *testing.T) {
	src := testSource()
	for i := 0; i < 100; i++ {
		src.qs = append(src.qs, state.Queue{VHost: "/", Name: "q" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)})
	}
	m := newPanel(120, 12)
	m.SetSnapshot(Take(src, time.Unix(1, 0)))
	m, _ = press(m, "3")
	m, _ = press(m, "G")
	v := view(m)
	if !strings.Contains(v, "work") || strings.Contains(v, "q000") {
		t.Fatalf("G did not reach the end:\n%s", v)
	}
	lines := strings.Split(v, "\n")
	if len(lines) != 12 {
		t.Fatalf("%d lines", len(lines))
	}
	if !strings.HasPrefix(lines[len(lines)-1], "›") {
		t.Fatalf("the cursor is not on the last line:\n%s", v)
	}
	m, _ = press(m, "g")
	if v := view(m); !strings.Contains(v, "›/        idle") {
		t.Fatalf("g:\n%s", v)
	}
}

func TestRouteSection(t *testing.T) {
	m := newPanel(120, 20)
	m.SetRoute("amq.direct k", state.Route{VHost: "/", Exchange: "amq.direct", RoutingKey: "k",
		Lines: []string{"exchange amq.direct (direct): no binding with key k"}, Unroutable: true}, nil)
	if m.Section() != SectionRoute {
		t.Fatal("not on the route section")
	}
	has(t, view(m), ":route amq.direct k", "no binding with key k", "! unroutable", "312 NO_ROUTE")
	m.SetRoute("amq.fanout", state.Route{VHost: "/", Exchange: "amq.fanout", Queues: []string{"a", "b"}}, nil)
	has(t, view(m), "routed to 2 queues: a, b", "would not be returned")
	m.SetRoute("nope", state.Route{}, errors.New("no exchange 'nope' in vhost '/'"))
	has(t, view(m), "E no exchange 'nope'")
}

func TestLatencySection(t *testing.T) {
	src := testSource()
	m := newPanel(200, 20)
	m.SetSnapshot(Take(src, time.Unix(1000, 0)))
	m, _ = press(m, "L")
	if m.Section() != SectionLatency {
		t.Fatalf("L: section %v", m.Section())
	}
	has(t, view(m), "no latencies")
	src.qs[0].PublishToDeliver = state.Latency{Count: 12, Buckets: [6]uint64{10, 1, 0, 0, 1, 0}, P50: 850 * time.Microsecond, P99: 730 * time.Millisecond}
	src.qs[0].DeliverToAck = state.Latency{Count: 3, Buckets: [6]uint64{0, 0, 0, 0, 0, 3}, P50: 1200 * time.Millisecond, P99: 1500 * time.Millisecond}
	src.exs[0].PublishToDeliver = state.Latency{Count: 4, Buckets: [6]uint64{4}, P50: 90 * time.Microsecond, P99: 120 * time.Microsecond}
	m.SetSnapshot(Take(src, time.Unix(1001, 0)))
	v := view(m)
	has(t, v, "[L Latency]", "publish→deliver", "deliver→ack", "850µs", "730.0ms", "1.20s", "1.50s", "120µs")
	// Rows: the queue's two, then the exchange's one; the idle queue and
	// the empty histograms are left out.
	if n := strings.Count(v, "publish→deliver") + strings.Count(v, "deliver→ack"); n != 3 {
		t.Fatalf("%d latency rows:\n%s", n, v)
	}
	// enter jumps to the queue's units.
	if _, cmd := press(m, "enter"); cmd == nil {
		t.Fatal("enter on a latency row does nothing")
	} else if j, ok := cmd().(JumpMsg); !ok || j.Queue != "work" {
		t.Fatalf("jump %+v", cmd())
	}
}

func TestViewFitsAndEscapesNames(t *testing.T) {
	src := testSource()
	src.qs[1].Name = "evil\x1b[2Jname"
	for _, sz := range [][2]int{{60, 10}, {80, 24}, {200, 40}} {
		m := newPanel(sz[0], sz[1])
		m.SetSnapshot(Take(src, time.Unix(1, 0)))
		for s := Section(0); s < NumSections; s++ {
			m.SetSection(s)
			raw := m.View()
			if strings.Contains(raw, "\x1b[2J") {
				t.Fatalf("a name's escape sequence reached the screen")
			}
			lines := strings.Split(ansi.Strip(raw), "\n")
			if len(lines) != sz[1] {
				t.Fatalf("%v %v: %d lines", sz, s, len(lines))
			}
			for _, l := range lines {
				if ansi.StringWidth(l) > sz[0] {
					t.Fatalf("%v %v: line too wide: %q", sz, s, l)
				}
			}
		}
	}
}

func TestParseRoute(t *testing.T) {
	for _, c := range []struct {
		in   string
		want RouteQuery
		err  bool
	}{
		{"amq.direct k", RouteQuery{VHost: "/", Exchange: "amq.direct", RoutingKey: "k"}, false},
		{"-v other amq.topic a.b.c", RouteQuery{VHost: "other", Exchange: "amq.topic", RoutingKey: "a.b.c"}, false},
		{`"" work`, RouteQuery{VHost: "/", Exchange: "", RoutingKey: "work"}, false},
		{`amq.headers "" a=1 b=true c="1" d=x e=1.5`, RouteQuery{VHost: "/", Exchange: "amq.headers",
			Headers: map[string]any{"a": int64(1), "b": true, "c": "1", "d": "x", "e": 1.5}}, false},
		{`x 'a key' `, RouteQuery{VHost: "/", Exchange: "x", RoutingKey: "a key"}, false},
		{"", RouteQuery{}, true},
		{"-v", RouteQuery{}, true},
		{`x "k`, RouteQuery{}, true},
		{"x k noequals", RouteQuery{}, true},
	} {
		got, err := ParseRoute(c.in)
		if (err != nil) != c.err {
			t.Errorf("%q: err %v", c.in, err)
			continue
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "brokerpanel: ") {
				t.Errorf("%q: error %q lacks the prefix", c.in, err)
			}
			continue
		}
		if got.VHost != c.want.VHost || got.Exchange != c.want.Exchange || got.RoutingKey != c.want.RoutingKey || len(got.Headers) != len(c.want.Headers) {
			t.Errorf("%q: %+v, want %+v", c.in, got, c.want)
		}
		for k, v := range c.want.Headers {
			if got.Headers[k] != v {
				t.Errorf("%q: header %s = %#v, want %#v", c.in, k, got.Headers[k], v)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	if got, want := quote("a\"b\\c\x01"), `"a\"b\\c\x01"`; got != want {
		t.Fatalf("quote = %s, want %s", got, want)
	}
}

func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"amq.direct k", `-v / "" q a=1 b="x y"`, `'`, "x  k  h=", "-v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseRoute(s)
		if err != nil {
			return
		}
		if q.VHost == "" && !strings.Contains(s, "-v") && !strings.Contains(s, "--vhost") {
			t.Fatalf("%q: empty vhost", s)
		}
		// What parsed renders without panicking.
		m := newPanel(80, 10)
		m.SetRoute(s, state.Route{VHost: q.VHost, Exchange: q.Exchange, RoutingKey: q.RoutingKey}, nil)
		_ = m.View()
	})
}

func BenchmarkRefreshAndView(b *testing.B) {
	src := testSource()
	for i := 0; i < 200; i++ {
		src.qs = append(src.qs, state.Queue{VHost: "/", Name: "q" + itoa(i), Published: uint64(i)})
	}
	m := newPanel(160, 50)
	m.SetSection(SectionQueues)
	t0 := time.Unix(1, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.SetSnapshot(Take(src, t0.Add(time.Duration(i)*time.Second)))
		_ = m.View()
	}
}

func BenchmarkView(b *testing.B) {
	m := newPanel(160, 50)
	m.SetSnapshot(Take(testSource(), time.Unix(1, 0)))
	m.SetSection(SectionQueues)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}
