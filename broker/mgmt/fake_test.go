package mgmt

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// fakeSource is a state.Source whose snapshots are copies of its fields.
type fakeSource struct {
	mu          sync.Mutex
	overview    state.Overview
	connections []state.Connection
	channels    []state.Channel
	exchanges   []state.Exchange
	queues      []state.Queue
	consumers   []state.Consumer
	bindings    []state.Binding
	users       []state.User
	vhosts      []state.VHost
	permissions []state.Permission
	closed      []string // "name|reason" of CloseConnection calls
}

func copyOf[T any](s []T) []T { return append([]T(nil), s...) }

func (f *fakeSource) Overview() state.Overview {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.overview
}
func (f *fakeSource) Connections() []state.Connection {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.connections)
}
func (f *fakeSource) Channels() []state.Channel {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.channels)
}
func (f *fakeSource) Exchanges() []state.Exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.exchanges)
}
func (f *fakeSource) Queues() []state.Queue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.queues)
}
func (f *fakeSource) Consumers() []state.Consumer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.consumers)
}
func (f *fakeSource) Bindings() []state.Binding {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.bindings)
}
func (f *fakeSource) Users() []state.User { f.mu.Lock(); defer f.mu.Unlock(); return copyOf(f.users) }
func (f *fakeSource) VHosts() []state.VHost {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.vhosts)
}
func (f *fakeSource) Permissions() []state.Permission {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyOf(f.permissions)
}

func (f *fakeSource) CloseConnection(name, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.connections {
		if c.Name == name {
			f.closed = append(f.closed, name+"|"+reason)
			f.connections = append(f.connections[:i:i], f.connections[i+1:]...)
			return true
		}
	}
	return false
}

// fakeUsers holds passwords in the clear.
type fakeUsers struct {
	passwords map[string]string
	src       *fakeSource
}

func (u *fakeUsers) CheckPassword(user, password string) bool {
	p, ok := u.passwords[user]
	return ok && p == password
}

func (u *fakeUsers) Users() []state.User { return u.src.Users() }

// fakeDefinitions records imports and exports a fixed document.
type fakeDefinitions struct {
	mu       sync.Mutex
	imported [][]byte
	exported []string // vhost arguments
	fail     error
}

func (d *fakeDefinitions) ExportDefinitions(vhost string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.exported = append(d.exported, vhost)
	v, _ := json.Marshal(vhost)
	return []byte(`{"rabbit_version":"3.10.8","vhost_asked":` + string(v) + `,"queues":[]}`), nil
}

func (d *fakeDefinitions) ImportDefinitions(data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return d.fail
	}
	d.imported = append(d.imported, append([]byte(nil), data...))
	return nil
}

var errImport = errors.New("inequivalent arg 'durable' for queue 'q' in vhost '/'")

// clientTable is what amqp091-go sends as client properties, plus values
// of every awkward type, built and decoded as the broker does.
func clientTable(connectionName string) map[string]any {
	var caps amqp091.Table
	caps = caps.Append("publisher_confirms", amqp091.BoolValue(true))
	caps = caps.Append("basic.nack", amqp091.BoolValue(true))
	caps = caps.Append("connection.blocked", amqp091.BoolValue(true))
	caps = caps.Append("consumer_cancel_notify", amqp091.BoolValue(true))
	var arr amqp091.Array
	arr = arr.Append(amqp091.StringValue("a"))
	arr = arr.Append(amqp091.Int32Value(1))
	var t amqp091.Table
	t = t.Append("product", amqp091.StringValue("AMQP 0.9.1 Client"))
	t = t.Append("version", amqp091.StringValue("β"))
	t = t.Append("capabilities", amqp091.TableValue(caps))
	t = t.Append("connection_name", amqp091.StringValue(connectionName))
	t = t.Append("x-bin", amqp091.BytesValue([]byte{0xff, 0}))
	t = t.Append("x-ts", amqp091.TimestampValue(time.Unix(1700000000, 0)))
	t = t.Append("x-dec", amqp091.DecimalValue(amqp091.Decimal{Scale: 2, Value: 1234}))
	t = t.Append("x-arr", amqp091.ArrayValue(arr))
	t = t.Append("x-f", amqp091.DoubleValue(1.5))
	m, err := t.Map()
	if err != nil {
		panic(err)
	}
	return m
}

var (
	peer1  = netip.MustParseAddrPort("127.0.0.1:47622")
	peer2  = netip.MustParseAddrPort("[::1]:50000")
	local1 = netip.MustParseAddrPort("127.0.0.1:5672")
	local2 = netip.MustParseAddrPort("[::1]:5672")
	start  = time.Date(2026, 12, 1, 11, 8, 33, 805e6, time.UTC)
)

const (
	conn1 = "127.0.0.1:47622 -> 127.0.0.1:5672"
	conn2 = "[::1]:50000 -> [::1]:5672"
)

// newFake is a broker with two vhosts, two connections (guest's and
// app's), three channels, a few exchanges and queues, and four users:
// guest (administrator), mon (monitoring), app (management, only in
// vhost "app"), plain (no tags).
func newFake() *fakeSource {
	f := &fakeSource{}
	f.overview = state.Overview{
		Product: "RabbitMQ", Version: "3.10.8", Node: "wiretap@vm", ClusterName: "wiretap@vm",
		Started: start, Connections: 2, Channels: 3, Exchanges: 9, Queues: 3, Consumers: 1,
		MessagesReady: 10, MessagesUnacked: 10, Published: 28, Delivered: 19, Acked: 0, Confirmed: 28,
		Listeners: []string{"127.0.0.1:5672", "[::1]:5672"},
	}
	f.connections = []state.Connection{
		{Name: conn1, Peer: peer1, Local: local1, Protocol: "AMQP 0-9-1", User: "guest", VHost: "/",
			State: "running", Channels: 3, ChannelMax: 2047, FrameMax: 131072, Heartbeat: 10, AuthMechanism: "PLAIN",
			ClientProperties: clientTable("probe-conn"), ConnectedAt: start, RecvOct: 311, SendOct: 538, RecvCnt: 3, SendCnt: 3},
		{Name: conn2, Peer: peer2, Local: local2, Protocol: "AMQP 0-9-1", User: "app", VHost: "app",
			State: "running", Channels: 0, ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60, AuthMechanism: "AMQPLAIN",
			ClientProperties: map[string]any{}, ConnectedAt: start.Add(time.Second), TLS: true},
	}
	f.channels = []state.Channel{
		{Connection: conn1, Number: 1, User: "guest", VHost: "/", Prefetch: 10, Unacked: 10, Consumers: 1, State: "running"},
		{Connection: conn1, Number: 2, User: "guest", VHost: "/", Confirm: true, State: "running"},
		{Connection: conn1, Number: 3, User: "guest", VHost: "/", Transactional: true, State: "running"},
	}
	for _, v := range []string{"/", "app"} {
		for _, x := range []struct{ name, typ string }{{"", "direct"}, {"amq.direct", "direct"}, {"amq.fanout", "fanout"}, {"amq.topic", "topic"}} {
			f.exchanges = append(f.exchanges, state.Exchange{VHost: v, Name: x.name, Type: x.typ, Durable: true, Arguments: map[string]any{}})
		}
	}
	f.exchanges = append(f.exchanges, state.Exchange{VHost: "/", Name: "px", Type: "topic", Durable: true,
		Arguments: map[string]any{"alternate-exchange": "amq.fanout"}, PublishIn: 20, PublishOut: 20})
	f.queues = []state.Queue{
		{VHost: "/", Name: "amq.gen-8r8S4tWjtr5bc-34QJgOSA", Exclusive: true, AutoDelete: true, Arguments: map[string]any{},
			Owner: conn1, State: "running"},
		{VHost: "/", Name: "pq", Durable: true, Arguments: map[string]any{"x-max-length": int64(100), "x-queue-mode": "lazy"},
			Ready: 10, Unacked: 10, Bytes: 100, Consumers: 1, Published: 20, Delivered: 10, State: "running"},
		{VHost: "app", Name: "work", Durable: true, Arguments: map[string]any{}, State: "running"},
	}
	f.consumers = []state.Consumer{
		{VHost: "/", Queue: "pq", Tag: "probe-ctag", Connection: conn1, Channel: 1, Prefetch: 10, Active: true,
			Arguments: map[string]any{"x-priority": int64(3)}},
	}
	f.bindings = []state.Binding{
		{VHost: "/", Destination: "amq.gen-8r8S4tWjtr5bc-34QJgOSA", DestinationType: "queue", RoutingKey: "amq.gen-8r8S4tWjtr5bc-34QJgOSA", Arguments: map[string]any{}, PropertiesKey: "amq.gen-8r8S4tWjtr5bc-34QJgOSA"},
		{VHost: "/", Destination: "pq", DestinationType: "queue", RoutingKey: "pq", Arguments: map[string]any{}, PropertiesKey: "pq"},
		{VHost: "/", Source: "px", Destination: "pq", DestinationType: "queue", RoutingKey: "a.#", Arguments: map[string]any{}},
		{VHost: "/", Source: "px", Destination: "pq", DestinationType: "queue", RoutingKey: "b", Arguments: map[string]any{"k": "v"}, PropertiesKey: "b~8IXMRA"},
		{VHost: "/", Source: "px", Destination: "amq.fanout", DestinationType: "exchange", RoutingKey: "r", Arguments: map[string]any{}, PropertiesKey: "r"},
		{VHost: "app", Destination: "work", DestinationType: "queue", RoutingKey: "work", Arguments: map[string]any{}, PropertiesKey: "work"},
	}
	f.users = []state.User{
		{Name: "guest", PasswordHash: "o5pELn4S543rdb4aZqwZvj4E8wWNzMEqu3+vmtbOUPc5D7pR", HashingAlgorithm: "rabbit_password_hashing_sha256", Tags: []string{"administrator"}},
		{Name: "mon", HashingAlgorithm: "rabbit_password_hashing_sha256", Tags: []string{"monitoring"}},
		{Name: "app", HashingAlgorithm: "rabbit_password_hashing_sha256", Tags: []string{"management"}},
		{Name: "plain", HashingAlgorithm: "rabbit_password_hashing_sha256"},
	}
	f.vhosts = []state.VHost{{Name: "/", Description: "Default virtual host"}, {Name: "app", Tags: []string{"prod"}}}
	f.permissions = []state.Permission{
		{User: "guest", VHost: "/", Configure: ".*", Write: ".*", Read: ".*"},
		{User: "app", VHost: "app", Configure: "^app-", Write: ".*", Read: ".*"},
		{User: "guest", VHost: "app", Configure: ".*", Write: ".*", Read: ".*"},
	}
	return f
}

// fixture is a handler over a fake broker with a settable clock.
type fixture struct {
	src  *fakeSource
	defs *fakeDefinitions
	h    *handler
	logs []string
	mu   sync.Mutex
	now  time.Time
}

func newFixture() *fixture {
	fx := &fixture{src: newFake(), defs: &fakeDefinitions{}, now: start.Add(time.Hour)}
	users := &fakeUsers{src: fx.src, passwords: map[string]string{"guest": "guest", "mon": "pw", "app": "pw", "plain": "pw"}}
	fx.h = newHandler(Config{Source: fx.src, Users: users, Definitions: fx.defs, Log: func(s string) {
		fx.mu.Lock()
		fx.logs = append(fx.logs, s)
		fx.mu.Unlock()
	}}, fx.clock)
	return fx
}

func (fx *fixture) clock() time.Time {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.now
}

func (fx *fixture) advance(d time.Duration) {
	fx.mu.Lock()
	fx.now = fx.now.Add(d)
	fx.mu.Unlock()
}

// do serves one request as user:password ("" for none).
func (fx *fixture) do(t testing.TB, method, target, auth string, body io.Reader) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, body)
	if auth != "" {
		u, p, _ := strings.Cut(auth, ":")
		r.SetBasicAuth(u, p)
	}
	w := httptest.NewRecorder()
	fx.h.ServeHTTP(w, r)
	return w
}

// get serves GET as guest and decodes the JSON answer, failing unless 200.
func (fx *fixture) get(t testing.TB, target string) any {
	t.Helper()
	w := fx.do(t, http.MethodGet, target, "guest:guest", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
	}
	return decodeJSON(t, w.Body.Bytes())
}

func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	if d.More() {
		t.Fatalf("trailing data after JSON %q", b)
	}
	return v
}
