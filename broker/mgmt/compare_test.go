package mgmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// What RabbitMQ 3.10 writes that this package leaves out, because the
// broker has no such figure: Erlang's own (reductions, garbage
// collection, memory, the backing queue), figures the snapshots do not
// carry (per-channel message_stats, idle_since, consumer utilisation,
// paged-out and persistent counts, get/deliver split, churn) and the
// Erlang version. A path ends in "*" to cover what is under it.
var leftOut = map[string][]string{
	"overview": {"erlang_version", "erlang_full_version", "release_series_support_status", "churn_rates*",
		"message_stats.deliver", "message_stats.deliver_details*", "message_stats.deliver_no_ack*",
		"message_stats.get", "message_stats.get_details*", "message_stats.get_empty*", "message_stats.get_no_ack*",
		"message_stats.disk_reads*", "message_stats.disk_writes*", "message_stats.drop_unroutable*",
		// RabbitMQ lists its web contexts only some of the time.
		"listeners[].socket_opts*", "contexts[]*"},
	"connection": {"garbage_collection*", "reductions", "reductions_details*", "send_pend"},
	"channel": {"acks_uncommitted", "messages_uncommitted", "garbage_collection*", "reductions", "reductions_details*",
		"idle_since", "message_stats*"},
	"queue": {"backing_queue_status*", "consumer_capacity", "consumer_utilisation", "garbage_collection*", "reductions",
		"reductions_details*", "head_message_timestamp", "idle_since", "memory", "message_bytes_paged_out",
		"message_bytes_persistent", "message_bytes_ram", "message_bytes_ready", "message_bytes_unacknowledged",
		"messages_paged_out", "messages_persistent", "messages_ram", "messages_ready_ram", "messages_unacknowledged_ram",
		"message_stats.deliver", "message_stats.deliver_details*", "message_stats.deliver_no_ack*", "message_stats.get",
		"message_stats.get_details*", "message_stats.get_empty*", "message_stats.get_no_ack*"},
	"exchange": {"user_who_performed_action"},
	"vhost":    {"message_stats*"},
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// TestCompareWithRabbitMQ builds one topology on RabbitMQ 3.10 with
// amqp091-go, reads RabbitMQ's management API, builds a fake broker
// holding the same objects, and checks that this package answers the same
// requests with the same keys and value types (not values, which differ:
// ports, times), the same client properties values, and the same status
// codes and error bodies. It enables the management plugin itself, and
// disables it again, so it runs only when asked:
//
//	WIRETAP_MGMT_COMPARE=1 go test -run CompareWithRabbitMQ ./broker/mgmt/
//
// WIRETAP_RABBITMQ_NODE (wiretap@localhost), WIRETAP_AMQP_URL and
// WIRETAP_SERVICES_DIR (/tmp/wiretap-services, where .ci/services.sh
// keeps the node's enabled_plugins) say which RabbitMQ; the plugin
// listens on WIRETAP_MGMT_COMPARE_PORT (15679), leaving 15672 to the
// embedded broker.
func TestCompareWithRabbitMQ(t *testing.T) {
	if os.Getenv("WIRETAP_MGMT_COMPARE") != "1" {
		t.Skip("set WIRETAP_MGMT_COMPARE=1 to compare with RabbitMQ 3.10's management plugin (the test enables it)")
	}
	port := env("WIRETAP_MGMT_COMPARE_PORT", "15679")
	mgmtURL := "http://127.0.0.1:" + port
	enableManagement(t, port)
	amqpURL := env("WIRETAP_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	prefix := "mgmtcmp-" + strconv.Itoa(os.Getpid())
	topo := declareTopology(t, amqpURL, prefix)

	// A user without tags, on both sides.
	plainUser, plainPass := prefix+"-plain", "pw-"+prefix
	rabbitmqctl(t, "add_user", plainUser, plainPass)
	t.Cleanup(func() { rabbitmqctl(t, "delete_user", plainUser) })

	rmq := &httpSide{base: mgmtURL}
	waitForStats(t, rmq, topo)

	P := url.PathEscape
	conn := P(topo.conn)
	// Error answers first, then the lists the fake is built from, so
	// other users of the node change little in between.
	errorRequests := []request2{
		{method: "GET", path: "/api/connections/nope"},
		{method: "GET", path: "/api/queues/%2F/nope"},
		{method: "GET", path: "/api/queues/nope"},
		{method: "GET", path: "/api/nonexist"},
		{method: "DELETE", path: "/api/connections/nope"},
		{method: "GET", path: "/api/overview", user: "guest", pass: "wrong"},
		{method: "GET", path: "/api/overview", user: "-"},
		{method: "GET", path: "/api/overview", user: plainUser, pass: plainPass},
		{method: "PUT", path: "/api/overview"},
		{method: "POST", path: "/api/overview"},
		{method: "DELETE", path: "/api/queues"},
		{method: "PUT", path: "/api/connections/x"},
		{method: "PUT", path: "/api/definitions"},
		{method: "OPTIONS", path: "/api/definitions"},
		{method: "GET", path: "/api/definitions/nope"},
		{method: "POST", path: "/api/definitions", ctype: "application/json", body: "{bad"},
		{method: "POST", path: "/api/definitions", ctype: "application/json", body: "[1]"},
		{method: "POST", path: "/api/definitions/nope", ctype: "application/json", body: "{}"},
		{method: "POST", path: "/api/definitions", ctype: "application/x-www-form-urlencoded", body: "{}"},
		{method: "GET", path: "/api/queues?page=0"},
		{method: "GET", path: "/api/queues?page=1&page_size=600"},
		{method: "GET", path: "/api/queues?page=x"},
		{method: "GET", path: "/api/queues?page=100000&page_size=500"},
		{method: "GET", path: "/api/exchanges/%2F/nope/bindings/source"},
	}
	theirErrors := make([]response2, len(errorRequests))
	for i, rq := range errorRequests {
		theirErrors[i] = rmq.do(t, rq)
	}
	lists := map[string]any{}
	for _, p := range []string{"/api/overview", "/api/connections", "/api/channels", "/api/exchanges", "/api/queues",
		"/api/bindings", "/api/consumers", "/api/users", "/api/vhosts", "/api/permissions",
		"/api/queues/%2F/" + P(topo.exclusive)} {
		lists[p] = rmq.getJSON(t, p)
	}
	fx := newFixture()
	fakeFromRabbitMQ(t, fx, lists, topo)
	users := fx.h.cfg.Users.(*fakeUsers)
	users.passwords[plainUser] = plainPass
	fx.now = time.Now()
	fx.h.now = time.Now
	ours := httptest.NewServer(fx.h)
	defer ours.Close()
	us := &httpSide{base: ours.URL}

	for i, rq := range errorRequests {
		theirs, mine := theirErrors[i], us.do(t, rq)
		label := rq.method + " " + rq.path + " as " + rq.user
		if theirs.status != mine.status {
			t.Errorf("%s: status %d, RabbitMQ %d", label, mine.status, theirs.status)
		}
		for _, h := range []string{"Allow", "Www-Authenticate", "Content-Type"} {
			if theirs.header.Get(h) != mine.header.Get(h) {
				t.Errorf("%s: %s %q, RabbitMQ %q", label, h, mine.header.Get(h), theirs.header.Get(h))
			}
		}
		tb, mb := string(theirs.body), string(mine.body)
		if strings.Contains(tb, "Page out of range") {
			// The length is of the node's queues, which others change.
			tb, mb = tb[:strings.Index(tb, "len:")], mb[:min(len(mb), strings.Index(tb, "len:"))]
		}
		if tb != mb {
			t.Errorf("%s: body %s, RabbitMQ %s", label, mine.body, theirs.body)
		}
	}

	byName := func(o map[string]any) string { s, _ := o["name"].(string); return s }
	ourNames := func(names ...string) func(string) bool {
		return func(id string) bool { return slices.Contains(names, id) }
	}
	ch1 := P(topo.conn + " (1)")
	qs := []string{topo.queue, topo.exclusive}
	xs := []string{"", "amq.direct", topo.exchange, topo.exchange2}
	chans := []string{topo.conn + " (1)", topo.conn + " (2)", topo.conn + " (3)"}
	bindingID := func(o map[string]any) string {
		return fmt.Sprint(o["source"], "|", o["destination"], "|", o["properties_key"])
	}
	ourBindings := func(id string) bool { return strings.Contains(id, prefix) }
	for _, c := range []struct {
		path, kind string
		id         func(map[string]any) string
		want       func(string) bool
	}{
		{"/api/overview", "overview", nil, nil},
		{"/api/connections", "connection", byName, ourNames(topo.conn)},
		{"/api/connections/", "connection", byName, ourNames(topo.conn)},
		{"/api/vhosts/%2F/connections", "connection", byName, ourNames(topo.conn)},
		{"/api/connections/" + conn, "connection", nil, nil},
		{"/api/connections/" + conn + "/channels", "channel", byName, ourNames(chans...)},
		{"/api/channels", "channel", byName, ourNames(chans...)},
		{"/api/vhosts/%2F/channels", "channel", byName, ourNames(chans...)},
		{"/api/channels/" + ch1, "channel", nil, nil},
		{"/api/exchanges", "exchange", byName, ourNames(xs...)},
		{"/api/exchanges/%2F", "exchange", byName, ourNames(xs...)},
		{"/api/exchanges/%2F/" + P(topo.exchange), "exchange", nil, nil},
		{"/api/exchanges/%2F/" + P(topo.exchange) + "/bindings/source", "binding", bindingID, ourBindings},
		{"/api/exchanges/%2F/" + P(topo.exchange2) + "/bindings/destination", "binding", bindingID, ourBindings},
		{"/api/queues", "queue", byName, ourNames(qs...)},
		{"/api/queues/%2F", "queue", byName, ourNames(qs...)},
		{"/api/queues/%2F/" + P(topo.queue), "queue", nil, nil},
		{"/api/queues/%2F/" + P(topo.exclusive), "queue", nil, nil},
		{"/api/queues/%2F/" + P(topo.queue) + "/bindings", "binding", bindingID, ourBindings},
		{"/api/bindings", "binding", bindingID, ourBindings},
		{"/api/bindings/%2F", "binding", bindingID, ourBindings},
		{"/api/consumers", "consumer", func(o map[string]any) string { s, _ := o["consumer_tag"].(string); return s }, ourNames(topo.ctag)},
		{"/api/consumers/%2F", "consumer", func(o map[string]any) string { s, _ := o["consumer_tag"].(string); return s }, ourNames(topo.ctag)},
		{"/api/users", "user", byName, ourNames("guest", plainUser)},
		{"/api/users/guest", "user", nil, nil},
		{"/api/vhosts", "vhost", byName, ourNames("/")},
		{"/api/vhosts/%2F", "vhost", nil, nil},
		{"/api/permissions", "permission", func(o map[string]any) string { return fmt.Sprint(o["user"], o["vhost"]) }, ourNames("guest/")},
		{"/api/whoami", "whoami", nil, nil},
		{"/api/queues?page=1&page_size=1&columns=name", "page", nil, nil},
		{"/api/queues?columns=name,message_stats.publish,arguments", "queue", byName, ourNames(qs...)},
		{"/api/overview?columns=node,object_totals.queues", "overview", nil, nil},
	} {
		theirs, mine := rmq.getJSON(t, c.path), us.getJSON(t, c.path)
		if c.id == nil {
			compareShapes(t, c.path, c.kind, theirs, mine)
			continue
		}
		tl, ok1 := theirs.([]any)
		ml, ok2 := mine.([]any)
		if !ok1 || !ok2 {
			t.Errorf("%s: not lists: %T %T", c.path, theirs, mine)
			continue
		}
		index := func(l []any) map[string]any {
			m := map[string]any{}
			for _, o := range l {
				if id := c.id(o.(map[string]any)); c.want(id) {
					m[id] = o
				}
			}
			return m
		}
		ti, mi := index(tl), index(ml)
		if len(ti) == 0 {
			t.Errorf("%s: RabbitMQ listed none of ours", c.path)
		}
		for id, o := range ti {
			if mo, ok := mi[id]; !ok {
				t.Errorf("%s: %s missing from ours", c.path, id)
			} else {
				compareShapes(t, c.path+" "+id, c.kind, o, mo)
			}
		}
		for id := range mi {
			if _, ok := ti[id]; !ok {
				t.Errorf("%s: we list %s, RabbitMQ does not", c.path, id)
			}
		}
	}

	// Client properties come out with the same values, awkward types
	// included.
	theirCP := field(t, rmq.getJSON(t, "/api/connections/"+conn), "client_properties").(map[string]any)
	ourCP := field(t, us.getJSON(t, "/api/connections/"+conn), "client_properties").(map[string]any)
	for _, k := range []string{"connection_name", "x-bin", "x-ts", "x-dec", "x-arr", "x-f", "x-nested", "x-utf8-bytes", "capabilities"} {
		tj, _ := json.Marshal(theirCP[k])
		mj, _ := json.Marshal(ourCP[k])
		if !bytes.Equal(tj, mj) {
			t.Errorf("client_properties.%s = %s, RabbitMQ %s", k, mj, tj)
		}
	}

	// amqp091-go's recovery test: find the connection by its
	// connection_name, DELETE it by its escaped name, see it close.
	closed := topo.c.NotifyClose(make(chan *amqp.Error, 1))
	req := request2{method: "DELETE", path: "/api/connections/" + P(topo.conn), header: http.Header{"X-Reason": {"compare test"}}}
	if r := rmq.do(t, req); r.status != http.StatusNoContent {
		t.Errorf("RabbitMQ DELETE: %d %s", r.status, r.body)
	}
	select {
	case e := <-closed:
		if e == nil || e.Code != 320 || e.Reason != "CONNECTION_FORCED - compare test" {
			t.Errorf("closed with %v", e)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("RabbitMQ did not close the connection")
	}
	if r := us.do(t, req); r.status != http.StatusNoContent || len(fx.src.closed) != 1 || fx.src.closed[0] != topo.conn+"|compare test" {
		t.Errorf("our DELETE: %d %s %v", r.status, r.body, fx.src.closed)
	}
}

// shapeOf maps each path in v to its JSON type; array elements share the
// path "name[]".
func shapeOf(v any, path string, out map[string]string) {
	kind := ""
	switch x := v.(type) {
	case nil:
		kind = "null"
	case bool:
		kind = "bool"
	case string:
		kind = "string"
	case json.Number:
		kind = "int"
		if strings.ContainsAny(x.String(), ".eE") {
			kind = "float"
		}
	case []any:
		kind = "array"
		for _, e := range x {
			shapeOf(e, path+"[]", out)
		}
	case map[string]any:
		kind = "object"
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			shapeOf(e, p, out)
		}
	}
	if path == "" {
		return
	}
	if old, ok := out[path]; ok && old != kind {
		kind = old + "|" + kind
	}
	out[path] = kind
}

func isLeftOut(kind, path string) bool {
	for _, p := range leftOut[kind] {
		if strings.HasSuffix(p, "*") && strings.HasPrefix(path, strings.TrimSuffix(p, "*")) || p == path {
			return true
		}
	}
	// Table values (arguments, client properties) are compared by value
	// where it matters; their inner shapes follow the data.
	return false
}

// compareShapes checks that ours has every key RabbitMQ's has (but those
// left out) and no other, each with the same JSON type.
func compareShapes(t *testing.T, label, kind string, theirs, ours any) {
	t.Helper()
	ts, ms := map[string]string{}, map[string]string{}
	shapeOf(theirs, "", ts)
	shapeOf(ours, "", ms)
	for p, k := range ts {
		if isLeftOut(kind, p) {
			continue
		}
		mk, ok := ms[p]
		switch {
		case !ok:
			t.Errorf("%s: we lack %s (%s)", label, p, k)
		case mk != k:
			t.Errorf("%s: %s is %s, RabbitMQ's is %s", label, p, mk, k)
		}
	}
	for p, k := range ms {
		if _, ok := ts[p]; !ok && !isLeftOut(kind, p) {
			t.Errorf("%s: we write %s (%s), RabbitMQ does not", label, p, k)
		}
	}
}

type request2 struct {
	method, path, user, pass, ctype, body string
	header                                http.Header
}

type response2 struct {
	status int
	header http.Header
	body   []byte
}

type httpSide struct{ base string }

func (s *httpSide) do(t *testing.T, rq request2) response2 {
	t.Helper()
	req, err := http.NewRequest(rq.method, s.base+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	switch rq.user {
	case "":
		req.SetBasicAuth("guest", "guest")
	case "-":
	default:
		req.SetBasicAuth(rq.user, rq.pass)
	}
	if rq.ctype != "" {
		req.Header.Set("Content-Type", rq.ctype)
	}
	for k, v := range rq.header {
		req.Header[k] = v
	}
	client := http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response2{resp.StatusCode, resp.Header, b}
}

func (s *httpSide) getJSON(t *testing.T, path string) any {
	t.Helper()
	r := s.do(t, request2{method: "GET", path: path})
	if r.status != 200 {
		t.Fatalf("GET %s%s: %d %s", s.base, path, r.status, r.body)
	}
	return decodeJSON(t, r.body)
}

func rabbitmqctl(t *testing.T, args ...string) {
	t.Helper()
	a := append([]string{"-n", env("WIRETAP_RABBITMQ_NODE", "wiretap@localhost")}, args...)
	if out, err := exec.Command("rabbitmqctl", a...).CombinedOutput(); err != nil {
		t.Fatalf("rabbitmqctl %v: %v\n%s", args, err, out)
	}
}

// enableManagement makes RabbitMQ's management plugin answer on port,
// not 15672, which the embedded broker's tests use: it sets the plugin's
// tcp_config before enabling it, and disables it and drops the setting
// at the end. A plugin already answering on port is left alone.
func enableManagement(t *testing.T, port string) {
	t.Helper()
	addr := "127.0.0.1:" + port
	answers := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	if answers() {
		// Only RabbitMQ names its Erlang; the embedded broker does not.
		o := (&httpSide{base: "http://" + addr}).getJSON(t, "/api/overview")
		if _, ok := o.(map[string]any)["erlang_version"]; !ok {
			t.Fatalf("%s answers but is not RabbitMQ's management plugin", addr)
		}
		t.Logf("RabbitMQ's management plugin already answers on %s; leaving it as it is", addr)
		return
	}
	node := env("WIRETAP_RABBITMQ_NODE", "wiretap@localhost")
	plugins := func(verb string) error {
		cmd := exec.Command("rabbitmq-plugins", "-n", node, verb, "rabbitmq_management")
		// .ci/services.sh runs the node with its own enabled_plugins.
		dir := filepath.Join(env("WIRETAP_SERVICES_DIR", "/tmp/wiretap-services"), "rabbitmq-"+strings.SplitN(node, "@", 2)[0])
		if _, err := os.Stat(filepath.Join(dir, "enabled_plugins")); err == nil {
			cmd.Env = append(os.Environ(), "RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("rabbitmq-plugins %s: %v\n%s", verb, err, out)
		}
		return nil
	}
	// Cleaned up even when enabling fails half way.
	t.Cleanup(func() {
		if err := plugins("disable"); err != nil {
			t.Error(err)
		}
		rabbitmqctl(t, "eval", "application:unset_env(rabbitmq_management, tcp_config, [{persistent, true}]).")
		for deadline := time.Now().Add(30 * time.Second); answers() && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
	})
	rabbitmqctl(t, "eval", "application:set_env(rabbitmq_management, tcp_config, [{port, "+port+"}], [{persistent, true}]).")
	if err := plugins("enable"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !answers(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer after enabling the plugin", addr)
		}
	}
}

type topology struct {
	c                                     *amqp.Connection
	conn                                  string // RabbitMQ's name of the connection
	connName                              string // its connection_name
	exchange, exchange2, queue, exclusive string
	ctag                                  string
}

// declareTopology makes, on RabbitMQ: a connection with awkward client
// properties; channel 1 with qos 10 consuming 10 unacked messages of a
// queue with arguments; channel 2 in confirm mode that published 20;
// channel 3 transactional; a topic exchange with an argument, bound to
// the queue twice (once with binding arguments) and to a fanout exchange
// that feeds an exclusive queue.
func declareTopology(t *testing.T, amqpURL, prefix string) *topology {
	t.Helper()
	tp := &topology{connName: prefix, exchange: prefix + "-x", exchange2: prefix + "-x2", queue: prefix + "-q", ctag: prefix + "-ctag"}
	props := amqp.Table{
		"connection_name": prefix, "x-bin": []byte{0xff, 0}, "x-utf8-bytes": []byte("ok"), "x-ts": time.Unix(1700000000, 0),
		"x-dec": amqp.Decimal{Scale: 2, Value: 1234}, "x-arr": []any{"a", int32(1), amqp.Table{"z": true}},
		"x-f": 1.5, "x-nested": amqp.Table{"k": "v", "n": int64(-5)},
	}
	c, err := amqp.DialConfig(amqpURL, amqp.Config{Properties: props})
	if err != nil {
		t.Fatalf("RabbitMQ at %s: %v", amqpURL, err)
	}
	tp.c = c
	t.Cleanup(func() { c.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ch1, err := c.Channel()
	must(err)
	must(ch1.Qos(10, 0, false))
	must(ch1.ExchangeDeclare(tp.exchange, "topic", false, false, false, false, amqp.Table{"alternate-exchange": "amq.fanout"}))
	must(ch1.ExchangeDeclare(tp.exchange2, "fanout", false, true, false, false, nil))
	_, err = ch1.QueueDeclare(tp.queue, false, false, false, false, amqp.Table{"x-max-length": int32(100), "x-message-ttl": int64(600000)})
	must(err)
	// Its own connection: the test closes c through the API.
	t.Cleanup(func() {
		cc, err := amqp.Dial(amqpURL)
		if err != nil {
			t.Errorf("cleaning up: %v", err)
			return
		}
		defer cc.Close()
		ch, err := cc.Channel()
		if err != nil {
			t.Errorf("cleaning up: %v", err)
			return
		}
		for _, err := range []error{
			func() error { _, err := ch.QueueDelete(tp.queue, false, false, false); return err }(),
			ch.ExchangeDelete(tp.exchange2, false, false),
			ch.ExchangeDelete(tp.exchange, false, false),
		} {
			if err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})
	must(ch1.QueueBind(tp.queue, "a.#", tp.exchange, false, nil))
	must(ch1.QueueBind(tp.queue, "b", tp.exchange, false, amqp.Table{"k": "v"}))
	must(ch1.ExchangeBind(tp.exchange2, "r", tp.exchange, false, nil))
	eq, err := ch1.QueueDeclare("", false, true, true, false, nil)
	must(err)
	tp.exclusive = eq.Name
	must(ch1.QueueBind(eq.Name, "", tp.exchange2, false, nil))
	ch2, err := c.Channel()
	must(err)
	must(ch2.Confirm(false))
	acks := ch2.NotifyPublish(make(chan amqp.Confirmation, 20))
	for range 20 {
		must(ch2.Publish(tp.exchange, "a.x", false, false, amqp.Publishing{Body: []byte("hello")}))
	}
	for range 20 {
		<-acks
	}
	_, err = ch1.Consume(tp.queue, tp.ctag, false, false, false, false, amqp.Table{"x-priority": int32(3)})
	must(err)
	ch3, err := c.Channel()
	must(err)
	must(ch3.Tx())
	return tp
}

// waitForStats waits until RabbitMQ's statistics (emitted every five
// seconds) show the topology, and learns the connection's name.
func waitForStats(t *testing.T, rmq *httpSide, tp *topology) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(time.Second) {
		if tp.conn == "" {
			for _, c := range rmq.getJSON(t, "/api/connections").([]any) {
				o := c.(map[string]any)
				if cp, _ := o["client_properties"].(map[string]any); cp != nil && cp["connection_name"] == tp.connName {
					tp.conn = o["name"].(string)
				}
			}
			continue
		}
		q := rmq.getJSON(t, "/api/queues/%2F/"+url.PathEscape(tp.queue)).(map[string]any)
		conn := rmq.getJSON(t, "/api/connections/"+url.PathEscape(tp.conn)).(map[string]any)
		x := rmq.getJSON(t, "/api/exchanges/%2F/"+url.PathEscape(tp.exchange)).(map[string]any)
		ms, _ := q["message_stats"].(map[string]any)
		if ms != nil && fmt.Sprint(ms["publish"]) == "20" && fmt.Sprint(q["messages_unacknowledged"]) == "10" &&
			fmt.Sprint(conn["channels"]) == "3" && x["message_stats"] != nil {
			return
		}
	}
	t.Fatalf("RabbitMQ's statistics never showed the topology")
}

func jsonToGo(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && !strings.ContainsAny(x.String(), ".eE") {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonToGo(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsonToGo(e)
		}
		return a
	}
	return v
}

func jsonTable(v any) map[string]any {
	m, _ := jsonToGo(v).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// tableValue is v as the field-table value a client sends for it.
func tableValue(v any) amqp091.Value {
	switch x := v.(type) {
	case string:
		return amqp091.StringValue(x)
	case bool:
		return amqp091.BoolValue(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return amqp091.Int64Value(i)
		}
		f, _ := x.Float64()
		return amqp091.DoubleValue(f)
	case map[string]any:
		var t amqp091.Table
		for k, e := range x {
			t = t.Append(k, tableValue(e))
		}
		return amqp091.TableValue(t)
	case []any:
		var a amqp091.Array
		for _, e := range x {
			a = a.Append(tableValue(e))
		}
		return amqp091.ArrayValue(a)
	}
	return amqp091.VoidValue()
}

// clientProperties rebuilds the table the client sent, as the broker
// decodes it: amqp091-go's own entries from RabbitMQ's JSON (strings,
// booleans and a table of booleans, which JSON keeps), the test's awkward
// ones with their wire types.
func clientProperties(t *testing.T, shown map[string]any) map[string]any {
	var arr amqp091.Array
	arr = arr.Append(amqp091.StringValue("a"))
	arr = arr.Append(amqp091.Int32Value(1))
	arr = arr.Append(amqp091.TableValue(amqp091.Table(nil).Append("z", amqp091.BoolValue(true))))
	typed := map[string]amqp091.Value{
		"x-bin":        amqp091.BytesValue([]byte{0xff, 0}),
		"x-utf8-bytes": amqp091.BytesValue([]byte("ok")),
		"x-ts":         amqp091.TimestampValue(time.Unix(1700000000, 0)),
		"x-dec":        amqp091.DecimalValue(amqp091.Decimal{Scale: 2, Value: 1234}),
		"x-arr":        amqp091.ArrayValue(arr),
		"x-f":          amqp091.DoubleValue(1.5),
		"x-nested":     amqp091.TableValue(amqp091.Table(nil).Append("k", amqp091.StringValue("v")).Append("n", amqp091.Int64Value(-5))),
	}
	var tb amqp091.Table
	for k, v := range shown {
		if tv, ok := typed[k]; ok {
			tb = tb.Append(k, tv)
		} else {
			tb = tb.Append(k, tableValue(v))
		}
	}
	m, err := tb.Map()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func str(o map[string]any, k string) string { s, _ := o[k].(string); return s }

func intOf(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

func stat(o map[string]any, k string) uint64 {
	ms, _ := o["message_stats"].(map[string]any)
	return uint64(intOf(ms[k]))
}

func addrPort(host string, port any) netip.AddrPort {
	a, _ := netip.ParseAddr(host)
	return netip.AddrPortFrom(a, uint16(intOf(port)))
}

// fakeFromRabbitMQ fills fx's broker with the objects RabbitMQ listed.
func fakeFromRabbitMQ(t *testing.T, fx *fixture, lists map[string]any, tp *topology) {
	f := fx.src
	objs := func(p string) []map[string]any {
		var out []map[string]any
		for _, o := range lists[p].([]any) {
			out = append(out, o.(map[string]any))
		}
		return out
	}
	o := lists["/api/overview"].(map[string]any)
	ot, qt := o["object_totals"].(map[string]any), o["queue_totals"].(map[string]any)
	f.overview = state.Overview{Product: str(o, "product_name"), Version: str(o, "rabbitmq_version"), Node: str(o, "node"),
		ClusterName: str(o, "cluster_name"), Connections: int(intOf(ot["connections"])), Channels: int(intOf(ot["channels"])),
		Exchanges: int(intOf(ot["exchanges"])), Queues: int(intOf(ot["queues"])), Consumers: int(intOf(ot["consumers"])),
		MessagesReady: intOf(qt["messages_ready"]), MessagesUnacked: intOf(qt["messages_unacknowledged"]),
		Published: stat(o, "publish"), Delivered: stat(o, "deliver_get"), Acked: stat(o, "ack"), Confirmed: stat(o, "confirm"),
		Redelivered: stat(o, "redeliver"), Returned: stat(o, "return_unroutable")}
	for _, l := range o["listeners"].([]any) {
		lm := l.(map[string]any)
		if lm["protocol"] == "amqp" {
			f.overview.Listeners = append(f.overview.Listeners, addrPort(str(lm, "ip_address"), lm["port"]).String())
		}
	}
	f.connections = nil
	for _, c := range objs("/api/connections") {
		sc := state.Connection{Name: str(c, "name"), Peer: addrPort(str(c, "peer_host"), c["peer_port"]),
			Local: addrPort(str(c, "host"), c["port"]), Protocol: str(c, "protocol"), User: str(c, "user"), VHost: str(c, "vhost"),
			State: str(c, "state"), Channels: int(intOf(c["channels"])), ChannelMax: uint16(intOf(c["channel_max"])),
			FrameMax: uint32(intOf(c["frame_max"])), Heartbeat: uint16(intOf(c["timeout"])), AuthMechanism: str(c, "auth_mechanism"),
			ConnectedAt: time.UnixMilli(intOf(c["connected_at"])), RecvOct: uint64(intOf(c["recv_oct"])),
			SendOct: uint64(intOf(c["send_oct"])), RecvCnt: uint64(intOf(c["recv_cnt"])), SendCnt: uint64(intOf(c["send_cnt"])),
			TLS: c["ssl"] == true}
		cp, _ := c["client_properties"].(map[string]any)
		if sc.Name == tp.conn {
			sc.ClientProperties = clientProperties(t, cp)
		} else {
			sc.ClientProperties = jsonTable(cp)
		}
		f.connections = append(f.connections, sc)
	}
	f.channels = nil
	for _, c := range objs("/api/channels") {
		cd := c["connection_details"].(map[string]any)
		f.channels = append(f.channels, state.Channel{Connection: str(cd, "name"), Number: uint16(intOf(c["number"])),
			User: str(c, "user"), VHost: str(c, "vhost"), Prefetch: uint16(intOf(c["prefetch_count"])),
			GlobalPrefetch: uint16(intOf(c["global_prefetch_count"])), Unacked: int(intOf(c["messages_unacknowledged"])),
			Unconfirmed: int(intOf(c["messages_unconfirmed"])), Consumers: int(intOf(c["consumer_count"])),
			Confirm: c["confirm"] == true, Transactional: c["transactional"] == true, State: str(c, "state")})
	}
	f.exchanges = nil
	for _, x := range objs("/api/exchanges") {
		f.exchanges = append(f.exchanges, state.Exchange{VHost: str(x, "vhost"), Name: str(x, "name"), Type: str(x, "type"),
			Durable: x["durable"] == true, AutoDelete: x["auto_delete"] == true, Internal: x["internal"] == true,
			Arguments: jsonTable(x["arguments"]), PublishIn: stat(x, "publish_in"), PublishOut: stat(x, "publish_out")})
	}
	excl := lists["/api/queues/%2F/"+url.PathEscape(tp.exclusive)].(map[string]any)
	f.queues = nil
	for _, q := range objs("/api/queues") {
		sq := state.Queue{VHost: str(q, "vhost"), Name: str(q, "name"), Durable: q["durable"] == true,
			Exclusive: q["exclusive"] == true, AutoDelete: q["auto_delete"] == true, Arguments: jsonTable(q["arguments"]),
			Ready: int(intOf(q["messages_ready"])), Unacked: int(intOf(q["messages_unacknowledged"])),
			Bytes: intOf(q["message_bytes"]), Consumers: int(intOf(q["consumers"])), Published: stat(q, "publish"),
			Delivered: stat(q, "deliver_get"), Acked: stat(q, "ack"), Redelivered: stat(q, "redeliver"), State: str(q, "state"),
			SingleActiveConsumer: str(q, "single_active_consumer_tag")}
		if sq.Name == tp.exclusive {
			sq.Owner = str(excl["owner_pid_details"].(map[string]any), "name")
		}
		f.queues = append(f.queues, sq)
	}
	f.consumers = nil
	for _, c := range objs("/api/consumers") {
		q, cd := c["queue"].(map[string]any), c["channel_details"].(map[string]any)
		f.consumers = append(f.consumers, state.Consumer{VHost: str(q, "vhost"), Queue: str(q, "name"), Tag: str(c, "consumer_tag"),
			Connection: str(cd, "connection_name"), Channel: uint16(intOf(cd["number"])), NoAck: c["ack_required"] == false,
			Exclusive: c["exclusive"] == true, Prefetch: uint16(intOf(c["prefetch_count"])), Active: c["active"] == true,
			Arguments: jsonTable(c["arguments"])})
	}
	f.bindings = nil
	for _, b := range objs("/api/bindings") {
		f.bindings = append(f.bindings, state.Binding{VHost: str(b, "vhost"), Source: str(b, "source"),
			Destination: str(b, "destination"), DestinationType: str(b, "destination_type"), RoutingKey: str(b, "routing_key"),
			Arguments: jsonTable(b["arguments"]), PropertiesKey: str(b, "properties_key")})
	}
	f.users = nil
	for _, u := range objs("/api/users") {
		su := state.User{Name: str(u, "name"), PasswordHash: str(u, "password_hash"), HashingAlgorithm: str(u, "hashing_algorithm")}
		for _, tag := range u["tags"].([]any) {
			su.Tags = append(su.Tags, tag.(string))
		}
		f.users = append(f.users, su)
	}
	f.vhosts = nil
	for _, v := range objs("/api/vhosts") {
		sv := state.VHost{Name: str(v, "name"), Description: str(v, "description")}
		if tags, ok := v["tags"].([]any); ok {
			for _, tag := range tags {
				sv.Tags = append(sv.Tags, tag.(string))
			}
		}
		f.vhosts = append(f.vhosts, sv)
	}
	f.permissions = nil
	for _, p := range objs("/api/permissions") {
		f.permissions = append(f.permissions, state.Permission{User: str(p, "user"), VHost: str(p, "vhost"),
			Configure: str(p, "configure"), Write: str(p, "write"), Read: str(p, "read")})
	}
}
