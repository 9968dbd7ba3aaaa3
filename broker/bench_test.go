package broker

import (
	"testing"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func benchMessage() *queue.Message {
	h := amqp091.ContentHeader{ClassID: 60, BodySize: 16}
	return &queue.Message{Exchange: "amq.fanout", RoutingKey: "bench", Header: h.AppendTo(nil), Body: make([]byte, 16), Expiration: -1}
}

// BenchmarkEncodeDeliver measures basic.deliver + content header + body,
// the frames every delivery writes.
func BenchmarkEncodeDeliver(b *testing.B) {
	m := benchMessage()
	tag := []byte("amq.ctag-0123456789012345678901")
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = appendDeliver(buf[:0], 1, tag, uint64(i), false, m.Exchange, m.RoutingKey)
		buf = appendContent(buf, 1, m, DefaultFrameMax)
	}
	b.SetBytes(int64(len(buf)))
}

func TestEncodeDeliverAllocatesNothing(t *testing.T) {
	m := benchMessage()
	tag := []byte("ctag")
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(1000, func() {
		buf = appendDeliver(buf[:0], 1, tag, 7, true, m.Exchange, m.RoutingKey)
		buf = appendContent(buf, 1, m, DefaultFrameMax)
	}); n != 0 {
		t.Fatalf("%v allocations per delivery encoded", n)
	}
	// What was encoded is what the codec reads back.
	f, n, err := amqp091.ParseFrame(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	md, err := amqp091.ParseMethod(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	d := md.(*amqp091.BasicDeliver)
	if string(d.ConsumerTag) != "ctag" || d.DeliveryTag != 7 || !d.Redelivered || string(d.Exchange) != "amq.fanout" || string(d.RoutingKey) != "bench" {
		t.Fatalf("decoded %+v", d)
	}
	f, n2, err := amqp091.ParseFrame(buf[n:], 0)
	if err != nil || f.Type != amqp091.FrameHeader {
		t.Fatal(f.Type, err)
	}
	f, _, err = amqp091.ParseFrame(buf[n+n2:], 0)
	if err != nil || f.Type != amqp091.FrameBody || len(f.Payload) != 16 {
		t.Fatal(f.Type, err)
	}
}

// benchChannel is a channel of a connection with no socket: what is
// written for it piles up in out, which the benchmark empties.
func benchChannel(b *Broker, v *vhost) *channel {
	c := &conn{b: b, vh: v, user: "guest", frameMax: DefaultFrameMax, wake: make(chan struct{}, 1), channels: map[uint16]*channel{}}
	ch := &channel{c: c, id: 1, consumers: map[string]*consumer{}}
	c.channels[1] = ch
	return ch
}

// onePath is a broker with queue "q" bound to amq.KIND with key "k" and a
// waiting no-ack consumer, and a publishing channel.
func onePath(tb testing.TB, kind string) (pub, cons *channel, p publishing, m *queue.Message) {
	return onePathAck(tb, kind, true)
}

// onePathAck is onePath with a consumer that acknowledges when noAck is
// false.
func onePathAck(tb testing.TB, kind string, noAck bool) (pub, cons *channel, p publishing, m *queue.Message) {
	br, err := New(Config{})
	if err != nil {
		tb.Fatal(err)
	}
	v := br.vhost("/")
	admin := br.adminConn(v)
	if _, _, _, e := v.declareQueue(admin, &amqp091.QueueDeclare{Queue: []byte("q")}); e != nil {
		tb.Fatal(e)
	}
	x := "amq." + kind
	if e := v.bind(admin, x, routeDest("q"), "k", nil); e != nil {
		tb.Fatal(e)
	}
	cons = benchChannel(br, v)
	q, _ := v.lookupQueue(cons.c, "q")
	c := &consumer{tag: "c", tagBytes: []byte("c"), ch: cons, q: q, noAck: noAck}
	cons.consumers["c"] = c
	q.mu.Lock()
	q.addConsumer(c)
	q.mu.Unlock()
	pub = benchChannel(br, v)
	// The message is held as the publishing path holds it, so that it
	// can be published again and again.
	m = benchMessage()
	br.mem.hold(m)
	tb.Cleanup(func() {
		pub.release()
		cons.release()
		br.mem.release(m)
		br.Close()
		checkLedger(tb, br)
	})
	return pub, cons, publishing{exchange: x, routingKey: "k"}, m
}

// BenchmarkPublishDeliver measures a publish routed to one queue with a
// waiting no-ack consumer: route, enqueue, dispatch and the delivery's
// frames encoded, in process (no socket).
func BenchmarkPublishDeliver(b *testing.B) {
	for _, kind := range []string{"direct", "fanout", "topic"} {
		b.Run(kind, func(b *testing.B) {
			pub, cons, p, m := onePath(b, kind)
			b.ReportAllocs()
			b.SetBytes(int64(len(m.Body)))
			for b.Loop() {
				if e := pub.deliverPublished(p, m, nil); e != nil {
					b.Fatal(e)
				}
				cons.c.out = cons.c.out[:0]
			}
		})
	}
}

// TestPublishDeliverAllocatesNothing: routing, enqueueing and delivering a
// published message allocates nothing in steady state.
func TestPublishDeliverAllocatesNothing(t *testing.T) {
	for _, kind := range []string{"direct", "fanout", "topic"} {
		pub, cons, p, m := onePath(t, kind)
		n := testing.AllocsPerRun(1000, func() {
			if e := pub.deliverPublished(p, m, nil); e != nil {
				t.Fatal(e)
			}
			cons.c.out = cons.c.out[:0]
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per publish", kind, n)
		}
		if len(cons.c.out) != 0 {
			t.Fatal("out not drained")
		}
		pub.deliverPublished(p, m, nil)
		if len(cons.c.out) == 0 {
			t.Errorf("%s: the consumer was given nothing", kind)
		}
	}
}

func routeDest(q string) route.Dest { return route.Dest{Kind: route.Queue, Name: q} }

// BenchmarkPublishAck measures a publish delivered to a consumer that
// acknowledges it: route, enqueue, deliver, and the basic.ack settled.
func BenchmarkPublishAck(b *testing.B) {
	pub, cons, p, m := onePathAck(b, "direct", false)
	b.ReportAllocs()
	var tag uint64
	for b.Loop() {
		if e := pub.deliverPublished(p, m, nil); e != nil {
			b.Fatal(e)
		}
		tag++
		if e := cons.settle(0, tag, false, false); e != nil {
			b.Fatal(e)
		}
		cons.c.out = cons.c.out[:0]
	}
}

// TestAckAllocatesNothing: acknowledging, one tag or many, allocates
// nothing in steady state, and what was acknowledged is gone.
func TestAckAllocatesNothing(t *testing.T) {
	pub, cons, p, m := onePathAck(t, "direct", false)
	var tag uint64
	n := testing.AllocsPerRun(1000, func() {
		pub.deliverPublished(p, m, nil)
		pub.deliverPublished(p, m, nil)
		tag += 2
		cons.settle(0, tag-1, false, false) // one
		cons.settle(0, tag, true, false)    // multiple
		cons.c.out = cons.c.out[:0]
	})
	if n != 0 {
		t.Fatalf("%v allocations per publish-and-ack", n)
	}
	if cons.unackedLive != 0 {
		t.Fatalf("%d deliveries left unacked", cons.unackedLive)
	}
	q := cons.consumers["c"].q
	q.mu.Lock()
	unacked := q.unacked
	q.mu.Unlock()
	if unacked != 0 {
		t.Fatalf("the queue counts %d unacked", unacked)
	}
}
