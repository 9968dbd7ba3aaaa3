package broker

import (
	"testing"

	"github.com/wiretap-dev/wiretap/broker/queue"
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
