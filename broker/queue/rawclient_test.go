package queue

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The live tests speak AMQP through decode/amqp091 rather than a client
// library, because they compare raw content-header bytes: a client that
// decodes headers into a map loses their order and value types.

// brokerAddr is where the live tests expect RabbitMQ: $WIRETAP_AMQP091_ADDR,
// else 127.0.0.1:5672 (where .ci/services.sh starts it).
func brokerAddr() string {
	if a := os.Getenv("WIRETAP_AMQP091_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:5672"
}

// rawConn is a minimal AMQP 0-9-1 client with one channel.
type rawConn struct {
	t   testing.TB
	c   net.Conn
	fr  *amqp091.FrameReader
	md  amqp091.MethodDecoder
	out []byte
	ch  uint16
}

// closeError is a channel.close the server sent.
type closeError struct {
	Code uint16
	Text string
}

func (e *closeError) Error() string { return e.Text }

// dialRabbit connects to RabbitMQ and opens a channel; it skips the test
// when no broker answers, and fails it instead when CI=true.
func dialRabbit(t testing.TB) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", brokerAddr(), 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no RabbitMQ on %s: %v", brokerAddr(), err)
		}
		t.Skipf("no RabbitMQ on %s (%v); start one (.ci/services.sh start rabbitmq) or set WIRETAP_AMQP091_ADDR", brokerAddr(), err)
	}
	rc := &rawConn{t: t, c: c, fr: amqp091.NewFrameReader(c)}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write([]byte(amqp091.ProtocolHeader)); err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.method(0).(*amqp091.ConnectionStart); !ok {
		t.Fatal("no connection.start")
	}
	rc.send(0, &amqp091.ConnectionStartOk{Mechanism: []byte("PLAIN"), Response: []byte("\x00guest\x00guest"), Locale: []byte("en_US")})
	tune, ok := rc.method(0).(*amqp091.ConnectionTune)
	if !ok {
		t.Fatal("no connection.tune")
	}
	rc.send(0, &amqp091.ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax})
	rc.send(0, &amqp091.ConnectionOpen{VirtualHost: []byte("/")})
	if _, ok := rc.method(0).(*amqp091.ConnectionOpenOk); !ok {
		t.Fatal("no connection.open-ok")
	}
	rc.openChannel()
	return rc
}

func (rc *rawConn) openChannel() {
	rc.ch++
	rc.send(rc.ch, &amqp091.ChannelOpen{})
	if _, ok := rc.method(rc.ch).(*amqp091.ChannelOpenOk); !ok {
		rc.t.Fatal("no channel.open-ok")
	}
}

func (rc *rawConn) send(ch uint16, m amqp091.Method) {
	rc.out = amqp091.AppendMethodFrame(rc.out[:0], ch, m)
	if _, err := rc.c.Write(rc.out); err != nil {
		rc.t.Fatal(err)
	}
}

// frame returns the next frame that is not a heartbeat.
func (rc *rawConn) frame() amqp091.Frame {
	for {
		f, err := rc.fr.ReadFrame()
		if err != nil {
			rc.t.Fatal(err)
		}
		if f.Type != amqp091.FrameHeartbeat {
			return f
		}
	}
}

// method reads the next method frame, which must be on channel ch.
func (rc *rawConn) method(ch uint16) amqp091.Method {
	f := rc.frame()
	if f.Type != amqp091.FrameMethod {
		rc.t.Fatalf("got a %v frame on channel %d, want a method", f.Type, f.Channel)
	}
	m, err := rc.md.Decode(f.Payload)
	if err != nil {
		rc.t.Fatal(err)
	}
	if cc, ok := m.(*amqp091.ConnectionClose); ok {
		rc.t.Fatalf("connection closed: %d %s", cc.ReplyCode, cc.ReplyText)
	}
	if f.Channel != ch {
		rc.t.Fatalf("got %s on channel %d, want channel %d", m.Name(), f.Channel, ch)
	}
	return m
}

// call sends m and returns the reply; a channel.close becomes a
// *closeError and the channel is replaced by a new one.
func (rc *rawConn) call(m amqp091.Method) (amqp091.Method, error) {
	rc.send(rc.ch, m)
	return rc.reply()
}

func (rc *rawConn) reply() (amqp091.Method, error) {
	r := rc.method(rc.ch)
	if cl, ok := r.(*amqp091.ChannelClose); ok {
		err := &closeError{Code: cl.ReplyCode, Text: string(cl.ReplyText)}
		rc.send(rc.ch, &amqp091.ChannelCloseOk{})
		rc.openChannel()
		return nil, err
	}
	return r, nil
}

// declare declares a queue with args, deleting any old one first.
func (rc *rawConn) declare(name string, args amqp091.Table) error {
	if _, err := rc.call(&amqp091.QueueDelete{Queue: []byte(name)}); err != nil {
		rc.t.Fatal(err)
	}
	rc.t.Cleanup(func() {
		rc.send(rc.ch, &amqp091.QueueDelete{Queue: []byte(name), NoWait: true})
	})
	_, err := rc.call(&amqp091.QueueDeclare{Queue: []byte(name), Arguments: args})
	return err
}

// publish publishes and, the channel being in confirm mode when confirm is
// set, waits for the broker's ack; it returns a channel.close as an error.
func (rc *rawConn) publish(exchange, rk string, props *amqp091.Properties, body []byte) {
	rc.out = amqp091.AppendMessage(rc.out[:0], rc.ch, &amqp091.BasicPublish{Exchange: []byte(exchange), RoutingKey: []byte(rk)}, props, body, 131072)
	if _, err := rc.c.Write(rc.out); err != nil {
		rc.t.Fatal(err)
	}
}

// sync makes sure the broker has handled everything sent on the channel
// (a failed publish closes the channel, which sync returns).
func (rc *rawConn) sync() error {
	_, err := rc.call(&amqp091.BasicQos{})
	return err
}

// gotMessage is one basic.get-ok with its content, copied.
type gotMessage struct {
	DeliveryTag  uint64
	Redelivered  bool
	Exchange     string
	RoutingKey   string
	MessageCount uint32
	Header       []byte
	Body         []byte
}

// get does a basic.get; ok is false for basic.get-empty.
func (rc *rawConn) get(queue string, noAck bool) (gotMessage, bool) {
	r, err := rc.call(&amqp091.BasicGet{Queue: []byte(queue), NoAck: noAck})
	if err != nil {
		rc.t.Fatal(err)
	}
	var g gotMessage
	switch m := r.(type) {
	case *amqp091.BasicGetEmpty:
		return g, false
	case *amqp091.BasicGetOk:
		g = gotMessage{DeliveryTag: m.DeliveryTag, Redelivered: m.Redelivered, Exchange: string(m.Exchange), RoutingKey: string(m.RoutingKey), MessageCount: m.MessageCount}
	default:
		rc.t.Fatalf("basic.get answered %s", r.Name())
	}
	f := rc.frame()
	if f.Type != amqp091.FrameHeader {
		rc.t.Fatalf("got a %v frame, want a header", f.Type)
	}
	g.Header = append([]byte(nil), f.Payload...)
	var h amqp091.ContentHeader
	if err := h.DecodeFromBytes(g.Header); err != nil {
		rc.t.Fatal(err)
	}
	for uint64(len(g.Body)) < h.BodySize {
		f := rc.frame()
		if f.Type != amqp091.FrameBody {
			rc.t.Fatalf("got a %v frame, want a body", f.Type)
		}
		g.Body = append(g.Body, f.Payload...)
	}
	return g, true
}

// getWait polls with basic.get until a message arrives, since
// dead-lettering is asynchronous.
func (rc *rawConn) getWait(queue string) gotMessage {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if g, ok := rc.get(queue, true); ok {
			return g
		}
		time.Sleep(20 * time.Millisecond)
	}
	rc.t.Fatalf("nothing arrived in %s", queue)
	return gotMessage{}
}

// count returns a queue's ready message count (passive declare).
func (rc *rawConn) count(queue string) uint32 {
	r, err := rc.call(&amqp091.QueueDeclare{Queue: []byte(queue), Passive: true})
	if err != nil {
		rc.t.Fatal(err)
	}
	return r.(*amqp091.QueueDeclareOk).MessageCount
}

func isCloseError(err error, code uint16, prefix string) bool {
	var ce *closeError
	return errors.As(err, &ce) && ce.Code == code && strings.HasPrefix(ce.Text, prefix)
}
