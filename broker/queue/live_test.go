package queue

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The live tests run the same operations on RabbitMQ 3.10 (127.0.0.1:5672,
// or $WIRETAP_AMQP091_ADDR) and on this package, and compare: texts,
// bytes, orders. They skip without a broker, and fail when CI=true.

const livePrefix = "wiretap-queue-live-"

var update = flag.Bool("update", false, "record what RabbitMQ said in testdata/rabbitmq.json")

// recorded is what the live tests saw RabbitMQ do, kept in
// testdata/rabbitmq.json (go test -run Live -update) so the offline tests
// check the same answers without a broker.
type recorded struct {
	// Args: queue.declare arguments (hex) on a queue, and the reply
	// text, "" when accepted.
	Args []struct {
		Table, Queue, Text string
	}
	// Publish: a content header (hex) and the reply text, "" when accepted.
	Publish []struct {
		Header, Text string
	}
	// DeadLetter: a stored header and the dead-lettered copy's (hex).
	DeadLetter []struct {
		Name, Exchange, RoutingKey, Reason, Queue string
		DropCC                                    bool
		Time                                      int64
		Stored, Got                               string
	}
}

var record recorded

const recordFile = "testdata/rabbitmq.json"

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	// A run that skipped the live tests, or ran some of them, has
	// nothing whole to record.
	if *update && code == 0 && len(record.Args) > 0 && len(record.Publish) > 0 && len(record.DeadLetter) > 0 {
		b, err := json.MarshalIndent(&record, "", "\t")
		if err == nil {
			err = os.MkdirAll(filepath.Dir(recordFile), 0o755)
		}
		if err == nil {
			err = os.WriteFile(recordFile, append(b, '\n'), 0o644)
		}
		if err != nil {
			panic(err)
		}
	}
	os.Exit(code)
}

var (
	str   = amqp091.StringValue
	i32   = amqp091.Int32Value
	table = func(kv ...any) amqp091.Table {
		var t amqp091.Table
		for i := 0; i < len(kv); i += 2 {
			t = t.Append(kv[i].(string), kv[i+1].(amqp091.Value))
		}
		return t
	}
	array = func(vs ...amqp091.Value) amqp091.Array {
		var a amqp091.Array
		for _, v := range vs {
			a = a.Append(v)
		}
		return a
	}
)

func TestLiveArgs(t *testing.T) {
	rc := dialRabbit(t)
	cases := []amqp091.Table{
		nil,
		table("x-max-length", i32(-1)),
		table("x-max-length", str("10")),
		table("x-max-length", amqp091.BoolValue(true)),
		table("x-max-length", amqp091.Uint64Value(5)),
		table("x-max-length", amqp091.Uint64Value(1<<63)),
		table("x-max-length", amqp091.DoubleValue(5)),
		table("x-max-length", amqp091.DecimalValue(amqp091.Decimal{})),
		table("x-max-length", amqp091.TimestampValue(time.Unix(5, 0))),
		table("x-max-length", amqp091.VoidValue()),
		table("x-max-length", amqp091.BytesValue([]byte("a"))),
		table("x-max-length", amqp091.TableValue(nil)),
		table("x-max-length", amqp091.ArrayValue(nil)),
		table("x-max-length", amqp091.FloatValue(1)),
		table("x-max-length", amqp091.Int8Value(-128)),
		table("x-max-length", amqp091.Uint32Value(4294967295)),
		table("x-max-length-bytes", amqp091.Int64Value(-7)),
		table("x-max-length-bytes", amqp091.Uint16Value(7)),
		table("x-expires", i32(0)),
		table("x-expires", i32(-1)),
		table("x-expires", amqp091.Int64Value(MaxExpiry+1)),
		table("x-expires", amqp091.Int64Value(MaxExpiry)),
		table("x-message-ttl", str("1000")),
		table("x-message-ttl", i32(-1)),
		table("x-message-ttl", amqp091.Int64Value(MaxExpiry+1)),
		table("x-message-ttl", i32(0)),
		table("x-max-priority", i32(300)),
		table("x-max-priority", i32(-3)),
		table("x-max-priority", i32(0)),
		table("x-max-priority", amqp091.Uint8Value(255)),
		table("x-max-priority", amqp091.Int16Value(256)),
		table("x-overflow", str("nope")),
		table("x-overflow", i32(1)),
		table("x-overflow", str("reject-publish-dlx")),
		table("x-dead-letter-exchange", i32(1)),
		table("x-dead-letter-exchange", amqp091.BytesValue([]byte("x"))),
		table("x-dead-letter-routing-key", str("k")),
		table("x-dead-letter-routing-key", i32(1)),
		table("x-dead-letter-exchange", str(""), "x-dead-letter-routing-key", i32(1)),
		table("x-dead-letter-exchange", str(""), "x-dead-letter-routing-key", str("k")),
		table("x-queue-mode", str("fast")),
		table("x-queue-mode", str("fa\x01st")),
		table("x-queue-mode", i32(1)),
		table("x-queue-mode", str("lazy")),
		table("x-queue-version", i32(3)),
		table("x-queue-version", i32(-3)),
		table("x-queue-version", str("2")),
		table("x-queue-version", i32(2)),
		table("x-queue-type", str("foo")),
		table("x-queue-type", i32(1)),
		table("x-queue-type", str("classic")),
		table("x-single-active-consumer", i32(1)),
		table("x-single-active-consumer", str("true")),
		table("x-single-active-consumer", amqp091.BoolValue(true)),
		table("x-max-age", str("1D")),
		table("x-delivery-limit", i32(1)),
		table("x-dead-letter-strategy", str("at-most-once")),
		table("x-max-in-memory-length", i32(-1)),
		table("x-stream-max-segment-size-bytes", i32(1)),
		table("x-max-length", i32(-1), "x-expires", i32(0)),
		table("x-delivery-limit", i32(1), "x-max-age", str("1D")),
		table("x-delivery-limit", i32(1), "x-expires", i32(0)),
		table("x-max-length", i32(-1), "x-max-length", i32(1)),
		table("x-max-length", i32(1), "x-max-length", i32(-1)),
		table("x-dead-letter-exchange", i32(1), "x-queue-type", str("foo")),
		table("x-queue-type", str("foo"), "x-max-length", i32(-1)),
		table("x-queue-type", str("classic"), "x-max-length", i32(-1)),
		table("x-unknown", i32(-1)),
	}
	// Long queue names move the reason to where Erlang breaks it over lines.
	long := livePrefix + strings.Repeat("q", 200)
	for _, args := range cases {
		for _, name := range []string{livePrefix + "args", long} {
			want := rc.declare(name, args)
			text := ""
			if want != nil {
				text = want.(*closeError).Text
			}
			record.Args = append(record.Args, struct{ Table, Queue, Text string }{hex.EncodeToString(args), name, text})
			_, _, got := ParseArgs(args)
			m, _ := args.Map()
			switch {
			case want == nil && got == nil:
			case want == nil:
				t.Errorf("%v: RabbitMQ accepts, ParseArgs says %v", m, got)
			case got == nil:
				t.Errorf("%v: RabbitMQ refuses (%v), ParseArgs accepts", m, want)
			default:
				ae, ok := got.(*ArgError)
				if !ok {
					t.Errorf("%v: %T %v", m, got, got)
					continue
				}
				if txt := ae.ReplyText(name, "/"); txt != want.(*closeError).Text || want.(*closeError).Code != ReplyPreconditionFailed {
					t.Errorf("%v:\n got %q\nwant %d %q", m, txt, want.(*closeError).Code, want.(*closeError).Text)
				}
			}
		}
	}
}

func TestLiveExpiration(t *testing.T) {
	rc := dialRabbit(t)
	q := livePrefix + "expiration"
	if err := rc.declare(q, nil); err != nil {
		t.Fatal(err)
	}
	for _, exp := range []string{"abc", "10x", "-5", "+5", " 5", "5 ", "", "1.5", "315360000001", "315360000000",
		"0x10", "007", "-0", "-007", "+", "-", "99999999999999999999999", "-99999999999999999999999", "１２",
		"1\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01", "1" + strings.Repeat("\x02", 40), "1\"\\\n", "12345678901234567890x"} {
		header := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: 1, Properties: amqp091.Properties{Flags: amqp091.FlagExpiration, Expiration: []byte(exp)}}
		m := Message{Header: header.AppendTo(nil), Body: []byte("x")}
		got := m.ParseProperties()
		rc.publish("", q, &header.Properties, m.Body)
		want := rc.sync()
		recordPublish(m.Header, want)
		switch {
		case want == nil && got == nil:
			if ttl, _ := ParseExpiration([]byte(exp)); m.Expiration != ttl || ttl < 0 {
				t.Errorf("expiration %q: Expiration %d", exp, m.Expiration)
			}
		case want == nil || got == nil:
			t.Errorf("expiration %q: RabbitMQ %v, ParseProperties %v", exp, want, got)
		default:
			if pe := got.(*PublishError); pe.ReplyText() != want.Error() {
				t.Errorf("expiration %q:\n got %q\nwant %q", exp, pe.ReplyText(), want)
			}
		}
	}
}

func TestLiveInvalidMessage(t *testing.T) {
	rc := dialRabbit(t)
	q := livePrefix + "message"
	if err := rc.declare(q, nil); err != nil {
		t.Fatal(err)
	}
	cases := []amqp091.Properties{
		{Flags: amqp091.FlagDeliveryMode, DeliveryMode: 0},
		{Flags: amqp091.FlagDeliveryMode, DeliveryMode: 1},
		{Flags: amqp091.FlagDeliveryMode, DeliveryMode: 2},
		{Flags: amqp091.FlagDeliveryMode, DeliveryMode: 3},
		{Flags: amqp091.FlagHeaders, Headers: table("CC", str("a"))},
		{Flags: amqp091.FlagHeaders, Headers: table("BCC", amqp091.Uint16Value(1))},
		{Flags: amqp091.FlagHeaders, Headers: table("CC", amqp091.ArrayValue(nil), "BCC", i32(1))},
		{Flags: amqp091.FlagHeaders | amqp091.FlagDeliveryMode, DeliveryMode: 3, Headers: table("BCC", str("a"), "CC", str("a"))},
		{Flags: amqp091.FlagExpiration | amqp091.FlagDeliveryMode, DeliveryMode: 3, Expiration: []byte("x")},
		{Flags: amqp091.FlagPriority, Priority: 255},
	}
	for _, p := range cases {
		header := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: 1, Properties: p}
		m := Message{Header: header.AppendTo(nil), Body: []byte("x")}
		got := m.ParseProperties()
		rc.publish("", q, &p, m.Body)
		want := rc.sync()
		recordPublish(m.Header, want)
		switch {
		case want == nil && got == nil:
			if m.Persistent != (p.DeliveryMode == 2) || m.Priority != p.Priority {
				t.Errorf("%+v: parsed persistent=%v priority=%d expiration=%d", p, m.Persistent, m.Priority, m.Expiration)
			}
		case want == nil || got == nil:
			t.Errorf("%+v: RabbitMQ %v, ParseProperties %v", p, want, got)
		default:
			if pe := got.(*PublishError); pe.ReplyText() != want.Error() {
				t.Errorf("%+v:\n got %q\nwant %q", p, pe.ReplyText(), want)
			}
		}
	}
}

func recordPublish(header []byte, err error) {
	text := ""
	if err != nil {
		text = err.Error()
	}
	record.Publish = append(record.Publish, struct{ Header, Text string }{hex.EncodeToString(header), text})
}

// deadLetterCase is one message dead-lettered by RabbitMQ and by
// DeadLetterHeader.
type deadLetterCase struct {
	name     string
	props    amqp091.Properties
	exchange string // "" or livePrefix+"x", which routes "k" to the source queue
	source   string // the queue it dies in, by suffix: "rej" (rejected, with a dead-letter routing key), "ttl", "qttl", "max"
}

func TestLiveDeadLetterHeader(t *testing.T) {
	rc := dialRabbit(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dlx, x := livePrefix+"dlx", livePrefix+"x"
	for _, ex := range []string{dlx, x} {
		kind := "fanout"
		if ex == x {
			kind = "direct"
		}
		_, err := rc.call(&amqp091.ExchangeDelete{Exchange: []byte(ex)})
		must(err)
		_, err = rc.call(&amqp091.ExchangeDeclare{Exchange: []byte(ex), Type: []byte(kind)})
		must(err)
		t.Cleanup(func() { rc.send(rc.ch, &amqp091.ExchangeDelete{Exchange: []byte(ex), NoWait: true}) })
	}
	dst, plain := livePrefix+"dst", livePrefix+"plain"
	must(rc.declare(dst, nil))
	must(rc.declare(plain, nil))
	_, err := rc.call(&amqp091.QueueBind{Queue: []byte(dst), Exchange: []byte(dlx)})
	must(err)
	sources := map[string]amqp091.Table{
		"rej":  table("x-dead-letter-exchange", str(""), "x-dead-letter-routing-key", str(dst)),
		"ttl":  table("x-dead-letter-exchange", str(dlx)),
		"qttl": table("x-dead-letter-exchange", str(dlx), "x-message-ttl", i32(1)),
		"max":  table("x-dead-letter-exchange", str(dlx), "x-max-length", i32(0)),
	}
	for suffix, args := range sources {
		must(rc.declare(livePrefix+suffix, args))
		_, err := rc.call(&amqp091.QueueBind{Queue: []byte(livePrefix + suffix), Exchange: []byte(x), RoutingKey: []byte("k" + suffix)})
		must(err)
	}

	ts := amqp091.TimestampValue(time.Unix(1_600_000_000, 0))
	oldDeath := func(q, reason string, count amqp091.Value) amqp091.Value {
		t := table("queue", str(q), "reason", str(reason), "time", ts, "exchange", str("old"), "routing-keys", amqp091.ArrayValue(array(str("a"))))
		if count.Type != 0 {
			t = table("count", count).Append("queue", str(q)).Append("reason", str(reason))
		}
		return amqp091.TableValue(t)
	}
	none := amqp091.Value{}
	rej := livePrefix + "rej"
	weird := table("zeta", i32(1), "CC", amqp091.ArrayValue(array(str("cc1"), i32(7), str("cc2"))), "alpha", str("a"),
		"big", amqp091.Uint64Value(5), "flag", amqp091.BoolValue(true), "nested", amqp091.TableValue(table("L", amqp091.Uint64Value(9), "t", amqp091.BoolValue(false))),
		"alpha", str("second alpha"), "BCC", amqp091.ArrayValue(array(str("bcc1"))))
	hdr := func(t amqp091.Table) amqp091.Properties {
		return amqp091.Properties{Flags: amqp091.FlagHeaders | amqp091.FlagContentType | amqp091.FlagPriority, ContentType: []byte("text/plain"), Priority: 3, Headers: t}
	}
	withTTL := func(p amqp091.Properties, ttl string) amqp091.Properties {
		p.Flags |= amqp091.FlagExpiration
		p.Expiration = []byte(ttl)
		return p
	}
	cases := []deadLetterCase{
		{name: "rejected, no headers", props: amqp091.Properties{Flags: amqp091.FlagDeliveryMode, DeliveryMode: 2}, source: "rej"},
		{name: "rejected, CC, BCC, odd types, TTL", props: withTTL(hdr(weird), "60000"), source: "rej"},
		{name: "rejected via an exchange", props: hdr(weird), exchange: x, source: "rej"},
		{name: "expired per-message", props: withTTL(hdr(weird), "1"), source: "ttl"},
		{name: "expired per-queue", props: hdr(weird), source: "qttl"},
		{name: "expired per-queue with a longer per-message", props: withTTL(hdr(nil), "100000"), source: "qttl"},
		{name: "maxlen", props: hdr(weird), exchange: x, source: "max"},
		{name: "again, same queue and reason", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath(rej, "rejected", amqp091.Int64Value(4)))))), source: "rej"},
		{name: "again, count as signedint", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath(rej, "rejected", i32(4)))))), source: "rej"},
		{name: "again, no count", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath(rej, "rejected", none))))), source: "rej"},
		{name: "again, other reason", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath(rej, "expired", amqp091.Int64Value(2)))))), source: "rej"},
		{name: "again, two others", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath("q1", "expired", amqp091.Int64Value(2)), oldDeath("q2", "maxlen", amqp091.Int64Value(3)))))), source: "rej"},
		{name: "again, three with a match in the middle", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath("q1", "expired", amqp091.Int64Value(2)), oldDeath(rej, "rejected", amqp091.Int64Value(5)), oldDeath("q2", "maxlen", amqp091.Int64Value(3)))))), source: "rej"},
		{name: "again, duplicates without counts", props: hdr(table("x-death", amqp091.ArrayValue(array(oldDeath("q1", "expired", none), oldDeath("q2", "maxlen", none), oldDeath("q1", "expired", none), oldDeath(rej, "rejected", none), oldDeath(rej, "rejected", none))))), source: "rej"},
		{name: "again, empty x-death", props: hdr(table("x-death", amqp091.ArrayValue(nil))), source: "rej"},
		{name: "x-death not an array", props: hdr(table("x-death", str("junk"), "x-first-death-queue", str("q0"))), source: "rej"},
		{name: "x-first-death-queue already there", props: hdr(table("x-first-death-queue", str("q0"), "b", str("b"))), source: "rej"},
		{name: "again with a TTL, expired", props: withTTL(hdr(table("x-death", amqp091.ArrayValue(array(oldDeath(livePrefix+"ttl", "expired", amqp091.Int64Value(1)))))), "1"), source: "ttl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// What RabbitMQ stores is what it delivers from a plain queue.
			rc.publish("", plain, &c.props, []byte("body"))
			stored := rc.getWait(plain)
			source := livePrefix + c.source
			rk := source
			if c.exchange != "" {
				rk = "k" + c.source
			}
			before := time.Now().Add(-time.Second)
			rc.publish(c.exchange, rk, &c.props, []byte("body"))
			reason, dropCC := Expired, false
			switch c.source {
			case "rej":
				reason, dropCC = Rejected, true
				g, ok := rc.get(source, false)
				if !ok {
					t.Fatal("nothing to reject")
				}
				rc.send(rc.ch, &amqp091.BasicReject{DeliveryTag: g.DeliveryTag})
			case "max":
				reason = MaxLen
			}
			got := rc.getWait(dst)
			after := time.Now().Add(time.Second)

			var h amqp091.ContentHeader
			if err := h.DecodeFromBytes(got.Header); err != nil {
				t.Fatal(err)
			}
			now := before
			if xd, ok := h.Properties.Headers.Get("x-death"); ok {
				it := xd.Array().Iter()
				if it.Next() {
					if tm, ok := it.Value().Table().Get("time"); ok {
						now = tm.Time()
					}
				}
			}
			m := &Message{Exchange: c.exchange, RoutingKey: rk, Header: stored.Header, Body: stored.Body}
			record.DeadLetter = append(record.DeadLetter, struct {
				Name, Exchange, RoutingKey, Reason, Queue string
				DropCC                                    bool
				Time                                      int64
				Stored, Got                               string
			}{c.name, c.exchange, rk, string(reason), source, dropCC, now.Unix(), hex.EncodeToString(stored.Header), hex.EncodeToString(got.Header)})
			mine, err := DeadLetterHeader(nil, m, reason, source, now, dropCC)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mine, got.Header) {
				t.Errorf("content header differs from RabbitMQ's\n got  %s\nwant %s\n got:\n%s\nwant:\n%s", hex.EncodeToString(mine), hex.EncodeToString(got.Header), dumpHeader(mine), dumpHeader(got.Header))
			}
			if now.Before(before.Truncate(time.Second)) || now.After(after) {
				if !strings.HasPrefix(c.name, "again") {
					t.Errorf("RabbitMQ's time %v is not now", now)
				}
			}
		})
	}
}

// dumpHeader shows a content header's properties with their field types
// and order, for failure messages.
func dumpHeader(hdr []byte) string {
	var h amqp091.ContentHeader
	if err := h.DecodeFromBytes(hdr); err != nil {
		return err.Error()
	}
	var sb strings.Builder
	sb.WriteString("flags " + hex.EncodeToString([]byte{byte(h.Properties.Flags >> 8), byte(h.Properties.Flags)}) + "\n")
	dumpFields(&sb, h.Properties.Headers, true, "  ")
	return sb.String()
}

func dumpFields(sb *strings.Builder, b []byte, keyed bool, ind string) {
	var it amqp091.TableIter
	if keyed {
		it = amqp091.Table(b).Iter()
	} else {
		it = amqp091.Array(b).Iter()
	}
	for it.Next() {
		v := it.Value()
		sb.WriteString(ind + string(it.Key()) + " " + v.Type.String())
		switch v.Type {
		case amqp091.TypeTable, amqp091.TypeArray:
			sb.WriteString("\n")
			dumpFields(sb, v.Bytes(), v.Type == amqp091.TypeTable, ind+"  ")
		default:
			sb.WriteString(" " + hex.EncodeToString(b[it.Offset():it.End()]) + "\n")
		}
	}
}

// op is one step of a script run on RabbitMQ and on a Queue.
type op struct {
	kind string // publish, get, ack, requeue, count, sleep
	name string // the message (its body), for publish, ack, requeue
	prio int    // publish: -1 for no priority property
	ttl  string // publish: the expiration property, "" for none
	ms   int    // sleep
}

func pub(name string, prio int, ttl string) op {
	return op{kind: "publish", name: name, prio: prio, ttl: ttl}
}

var (
	get   = op{kind: "get"}
	count = op{kind: "count"}
)

func ack(name string) op     { return op{kind: "ack", name: name} }
func requeue(name string) op { return op{kind: "requeue", name: name} }
func sleep(ms int) op        { return op{kind: "sleep", ms: ms} }

// model runs scripts on a Queue the way the broker is meant to drive it.
type model struct {
	q       *Queue
	unacked map[string]Entry
	dead    []string // "name reason" in dead-letter order
	dlx     bool     // reject-publish-dlx dead-letters refused publishes
}

func (m *model) deadLetter(es []Entry, r Reason) {
	for _, e := range es {
		m.dead = append(m.dead, string(e.Msg.Body)+" "+string(r))
	}
}

func (m *model) run(o op) string {
	now := time.Now().UnixMilli()
	// The broker's timer (armed at NextExpiry) has fired by now.
	if at, ok := m.q.NextExpiry(); ok && at <= now {
		m.deadLetter(m.q.Expire(now, nil), Expired)
	}
	switch o.kind {
	case "publish":
		msg := &Message{Body: []byte(o.name), Expiration: -1}
		if o.prio >= 0 {
			msg.Priority = uint8(o.prio)
		}
		if o.ttl != "" {
			msg.Expiration, _ = ParseExpiration([]byte(o.ttl))
		}
		ok, dropped := m.q.Push(msg, now, nil)
		if !ok && m.q.Config().Overflow == RejectPublishDLX {
			m.dead = append(m.dead, o.name+" maxlen")
		}
		m.deadLetter(dropped, MaxLen)
		m.deadLetter(m.q.Expire(now, nil), Expired)
	case "get":
		e, ok, expired := m.q.Pop(now, nil)
		m.deadLetter(expired, Expired)
		if !ok {
			return "empty"
		}
		m.unacked[string(e.Msg.Body)] = e
		if e.Redelivered {
			return string(e.Msg.Body) + " redelivered"
		}
		return string(e.Msg.Body)
	case "ack":
		delete(m.unacked, o.name)
	case "requeue":
		m.q.Requeue(m.unacked[o.name])
		delete(m.unacked, o.name)
		m.deadLetter(m.q.DropHead(nil), MaxLen)
		m.deadLetter(m.q.Expire(now, nil), Expired)
	case "count":
		m.deadLetter(m.q.Expire(now, nil), Expired)
		return strconv.Itoa(m.q.Len())
	case "sleep":
		time.Sleep(time.Duration(o.ms) * time.Millisecond)
	}
	return ""
}

func TestLiveQueueBehaviour(t *testing.T) {
	rc := dialRabbit(t)
	// Confirms order the script: RabbitMQ's queue process answers a
	// passive declare's stat ahead of the deliveries still in its mailbox
	// (gen_server2 prioritises stat), so a count right after a publish can
	// miss it. A publisher confirm leaves the queue after the enqueue.
	if _, err := rc.call(&amqp091.ConfirmSelect{}); err != nil {
		t.Fatal(err)
	}
	dlx, dst := livePrefix+"behaviour-dlx", livePrefix+"behaviour-dst"
	if _, err := rc.call(&amqp091.ExchangeDeclare{Exchange: []byte(dlx), Type: []byte("fanout")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.send(rc.ch, &amqp091.ExchangeDelete{Exchange: []byte(dlx), NoWait: true}) })
	if err := rc.declare(dst, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.call(&amqp091.QueueBind{Queue: []byte(dst), Exchange: []byte(dlx)}); err != nil {
		t.Fatal(err)
	}
	big := table("padding", str(strings.Repeat("p", 1000)))
	scripts := []struct {
		name   string
		args   amqp091.Table
		script []op
	}{
		{"fifo and requeue to the original position", nil, []op{
			pub("m1", -1, ""), pub("m2", -1, ""), pub("m3", -1, ""), pub("m4", -1, ""), pub("m5", -1, ""),
			get, get, get, get, requeue("m3"), ack("m2"), requeue("m1"), get, requeue("m4"), get, get, requeue("m1"), get, get, get, get, count}},
		{"priorities, above the maximum as the maximum", table("x-max-priority", i32(5)), []op{
			pub("none", -1, ""), pub("p1", 1, ""), pub("p7", 7, ""), pub("p5", 5, ""), pub("p3", 3, ""), pub("p5b", 5, ""), pub("p0", 0, ""),
			get, get, requeue("p7"), get, get, get, get, get, get, get, get, count}},
		{"drop-head in a priority queue drops the highest priority", table("x-max-priority", i32(5), "x-max-length", i32(2)), []op{
			pub("p1", 1, ""), pub("p5", 5, ""), pub("p3", 3, ""), pub("p2", 2, ""), count, get, get, get}},
		{"max-length-bytes counts bodies only", table("x-max-length-bytes", i32(10)), []op{
			pub("sixsix", -1, ""), pub("four", -1, ""), count, pub("1", -1, ""), count, get, get, get}},
		{"max-length drop-head drops the oldest", table("x-max-length", i32(2)), []op{
			pub("m1", -1, ""), pub("m2", -1, ""), pub("m3", -1, ""), count, get, get, get}},
		{"reject-publish refuses", table("x-max-length", i32(2), "x-overflow", str("reject-publish")), []op{
			pub("m1", -1, ""), pub("m2", -1, ""), pub("m3", -1, ""), count, get, pub("m4", -1, ""), pub("m5", -1, ""), count, get, get, get}},
		{"reject-publish-dlx dead-letters the refused", table("x-max-length-bytes", i32(5), "x-overflow", str("reject-publish-dlx")), []op{
			pub("abc", -1, ""), pub("def", -1, ""), pub("gh", -1, ""), count, get, get, get}},
		{"requeue over max-length drops the requeued head", table("x-max-length", i32(2)), []op{
			pub("m1", -1, ""), pub("m2", -1, ""), get, pub("m3", -1, ""), requeue("m1"), count, get, get, get}},
		{"per-message TTL expires at the head only", nil, []op{
			pub("long", -1, "60000"), pub("short", -1, "100"), sleep(400), count, get, count, get}},
		{"in a priority queue the head is the highest priority's", table("x-max-priority", i32(5)), []op{
			pub("low-short", 1, "100"), pub("high", 5, ""), sleep(400), count, get, count, get}},
		{"queue TTL and message TTL: the smaller wins", table("x-message-ttl", i32(200)), []op{
			pub("q200", -1, ""), pub("m60000", -1, "60000"), pub("m50", -1, "50"), sleep(400), count, get}},
		{"a requeued entry keeps its expiry", table("x-message-ttl", i32(300)), []op{
			pub("m1", -1, ""), pub("m2", -1, ""), get, sleep(500), requeue("m1"), count, get}},
		{"TTL 0 expires unless delivered at once", table("x-message-ttl", i32(0)), []op{
			pub("m1", -1, ""), count, get}},
	}
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			q := livePrefix + "behaviour"
			args := s.args.Append("x-dead-letter-exchange", str(dlx))
			if err := rc.declare(q, args); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := ParseArgs(args)
			if err != nil {
				t.Fatal(err)
			}
			m := &model{q: New(cfg), unacked: map[string]Entry{}}
			tags := map[string]uint64{}
			var want, got []string
			for _, o := range s.script {
				var r string
				switch o.kind {
				case "publish":
					p := amqp091.Properties{Flags: amqp091.FlagHeaders, Headers: big}
					if o.prio >= 0 {
						p.Flags |= amqp091.FlagPriority
						p.Priority = uint8(o.prio)
					}
					if o.ttl != "" {
						p.Flags |= amqp091.FlagExpiration
						p.Expiration = []byte(o.ttl)
					}
					rc.publish("", q, &p, []byte(o.name))
					switch m := rc.method(rc.ch).(type) {
					case *amqp091.BasicAck, *amqp091.BasicNack:
					default:
						t.Fatalf("publish answered %s, want a confirm", m.Name())
					}
				case "get":
					g, ok := rc.get(q, false)
					r = "empty"
					if ok {
						tags[string(g.Body)] = g.DeliveryTag
						r = string(g.Body)
						if g.Redelivered {
							r += " redelivered"
						}
					}
				case "ack":
					rc.send(rc.ch, &amqp091.BasicAck{DeliveryTag: tags[o.name]})
				case "requeue":
					rc.send(rc.ch, &amqp091.BasicReject{DeliveryTag: tags[o.name], Requeue: true})
				case "count":
					r = strconv.Itoa(int(rc.count(q)))
				case "sleep":
					time.Sleep(time.Duration(o.ms) * time.Millisecond)
				}
				want = append(want, o.kind+" "+o.name+": "+r)
				got = append(got, o.kind+" "+o.name+": "+m.run(o))
			}
			if !slices.Equal(got, want) {
				t.Errorf("script differs from RabbitMQ's\n got %q\nwant %q", got, want)
			}
			// The unacknowledged go back before the queue goes.
			if _, err := rc.call(&amqp091.BasicRecover{Requeue: true}); err != nil {
				t.Fatal(err)
			}
			var dead []string
			deadline := time.Now().Add(3 * time.Second)
			for len(dead) < len(m.dead) && time.Now().Before(deadline) {
				g, ok := rc.get(dst, true)
				if !ok {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				var h amqp091.ContentHeader
				if err := h.DecodeFromBytes(g.Header); err != nil {
					t.Fatal(err)
				}
				r, _ := h.Properties.Headers.Get("x-first-death-reason")
				dead = append(dead, string(g.Body)+" "+string(r.Bytes()))
			}
			if g, ok := rc.get(dst, true); ok {
				dead = append(dead, string(g.Body)+" ?")
			}
			if !slices.Equal(m.dead, dead) {
				t.Errorf("dead letters differ from RabbitMQ's\n got %q\nwant %q", m.dead, dead)
			}
		})
	}
}
