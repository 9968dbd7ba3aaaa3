package broker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// checkFrozen: every unit of the tap, explained publishes among them,
// freezes for the TUI's store (decode.Unit.AppendFrozen) and, rebuilt,
// renders the same JSON, route fields included.
func checkFrozen(t *testing.T, units []*decode.Unit) {
	t.Helper()
	opt := output.JSONOptions{Raw: true, TreeOnly: true}
	for _, u := range units {
		b, ok := u.AppendFrozen(nil)
		if !ok {
			t.Fatalf("unit %d (%s) does not freeze", u.N, u.Type)
		}
		v := &decode.Unit{N: u.N, Conn: u.Conn, Offset: u.Offset, Len: u.Len, Raw: append([]byte(nil), u.Raw...),
			Type: u.Type, Summary: u.Summary, Channel: u.Channel, Dir: u.Dir, Proto: u.Proto, HasChannel: u.HasChannel, Secret: u.Secret}
		v.SetUnixNano(u.UnixNano())
		if err := v.Thaw(b); err != nil {
			t.Fatalf("unit %d (%s): %v", u.N, u.Type, err)
		}
		want, got := string(output.AppendJSON(nil, u, opt)), string(output.AppendJSON(nil, v, opt))
		if got != want {
			t.Fatalf("unit %d (%s) rebuilt:\n%s\nwant\n%s", u.N, u.Type, got, want)
		}
		if v.Fields() == nil && u.Fields() != nil {
			t.Fatalf("unit %d: no fields once rebuilt", u.N)
		}
	}
}

// TestRouteAnnotator: publishes in the broker's tap carry broker.route.*
// fields, filterable, with headers taken from their content header, and
// the units keep their order.
func TestRouteAnnotator(t *testing.T) {
	var sink collect
	ann := &RouteAnnotator{Next: sink.add}
	pl := pipeline.New(pipeline.Config{Sink: ann.Sink})
	b, url := startBroker(t, Config{Tap: capture.NewSerial(pl)})
	ann.Explain = b.ExplainPublish
	conn, ch := dial(t, url)
	if _, err := ch.QueueDeclare("ann-q", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("ann-h", "headers", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("ann-q", "", "ann-h", false, amqp.Table{"x-match": "any", "kind": "audit"}); err != nil {
		t.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	for _, p := range []struct {
		x, key    string
		mandatory bool
		headers   amqp.Table
	}{
		{"", "ann-q", false, nil},                                     // default exchange: one queue
		{"ann-h", "", false, amqp.Table{"kind": "audit"}},             // headers match
		{"ann-h", "", true, amqp.Table{"kind": "billing"}},            // no match: returned
		{"amq.direct", "nowhere", false, amqp.Table{"kind": "audit"}}, // unroutable, not mandatory
	} {
		if err := ch.Publish(p.x, p.key, p.mandatory, false, amqp.Publishing{Headers: p.headers, Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-returns:
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.return")
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		sink.mu.Lock()
		n := len(sink.units)
		done := n > 0 && sink.units[n-1].Type == "connection.close-ok"
		sink.mu.Unlock()
		if done {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
	pl.Finish()
	ann.Flush()
	if len(ann.vhosts) != 0 {
		t.Errorf("the annotator still holds %d connections' vhosts after their close-ok", len(ann.vhosts))
	}

	last := 0
	var publishes []*decode.Unit
	for _, u := range sink.units {
		if u.N <= last {
			t.Fatalf("unit %d after unit %d: order lost", u.N, last)
		}
		last = u.N
		if u.Type == "basic.publish" {
			publishes = append(publishes, u)
		}
	}
	if len(publishes) != 4 {
		t.Fatalf("%d publishes in the tap, want 4", len(publishes))
	}
	checkFrozen(t, sink.units)
	match := func(expr string) []bool {
		f, err := filter.Compile(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		var got []bool
		for _, u := range publishes {
			got = append(got, f.Match(u))
		}
		return got
	}
	for expr, want := range map[string]string{
		"broker.route.queues == 1":      "[true true false false]",
		"broker.route.queues == 0":      "[false false true true]",
		`broker.route.queue == "ann-q"`: "[true true false false]",
		"broker.route.returned == true": "[false false true false]",
		"broker.route.unroutable == 1":  "[false false true true]",
		"broker.route":                  "[true true true true]",
	} {
		if got := fmt.Sprint(match(expr)); got != want {
			t.Errorf("%s: %s, want %s", expr, got, want)
		}
	}
	// The explanation says why the headers binding matched.
	var lines []string
	decode.Walk(publishes[1].Dissect(publishes[1]), func(f *decode.Field) bool {
		if f.Name == "broker.route.line" {
			lines = append(lines, f.Text())
		}
		return true
	})
	if text := strings.Join(lines, "\n"); !strings.Contains(text, "ann-h") || !strings.Contains(text, "kind") {
		t.Errorf("explanation of the headers publish:\n%s", text)
	}
}

// BenchmarkExplainPublish is what the annotator pays per publish, on the
// decode side: explaining a publish to a topic exchange with 1,000
// bindings, each to a queue of its own, one of which matches.
func BenchmarkExplainPublish(b *testing.B) {
	br, url := startBroker(b, Config{})
	_, ch := dial(b, url)
	if err := ch.ExchangeDeclare("bx", "topic", false, true, false, false, nil); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		q := "bq" + strconv.Itoa(i)
		if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
			b.Fatal(err)
		}
		if err := ch.QueueBind(q, "orders."+strconv.Itoa(i)+".*", "bx", false, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.ExplainPublish("/", "bx", "orders.7.created", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRouteAnnotatorCacheFollowsTopology: the explanations of publishes
// without headers are cached, and a binding made between two identical
// publishes shows in the second: the cache follows TopologyVersion.
func TestRouteAnnotatorCacheFollowsTopology(t *testing.T) {
	var sink collect
	ann := &RouteAnnotator{Next: sink.add}
	pl := pipeline.New(pipeline.Config{Sink: ann.Sink})
	b, url := startBroker(t, Config{Tap: capture.NewSerial(pl)})
	explained := 0
	ann.Explain = func(vhost, exchange, key string, headers amqp091.Table) (state.Route, error) {
		explained++
		return b.ExplainPublish(vhost, exchange, key, headers)
	}
	ann.Version = b.TopologyVersion
	conn, ch := dial(t, url)
	if _, err := ch.QueueDeclare("cache-q", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 16))
	publish := func(n int) {
		t.Helper()
		for range n {
			if err := ch.Publish("amq.direct", "cache-k", false, false, amqp.Publishing{Body: []byte("m")}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-confirms:
			case <-time.After(5 * time.Second):
				t.Fatal("no confirm")
			}
		}
	}
	publish(3) // unroutable, explained once
	// The annotator explains a publish when the tap has decoded it, on
	// its own time: bind only once the three have been explained.
	waitUnits(t, &sink, func(units []*decode.Unit) bool {
		n := 0
		for _, u := range units {
			if u.Type == "basic.publish" {
				n++
			}
		}
		return n == 3
	})
	if err := ch.QueueBind("cache-q", "cache-k", "amq.direct", false, nil); err != nil {
		t.Fatal(err)
	}
	publish(2) // routed to cache-q: explained again, then from the cache
	conn.Close()
	waitUnits(t, &sink, func(units []*decode.Unit) bool {
		return len(units) > 0 && units[len(units)-1].Type == "connection.close-ok"
	})
	b.Close()
	pl.Finish()
	ann.Flush()
	f, err := filter.Compile("broker.route.queues == 1")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, u := range sink.units {
		if u.Type == "basic.publish" {
			got = append(got, f.Match(u))
		}
	}
	if fmt.Sprint(got) != "[false false false true true]" {
		t.Errorf("routed to one queue, per publish: %v, want [false false false true true]", got)
	}
	// The annotator may explain again after any topology change (the
	// declares and the bind bump the version), but not once per publish.
	if explained > 3 {
		t.Errorf("%d explanations for 5 publishes on 2 topologies: the cache is not used", explained)
	}
}

// waitUnits waits up to 10 s for the units collected to satisfy done.
func waitUnits(t *testing.T, sink *collect, done func([]*decode.Unit) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sink.mu.Lock()
		ok := done(sink.units)
		sink.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the tap's units did not arrive in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkRouteAnnotatorPublish is the annotator's own cost per publish
// of a steady stream (publish, content header, body on one channel) whose
// route comes from its cache: what the tap pays on top of decoding.
func BenchmarkRouteAnnotatorPublish(b *testing.B) {
	conn := &decode.Conn{}
	frame := func(typ string, raw []byte) *decode.Unit {
		return &decode.Unit{Conn: conn, Proto: decode.ProtoAMQP091, Dir: decode.DirF, Channel: 1, HasChannel: true, Type: typ, Raw: raw}
	}
	publish := frame("basic.publish", amqp091.AppendMethodFrame(nil, 1, &amqp091.BasicPublish{Exchange: []byte("amq.fanout"), RoutingKey: []byte("k")}))
	header := frame("content-header", amqp091.AppendFrame(nil, amqp091.FrameHeader, 1, (&amqp091.ContentHeader{ClassID: 60, BodySize: 16}).AppendTo(nil)))
	body := frame("content-body", amqp091.AppendFrame(nil, amqp091.FrameBody, 1, make([]byte, 16)))
	passed := 0
	ann := &RouteAnnotator{
		Next: func(*decode.Unit) { passed++ },
		Explain: func(vhost, exchange, key string, headers amqp091.Table) (state.Route, error) {
			return state.Route{VHost: vhost, Exchange: exchange, RoutingKey: key, Queues: []string{"q"}}, nil
		},
		Version: func() uint64 { return 1 },
	}
	b.ReportAllocs()
	for b.Loop() {
		publish.Dissect = nil // the annotator wraps it: start afresh
		ann.Sink(publish)
		ann.Sink(header)
		ann.Sink(body)
	}
	if passed == 0 {
		b.Fatal("nothing passed")
	}
}
