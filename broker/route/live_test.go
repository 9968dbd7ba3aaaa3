package route

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The live tests declare exchanges, queues and bindings on a real
// RabbitMQ 3.10, publish, and compare where each message went with what
// an Index (or a Resolver) says. WIRETAP_AMQP_URL names the broker
// (.ci/services.sh exports it); WIRETAP_RABBITMQ_NODE the node rabbitmqctl
// asks for the binding counts.

func amqpURL() string {
	if u := os.Getenv("WIRETAP_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func requireRabbitMQ(t *testing.T) *amqp.Connection {
	t.Helper()
	u, _ := url.Parse(amqpURL())
	host := "127.0.0.1:5672"
	if u != nil && u.Host != "" {
		host = u.Host
	}
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err == nil {
		c.Close()
	}
	var conn *amqp.Connection
	if err == nil {
		conn, err = amqp.Dial(amqpURL())
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no RabbitMQ at %s: %v", amqpURL(), err)
		}
		t.Skipf("no RabbitMQ at %s (%v); start one (.ci/services.sh start rabbitmq) or set WIRETAP_AMQP_URL", amqpURL(), err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func uniquePrefix() string {
	var b [4]byte
	crand.Read(b[:])
	return "wiretap.route." + hex.EncodeToString(b[:]) + "."
}

// toTable encodes an amqp091-go table as amqp091-go does (write.go).
func toTable(m amqp.Table) amqp091.Table {
	var t amqp091.Table
	for k, v := range m {
		t = t.Append(k, toValue(v))
	}
	return t
}

func toValue(v any) amqp091.Value {
	switch v := v.(type) {
	case bool:
		return amqp091.BoolValue(v)
	case byte:
		return amqp091.Uint8Value(v)
	case int8:
		return amqp091.Int8Value(v)
	case int16:
		return amqp091.Int16Value(v)
	case int:
		return amqp091.Int32Value(int32(v))
	case int32:
		return amqp091.Int32Value(v)
	case int64:
		return amqp091.Int64Value(v)
	case uint16:
		return amqp091.Uint16Value(v)
	case uint32:
		return amqp091.Uint32Value(v)
	case float32:
		return amqp091.FloatValue(v)
	case float64:
		return amqp091.DoubleValue(v)
	case amqp.Decimal:
		return amqp091.DecimalValue(amqp091.Decimal{Scale: v.Scale, Value: v.Value})
	case string:
		return amqp091.StringValue(v)
	case []byte:
		return amqp091.BytesValue(v)
	case time.Time:
		return amqp091.TimestampValue(v)
	case amqp.Table:
		return amqp091.TableValue(toTable(v))
	case []any:
		var a amqp091.Array
		for _, e := range v {
			a = a.Append(toValue(e))
		}
		return amqp091.ArrayValue(a)
	}
	return amqp091.VoidValue()
}

// liveValues are the values RabbitMQ's headers exchange compares subtly,
// as amqp091-go can send them (no NaN: RabbitMQ cannot read one).
var liveValues = []any{
	int8(1), byte(1), int16(1), uint16(1), int32(1), uint32(1), int64(1), float32(1), float64(1),
	float32(1.5), float64(1.5), float32(0.1), float64(0.1), int64(-1), int8(-1), int64(1<<53 + 1), float64(1 << 53),
	"1", []byte("1"), "a", "", true, false, nil, amqp.Decimal{Scale: 0, Value: 1}, amqp.Decimal{Scale: 1, Value: 10},
	time.Unix(1, 0), float64(0), math.Copysign(0, -1), int32(0),
	// Nested tables of one entry: amqp091-go sends a map's entries in
	// random order, and nested tables compare in wire order (unit tests
	// cover that).
	amqp.Table{"a": int8(1)}, amqp.Table{"a": int32(1)}, amqp.Table{"b": "x"},
	[]any{int8(1)}, []any{int32(1)}, []any{},
}

// live is one exchange on RabbitMQ and its mirror Index.
type live struct {
	t      *testing.T
	ch     *amqp.Channel
	name   string
	ix     *Index
	queues []string // full names; Dest names are the same
}

func newLive(t *testing.T, conn *amqp.Connection, prefix string, kind Kind, nQueues int) *live {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	l := &live{t: t, ch: ch, name: prefix + kind.String(), ix: New(kind)}
	if err := ch.ExchangeDeclare(l.name, kind.String(), false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.ExchangeDelete(l.name, false, false) })
	for i := range nQueues {
		qn := l.name + ".q" + strconv.Itoa(i)
		if _, err := ch.QueueDeclare(qn, false, false, true, false, nil); err != nil {
			t.Fatal(err)
		}
		l.queues = append(l.queues, qn)
	}
	return l
}

func (l *live) bind(queue int, key string, args amqp.Table) {
	l.t.Helper()
	if err := l.ch.QueueBind(l.queues[queue], key, l.name, false, args); err != nil {
		l.t.Fatalf("bind %q %v: %v", key, args, err)
	}
	l.ix.Add(Binding{Dest: q(l.queues[queue]), Key: key, Args: toTable(args)})
}

func (l *live) unbind(queue int, key string, args amqp.Table) {
	l.t.Helper()
	if err := l.ch.QueueUnbind(l.queues[queue], key, l.name, args); err != nil {
		l.t.Fatalf("unbind %q %v: %v", key, args, err)
	}
	l.ix.Remove(q(l.queues[queue]), key, toTable(args))
}

type liveMessage struct {
	key     string
	headers amqp.Table
}

// check publishes the messages, collects where they went, and compares
// that with the index, message by message.
func (l *live) check(msgs []liveMessage) {
	l.t.Helper()
	ctx := context.Background()
	var confirms []*amqp.DeferredConfirmation
	for i, m := range msgs {
		c, err := l.ch.PublishWithDeferredConfirmWithContext(ctx, l.name, m.key, false, false,
			amqp.Publishing{MessageId: strconv.Itoa(i), Headers: m.headers})
		if err != nil {
			l.t.Fatal(err)
		}
		confirms = append(confirms, c)
	}
	for _, c := range confirms {
		if ok, err := c.WaitContext(ctx); !ok || err != nil {
			l.t.Fatalf("publish not confirmed: %v", err)
		}
	}
	got := make([]map[string]bool, len(msgs))
	for i := range got {
		got[i] = map[string]bool{}
	}
	for _, qn := range l.queues {
		for {
			d, ok, err := l.ch.Get(qn, true)
			if err != nil {
				l.t.Fatal(err)
			}
			if !ok {
				break
			}
			i, _ := strconv.Atoi(d.MessageId)
			got[i][qn] = true
		}
	}
	bad := 0
	for i, m := range msgs {
		want := map[string]bool{}
		for _, d := range l.ix.Route([]byte(m.key), toTable(m.headers), nil) {
			want[d.Name] = true
		}
		if !mapsEqual(got[i], want) {
			l.t.Errorf("%s: key %q headers %v: RabbitMQ routed to %v, the index to %v", l.ix.Kind(), m.key, m.headers, sortedKeys(got[i]), sortedKeys(want))
			for _, e := range l.ix.Explain([]byte(m.key), toTable(m.headers)) {
				l.t.Logf("  %s %q %x: %v, %s", e.Binding.Dest.Name, e.Binding.Key, []byte(e.Binding.Args), e.Matched, e.Why)
			}
			if bad++; bad > 10 {
				l.t.FailNow()
			}
		}
	}
}

func (l *live) checkCount() {
	l.t.Helper()
	node := os.Getenv("WIRETAP_RABBITMQ_NODE")
	if node == "" {
		node = "wiretap@localhost"
	}
	out, err := exec.Command("rabbitmqctl", "-n", node, "-q", "list_bindings", "source_name").Output()
	if err != nil {
		l.t.Logf("binding count not checked: rabbitmqctl: %v", err)
		return
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == l.name {
			n++
		}
	}
	if n != l.ix.Len() {
		l.t.Errorf("%s: RabbitMQ has %d bindings, the index %d", l.ix.Kind(), n, l.ix.Len())
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k[strings.LastIndexByte(k, '.')+1:])
	}
	slices.Sort(s)
	return s
}

var (
	livePatterns = []string{"#", "*", "", ".", "*.*", "#.#", "a.#", "#.a", "a.#.b", "a..b", "a.*.b", "#.*", "*.#",
		"a*", "a", "a.", ".a", "#.#.a", "a.*.#", "*.a.#", "#.a.#", "a.b.c"}
	liveKeys = []string{"", ".", "..", "a", "a.", ".a", "a.b", "a..b", "a.x.b", "a.b.c", "b.a", "*", "#", "a*", "ab",
		"x.y.a", "a.a", "a.a.a", "x.a.y", "a.b.", ".a.b"}
)

func TestLiveRabbitMQ(t *testing.T) {
	conn := requireRabbitMQ(t)
	prefix := uniquePrefix()

	// Every topic pattern against every key, one queue per pattern.
	t.Run("topic matrix", func(t *testing.T) {
		l := newLive(t, conn, prefix+"matrix.", Topic, len(livePatterns))
		for i, p := range livePatterns {
			l.bind(i, p, nil)
		}
		var msgs []liveMessage
		for _, k := range liveKeys {
			msgs = append(msgs, liveMessage{key: k})
		}
		l.check(msgs)
	})

	// Every value bound against every value sent, under all and any.
	t.Run("headers values", func(t *testing.T) {
		for _, mode := range []string{"all", "any"} {
			l := newLive(t, conn, prefix+"values."+mode+".", Headers, len(liveValues))
			for i, v := range liveValues {
				l.bind(i, "", amqp.Table{"x-match": mode, "k": v})
			}
			var msgs []liveMessage
			for _, v := range liveValues {
				msgs = append(msgs, liveMessage{headers: amqp.Table{"k": v, "other": "x"}})
			}
			l.check(msgs)
			if mode == "all" {
				l.checkCount()
			}
		}
	})

	// Random bindings and messages on each type, then half the bindings
	// removed (twins included) and the same again.
	for _, kind := range []Kind{Direct, Fanout, Topic, Headers} {
		t.Run("random "+kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(kind), 2022))
			l := newLive(t, conn, prefix+"random.", kind, 8)
			type bound struct {
				queue int
				key   string
				args  amqp.Table
			}
			var bs []bound
			for range 60 {
				b := bound{queue: rng.IntN(len(l.queues)), key: liveKey(rng, kind, true)}
				if kind == Headers || rng.IntN(4) == 0 {
					b.args = liveArgs(rng, kind == Headers)
				}
				if len(bs) > 0 && rng.IntN(4) == 0 {
					// A twin: the same destination and key, other arguments.
					o := bs[rng.IntN(len(bs))]
					b.queue, b.key = o.queue, o.key
				}
				l.bind(b.queue, b.key, b.args)
				bs = append(bs, b)
			}
			// rabbitmqctl takes a second or two; arguments matter most
			// to headers bindings.
			if kind == Headers {
				l.checkCount()
			}
			msgs := make([]liveMessage, 150)
			for i := range msgs {
				msgs[i] = liveMessage{key: liveKey(rng, kind, false), headers: liveArgs(rng, false)}
			}
			l.check(msgs)
			for _, b := range bs {
				if rng.IntN(2) == 0 {
					l.unbind(b.queue, b.key, b.args)
				}
			}
			if kind == Headers {
				l.checkCount()
			}
			l.check(msgs)
		})
	}

	t.Run("invalid x-match", func(t *testing.T) {
		name := prefix + "check"
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.ExchangeDeclare(name, "headers", false, true, false, false, nil); err != nil {
			t.Fatal(err)
		}
		qn := name + ".q"
		if _, err := ch.QueueDeclare(qn, false, false, true, false, nil); err != nil {
			t.Fatal(err)
		}
		for _, v := range []any{"some", "", "ALL", int32(1), float64(1e3), float64(0.00012), true, []byte{1, 2}, nil,
			amqp.Table{"a": int8(1)}, []any{"x", int16(2)}, amqp.Decimal{Scale: 2, Value: 314}, time.Unix(7, 0), "all", "any-with-x"} {
			args := amqp.Table{"x-match": v}
			want := CheckBinding(Headers, toTable(args))
			err := ch.QueueBind(qn, "", name, false, args)
			var ae *amqp.Error
			switch {
			case want == nil && err == nil:
			case want != nil && errors.As(err, &ae):
				if ae.Code != 406 || ae.Reason != "PRECONDITION_FAILED - "+want.(*InvalidBindingError).Text {
					t.Errorf("x-match %#v: RabbitMQ says %d %q, CheckBinding %q", v, ae.Code, ae.Reason, want.(*InvalidBindingError).Text)
				}
			default:
				t.Errorf("x-match %#v: RabbitMQ says %v, CheckBinding %v", v, err, want)
			}
			if err != nil {
				if ch, err = conn.Channel(); err != nil {
					t.Fatal(err)
				}
			}
		}
		ch.ExchangeDelete(name, false, false)
	})

	t.Run("CC and BCC refused", func(t *testing.T) {
		for _, h := range []amqp.Table{{"CC": "a"}, {"BCC": int32(1)}, {"CC": amqp.Table{}}} {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			closed := ch.NotifyClose(make(chan *amqp.Error, 1))
			if err := ch.Publish("amq.direct", "k", false, false, amqp.Publishing{Headers: h}); err != nil {
				t.Fatal(err)
			}
			_, want := RoutingKeys([]byte("k"), toTable(h), nil)
			select {
			case e := <-closed:
				if want == nil || e.Code != 406 || e.Reason != "PRECONDITION_FAILED - "+want.(*InvalidMessageError).Text {
					t.Errorf("headers %v: RabbitMQ closed the channel with %v, RoutingKeys says %v", h, e, want)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("headers %v: RabbitMQ accepted the message, RoutingKeys says %v", h, want)
			}
		}
	})

	t.Run("exchange to exchange", func(t *testing.T) {
		testLiveTopology(t, conn, prefix+"e2e.")
	})
}

func liveKey(rng *rand.Rand, kind Kind, binding bool) string {
	switch kind {
	case Topic:
		if binding {
			return livePatterns[rng.IntN(len(livePatterns))]
		}
		return liveKeys[rng.IntN(len(liveKeys))]
	case Direct:
		return []string{"", "a", "b", "a.b"}[rng.IntN(4)]
	}
	return []string{"", "a"}[rng.IntN(2)]
}

func liveArgs(rng *rand.Rand, binding bool) amqp.Table {
	keys := []string{"a", "b", "c", "x-a", "x-b"}
	m := amqp.Table{}
	for n := rng.IntN(4); n > 0; n-- {
		m[keys[rng.IntN(len(keys))]] = liveValues[rng.IntN(len(liveValues))]
	}
	if binding && rng.IntN(5) > 0 {
		m["x-match"] = []string{"all", "any", "all-with-x", "any-with-x"}[rng.IntN(4)]
	}
	return m
}

// testLiveTopology builds exchanges of every type bound to each other
// (cycles included) and to queues, some with alternate exchanges, and
// compares where messages end with what a Resolver says.
func testLiveTopology(t *testing.T, conn *amqp.Connection, prefix string) {
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 2022))
	kinds := []Kind{Direct, Fanout, Topic, Headers}
	type xinfo struct {
		ix        *Index
		alternate string
	}
	xs := map[string]*xinfo{}
	var xnames, qnames []string
	for i := range 8 {
		xnames = append(xnames, prefix+"x"+strconv.Itoa(i))
	}
	for i := range 6 {
		qn := prefix + "q" + strconv.Itoa(i)
		qnames = append(qnames, qn)
		if _, err := ch.QueueDeclare(qn, false, false, true, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range xnames {
		k := kinds[i%len(kinds)]
		x := &xinfo{ix: New(k)}
		var args amqp.Table
		switch {
		case i == 0:
			x.alternate = prefix + "missing"
		case rng.IntN(2) == 0:
			x.alternate = xnames[rng.IntN(len(xnames))] // itself, possibly
		}
		if x.alternate != "" {
			args = amqp.Table{"alternate-exchange": x.alternate}
		}
		if err := ch.ExchangeDeclare(name, k.String(), false, false, false, false, args); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ch.ExchangeDelete(name, false, false) })
		xs[name] = x
	}
	for _, name := range xnames {
		x := xs[name]
		for range 2 + rng.IntN(4) {
			key := liveKey(rng, x.ix.Kind(), true)
			var args amqp.Table
			if x.ix.Kind() == Headers {
				args = liveArgs(rng, true)
			}
			if rng.IntN(3) == 0 {
				to := xnames[rng.IntN(len(xnames))]
				if err := ch.ExchangeBind(to, key, name, false, args); err != nil {
					t.Fatal(err)
				}
				x.ix.Add(Binding{Dest: Dest{Kind: Exchange, Name: to}, Key: key, Args: toTable(args)})
			} else {
				qn := qnames[rng.IntN(len(qnames))]
				if err := ch.QueueBind(qn, key, name, false, args); err != nil {
					t.Fatal(err)
				}
				x.ix.Add(Binding{Dest: q(qn), Key: key, Args: toTable(args)})
			}
		}
	}
	r := &Resolver{Lookup: func(name string) (*Index, string, bool) {
		x := xs[name]
		if x == nil {
			return nil, "", false
		}
		return x.ix, x.alternate, true
	}}
	type msg struct {
		x, key  string
		headers amqp.Table
	}
	var msgs []msg
	ctx := context.Background()
	var confirms []*amqp.DeferredConfirmation
	for i := range 200 {
		m := msg{x: xnames[rng.IntN(len(xnames))]}
		m.key = liveKey(rng, Topic, false)
		if rng.IntN(2) == 0 {
			m.key = liveKey(rng, Direct, false)
		}
		m.headers = liveArgs(rng, false)
		for _, h := range []string{"CC", "BCC"} {
			if rng.IntN(4) == 0 {
				var ks []any
				for n := rng.IntN(3); n > 0; n-- {
					ks = append(ks, liveKey(rng, Topic, false))
				}
				if rng.IntN(3) == 0 {
					ks = append(ks, int32(1)) // skipped
				}
				m.headers[h] = ks
			}
		}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, m.x, m.key, false, false,
			amqp.Publishing{MessageId: strconv.Itoa(i), Headers: m.headers})
		if err != nil {
			t.Fatal(err)
		}
		confirms = append(confirms, c)
		msgs = append(msgs, m)
	}
	for _, c := range confirms {
		if ok, err := c.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish not confirmed: %v", err)
		}
	}
	got := make([]map[string]bool, len(msgs))
	for i := range got {
		got[i] = map[string]bool{}
	}
	for _, qn := range qnames {
		for {
			d, ok, err := ch.Get(qn, true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			i, _ := strconv.Atoi(d.MessageId)
			if got[i][qn] {
				t.Errorf("message %d reached %s twice", i, qn)
			}
			got[i][qn] = true
		}
	}
	var viaExchange, viaAlternate, repeated, missing int
	for i, m := range msgs {
		want := map[string]bool{}
		keys, err := RoutingKeys([]byte(m.key), toTable(m.headers), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.ResolveKeys(m.x, keys, toTable(m.headers), nil) {
			want[d.Name] = true
		}
		qs, hops := r.ExplainKeys(m.x, keys, toTable(m.headers))
		for _, h := range hops {
			switch {
			case h.Repeated:
				repeated++
			case h.Missing:
				missing++
			case h.Alternate:
				viaAlternate++
			case h.From != "":
				viaExchange++
			}
		}
		explained := map[string]bool{}
		for _, d := range qs {
			explained[d.Name] = true
		}
		if !mapsEqual(got[i], want) || !mapsEqual(want, explained) {
			t.Errorf("message %d to %s key %q headers %v: RabbitMQ routed to %v, Resolve to %v, Explain to %v",
				i, m.x, m.key, m.headers, sortedKeys(got[i]), sortedKeys(want), sortedKeys(explained))
			for _, h := range hops {
				t.Logf("  hop %s from %q alternate %v missing %v repeated %v routed %v", h.Exchange, h.From, h.Alternate, h.Missing, h.Repeated, h.Routed)
			}
		}
	}
	// The topology must have exercised what it is for.
	t.Logf("hops: %d by exchange bindings, %d to alternates, %d repeated, %d missing", viaExchange, viaAlternate, repeated, missing)
	if viaExchange == 0 || viaAlternate == 0 || repeated == 0 || missing == 0 {
		t.Errorf("the topology did not exercise every path")
	}
}
