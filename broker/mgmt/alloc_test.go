package mgmt

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// bigFake is newFake with n more queues, each with arguments, a consumer
// and bindings, and n/10 more connections with channels.
func bigFake(n int) *fakeSource {
	f := newFake()
	for i := range n {
		name := "q-" + strconv.Itoa(i)
		f.queues = append(f.queues, state.Queue{VHost: "/", Name: name, Durable: true,
			Arguments: map[string]any{"x-max-length": int64(i), "x-dead-letter-exchange": "dlx", "x-queue-mode": "lazy"},
			Ready:     i, Unacked: i % 7, Bytes: int64(i) * 100, Consumers: 1, Published: uint64(i) * 3, Delivered: uint64(i), Acked: uint64(i),
			State: "running"})
		f.consumers = append(f.consumers, state.Consumer{VHost: "/", Queue: name, Tag: "ctag-" + strconv.Itoa(i), Connection: conn1,
			Channel: 1, Prefetch: 10, Active: true, Arguments: map[string]any{"x-priority": int64(i % 3)}})
		f.bindings = append(f.bindings, state.Binding{VHost: "/", Source: "amq.topic", Destination: name, DestinationType: "queue",
			RoutingKey: name + ".#", Arguments: map[string]any{}})
		f.exchanges = append(f.exchanges, state.Exchange{VHost: "/", Name: "x-" + strconv.Itoa(i), Type: "topic",
			Arguments: map[string]any{"alternate-exchange": "ae"}, PublishIn: uint64(i), PublishOut: uint64(i)})
	}
	for i := range n / 10 {
		name := "10.0.0." + strconv.Itoa(i%250) + ":" + strconv.Itoa(40000+i) + " -> 10.0.0.1:5672"
		f.connections = append(f.connections, state.Connection{Name: name,
			Peer:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i % 250)}), uint16(40000+i)),
			Local: netip.MustParseAddrPort("10.0.0.1:5672"), Protocol: "AMQP 0-9-1", User: "guest", VHost: "/", State: "running",
			Channels: 2, ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60, AuthMechanism: "PLAIN",
			ClientProperties: clientTable("app-" + strconv.Itoa(i)), ConnectedAt: start, RecvOct: uint64(i) * 1000})
		for ch := uint16(1); ch <= 2; ch++ {
			f.channels = append(f.channels, state.Channel{Connection: name, Number: ch, User: "guest", VHost: "/", State: "running"})
		}
	}
	return f
}

func newBigFixture(n int) *fixture {
	fx := newFixture()
	big := bigFake(n)
	fx.src.connections, fx.src.channels, fx.src.queues = big.connections, big.channels, big.queues
	fx.src.consumers, fx.src.bindings, fx.src.exchanges = big.consumers, big.bindings, big.exchanges
	return fx
}

// renderers renders each kind of list of a snapshot into wr, as the
// endpoints do after filtering.
func renderers(fx *fixture) map[string]func(wr *writer) {
	src := fx.src
	conns, chans, xs, qs := src.Connections(), src.Channels(), src.Exchanges(), src.Queues()
	cons, bs, us, vs, ps := src.Consumers(), src.Bindings(), src.Users(), src.VHosts(), src.Permissions()
	o := src.Overview()
	r := httptest.NewRequest(http.MethodGet, "/api/overview", nil)
	totals := make([]vhostTotals, len(vs))
	each := func(wr *writer, n int, f func(i int)) {
		wr.reset(nil)
		wr.beginArray()
		for i := range n {
			wr.elem()
			f(i)
		}
		wr.endArray()
	}
	return map[string]func(wr *writer){
		"overview":    func(wr *writer) { wr.reset(nil); wr.overview(&o, r) },
		"connections": func(wr *writer) { each(wr, len(conns), func(i int) { wr.connection(&conns[i]) }) },
		"channels":    func(wr *writer) { each(wr, len(chans), func(i int) { wr.channel(&chans[i]) }) },
		"exchanges":   func(wr *writer) { each(wr, len(xs), func(i int) { wr.exchange(&xs[i]) }) },
		"queues":      func(wr *writer) { each(wr, len(qs), func(i int) { wr.queue(&qs[i]) }) },
		"consumers":   func(wr *writer) { each(wr, len(cons), func(i int) { wr.consumer(&cons[i]) }) },
		"bindings":    func(wr *writer) { each(wr, len(bs), func(i int) { wr.binding(&bs[i]) }) },
		"users":       func(wr *writer) { each(wr, len(us), func(i int) { wr.user(&us[i]) }) },
		"vhosts":      func(wr *writer) { each(wr, len(vs), func(i int) { wr.vhost(&vs[i], &totals[i]) }) },
		"permissions": func(wr *writer) { each(wr, len(ps), func(i int) { wr.permission(&ps[i]) }) },
		"one queue": func(wr *writer) {
			wr.reset(nil)
			wr.single = true
			wr.queue(&qs[1])
			wr.single = false
		},
	}
}

// Rendering allocates nothing once the writer's buffers and the rates'
// histories exist: the steady state of a tool polling the API.
func TestRenderingDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	fx := newBigFixture(200)
	for name, f := range renderers(fx) {
		wr := fx.h.getWriter(nil)
		wr.node = "wiretap@vm"
		// The lookups that objects make are loaded once per request.
		wr.loadConnections()
		wr.loadConsumers()
		wr.queueNamed("", "")
		f(wr) // grow the buffers, make the histories
		allocs := testing.AllocsPerRun(20, func() {
			fx.advance(1500e6) // new samples go into the histories too
			f(wr)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per rendering", name, allocs)
		}
		fx.h.putWriter(wr)
	}
}

// A request's allocations do not grow with the number of objects: only
// the snapshot (the fake's copy) and the HTTP plumbing allocate.
func TestServingAllocatesPerRequestNotPerObject(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, path := range []string{"/api/queues", "/api/connections", "/api/channels", "/api/exchanges",
		"/api/bindings", "/api/consumers", "/api/queues/%2F?columns=name,messages"} {
		count := func(n int) float64 {
			fx := newBigFixture(n)
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.SetBasicAuth("guest", "guest")
			w := &discardWriter{h: http.Header{}}
			fx.h.ServeHTTP(w, r)
			if w.code != 200 {
				t.Fatalf("%s: %d", path, w.code)
			}
			return testing.AllocsPerRun(20, func() {
				fx.advance(1500e6)
				clear(w.h)
				fx.h.ServeHTTP(w, r)
			})
		}
		small, large := count(20), count(2000)
		if large > small {
			t.Errorf("%s: %v allocations with 2000 objects, %v with 20", path, large, small)
		}
		t.Logf("%s: %v allocations per request", path, large)
	}
}

// discardWriter is a ResponseWriter that keeps nothing but the status.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
