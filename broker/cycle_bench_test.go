package broker

import (
	"strconv"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// cycle is a broker in process with queues bound to one exchange, a
// consumer on each (on a connection of its own, no socket), and a
// publishing channel that is fed frames as its reader would be: the whole
// path of a message, from its frames to its delivery's frames and ack.
type cycle struct {
	pub    *channel
	cons   []*channel
	tags   []uint64
	noAck  bool
	method *amqp091.BasicPublish
	header []byte
	body   []byte
}

// newCycle declares queues q0..q(n-1) bound to amq.KIND with key "k",
// each with one consumer (acknowledging unless noAck), and a publisher of
// size-byte bodies.
func newCycle(tb testing.TB, kind string, queues, size int, noAck bool) *cycle {
	br, err := New(Config{})
	if err != nil {
		tb.Fatal(err)
	}
	br.mem.limit.Store(1 << 40)
	v := br.vhost("/")
	admin := br.adminConn(v)
	cy := &cycle{noAck: noAck, body: make([]byte, size)}
	for i := range queues {
		name := "q" + strconv.Itoa(i)
		if _, _, _, e := v.declareQueue(admin, &amqp091.QueueDeclare{Queue: []byte(name)}); e != nil {
			tb.Fatal(e)
		}
		if e := v.bind(admin, "amq."+kind, routeDest(name), "k", nil); e != nil {
			tb.Fatal(e)
		}
		ch := benchChannel(br, v)
		q, _ := v.lookupQueue(ch.c, name)
		c := &consumer{tag: "c", tagBytes: []byte("c"), ch: ch, q: q, noAck: noAck}
		ch.consumers["c"] = c
		q.mu.Lock()
		q.addConsumer(c)
		q.mu.Unlock()
		cy.cons = append(cy.cons, ch)
	}
	cy.tags = make([]uint64, queues)
	cy.pub = benchChannel(br, v)
	cy.method = &amqp091.BasicPublish{Exchange: []byte("amq." + kind), RoutingKey: []byte("k")}
	hdr := amqp091.ContentHeader{ClassID: 60, BodySize: uint64(size)}
	cy.header = hdr.AppendTo(nil)
	tb.Cleanup(func() {
		cy.pub.release()
		for _, ch := range cy.cons {
			ch.release()
		}
		br.Close()
	})
	return cy
}

// publish feeds one publish's frames, acknowledges what the consumers
// were given (one basic.ack each) and empties their outgoing buffers.
func (cy *cycle) publish(tb testing.TB) {
	if e := cy.pub.method(cy.method); e != nil {
		tb.Fatal(e)
	}
	if e := cy.pub.content(amqp091.Frame{Type: amqp091.FrameHeader, Channel: 1, Payload: cy.header}); e != nil {
		tb.Fatal(e)
	}
	if len(cy.body) > 0 {
		for rest := cy.body; len(rest) > 0; {
			n := min(len(rest), DefaultFrameMax-amqp091.FrameOverhead)
			if e := cy.pub.content(amqp091.Frame{Type: amqp091.FrameBody, Channel: 1, Payload: rest[:n]}); e != nil {
				tb.Fatal(e)
			}
			rest = rest[n:]
		}
	}
	for i, ch := range cy.cons {
		if len(ch.c.out) == 0 {
			tb.Fatalf("consumer %d was given nothing", i)
		}
		ch.c.out = ch.c.out[:0]
		if !cy.noAck {
			cy.tags[i]++
			if e := ch.settle(0, cy.tags[i], false, false); e != nil {
				tb.Fatal(e)
			}
		}
	}
}

// cycleCases are the paths measured: one queue and a fanout to three,
// with and without acknowledgements, and 4 KiB bodies.
var cycleCases = []struct {
	name         string
	kind         string
	queues, size int
	noAck        bool
}{
	{"direct/autoack", "direct", 1, 16, true},
	{"direct/ack", "direct", 1, 16, false},
	{"fanout-3/autoack", "fanout", 3, 16, true},
	{"fanout-3/ack", "fanout", 3, 16, false},
	{"direct/autoack/4KiB", "direct", 1, 4096, true},
	{"fanout-3/ack/4KiB", "fanout", 3, 4096, false},
}

// BenchmarkPublishCycle measures a message's whole way through the broker
// in process: its publish frames read (method, content header, body),
// the message stored, routed and enqueued, delivered (basic.deliver,
// content header and body encoded for each consumer) and, with acks,
// acknowledged.
func BenchmarkPublishCycle(b *testing.B) {
	for _, c := range cycleCases {
		b.Run(c.name, func(b *testing.B) {
			cy := newCycle(b, c.kind, c.queues, c.size, c.noAck)
			b.ReportAllocs()
			b.SetBytes(int64(c.size))
			for b.Loop() {
				cy.publish(b)
			}
		})
	}
}
