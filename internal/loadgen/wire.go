package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// wireConn is a client connection with one channel, its frames encoded and
// parsed by wiretap's decode/amqp091: no allocation per message, writes
// batched and flushed when the client has nothing else to do.
type wireConn struct {
	nc       net.Conn
	fr       *amqp091.FrameReader
	md       amqp091.MethodDecoder
	wbuf     []byte
	frameMax int
	// cut says a write stopped part-way through the buffer: the stream
	// ends inside a frame, and a connection.close after it would be
	// garbage to the broker.
	cut bool
	// writes and reads count socket calls (see [ioCounter]): writes on
	// the writing goroutine, reads on the reading one.
	writes, reads uint64
	// buffered counts the messages in wbuf.
	buffered int
}

// connReader counts the reads the frame reader makes.
type connReader struct{ c *wireConn }

func (r connReader) Read(p []byte) (int, error) {
	r.c.reads++
	return r.c.nc.Read(p)
}

// A client writes what it buffered once it holds wireWriteBatch bytes or
// wireWriteCount messages, whichever comes first: 4 KiB messages go 62 to
// a write (a quarter of the calls of 64 KiB batches), 16-byte ones 1,024
// (as many as 64 KiB held), so small messages wait no longer in the
// buffer than they did. Its read buffer grows to wireReadBuffer.
const (
	wireWriteBatch = 256 << 10
	wireWriteCount = 1024
	wireReadBuffer = 256 << 10
)

// wireFrameMax is the largest frame_max the client accepts in connection.tune.
const wireFrameMax = 131072

func dialWire(cfg *Config, name string) (*wireConn, error) {
	u, err := amqp.ParseURI(cfg.URI)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "amqp" {
		return nil, fmt.Errorf("the %s client speaks plain amqp:// only (try --client %s)", ClientWiretap, ClientAMQP091)
	}
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(u.Host, strconv.Itoa(u.Port)), 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := &wireConn{nc: nc, wbuf: make([]byte, 0, wireWriteBatch+wireFrameMax)}
	c.fr = amqp091.NewFrameReader(connReader{c})
	c.fr.MaxBuffer = wireReadBuffer
	if err := c.handshake(u, "wiretap bench "+cfg.ID+" "+name); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// clientProperties encodes the field table a client announces in
// connection.start-ok: its name, and the capabilities that make RabbitMQ
// send basic.nack and connection.blocked.
func clientProperties(connName string) amqp091.Table {
	var t []byte
	str := func(k, v string) {
		t = append(t, byte(len(k)))
		t = append(t, k...)
		t = append(t, 'S')
		t = binary.BigEndian.AppendUint32(t, uint32(len(v)))
		t = append(t, v...)
	}
	str("product", "wiretap bench")
	str("connection_name", connName)
	var caps []byte
	for _, k := range []string{"publisher_confirms", "basic.nack", "consumer_cancel_notify", "connection.blocked"} {
		caps = append(caps, byte(len(k)))
		caps = append(caps, k...)
		caps = append(caps, 't', 1)
	}
	t = append(t, byte(len("capabilities")))
	t = append(t, "capabilities"...)
	t = append(t, 'F')
	t = binary.BigEndian.AppendUint32(t, uint32(len(caps)))
	t = append(t, caps...)
	return amqp091.Table(t)
}

func (c *wireConn) handshake(u amqp.URI, connName string) error {
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.nc.SetDeadline(time.Time{})
	if _, err := c.nc.Write([]byte(amqp091.ProtocolHeader)); err != nil {
		return err
	}
	if _, err := c.expect(0, "connection.start"); err != nil {
		return err
	}
	resp := make([]byte, 0, 2+len(u.Username)+len(u.Password))
	resp = append(append(append(append(resp, 0), u.Username...), 0), u.Password...)
	c.send(0, &amqp091.ConnectionStartOk{ClientProperties: clientProperties(connName),
		Mechanism: []byte("PLAIN"), Response: resp, Locale: []byte("en_US")})
	if err := c.flush(); err != nil {
		return err
	}
	m, err := c.expect(0, "connection.tune")
	if err != nil {
		return err
	}
	tune := m.(*amqp091.ConnectionTune)
	c.frameMax = wireFrameMax
	if tune.FrameMax != 0 && int(tune.FrameMax) < c.frameMax {
		c.frameMax = int(tune.FrameMax)
	}
	// No heartbeats: a run is short and both sides are busy.
	c.send(0, &amqp091.ConnectionTuneOk{ChannelMax: 1, FrameMax: uint32(c.frameMax)})
	c.send(0, &amqp091.ConnectionOpen{VirtualHost: []byte(u.Vhost)})
	if err := c.flush(); err != nil {
		return err
	}
	if _, err := c.expect(0, "connection.open-ok"); err != nil {
		return err
	}
	_, err = c.call(&amqp091.ChannelOpen{}, "channel.open-ok")
	return err
}

func (c *wireConn) send(channel uint16, m amqp091.Method) {
	c.wbuf = amqp091.AppendMethodFrame(c.wbuf, channel, m)
}

func (c *wireConn) flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	c.writes++
	c.buffered = 0
	n, err := c.nc.Write(c.wbuf)
	if err != nil && n < len(c.wbuf) && n > 0 {
		c.cut = true
	}
	c.wbuf = c.wbuf[:0]
	return err
}

// call sends a synchronous method on channel 1 and waits for its reply.
func (c *wireConn) call(m amqp091.Method, reply string) (amqp091.Method, error) {
	c.send(1, m)
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c.expect(1, reply)
}

// expect reads frames until a method, which must be want.
func (c *wireConn) expect(channel uint16, want string) (amqp091.Method, error) {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		if f.Type != amqp091.FrameMethod {
			continue
		}
		m, err := c.md.Decode(f.Payload)
		if err != nil {
			return nil, err
		}
		if err := closeError(m); err != nil {
			return nil, err
		}
		if m.Name() != want || f.Channel != channel {
			return nil, fmt.Errorf("%s on channel %d while waiting for %s", m.Name(), f.Channel, want)
		}
		return m, nil
	}
}

// closeError turns a channel.close or connection.close into the error it reports.
func closeError(m amqp091.Method) error {
	switch m := m.(type) {
	case *amqp091.ChannelClose:
		return fmt.Errorf("channel closed by the broker: %d %s", m.ReplyCode, m.ReplyText)
	case *amqp091.ConnectionClose:
		return fmt.Errorf("connection closed by the broker: %d %s", m.ReplyCode, m.ReplyText)
	}
	return nil
}

// shutdown closes the connection politely, waiting at most closeGrace for
// close-ok, then closes the socket. reader is nil when the caller owns the
// reading side, which shutdown then reads close-ok from; otherwise it is
// closed when the goroutine that reads ends (on close-ok or a read error),
// and shutdown waits for it. The broker answers close-ok only once it has
// handled every frame sent before the close, so the publishes in flight
// are routed by then: the teardown that follows does not delete the
// exchange under them.
func (c *wireConn) shutdown(reader <-chan struct{}) {
	if c.cut {
		c.nc.Close()
		return
	}
	c.nc.SetDeadline(time.Now().Add(closeGrace))
	c.wbuf = c.wbuf[:0]
	c.send(0, &amqp091.ConnectionClose{ReplyCode: 200, ReplyText: []byte("bench done")})
	switch {
	case c.flush() != nil:
	case reader != nil:
		// The read deadline ends the wait at the latest; the timer is
		// for a reader that is not reading.
		select {
		case <-reader:
		case <-time.After(closeGrace + closeGrace/2):
		}
	default:
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				break
			}
			if f.Type == amqp091.FrameMethod && f.Channel == 0 && len(f.Payload) >= 4 &&
				binary.BigEndian.Uint32(f.Payload) == 10<<16|51 { // connection.close-ok
				break
			}
		}
	}
	c.nc.Close()
}

// wirePublisher is a producer on wiretap's codec. A goroutine reads what
// the broker sends (confirms, returns, closes); the producer writes.
type wirePublisher struct {
	c     *wireConn
	pub   amqp091.BasicPublish
	props amqp091.Properties
	// pre is the publish's frames up to its body for preRoute and a body
	// of preSize bytes in one frame: the same for every message of a
	// fixed size, so they are encoded once (see publish).
	pre      []byte
	preRoute *route
	preSize  int
	mu       sync.Mutex
	err      error
	done     chan struct{}
}

func dialWirePublisher(cfg *Config, name string, onConfirm confirmFunc, onReturn func()) (publisher, error) {
	c, err := dialWire(cfg, name)
	if err != nil {
		return nil, err
	}
	if cfg.ConfirmBatch > 0 {
		if _, err := c.call(&amqp091.ConfirmSelect{}, "confirm.select-ok"); err != nil {
			c.nc.Close()
			return nil, err
		}
	}
	p := &wirePublisher{c: c, done: make(chan struct{})}
	p.props.Flags = amqp091.FlagContentType
	p.props.ContentType = []byte("application/octet-stream")
	if cfg.Persistent {
		p.props.Flags |= amqp091.FlagDeliveryMode
		p.props.DeliveryMode = 2
	}
	go p.read(onConfirm, onReturn)
	return p, nil
}

func (p *wirePublisher) read(onConfirm confirmFunc, onReturn func()) {
	defer close(p.done)
	var md amqp091.MethodDecoder
	for {
		f, err := p.c.fr.ReadFrame()
		if err != nil {
			p.fail(err)
			return
		}
		if f.Type != amqp091.FrameMethod {
			continue // a returned message's header and body
		}
		m, err := md.Decode(f.Payload)
		if err != nil {
			p.fail(err)
			return
		}
		switch m := m.(type) {
		case *amqp091.BasicAck:
			onConfirm(m.DeliveryTag, m.Multiple, true)
		case *amqp091.BasicNack:
			onConfirm(m.DeliveryTag, m.Multiple, false)
		case *amqp091.BasicReturn:
			onReturn()
		case *amqp091.ConnectionCloseOk:
			p.fail(errors.New("connection closed"))
			return
		default:
			if err := closeError(m); err != nil {
				p.fail(err)
				return
			}
		}
	}
}

func (p *wirePublisher) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

func (p *wirePublisher) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *wirePublisher) publish(r *route, body []byte) error {
	if n := len(body); n > 0 && n <= p.c.frameMax-amqp091.FrameOverhead {
		// basic.publish, the content header and the body frame's head
		// depend on the route and the size only: the bytes
		// AppendMessage would write, encoded once per route and size.
		if r != p.preRoute || n != p.preSize {
			p.pub.Exchange, p.pub.RoutingKey = r.exchangeB, r.keyB
			m := amqp091.AppendMessage(p.pre[:0], 1, &p.pub, &p.props, body, p.c.frameMax)
			p.pre, p.preRoute, p.preSize = m[:len(m)-n-1], r, n
		}
		p.c.wbuf = append(append(append(p.c.wbuf, p.pre...), body...), amqp091.FrameEnd)
	} else {
		p.pub.Exchange, p.pub.RoutingKey = r.exchangeB, r.keyB
		p.c.wbuf = amqp091.AppendMessage(p.c.wbuf, 1, &p.pub, &p.props, body, p.c.frameMax)
	}
	if p.c.buffered++; len(p.c.wbuf) >= wireWriteBatch || p.c.buffered >= wireWriteCount {
		return p.c.flush()
	}
	return nil
}

func (p *wirePublisher) flush() error { return p.c.flush() }

// ioCount counts the producer's writes (its reads are another goroutine's).
func (p *wirePublisher) ioCount() uint64 { return p.c.writes }

// interrupt lets a write under way finish for the close grace (the
// broker is reading, just slower than the producer writes) and only then
// cuts it, so a run's end normally leaves whole frames and a clean close.
func (p *wirePublisher) interrupt() { p.c.nc.SetDeadline(time.Now().Add(closeGrace)) }

func (p *wirePublisher) close() {
	p.c.shutdown(p.done)
	select {
	case <-p.done:
	case <-time.After(closeGrace):
	}
}

// wireSubscriber is a consumer on wiretap's codec: one goroutine reads
// deliveries and writes acks, flushed whenever no whole frame is waiting.
type wireSubscriber struct {
	c    *wireConn
	ackM amqp091.BasicAck
}

func dialWireSubscriber(cfg *Config, name, queue string) (subscriber, error) {
	c, err := dialWire(cfg, name)
	if err != nil {
		return nil, err
	}
	if cfg.Prefetch > 0 {
		if _, err := c.call(&amqp091.BasicQos{PrefetchCount: uint16(cfg.Prefetch)}, "basic.qos-ok"); err != nil {
			c.nc.Close()
			return nil, err
		}
	}
	if _, err := c.call(&amqp091.BasicConsume{Queue: []byte(queue), ConsumerTag: []byte("bench"), NoAck: cfg.AutoAck},
		"basic.consume-ok"); err != nil {
		c.nc.Close()
		return nil, err
	}
	return &wireSubscriber{c: c}, nil
}

func (s *wireSubscriber) consume(ctx context.Context, onDelivery deliveryFunc) error {
	stop := context.AfterFunc(ctx, func() { s.c.nc.SetReadDeadline(time.Now()) })
	defer stop()
	var (
		tag     uint64
		inBody  bool   // between basic.deliver and the body's first frame
		remain  uint64 // body bytes still to come
		wantHdr bool
	)
	for {
		if !s.c.fr.BufferedFrame() {
			if err := s.c.flush(); err != nil {
				return s.quiet(ctx, err)
			}
		}
		f, err := s.c.fr.ReadFrame()
		if err != nil {
			return s.quiet(ctx, err)
		}
		switch f.Type {
		case amqp091.FrameMethod:
			m, err := s.c.md.Decode(f.Payload)
			if err != nil {
				return err
			}
			switch m := m.(type) {
			case *amqp091.BasicDeliver:
				tag, wantHdr = m.DeliveryTag, true
			case *amqp091.BasicCancel:
				return errors.New("consumer cancelled by the broker")
			default:
				if err := closeError(m); err != nil {
					return err
				}
			}
		case amqp091.FrameHeader:
			if !wantHdr || len(f.Payload) < 12 {
				continue
			}
			wantHdr = false
			remain = binary.BigEndian.Uint64(f.Payload[4:])
			inBody = true
			if remain == 0 {
				inBody = false
				if err := onDelivery(tag, 0, false); err != nil {
					return err
				}
			}
		case amqp091.FrameBody:
			if remain == 0 {
				continue
			}
			if inBody {
				inBody = false
				var sent int64
				long := len(f.Payload) >= 8
				if long {
					sent = int64(binary.BigEndian.Uint64(f.Payload))
				}
				if err := onDelivery(tag, sent, long); err != nil {
					return err
				}
			}
			remain -= min(remain, uint64(len(f.Payload)))
		}
	}
}

// quiet returns nil for the error that ending the run causes.
func (s *wireSubscriber) quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *wireSubscriber) ack(tag uint64, multiple bool) error {
	s.ackM.DeliveryTag, s.ackM.Multiple = tag, multiple
	s.c.send(1, &s.ackM)
	if s.c.buffered++; len(s.c.wbuf) >= wireWriteBatch || s.c.buffered >= wireWriteCount {
		return s.c.flush()
	}
	return nil
}

func (s *wireSubscriber) close() { s.c.shutdown(nil) }

// ioCount counts the consumer's reads and writes (acks), both on the
// consuming goroutine.
func (s *wireSubscriber) ioCount() uint64 { return s.c.reads + s.c.writes }
