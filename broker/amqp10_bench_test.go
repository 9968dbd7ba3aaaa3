package broker

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

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
	s := &session10{cn: cn, links: map[uint32]*link10{}, nextOutgoingID: 1, windowEdge: 1 << 31}
	s.ch = &channel{c: c, consumers: map[string]*consumer{}}
	s.links[0] = &link10{s: s, publishing: true, key: "bench", credit: 1 << 30}
	tb.Cleanup(func() {
		s.release()
		b.Close()
		checkLedger(tb, b)
	})
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

// BenchmarkAMQP10GoAMQPEndToEnd is one load generator for both brokers:
// go-amqp publishing 12-byte bodies unsettled (64 sends in flight) to a
// queue while a receiver with credit 5,000 accepts each; it reports
// messages per second end to end. WIRETAP_AMQP10_RABBIT=host:port runs it
// against a RabbitMQ with its AMQP 1.0 plugin (v1 address /amq/queue/NAME)
// instead of the embedded broker.
func BenchmarkAMQP10GoAMQPEndToEnd(b *testing.B) {
	addr, target := "", "/queues/e2e"
	url := ""
	if a := os.Getenv("WIRETAP_AMQP10_RABBIT"); a != "" {
		addr, target, url = a, "/amq/queue/e2e", "amqp://guest:guest@"+a+"/"
	} else {
		_, url = startBroker(b, Config{})
		addr = brokerAddr(url)
	}
	conn, ch := dial(b, url)
	ch.QueueDelete("e2e", false, false, false)
	if _, err := ch.QueueDeclare("e2e", false, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	defer func() { ch.QueueDelete("e2e", false, false, false); conn.Close() }()
	ctx := context.Background()
	c, err := goamqp.Dial(ctx, "amqp://"+addr, &goamqp.ConnOptions{SASLType: goamqp.SASLTypePlain("guest", "guest")})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, target, nil)
	if err != nil {
		b.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, target, &goamqp.ReceiverOptions{Credit: 5000})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte("hello world!")
	b.ResetTimer()
	start := time.Now()
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for sent.Add(1) <= int64(b.N) {
				if err := snd.Send(ctx, goamqp.NewMessage(body), nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	for range b.N {
		m, err := rcv.Receive(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		rcv.AcceptMessage(ctx, m)
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}
