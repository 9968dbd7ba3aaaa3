package broker

import (
	"net"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// bench10Message is a 12-byte-body message as a client sends it:
// properties with a message-id, one data section.
func bench10Message() []byte {
	props := amqp10.AppendComposite(nil, amqp10.DescriptorProperties, amqp10.AppendString(nil, "id-0001"))
	return append(props, amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("hello world!")))...)
}

// BenchmarkAMQP10DeliverEncode measures the transfer frame the broker
// writes per delivered message.
func BenchmarkAMQP10DeliverEncode(b *testing.B) {
	m := &queue.Message{Format: queue.FormatAMQP10, Body: bench10Message()}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf, _ = appendTransfers(buf[:0], 0, 1, uint32(i), false, [3][]byte{m.Header, m.Body}, DefaultFrameMax)
	}
	b.SetBytes(int64(len(buf)))
}

func TestAMQP10DeliverEncodeAllocatesNothing(t *testing.T) {
	body := bench10Message()
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(1000, func() {
		buf, _ = appendTransfers(buf[:0], 3, 1, 7, true, [3][]byte{nil, body}, DefaultFrameMax)
	}); n != 0 {
		t.Fatalf("%v allocations per delivery encoded", n)
	}
	// The codec reads back what was written.
	var f amqp10.Frame
	n, err := amqp10.ParseFrame(buf, &f)
	if err != nil || n != len(buf) || f.Channel != 3 {
		t.Fatalf("frame: %d of %d, %v", n, len(buf), err)
	}
	var c amqp10.Composite
	if err := amqp10.ScanComposite(f.Body, 0, &c); err != nil {
		t.Fatal(err)
	}
	var tr amqp10.Transfer
	if err := tr.Decode(f.Body, &c); err != nil {
		t.Fatal(err)
	}
	if tr.Handle != 1 || tr.DeliveryID != 7 || !tr.Settled || tr.More || string(f.Body[c.List.End:]) != string(body) {
		t.Fatalf("decoded %+v", tr)
	}
}

// bench10Link is a publishing link of a connection without a socket, to
// a queue that keeps its last 1,000 messages.
func bench10Link(tb testing.TB) (*session10, *conn) {
	b, err := New(Config{})
	if err != nil {
		tb.Fatal(err)
	}
	v := b.vhost("/")
	admin := &conn{admin: true, vh: v, b: b}
	args := amqp091.Table(nil).Append("x-max-length", amqp091.Int32Value(1000))
	if _, _, _, e := v.declareQueue(admin, &amqp091.QueueDeclare{Queue: []byte("bench"), Arguments: args}); e != nil {
		tb.Fatal(e)
	}
	client, server := net.Pipe()
	tb.Cleanup(func() { client.Close(); server.Close() })
	c := newConn(b, server)
	c.vh, c.admin = v, true
	cn := &conn10{c: c, sessions: map[uint16]*session10{}, maxFrame: b.frameMax, peerMaxFrame: b.frameMax}
	s := &session10{cn: cn, links: map[uint32]*link10{}, nextOutgoingID: 1}
	s.ch = &channel{c: c, consumers: map[string]*consumer{}}
	s.links[0] = &link10{s: s, publishing: true, key: "bench", credit: 1 << 30}
	return s, c
}

// BenchmarkAMQP10TransferToEnqueue measures a settled single-frame
// transfer from its frame to the message in its queue: performative
// scan, parse of the message's sections, store, route, enqueue.
func BenchmarkAMQP10TransferToEnqueue(b *testing.B) {
	s, c := bench10Link(b)
	msg := bench10Message()
	perf := amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 0),
		amqp10.AppendBinary(nil, []byte{0}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, true), amqp10.AppendBool(nil, false))
	body := append(perf, msg...)
	var comp amqp10.Composite
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := amqp10.ScanComposite(body, 0, &comp); err != nil {
			b.Fatal(err)
		}
		if err := s.transfer(body, &comp, body[comp.List.End:]); err != nil {
			b.Fatal(err)
		}
	}
	c.wmu.Lock()
	c.out = c.out[:0]
	c.wmu.Unlock()
}
