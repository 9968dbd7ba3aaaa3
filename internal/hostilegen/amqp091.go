package main

import (
	"net/netip"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

const amqpFrameMax = 131072

// amqp091Session writes a whole AMQP 0-9-1 session on f: handshake,
// channel 1, one publish per body with headers (nil: none), closes.
func amqp091Session(c *capw, f *capture.Flow, headers amqp091.Table, bodies ...[]byte) {
	m := func(dst []byte, ch uint16, m amqp091.Method) []byte { return amqp091.AppendMethodFrame(dst, ch, m) }
	c.send(f, true, []byte("AMQP\x00\x00\x09\x01"))
	c.send(f, false, m(nil, 0, &amqp091.ConnectionStart{VersionMajor: 0, VersionMinor: 9,
		ServerProperties: amqp091.Table(nil).Append("product", amqp091.StringValue("hostilegen")),
		Mechanisms:       []byte("PLAIN"), Locales: []byte("en_US")}))
	c.send(f, true, m(nil, 0, &amqp091.ConnectionStartOk{
		ClientProperties: amqp091.Table(nil).Append("product", amqp091.StringValue("hostilegen-client")),
		Mechanism:        []byte("PLAIN"), Response: []byte("\x00guest\x00guest"), Locale: []byte("en_US")}))
	c.send(f, false, m(nil, 0, &amqp091.ConnectionTune{ChannelMax: 2047, FrameMax: 0, Heartbeat: 60}))
	b := m(nil, 0, &amqp091.ConnectionTuneOk{ChannelMax: 2047, FrameMax: 0, Heartbeat: 60})
	b = m(b, 0, &amqp091.ConnectionOpen{VirtualHost: []byte("/")})
	c.send(f, true, b)
	c.send(f, false, m(nil, 0, &amqp091.ConnectionOpenOk{}))
	c.send(f, true, m(nil, 1, &amqp091.ChannelOpen{}))
	c.send(f, false, m(nil, 1, &amqp091.ChannelOpenOk{}))
	for _, body := range bodies {
		props := &amqp091.Properties{Flags: amqp091.FlagContentType, ContentType: []byte("text/plain")}
		if headers != nil {
			props.Flags |= amqp091.FlagHeaders
			props.Headers = headers
		}
		c.send(f, true, amqp091.AppendMessage(nil, 1, &amqp091.BasicPublish{RoutingKey: []byte("q")}, props, body, amqpFrameMax))
	}
	c.send(f, true, m(nil, 0, &amqp091.ConnectionClose{ReplyCode: 200, ReplyText: []byte("OK")}))
	c.send(f, false, m(nil, 0, &amqp091.ConnectionCloseOk{}))
	c.close(f)
}

// amqp091Plain is the ordinary conversation put beside a hostile one.
func amqp091Plain(c *capw, h int) {
	amqp091Session(c, c.flow(h, 40000+uint16(h%20000), 5672), nil, []byte("hello"), []byte("world"))
}

func init() {
	// An AMQP 0-9-1 headers table with many keys (issue 14: JSON output was
	// quadratic in them).
	register("amqp091-headers-200k.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		n := int(200000 * scale)
		var t amqp091.Table
		// Keys repeat every 1000 (duplicates JSON must number, in linear
		// time), which keeps the file small under gzip.
		for i := 0; i < n; i++ {
			t = t.Append("k"+itoa(i%1000), amqp091.Int32Value(int32(i%1000)))
		}
		amqp091Session(c, c.flow(2, 40002, 5672), t, []byte("body"))
		amqp091Plain(c, 3)
		return c.bytes()
	})
}

func init() {
	// 60k connections whose handshakes come first and whose first bytes
	// come in reverse order: each is first reported to the pipeline after
	// a later one (issue 14: Pipeline.state re-sorted every connection each
	// time).
	register("late-flows-60k.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		n := int(60000 * scale)
		server := netip.MustParseAddrPort("10.0.0.1:5672")
		client := func(i int) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), 40000)
		}
		// A lone SYN each (the capture layer numbers the connection),
		t := c.tick()
		for i := 0; i < n; i++ {
			c.raw(ipv4(nil, client(i).Addr(), server.Addr(), 1, false, 0, 6, tcp(client(i), server, 1000, 0, flagSYN, nil)), t)
		}
		// then a protocol header each, the last connection's first.
		t = c.tick()
		hdr := []byte("AMQP\x00\x00\x09\x01")
		for i := n - 1; i >= 0; i-- {
			c.raw(ipv4(nil, client(i).Addr(), server.Addr(), 2, false, 0, 6, tcp(client(i), server, 1001, 0, flagACK|flagPSH, hdr)), t)
		}
		amqp091Plain(c, 9999)
		return c.bytes()
	})
}
