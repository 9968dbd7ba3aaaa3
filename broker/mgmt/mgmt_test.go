package mgmt

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// field walks decoded JSON by keys and indexes ("0").
func field(t testing.TB, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				t.Fatalf("no %q in %v", p, keysOf(x))
			}
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				t.Fatalf("index %d of %d", i, len(x))
			}
			v = x[i]
		default:
			t.Fatalf("%q: not a container: %v", p, v)
		}
	}
	return v
}

func keysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func names(t testing.TB, v any, key string) []string {
	t.Helper()
	var out []string
	for _, it := range v.([]any) {
		out = append(out, field(t, it, key).(string))
	}
	return out
}

func num(t testing.TB, v any) float64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is not a number", v)
	}
	f, err := n.Float64()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestOverview(t *testing.T) {
	fx := newFixture()
	o := fx.get(t, "/api/overview")
	for k, want := range map[string]string{
		"product_name": "RabbitMQ", "product_version": "3.10.8", "rabbitmq_version": "3.10.8",
		"management_version": "3.10.8", "cluster_name": "wiretap@vm", "node": "wiretap@vm",
	} {
		if got := field(t, o, k); got != want {
			t.Errorf("%s = %v, want %s", k, got, want)
		}
	}
	for k, want := range map[string]float64{"connections": 2, "channels": 3, "exchanges": 9, "queues": 3, "consumers": 1} {
		if got := num(t, field(t, o, "object_totals", k)); got != want {
			t.Errorf("object_totals.%s = %v, want %v", k, got, want)
		}
	}
	for k, want := range map[string]float64{"messages": 20, "messages_ready": 10, "messages_unacknowledged": 10} {
		if got := num(t, field(t, o, "queue_totals", k)); got != want {
			t.Errorf("queue_totals.%s = %v, want %v", k, got, want)
		}
	}
	for k, want := range map[string]float64{"publish": 28, "deliver_get": 19, "ack": 0, "confirm": 28} {
		if got := num(t, field(t, o, "message_stats", k)); got != want {
			t.Errorf("message_stats.%s = %v, want %v", k, got, want)
		}
		if _, ok := field(t, o, "message_stats", k+"_details", "rate").(json.Number); !ok {
			t.Errorf("message_stats.%s_details.rate missing", k)
		}
	}
	ls := field(t, o, "listeners").([]any)
	if len(ls) != 2 || field(t, ls[1], "ip_address") != "::1" || num(t, field(t, ls[0], "port")) != 5672 ||
		field(t, ls[0], "protocol") != "amqp" {
		t.Errorf("listeners = %v", ls)
	}
}

func TestOverviewNamesTheHTTPListener(t *testing.T) {
	fx := newFixture()
	srv := httptest.NewServer(fx.h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/overview", nil)
	req.SetBasicAuth("guest", "guest")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	u, _ := url.Parse(srv.URL)
	ls := field(t, decodeJSON(t, body), "listeners").([]any)
	last := ls[len(ls)-1]
	if field(t, last, "protocol") != "http" || field(t, last, "ip_address") != u.Hostname() ||
		field(t, last, "port").(json.Number).String() != u.Port() {
		t.Errorf("http listener = %v, server at %s", last, srv.URL)
	}
}

func TestConnections(t *testing.T) {
	fx := newFixture()
	cs := fx.get(t, "/api/connections")
	if got := names(t, cs, "name"); !slices.Equal(got, []string{conn1, conn2}) {
		t.Fatalf("names = %v", got)
	}
	c := cs.([]any)[0]
	for k, want := range map[string]any{
		"node": "wiretap@vm", "vhost": "/", "user": "guest", "state": "running", "peer_host": "127.0.0.1",
		"host": "127.0.0.1", "protocol": "AMQP 0-9-1", "auth_mechanism": "PLAIN", "type": "network",
		"ssl": false, "user_provided_name": "probe-conn", "ssl_protocol": nil,
	} {
		if got := field(t, c, k); got != want {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	for k, want := range map[string]float64{
		"peer_port": 47622, "port": 5672, "channels": 3, "frame_max": 131072, "channel_max": 2047, "timeout": 10,
		"recv_oct": 311, "send_oct": 538, "recv_cnt": 3, "send_cnt": 3, "connected_at": float64(start.UnixMilli()),
	} {
		if got := num(t, field(t, c, k)); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	cp := field(t, c, "client_properties")
	if field(t, cp, "connection_name") != "probe-conn" || field(t, cp, "capabilities", "basic.nack") != true {
		t.Errorf("client_properties = %v", cp)
	}
	if got := field(t, cp, "x-bin"); got != "Not UTF-8, base64 is: /wA=" {
		t.Errorf("x-bin = %v", got)
	}
	if got := field(t, cp, "x-ts").(json.Number).String(); got != "1700000000" {
		t.Errorf("x-ts = %v", got)
	}
	if got := field(t, cp, "x-dec").(json.Number).String(); got != "2.1234" {
		t.Errorf("x-dec = %v (RabbitMQ 3.10 writes scale.value)", got)
	}
	if got := field(t, cs, "1", "peer_host"); got != "::1" {
		t.Errorf("IPv6 peer_host = %v", got)
	}
	if got := field(t, cs, "1", "ssl"); got != true {
		t.Errorf("ssl = %v", got)
	}
	// The vhost's connections only.
	if got := names(t, fx.get(t, "/api/vhosts/app/connections"), "name"); !slices.Equal(got, []string{conn2}) {
		t.Errorf("/api/vhosts/app/connections = %v", got)
	}
	if got := names(t, fx.get(t, "/api/vhosts/%2F/connections"), "name"); !slices.Equal(got, []string{conn1}) {
		t.Errorf("/api/vhosts/%%2F/connections = %v", got)
	}
}

func TestOneConnection(t *testing.T) {
	fx := newFixture()
	c := fx.get(t, "/api/connections/"+url.PathEscape(conn1))
	if field(t, c, "name") != conn1 {
		t.Fatalf("name = %v", field(t, c, "name"))
	}
	// One connection has "" where the list has null, as 3.10 does.
	if got := field(t, c, "ssl_protocol"); got != "" {
		t.Errorf("ssl_protocol = %#v", got)
	}
	w := fx.do(t, http.MethodGet, "/api/connections/nope", "guest:guest", nil)
	if w.Code != http.StatusNotFound || w.Body.String() != bodyNotFound {
		t.Errorf("missing connection: %d %s", w.Code, w.Body)
	}
}

// TestRecoveryTestFlow does what amqp091-go v1.16.0's recovery_test.go
// does through internal/utils/http.go: GET /api/connections/ (trailing
// slash), find client_properties.connection_name, DELETE
// /api/connections/url.PathEscape(name), expecting 204.
func TestRecoveryTestFlow(t *testing.T) {
	fx := newFixture()
	srv := httptest.NewServer(fx.h)
	defer srv.Close()
	client := http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	call := func(method, u string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("guest", "guest")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := call(http.MethodGet, srv.URL+"/api/connections/")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/connections/: %d %s", resp.StatusCode, body)
	}
	var conns []struct {
		Name             string `json:"name"`
		ClientProperties struct {
			ConnectionName string `json:"connection_name"`
		} `json:"client_properties"`
	}
	if err := json.Unmarshal(body, &conns); err != nil {
		t.Fatal(err)
	}
	target := ""
	for _, c := range conns {
		if c.ClientProperties.ConnectionName == "probe-conn" {
			target = c.Name
		}
	}
	if target != conn1 {
		t.Fatalf("found %q by connection_name, want %q", target, conn1)
	}
	resp, body = call(http.MethodDelete, srv.URL+"/api/connections/"+url.PathEscape(target))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	if want := []string{conn1 + "|Closed via management plugin"}; !slices.Equal(fx.src.closed, want) {
		t.Errorf("closed %v, want %v", fx.src.closed, want)
	}
	// Gone now: 404 with RabbitMQ's body.
	resp, body = call(http.MethodDelete, srv.URL+"/api/connections/"+url.PathEscape(target))
	if resp.StatusCode != http.StatusNotFound || string(body) != bodyNotFound {
		t.Errorf("second DELETE: %d %s", resp.StatusCode, body)
	}
}

func TestDeleteConnectionReason(t *testing.T) {
	fx := newFixture()
	r := httptest.NewRequest(http.MethodDelete, "/api/connections/"+url.PathEscape(conn2), nil)
	r.SetBasicAuth("guest", "guest")
	r.Header.Set("X-Reason", "bye now")
	w := httptest.NewRecorder()
	fx.h.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Fatalf("DELETE: %d %q", w.Code, w.Body)
	}
	if want := []string{conn2 + "|bye now"}; !slices.Equal(fx.src.closed, want) {
		t.Errorf("closed %v, want %v", fx.src.closed, want)
	}
	if !slices.ContainsFunc(fx.logs, func(s string) bool { return strings.Contains(s, "bye now") }) {
		t.Errorf("not logged: %v", fx.logs)
	}
}

func TestDeleteConnectionNeedsOwnerOrAdministrator(t *testing.T) {
	fx := newFixture()
	// mon (monitoring) sees guest's connection but may not close it.
	w := fx.do(t, http.MethodDelete, "/api/connections/"+url.PathEscape(conn1), "mon:pw", nil)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), reasonNotObject) {
		t.Errorf("mon DELETE: %d %s", w.Code, w.Body)
	}
	// app may close its own.
	w = fx.do(t, http.MethodDelete, "/api/connections/"+url.PathEscape(conn2), "app:pw", nil)
	if w.Code != http.StatusNoContent {
		t.Errorf("app DELETE own: %d %s", w.Code, w.Body)
	}
	if len(fx.src.closed) != 1 {
		t.Errorf("closed = %v", fx.src.closed)
	}
}

func TestChannels(t *testing.T) {
	fx := newFixture()
	chs := fx.get(t, "/api/channels")
	want := []string{conn1 + " (1)", conn1 + " (2)", conn1 + " (3)"}
	if got := names(t, chs, "name"); !slices.Equal(got, want) {
		t.Fatalf("names = %v", got)
	}
	if field(t, chs, "1", "confirm") != true || field(t, chs, "2", "transactional") != true ||
		num(t, field(t, chs, "0", "prefetch_count")) != 10 || num(t, field(t, chs, "0", "messages_unacknowledged")) != 10 {
		t.Errorf("channels = %v", chs)
	}
	if got := field(t, chs, "0", "connection_details", "peer_port").(json.Number).String(); got != "47622" {
		t.Errorf("connection_details.peer_port = %v", got)
	}
	if got := names(t, fx.get(t, "/api/connections/"+url.PathEscape(conn1)+"/channels"), "name"); !slices.Equal(got, want) {
		t.Errorf("connection's channels = %v", got)
	}
	if got := fx.get(t, "/api/connections/"+url.PathEscape(conn2)+"/channels").([]any); len(got) != 0 {
		t.Errorf("conn2's channels = %v", got)
	}
	one := fx.get(t, "/api/channels/"+url.PathEscape(conn1+" (1)"))
	if got := field(t, one, "consumer_details", "0", "consumer_tag"); got != "probe-ctag" {
		t.Errorf("consumer_details = %v", got)
	}
	for _, p := range []string{"/api/channels/" + url.PathEscape(conn1+" (9)"), "/api/channels/nope", "/api/connections/nope/channels"} {
		if w := fx.do(t, http.MethodGet, p, "guest:guest", nil); w.Code != http.StatusNotFound {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
}

func TestExchanges(t *testing.T) {
	fx := newFixture()
	all := fx.get(t, "/api/exchanges")
	if n := len(all.([]any)); n != 9 {
		t.Errorf("%d exchanges, want 9", n)
	}
	root := fx.get(t, "/api/exchanges/%2F")
	if got := names(t, root, "name"); !slices.Equal(got, []string{"", "amq.direct", "amq.fanout", "amq.topic", "px"}) {
		t.Errorf("vhost / exchanges = %v", got)
	}
	// An exchange without traffic has no message_stats, as in RabbitMQ.
	if _, ok := field(t, root, "0").(map[string]any)["message_stats"]; ok {
		t.Errorf("idle exchange has message_stats")
	}
	x := fx.get(t, "/api/exchanges/%2F/px")
	if field(t, x, "type") != "topic" || field(t, x, "arguments", "alternate-exchange") != "amq.fanout" ||
		num(t, field(t, x, "message_stats", "publish_in")) != 20 {
		t.Errorf("px = %v", x)
	}
	if _, ok := field(t, x, "incoming").([]any); !ok {
		t.Errorf("one exchange lacks incoming")
	}
	// The default exchange is "amq.default" nowhere: its name is "".
	if w := fx.do(t, http.MethodGet, "/api/exchanges/%2F/nope", "guest:guest", nil); w.Code != 404 || w.Body.String() != bodyNotFound {
		t.Errorf("missing exchange: %d %s", w.Code, w.Body)
	}
	if w := fx.do(t, http.MethodGet, "/api/exchanges/nope", "guest:guest", nil); w.Code != 404 {
		t.Errorf("missing vhost: %d %s", w.Code, w.Body)
	}
	src := fx.get(t, "/api/exchanges/%2F/px/bindings/source")
	if got := names(t, src, "routing_key"); !slices.Equal(got, []string{"a.#", "b", "r"}) {
		t.Errorf("px's bindings = %v", got)
	}
	dst := fx.get(t, "/api/exchanges/%2F/amq.fanout/bindings/destination")
	if got := names(t, dst, "source"); !slices.Equal(got, []string{"px"}) {
		t.Errorf("amq.fanout as destination = %v", got)
	}
	if got := fx.get(t, "/api/exchanges/%2F/nope/bindings/source").([]any); len(got) != 0 {
		t.Errorf("missing exchange's bindings = %v", got)
	}
}

func TestQueues(t *testing.T) {
	fx := newFixture()
	qs := fx.get(t, "/api/queues")
	if got := names(t, qs, "name"); !slices.Equal(got, []string{"amq.gen-8r8S4tWjtr5bc-34QJgOSA", "pq", "work"}) {
		t.Fatalf("names = %v", got)
	}
	pq := field(t, qs, "1")
	for k, want := range map[string]float64{"messages": 20, "messages_ready": 10, "messages_unacknowledged": 10, "consumers": 1, "message_bytes": 100} {
		if got := num(t, field(t, pq, k)); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if num(t, field(t, pq, "message_stats", "publish")) != 20 || num(t, field(t, pq, "message_stats", "deliver_get")) != 10 {
		t.Errorf("message_stats = %v", field(t, pq, "message_stats"))
	}
	for k, want := range map[string]any{"type": "classic", "state": "running", "durable": true, "exclusive": false,
		"auto_delete": false, "node": "wiretap@vm", "vhost": "/", "policy": nil, "exclusive_consumer_tag": nil} {
		if got := field(t, pq, k); got != want {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	if got := field(t, pq, "arguments", "x-max-length").(json.Number).String(); got != "100" {
		t.Errorf("x-max-length = %v", got)
	}
	// The list does not name an exclusive queue's owner; one queue does.
	if _, ok := field(t, qs, "0").(map[string]any)["owner_pid_details"]; ok {
		t.Errorf("list has owner_pid_details")
	}
	ex := fx.get(t, "/api/queues/%2F/amq.gen-8r8S4tWjtr5bc-34QJgOSA")
	if field(t, ex, "owner_pid_details", "name") != conn1 || field(t, ex, "owner_pid_details", "peer_host") != "127.0.0.1" {
		t.Errorf("owner_pid_details = %v", field(t, ex, "owner_pid_details"))
	}
	one := fx.get(t, "/api/queues/%2F/pq")
	if field(t, one, "consumer_details", "0", "channel_details", "name") != conn1+" (1)" {
		t.Errorf("consumer_details = %v", field(t, one, "consumer_details"))
	}
	if got := names(t, fx.get(t, "/api/queues/app"), "name"); !slices.Equal(got, []string{"work"}) {
		t.Errorf("vhost app queues = %v", got)
	}
	if got := names(t, fx.get(t, "/api/queues/%2F/pq/bindings"), "source"); !slices.Equal(got, []string{"", "px", "px"}) {
		t.Errorf("pq's bindings = %v", got)
	}
	for _, p := range []string{"/api/queues/%2F/nope", "/api/queues/nope", "/api/queues/nope/pq", "/api/queues/app/pq"} {
		if w := fx.do(t, http.MethodGet, p, "guest:guest", nil); w.Code != 404 || w.Body.String() != bodyNotFound {
			t.Errorf("%s: %d %s", p, w.Code, w.Body)
		}
	}
}

// A vhost named "a/b" is one path segment when escaped: %2F must not be
// split, and a queue name may hold "/" and " " too.
func TestEscapedNamesAreOneSegment(t *testing.T) {
	fx := newFixture()
	fx.src.vhosts = append(fx.src.vhosts, state.VHost{Name: "a/b"})
	fx.src.queues = append(fx.src.queues, state.Queue{VHost: "a/b", Name: "x/y z", State: "running"})
	got := fx.get(t, "/api/queues/a%2Fb/x%2Fy%20z")
	if field(t, got, "vhost") != "a/b" || field(t, got, "name") != "x/y z" {
		t.Errorf("got %v", got)
	}
	if got := names(t, fx.get(t, "/api/queues/a%2Fb"), "name"); !slices.Equal(got, []string{"x/y z"}) {
		t.Errorf("vhost a/b queues = %v", got)
	}
	// Unescaped, the same path is three segments: a/b is no vhost.
	if w := fx.do(t, http.MethodGet, "/api/queues/a/b/x", "guest:guest", nil); w.Code != 404 {
		t.Errorf("split path: %d", w.Code)
	}
}

func TestBindingsAndConsumers(t *testing.T) {
	fx := newFixture()
	bs := fx.get(t, "/api/bindings")
	if n := len(bs.([]any)); n != 6 {
		t.Fatalf("%d bindings", n)
	}
	// The broker's properties_key is kept; without one it is RabbitMQ's
	// escaped routing key.
	if got := names(t, bs, "properties_key"); !slices.Equal(got[:5], []string{"amq.gen-8r8S4tWjtr5bc-34QJgOSA", "pq", "a.%23", "b~8IXMRA", "r"}) {
		t.Errorf("properties_key = %v", got)
	}
	if got := field(t, bs, "3", "arguments", "k"); got != "v" {
		t.Errorf("arguments = %v", got)
	}
	if n := len(fx.get(t, "/api/bindings/app").([]any)); n != 1 {
		t.Errorf("%d bindings in app", n)
	}
	cs := fx.get(t, "/api/consumers")
	c := field(t, cs, "0")
	if field(t, c, "consumer_tag") != "probe-ctag" || field(t, c, "ack_required") != true ||
		field(t, c, "activity_status") != "up" || field(t, c, "queue", "name") != "pq" ||
		field(t, c, "channel_details", "user") != "guest" || num(t, field(t, c, "arguments", "x-priority")) != 3 {
		t.Errorf("consumer = %v", c)
	}
	if n := len(fx.get(t, "/api/consumers/app").([]any)); n != 0 {
		t.Errorf("%d consumers in app", n)
	}
}

func TestSingleActiveConsumerStatus(t *testing.T) {
	fx := newFixture()
	fx.src.queues[1].SingleActiveConsumer = "probe-ctag"
	fx.src.consumers = append(fx.src.consumers, state.Consumer{VHost: "/", Queue: "pq", Tag: "second", Connection: conn1, Channel: 1})
	cs := fx.get(t, "/api/consumers")
	if got := names(t, cs, "activity_status"); !slices.Equal(got, []string{"single_active", "waiting"}) {
		t.Errorf("activity_status = %v", got)
	}
	if got := field(t, fx.get(t, "/api/queues/%2F/pq"), "single_active_consumer_tag"); got != "probe-ctag" {
		t.Errorf("single_active_consumer_tag = %v", got)
	}
}

func TestExclusiveConsumerTag(t *testing.T) {
	fx := newFixture()
	fx.src.consumers[0].Exclusive = true
	if got := field(t, fx.get(t, "/api/queues/%2F/pq"), "exclusive_consumer_tag"); got != "probe-ctag" {
		t.Errorf("exclusive_consumer_tag = %v", got)
	}
}

func TestUsersVHostsPermissionsWhoami(t *testing.T) {
	fx := newFixture()
	us := fx.get(t, "/api/users")
	if got := names(t, us, "name"); !slices.Equal(got, []string{"app", "guest", "mon", "plain"}) {
		t.Errorf("users = %v", got)
	}
	g := fx.get(t, "/api/users/guest")
	if field(t, g, "password_hash") != "o5pELn4S543rdb4aZqwZvj4E8wWNzMEqu3+vmtbOUPc5D7pR" ||
		field(t, g, "hashing_algorithm") != "rabbit_password_hashing_sha256" || field(t, g, "tags", "0") != "administrator" {
		t.Errorf("guest = %v", g)
	}
	if tags := field(t, fx.get(t, "/api/users/plain"), "tags").([]any); len(tags) != 0 {
		t.Errorf("plain's tags = %v, want []", tags)
	}
	if got := names(t, fx.get(t, "/api/users/guest/permissions"), "vhost"); !slices.Equal(got, []string{"/", "app"}) {
		t.Errorf("guest's permissions = %v", got)
	}
	vs := fx.get(t, "/api/vhosts")
	if got := names(t, vs, "name"); !slices.Equal(got, []string{"/", "app"}) {
		t.Errorf("vhosts = %v", got)
	}
	root := field(t, vs, "0")
	if num(t, field(t, root, "messages")) != 20 || num(t, field(t, root, "recv_oct")) != 311 ||
		field(t, root, "cluster_state", "wiretap@vm") != "running" || field(t, root, "description") != "Default virtual host" {
		t.Errorf("vhost / = %v", root)
	}
	if got := field(t, vs, "1", "tags", "0"); got != "prod" {
		t.Errorf("app's tags = %v", got)
	}
	if got := field(t, fx.get(t, "/api/vhosts/app"), "name"); got != "app" {
		t.Errorf("vhost app = %v", got)
	}
	if got := names(t, fx.get(t, "/api/vhosts/app/permissions"), "user"); !slices.Equal(got, []string{"app", "guest"}) {
		t.Errorf("app's permissions = %v", got)
	}
	ps := fx.get(t, "/api/permissions")
	if got := names(t, ps, "vhost"); !slices.Equal(got, []string{"/", "app", "app"}) {
		t.Errorf("permissions = %v", got)
	}
	p := fx.get(t, "/api/permissions/app/app")
	if field(t, p, "configure") != "^app-" || field(t, p, "write") != ".*" {
		t.Errorf("permission = %v", p)
	}
	for _, path := range []string{"/api/users/nope", "/api/users/nope/permissions", "/api/vhosts/nope", "/api/permissions/app/mon"} {
		if w := fx.do(t, http.MethodGet, path, "guest:guest", nil); w.Code != 404 {
			t.Errorf("%s: %d", path, w.Code)
		}
	}
	// 3.10 returns tags as an array.
	w := fx.do(t, http.MethodGet, "/api/whoami", "mon:pw", nil)
	if w.Code != 200 || w.Body.String() != `{"name":"mon","tags":["monitoring"]}` {
		t.Errorf("whoami: %d %s", w.Code, w.Body)
	}
	if w := fx.do(t, http.MethodGet, "/api/cluster-name", "guest:guest", nil); w.Body.String() != `{"name":"wiretap@vm"}` {
		t.Errorf("cluster-name: %s", w.Body)
	}
}

func TestAuthentication(t *testing.T) {
	fx := newFixture()
	// No credentials: 401, the realm, no body.
	w := fx.do(t, http.MethodGet, "/api/overview", "", nil)
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != `Basic realm="RabbitMQ Management"` || w.Body.Len() != 0 {
		t.Errorf("no auth: %d %v %q", w.Code, w.Header(), w.Body)
	}
	for _, auth := range []string{"guest:wrong", "nobody:pw", "guest:"} {
		w = fx.do(t, http.MethodGet, "/api/overview", auth, nil)
		if w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" || w.Body.String() != `{"error":"not_authorized","reason":"Login failed"}` {
			t.Errorf("%s: %d %v %s", auth, w.Code, w.Header(), w.Body)
		}
	}
	if !slices.ContainsFunc(fx.logs, func(s string) bool { return strings.Contains(s, "'nobody'") }) {
		t.Errorf("refused login not logged: %v", fx.logs)
	}
	// A user without a management tag.
	w = fx.do(t, http.MethodGet, "/api/overview", "plain:pw", nil)
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != "" || w.Body.String() != `{"error":"not_authorised","reason":"Not management user"}` {
		t.Errorf("plain: %d %v %s", w.Code, w.Header(), w.Body)
	}
	// Administrator-only endpoints.
	for _, p := range []string{"/api/users", "/api/users/guest", "/api/permissions", "/api/definitions", "/api/vhosts/app", "/api/vhosts/app/permissions"} {
		for _, who := range []string{"mon:pw", "app:pw"} {
			w = fx.do(t, http.MethodGet, p, who, nil)
			if w.Code != 401 || w.Body.String() != `{"error":"not_authorised","reason":"Not administrator user"}` {
				t.Errorf("%s as %s: %d %s", p, who, w.Code, w.Body)
			}
		}
	}
	// A vhost the user has no permissions in.
	w = fx.do(t, http.MethodGet, "/api/queues/%2F", "app:pw", nil)
	if w.Code != 401 || w.Body.String() != `{"error":"not_authorised","reason":"User not authorised to access virtual host"}` {
		t.Errorf("app in /: %d %s", w.Code, w.Body)
	}
	// A vhost that does not exist is 404 for anyone.
	if w = fx.do(t, http.MethodGet, "/api/queues/nope", "app:pw", nil); w.Code != 404 {
		t.Errorf("app in nope: %d %s", w.Code, w.Body)
	}
}

func TestVisibilityFollowsTags(t *testing.T) {
	fx := newFixture()
	get := func(path, who string) any {
		w := fx.do(t, http.MethodGet, path, who, nil)
		if w.Code != 200 {
			t.Fatalf("%s as %s: %d %s", path, who, w.Code, w.Body)
		}
		return decodeJSON(t, w.Body.Bytes())
	}
	// management: own connections, permitted vhosts only.
	if got := names(t, get("/api/connections", "app:pw"), "name"); !slices.Equal(got, []string{conn2}) {
		t.Errorf("app's connections = %v", got)
	}
	if n := len(get("/api/channels", "app:pw").([]any)); n != 0 {
		t.Errorf("app sees %d channels", n)
	}
	if got := names(t, get("/api/queues", "app:pw"), "name"); !slices.Equal(got, []string{"work"}) {
		t.Errorf("app's queues = %v", got)
	}
	if got := names(t, get("/api/vhosts", "app:pw"), "name"); !slices.Equal(got, []string{"app"}) {
		t.Errorf("app's vhosts = %v", got)
	}
	if n := len(get("/api/bindings", "app:pw").([]any)); n != 1 {
		t.Errorf("app sees %d bindings", n)
	}
	if n := len(get("/api/consumers", "app:pw").([]any)); n != 0 {
		t.Errorf("app sees %d consumers", n)
	}
	if n := len(get("/api/exchanges", "app:pw").([]any)); n != 4 {
		t.Errorf("app sees %d exchanges", n)
	}
	w := fx.do(t, http.MethodGet, "/api/connections/"+url.PathEscape(conn1), "app:pw", nil)
	if w.Code != 401 || !strings.Contains(w.Body.String(), reasonNotObject) {
		t.Errorf("app GET guest's connection: %d %s", w.Code, w.Body)
	}
	// monitoring: every connection and vhost, but queues only where it
	// has permissions (none here).
	if n := len(get("/api/connections", "mon:pw").([]any)); n != 2 {
		t.Errorf("mon sees %d connections", n)
	}
	if n := len(get("/api/vhosts", "mon:pw").([]any)); n != 2 {
		t.Errorf("mon sees %d vhosts", n)
	}
	if n := len(get("/api/queues", "mon:pw").([]any)); n != 0 {
		t.Errorf("mon sees %d queues", n)
	}
}

func TestMethods(t *testing.T) {
	fx := newFixture()
	for _, c := range []struct {
		method, path, allow string
	}{
		{http.MethodPut, "/api/overview", "HEAD, GET, OPTIONS"},
		{http.MethodPost, "/api/overview", "HEAD, GET, OPTIONS"},
		{http.MethodPatch, "/api/connections", "HEAD, GET, OPTIONS"},
		{http.MethodDelete, "/api/queues", "HEAD, GET, OPTIONS"},
		{http.MethodPut, "/api/connections/x", "HEAD, GET, DELETE, OPTIONS"},
		{http.MethodPut, "/api/definitions", "HEAD, GET, POST, OPTIONS"},
		{http.MethodDelete, "/api/definitions/%2F", "HEAD, GET, POST, OPTIONS"},
	} {
		// 405 comes before authentication, as in RabbitMQ.
		w := fx.do(t, c.method, c.path, "", nil)
		if w.Code != 405 || w.Header().Get("Allow") != c.allow || w.Body.Len() != 0 {
			t.Errorf("%s %s: %d allow %q %q", c.method, c.path, w.Code, w.Header().Get("Allow"), w.Body)
		}
	}
	w := fx.do(t, http.MethodOptions, "/api/connections/x", "", nil)
	if w.Code != 200 || w.Header().Get("Allow") != "HEAD, GET, DELETE, OPTIONS" {
		t.Errorf("OPTIONS: %d %v", w.Code, w.Header())
	}
	// HEAD is GET without the body; net/http drops the body itself.
	srv := httptest.NewServer(fx.h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/api/overview", nil)
	req.SetBasicAuth("guest", "guest")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength <= 0 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD: %d length %d %v", resp.StatusCode, resp.ContentLength, resp.Header)
	}
	for _, p := range []string{"/", "/api", "/api/", "/api/nonexist", "/api/queues/a/b/c/d/e/f", "/apiqueues", "/api/overview/x"} {
		w := fx.do(t, http.MethodGet, p, "guest:guest", nil)
		if w.Code != 404 || w.Body.String() != bodyNotFound || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %s", p, w.Code, w.Body)
		}
	}
}

func TestColumns(t *testing.T) {
	fx := newFixture()
	w := fx.do(t, http.MethodGet, "/api/queues?columns=name,messages", "guest:guest", nil)
	want := `[{"messages":0,"name":"amq.gen-8r8S4tWjtr5bc-34QJgOSA"},{"messages":20,"name":"pq"},{"messages":0,"name":"work"}]`
	if w.Body.String() != want {
		t.Errorf("columns=name,messages:\n%s\nwant\n%s", w.Body, want)
	}
	one := fx.get(t, "/api/queues/%2F/pq?columns=message_stats.publish,name")
	if got := len(one.(map[string]any)); got != 2 {
		t.Errorf("keys = %v", one)
	}
	if got := keysOf(field(t, one, "message_stats").(map[string]any)); !slices.Equal(got, []string{"publish"}) {
		t.Errorf("message_stats keys = %v", got)
	}
	// A column and a path below it: the whole column.
	one = fx.get(t, "/api/queues/%2F/pq?columns=message_stats.publish,message_stats")
	if n := len(field(t, one, "message_stats").(map[string]any)); n != 8 {
		t.Errorf("message_stats has %d keys", n)
	}
	// Tables and the overview's totals are kept whole, as RabbitMQ keeps
	// its maps (it descends only into property lists).
	c := fx.get(t, "/api/connections?columns=client_properties.connection_name")
	if got := field(t, c, "0"); len(got.(map[string]any)) != 1 || len(field(t, got, "client_properties").(map[string]any)) != len(clientTable("")) {
		t.Errorf("client_properties.connection_name = %v", got)
	}
	o := fx.get(t, "/api/overview?columns=object_totals.queues,exchange_types.name")
	if n := len(field(t, o, "object_totals").(map[string]any)); n != 5 {
		t.Errorf("object_totals has %d keys", n)
	}
	if got := field(t, o, "exchange_types", "0").(map[string]any); len(got) != 1 || got["name"] != "direct" {
		t.Errorf("exchange_types.name = %v", got)
	}
	// Into arrays of objects.
	q := fx.get(t, "/api/queues/%2F/pq?columns=consumer_details.consumer_tag")
	if got := field(t, q, "consumer_details", "0").(map[string]any); len(got) != 1 || got["consumer_tag"] != "probe-ctag" {
		t.Errorf("consumer_details.consumer_tag = %v", got)
	}
	// Unknown columns and parameters are no error.
	if got := fx.get(t, "/api/exchanges?columns=nope&lengths_age=60&msg_rates_age=60").([]any); len(got) != 9 || len(got[0].(map[string]any)) != 0 {
		t.Errorf("unknown column: %v", got)
	}
}

func TestSort(t *testing.T) {
	fx := newFixture()
	got := names(t, fx.get(t, "/api/queues?sort=messages"), "name")
	if !slices.Equal(got, []string{"amq.gen-8r8S4tWjtr5bc-34QJgOSA", "work", "pq"}) {
		t.Errorf("sort=messages: %v", got)
	}
	got = names(t, fx.get(t, "/api/queues?sort=messages&sort_reverse=true"), "name")
	if !slices.Equal(got, []string{"pq", "work", "amq.gen-8r8S4tWjtr5bc-34QJgOSA"}) {
		t.Errorf("sort=messages reversed: %v", got)
	}
	// Nested paths; a missing value sorts as 0.
	got = names(t, fx.get(t, "/api/queues?sort=message_stats.publish&sort_reverse=true"), "name")
	if !slices.Equal(got, []string{"pq", "work", "amq.gen-8r8S4tWjtr5bc-34QJgOSA"}) {
		t.Errorf("sort=message_stats.publish reversed: %v", got)
	}
	got = names(t, fx.get(t, "/api/queues?sort=vhost&sort_reverse=true"), "vhost")
	if !slices.Equal(got, []string{"app", "/", "/"}) {
		t.Errorf("sort=vhost reversed: %v", got)
	}
	// Numbers before strings, as Erlang orders terms.
	got = names(t, fx.get(t, "/api/exchanges?sort=name&columns=name"), "name")
	if !slices.IsSorted(got) {
		t.Errorf("sort=name: %v", got)
	}
	got = names(t, fx.get(t, "/api/users?sort_reverse=true"), "name")
	if !slices.Equal(got, []string{"plain", "mon", "guest", "app"}) {
		t.Errorf("users reversed: %v", got)
	}
}

func TestPagination(t *testing.T) {
	fx := newFixture()
	w := fx.do(t, http.MethodGet, "/api/queues?page=1&page_size=2&columns=name", "guest:guest", nil)
	want := `{"filtered_count":3,"item_count":2,"items":[{"name":"amq.gen-8r8S4tWjtr5bc-34QJgOSA"},{"name":"pq"}],"page":1,"page_count":2,"page_size":2,"total_count":3}`
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("page 1:\n%s\nwant\n%s", w.Body, want)
	}
	p := fx.get(t, "/api/queues?page=2&page_size=2&columns=name")
	if got := names(t, field(t, p, "items"), "name"); !slices.Equal(got, []string{"work"}) {
		t.Errorf("page 2 = %v", got)
	}
	// One page past the end is empty; further is out of range.
	p = fx.get(t, "/api/queues?page=2&page_size=3")
	if num(t, field(t, p, "item_count")) != 0 || len(field(t, p, "items").([]any)) != 0 {
		t.Errorf("page 2 of 3 = %v", p)
	}
	p = fx.get(t, "/api/queues?page=1&name=PQ&columns=name")
	if got := names(t, field(t, p, "items"), "name"); !slices.Equal(got, []string{"pq"}) || num(t, field(t, p, "filtered_count")) != 1 ||
		num(t, field(t, p, "total_count")) != 3 || num(t, field(t, p, "page_size")) != 100 {
		t.Errorf("name=PQ: %v", p)
	}
	p = fx.get(t, "/api/queues?page=1&name=^(pq|w)&use_regex=true")
	if got := names(t, field(t, p, "items"), "name"); !slices.Equal(got, []string{"pq", "work"}) {
		t.Errorf("regex: %v", got)
	}
	// name without page filters nothing, as in 3.10.
	if n := len(fx.get(t, "/api/queues?name=pq").([]any)); n != 3 {
		t.Errorf("name without page: %d", n)
	}
	// Endpoints that do not paginate ignore the parameters, bad ones too.
	if _, ok := fx.get(t, "/api/bindings?page=1&page_size=1").([]any); !ok {
		t.Errorf("bindings paginated")
	}
	if _, ok := fx.get(t, "/api/users?page=x").([]any); !ok {
		t.Errorf("users refused page=x")
	}
	for _, c := range []struct{ query, body string }{
		{"page=9&page_size=3", `{"error":"page_out_of_range","reason":"Page out of range, page: 9 page size: 3, len: 3"}`},
		{"page=0", `{"error":"invalid_pagination_parameters","reason":"Invalid pagination parameters: page number 0, page size undefined"}`},
		{"page=1&page_size=600", `{"error":"invalid_pagination_parameters","reason":"Invalid pagination parameters: page number 1, page size 600"}`},
		{"page=1&page_size=0", `{"error":"invalid_pagination_parameters","reason":"Invalid pagination parameters: page number 1, page size 0"}`},
		{"page=x", `{"error":"bad_request","reason":"Pagination parameters are invalid"}`},
		{"page=1&page_size=x", `{"error":"bad_request","reason":"Pagination parameters are invalid"}`},
		{"page=9223372036854775807&page_size=500", `{"error":"page_out_of_range","reason":"Page out of range, page: 9223372036854775807 page size: 500, len: 3"}`},
	} {
		w := fx.do(t, http.MethodGet, "/api/queues?"+c.query, "guest:guest", nil)
		if w.Code != 400 || w.Body.String() != c.body {
			t.Errorf("%s: %d %s\nwant %s", c.query, w.Code, w.Body, c.body)
		}
	}
	if w := fx.do(t, http.MethodGet, "/api/queues?page=1&name=(&use_regex=true", "guest:guest", nil); w.Code != 400 {
		t.Errorf("bad regex: %d %s", w.Code, w.Body)
	}
	// Channels, connections, exchanges and vhosts page too.
	for _, p := range []string{"/api/channels", "/api/connections", "/api/exchanges", "/api/vhosts"} {
		v := fx.get(t, p+"?page=1&page_size=1")
		if num(t, field(t, v, "item_count")) != 1 {
			t.Errorf("%s paged: %v", p, v)
		}
	}
}

func TestRates(t *testing.T) {
	fx := newFixture()
	rate := func(path string, keys ...string) float64 {
		return num(t, field(t, fx.get(t, path), keys...))
	}
	if r := rate("/api/queues/%2F/pq", "message_stats", "publish_details", "rate"); r != 0 {
		t.Errorf("first rate = %v", r)
	}
	fx.advance(2 * time.Second)
	fx.src.queues[1].Published += 50 // 25/s
	fx.src.queues[1].Ready += 10     // 5/s
	if r := rate("/api/queues/%2F/pq", "message_stats", "publish_details", "rate"); r != 25 {
		t.Errorf("publish rate = %v, want 25", r)
	}
	if r := rate("/api/queues/%2F/pq", "messages_ready_details", "rate"); r != 5 {
		t.Errorf("messages_ready rate = %v, want 5", r)
	}
	// A gauge falls: its rate is negative.
	fx.advance(2 * time.Second)
	fx.src.queues[1].Ready = 0
	// No reading is a window (5s) old yet, so the base is the oldest,
	// 4s back: ready went 10 -> 0.
	if r := rate("/api/queues/%2F/pq", "messages_ready_details", "rate"); r != -2.5 {
		t.Errorf("falling messages_ready rate = %v, want -2.5", r)
	}
	// The queue is deleted and declared again: counters restart, no
	// huge negative rate.
	fx.advance(2 * time.Second)
	fx.src.queues[1].Published = 1
	if r := rate("/api/queues/%2F/pq", "message_stats", "publish_details", "rate"); r != 0 {
		t.Errorf("rate after reset = %v", r)
	}
	// Connections' byte rates.
	rate("/api/connections", "0", "recv_oct_details", "rate")
	fx.advance(4 * time.Second)
	fx.src.connections[0].RecvOct += 4000
	if r := rate("/api/connections", "0", "recv_oct_details", "rate"); r != 1000 {
		t.Errorf("recv_oct rate = %v, want 1000", r)
	}
	// Overview.
	rate("/api/overview", "message_stats", "publish_details", "rate")
	fx.advance(10 * time.Second)
	fx.src.overview.Published += 1234
	if r := rate("/api/overview", "message_stats", "publish_details", "rate"); r != 123.4 {
		t.Errorf("overview publish rate = %v, want 123.4", r)
	}
}

// Requests run concurrently (go test -race): the pool, the rates'
// history and the node cache are shared.
func TestConcurrentRequests(t *testing.T) {
	fx := newBigFixture(50)
	paths := []string{"/api/overview", "/api/queues", "/api/queues?sort=messages&page=1", "/api/connections",
		"/api/channels/" + url.PathEscape(conn1+" (1)"), "/api/consumers", "/api/vhosts", "/api/queues/%2F/pq"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			fx.src.mu.Lock()
			fx.src.queues[1].Published += uint64(i)
			fx.src.mu.Unlock()
			fx.advance(100 * time.Millisecond)
		}
	}()
	errs := make(chan string, 8)
	for g := range 8 {
		go func() {
			for i := range 40 {
				p := paths[(g+i)%len(paths)]
				w := fx.do(t, http.MethodGet, p, "guest:guest", nil)
				if w.Code != 200 || !json.Valid(w.Body.Bytes()) {
					errs <- p + ": " + w.Body.String()
					return
				}
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	<-done
}
