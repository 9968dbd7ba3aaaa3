package rabbitdiff

import (
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// DefaultStepTimeout bounds each read and write of a [RawClient].
const DefaultStepTimeout = 5 * time.Second

// RawClient is an AMQP 0-9-1 client that sends exactly the bytes it is told
// to, for the frame-level cases no client library produces.
type RawClient struct {
	// Timeout bounds each read and write (0: [DefaultStepTimeout]).
	Timeout time.Duration
	// FrameMax is the negotiated frame-max (set by Handshake) that
	// SendMessage splits bodies at.
	FrameMax int

	conn net.Conn
	fr   *amqp091.FrameReader
	// closedBy is set once a read has returned the server's
	// connection.close, so Drain knows a close-ok is owed.
	closedBy bool
	md       amqp091.MethodDecoder
	out      []byte
}

// DialRaw connects to addr (host:port) without saying anything.
func DialRaw(addr string) (*RawClient, error) {
	c, err := net.DialTimeout("tcp", addr, DefaultStepTimeout)
	if err != nil {
		return nil, errors.New("rabbitdiff: raw client: " + err.Error())
	}
	return &RawClient{conn: c, fr: amqp091.NewFrameReader(c)}, nil
}

// Close closes the socket.
func (c *RawClient) Close() error { return c.conn.Close() }

func (c *RawClient) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultStepTimeout
}

// Write sends b as it is.
func (c *RawClient) Write(b []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(c.timeout()))
	_, err := c.conn.Write(b)
	return err
}

// SendMethod sends one method frame.
func (c *RawClient) SendMethod(ch uint16, m amqp091.Method) error {
	c.out = amqp091.AppendMethodFrame(c.out[:0], ch, m)
	return c.Write(c.out)
}

// SendFrame sends one frame with any type and payload.
func (c *RawClient) SendFrame(t amqp091.FrameType, ch uint16, payload []byte) error {
	c.out = amqp091.AppendFrame(c.out[:0], t, ch, payload)
	return c.Write(c.out)
}

// SendMessage sends basic.publish, its content header and body frames
// split at FrameMax.
func (c *RawClient) SendMessage(ch uint16, pub *amqp091.BasicPublish, props *amqp091.Properties, body []byte) error {
	c.out = amqp091.AppendMessage(c.out[:0], ch, pub, props, body, c.FrameMax)
	return c.Write(c.out)
}

// ReadFrame reads the next frame, heartbeats included. Its payload is valid
// until the next read.
func (c *RawClient) ReadFrame() (amqp091.Frame, error) {
	c.conn.SetReadDeadline(time.Now().Add(c.timeout()))
	return c.fr.ReadFrame()
}

// ReadMethod reads up to the next method frame, skipping heartbeats and
// content frames. The method is valid until the next read.
func (c *RawClient) ReadMethod() (amqp091.Method, uint16, error) {
	for {
		f, err := c.ReadFrame()
		if err != nil {
			return nil, 0, err
		}
		if f.Type != amqp091.FrameMethod {
			continue
		}
		m, err := c.md.Decode(f.Payload)
		if _, ok := m.(*amqp091.ConnectionClose); ok && err == nil {
			c.closedBy = true
		}
		return m, f.Channel, err
	}
}

// UnexpectedError is what Expect returns when the server sent another
// method than the one expected (often a close: Method says which).
type UnexpectedError struct {
	Want   string
	Method amqp091.Method
}

func (e *UnexpectedError) Error() string {
	return "rabbitdiff: expected " + e.Want + ", got " + e.Method.Name()
}

// Expect reads the next method and checks it is the one named.
func (c *RawClient) Expect(name string) (amqp091.Method, error) {
	m, _, err := c.ReadMethod()
	if err != nil {
		return nil, err
	}
	if m.Name() != name {
		return m, &UnexpectedError{Want: name, Method: m}
	}
	return m, nil
}

// Handshake says how a RawClient opens a connection. The zero value logs
// in as guest/guest with PLAIN on vhost "/", announces
// authentication_failure_close, and accepts the server's tune.
type Handshake struct {
	Mechanism      string // "PLAIN" (default) or "AMQPLAIN"; anything else is sent as is
	User, Password string // each "guest" when empty
	VHost          string // default "/"
	// NoAuthFailureClose leaves authentication_failure_close out of the
	// client's capabilities.
	NoAuthFailureClose bool
	// Capabilities, when set, replaces the client's capabilities table.
	Capabilities amqp091.Table
	// Tune chooses the tune-ok for the server's offer (nil: accept it).
	Tune func(offer amqp091.ConnectionTune) amqp091.ConnectionTuneOk
	// Header replaces the protocol header (nil: AMQP 0-9-1's).
	Header []byte
}

// Handshake runs the connection's opening: protocol header, start-ok,
// tune-ok, open. It stops at the first method it did not expect and
// returns an *UnexpectedError carrying it.
func (c *RawClient) Handshake(h Handshake) error {
	header := h.Header
	if header == nil {
		header = []byte(amqp091.ProtocolHeader)
	}
	if err := c.Write(header); err != nil {
		return err
	}
	if _, err := c.Expect("connection.start"); err != nil {
		return err
	}
	user, pass := h.User, h.Password
	if user == "" {
		user = "guest"
	}
	if pass == "" {
		pass = "guest"
	}
	mech := h.Mechanism
	if mech == "" {
		mech = "PLAIN"
	}
	var resp []byte
	switch mech {
	case "AMQPLAIN":
		resp = amqp091.Table(nil).Append("LOGIN", amqp091.StringValue(user)).Append("PASSWORD", amqp091.StringValue(pass))
	default:
		resp = []byte("\x00" + user + "\x00" + pass)
	}
	caps := amqp091.Table(nil).
		Append("consumer_cancel_notify", amqp091.BoolValue(true)).
		Append("publisher_confirms", amqp091.BoolValue(true)).
		Append("basic.nack", amqp091.BoolValue(true))
	if !h.NoAuthFailureClose {
		caps = caps.Append("authentication_failure_close", amqp091.BoolValue(true))
	}
	if h.Capabilities != nil {
		caps = h.Capabilities
	}
	props := amqp091.Table(nil).
		Append("product", amqp091.StringValue("wiretap rabbitdiff raw client")).
		Append("capabilities", amqp091.TableValue(caps))
	err := c.SendMethod(0, &amqp091.ConnectionStartOk{ClientProperties: props, Mechanism: []byte(mech), Response: resp, Locale: []byte("en_US")})
	if err != nil {
		return err
	}
	m, err := c.Expect("connection.tune")
	if err != nil {
		return err
	}
	offer := *m.(*amqp091.ConnectionTune)
	ok := amqp091.ConnectionTuneOk{ChannelMax: offer.ChannelMax, FrameMax: offer.FrameMax, Heartbeat: offer.Heartbeat}
	if h.Tune != nil {
		ok = h.Tune(offer)
	}
	c.FrameMax = int(ok.FrameMax)
	if err := c.SendMethod(0, &ok); err != nil {
		return err
	}
	vhost := h.VHost
	if vhost == "" {
		vhost = "/"
	}
	if err := c.SendMethod(0, &amqp091.ConnectionOpen{VirtualHost: []byte(vhost)}); err != nil {
		return err
	}
	_, err = c.Expect("connection.open-ok")
	return err
}

// OpenChannel opens channel ch.
func (c *RawClient) OpenChannel(ch uint16) error {
	if err := c.SendMethod(ch, &amqp091.ChannelOpen{}); err != nil {
		return err
	}
	_, err := c.Expect("channel.open-ok")
	return err
}

// How a connection ended, as Drain reports it.
const (
	EndClose   = "server sent connection.close, then closed the socket"
	EndEOF     = "server closed the socket without connection.close"
	EndTimeout = "server neither closed nor answered"
	EndOpen    = "server sent connection.close but left the socket open"
)

// Drain reads until the connection ends: it answers the server's
// connection.close with close-ok (and channel.close with its close-ok), and
// reports how the server ended it (EndClose, EndEOF, EndTimeout, EndOpen).
func (c *RawClient) Drain() string {
	closed := c.closedBy
	if closed {
		c.SendMethod(0, &amqp091.ConnectionCloseOk{})
	}
	for {
		f, err := c.ReadFrame()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded) && closed:
				return EndOpen
			case errors.Is(err, os.ErrDeadlineExceeded):
				return EndTimeout
			case closed:
				return EndClose
			}
			return EndEOF
		}
		if f.Type != amqp091.FrameMethod {
			continue
		}
		m, err := c.md.Decode(f.Payload)
		if err != nil {
			continue
		}
		switch m.(type) {
		case *amqp091.ConnectionClose:
			closed = true
			c.SendMethod(0, &amqp091.ConnectionCloseOk{})
		case *amqp091.ChannelClose:
			c.SendMethod(f.Channel, &amqp091.ChannelCloseOk{})
		}
	}
}

// CloseConnection closes the connection politely: connection.close, then
// reads until close-ok and the end of the socket.
func (c *RawClient) CloseConnection() error {
	if err := c.SendMethod(0, &amqp091.ConnectionClose{ReplyCode: amqp091.ReplySuccess, ReplyText: []byte("bye")}); err != nil {
		return err
	}
	for {
		m, _, err := c.ReadMethod()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if _, ok := m.(*amqp091.ConnectionCloseOk); ok {
			return nil
		}
	}
}
