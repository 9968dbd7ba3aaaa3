package broker

import (
	"errors"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/broker/auth"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Server properties: wiretap announces product "RabbitMQ" because clients
// gate RabbitMQ's semantics on it (kombu's qos, some amqp091-go tests), and
// says what it really is in platform and information.
const (
	announcedProduct = "RabbitMQ"
	announcedVersion = "3.10.8"
	platform         = "Go (wiretap embedded broker)"
	information      = "wiretap's embedded broker, RabbitMQ 3.10-compatible; messages live in memory: nothing survives a restart"
	copyrightText    = "Copyright (c) the wiretap authors"
)

// capabilities are the nine RabbitMQ 3.10 announces, in its order.
var capabilities = []string{
	"publisher_confirms", "exchange_exchange_bindings", "basic.nack",
	"consumer_cancel_notify", "connection.blocked", "consumer_priorities",
	"authentication_failure_close", "per_consumer_qos", "direct_reply_to",
}

func (b *Broker) buildConnectionStart(external bool) *amqp091.ConnectionStart {
	var caps amqp091.Table
	for _, c := range capabilities {
		caps = caps.Append(c, amqp091.BoolValue(true))
	}
	var props amqp091.Table
	props = props.Append("capabilities", amqp091.TableValue(caps))
	props = props.Append("cluster_name", amqp091.StringValue(b.node))
	props = props.Append("copyright", amqp091.StringValue(copyrightText))
	props = props.Append("information", amqp091.StringValue(information))
	props = props.Append("platform", amqp091.StringValue(platform))
	props = props.Append("product", amqp091.StringValue(announcedProduct))
	props = props.Append("version", amqp091.StringValue(announcedVersion))
	return &amqp091.ConnectionStart{
		VersionMajor:     0,
		VersionMinor:     9,
		ServerProperties: props,
		Mechanisms:       []byte(strings.Join(b.users.Mechanisms(external), " ")),
		Locales:          []byte("en_US"),
	}
}

// connectionStart is what c is offered: EXTERNAL only over TLS with client
// certificates, as RabbitMQ's rabbit_auth_mechanism_ssl offers it.
func (c *conn) connectionStart() *amqp091.ConnectionStart {
	if c.tls != nil {
		return c.b.startTLS
	}
	return c.b.start
}

// connectionMethod handles a method on channel 0.
func (c *conn) connectionMethod(m amqp091.Method) error {
	class, id := m.IDs()
	err := c.connectionMethod1(m)
	if ae, ok := err.(*amqpError); ok && ae.classID == 0 && ae.methodID == 0 && !ae.noIDs {
		ae.classID, ae.methodID = class, id
	}
	return err
}

func (c *conn) connectionMethod1(m amqp091.Method) error {
	switch m := m.(type) {
	case *amqp091.ConnectionStartOk:
		if c.state() != stateStarting {
			return errorf(503, "unexpected method connection.start-ok")
		}
		return c.startOk(m)
	case *amqp091.ConnectionSecureOk:
		return errorf(503, "unexpected method connection.secure-ok")
	case *amqp091.ConnectionTuneOk:
		if c.state() != stateTuning {
			return errorf(503, "unexpected method connection.tune-ok")
		}
		return c.tuneOk(m)
	case *amqp091.ConnectionOpen:
		if c.state() != stateOpening {
			return errorf(503, "unexpected method connection.open")
		}
		return c.open(m)
	case *amqp091.ConnectionClose:
		// Channels and exclusive queues go before close-ok, so a client
		// that reconnects at once finds them gone.
		c.cleanup()
		c.send(func(out []byte) []byte {
			return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionCloseOk{})
		})
		return errCloseOkSent
	case *amqp091.ConnectionCloseOk:
		return errClientClosed
	case *amqp091.ConnectionUpdateSecret:
		c.send(func(out []byte) []byte {
			return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionUpdateSecretOk{})
		})
		return nil
	case *amqp091.ConnectionBlocked, *amqp091.ConnectionUnblocked:
		return nil
	}
	return errorf(504, "unexpected method in connection state running")
}

type closedError struct{}

func (*closedError) Error() string { return "client closed the connection" }

// errClientClosed and errCloseOkSent are distinct values: closedError
// has no fields, so two of it would compare equal.
var errClientClosed error = &closedError{}

// errCloseOkSent ends a connection the client closed with
// connection.close: the broker has answered close-ok and, as RabbitMQ
// does, leaves closing the socket to the client (a client whose socket
// is closed under it sees a reset instead of a clean close, and some,
// amqp091-go among them, can wedge on that).
var errCloseOkSent = errors.New("broker: close-ok sent")

func (c *conn) startOk(m *amqp091.ConnectionStartOk) error {
	c.clientProps = append([]byte(nil), m.ClientProperties...)
	if v, ok := amqp091.Table(c.clientProps).Get("capabilities"); ok && v.Type == amqp091.TypeTable {
		caps := v.Table()
		flag := func(name string) bool {
			f, ok := caps.Get(name)
			return ok && f.Type == amqp091.TypeBool && f.Bool()
		}
		c.cancelNotify = flag("consumer_cancel_notify")
		c.authFailClose = flag("authentication_failure_close")
		c.blockedNotify = flag("connection.blocked")
	}
	mech := string(m.Mechanism)
	c.mechanism = mech
	user, err := c.b.users.Authenticate(mech, m.Response, c.peer.Addr(), c.tls)
	if err != nil {
		c.logf("authentication failed: ", err.Error())
		var le *auth.LoginError
		if errors.As(err, &le) {
			if !c.authFailClose {
				return errClientClosed
			}
			ae := le.AMQPError()
			return &amqpError{code: ae.Code, text: ae.Text, noIDs: true}
		}
		var ae *auth.AMQPError
		if errors.As(err, &ae) && !ae.Silent {
			return &amqpError{code: ae.Code, text: ae.Text}
		}
		// RabbitMQ closes such a connection without a word, after a
		// pause that slows down guessing.
		time.Sleep(c.b.silentDelay)
		return errClientClosed
	}
	c.user = user
	c.setState(stateTuning)
	c.send(func(out []byte) []byte {
		return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionTune{
			ChannelMax: c.b.channelMax, FrameMax: c.b.frameMax, Heartbeat: c.b.heartbeat})
	})
	return nil
}

// tuneOk applies RabbitMQ's rules for the client's counter-proposal: a
// value below the minimum, or zero or above the server's when the server
// has a limit, is refused with 530.
func (c *conn) tuneOk(m *amqp091.ConnectionTuneOk) error {
	e := negotiate("frame_max", amqp091.FrameMinSize, uint64(c.b.frameMax), uint64(m.FrameMax))
	if e == nil {
		e = negotiate("channel_max", 1, uint64(c.b.channelMax), uint64(m.ChannelMax))
	}
	if e != nil {
		// Before connection.open RabbitMQ tells the client nothing: it
		// logs, waits and closes the socket.
		c.logf("closing: ", e.text)
		time.Sleep(c.b.silentDelay)
		return errClientClosed
	}
	c.frameMax = m.FrameMax
	c.channelMax = m.ChannelMax
	c.heartbeat = m.Heartbeat
	c.hb.Store(uint32(m.Heartbeat))
	c.fr.MaxFrameSize = int(c.frameMax)
	c.setState(stateOpening)
	return nil
}

func negotiate(field string, minimum, server, client uint64) *amqpError {
	detail := ""
	if field == "channel_max" && client == 0 {
		detail = " (no limit)"
	}
	var e *amqpError
	switch {
	case client != 0 && client < minimum:
		e = errorf(530, "negotiated "+field+" = "+strconv.FormatUint(client, 10)+detail+
			" is lower than the minimum allowed value ("+strconv.FormatUint(minimum, 10)+")")
	case server != 0 && (client == 0 || client > server):
		e = errorf(530, "negotiated "+field+" = "+strconv.FormatUint(client, 10)+detail+
			" is higher than the maximum allowed value ("+strconv.FormatUint(server, 10)+")")
	default:
		return nil
	}
	e.classID, e.methodID = amqp091.ClassConnection, 30 // connection.tune
	return e
}

func (c *conn) open(m *amqp091.ConnectionOpen) error {
	name := string(m.VirtualHost)
	vh := c.b.vhost(name)
	if vh == nil {
		return errorf(530, "vhost "+name+" not found")
	}
	if err := c.b.users.CheckVHostAccess(c.user, name); err != nil {
		return authError(err, 530)
	}
	if !c.b.addConn(c) {
		return errorf(530, "connection limit reached")
	}
	c.vh = vh
	c.setState(stateRunning)
	if c.heartbeat > 0 {
		c.signal() // the writer starts its heartbeat ticker
	} else {
		c.nc.SetReadDeadline(time.Time{})
	}
	c.send(func(out []byte) []byte {
		return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionOpenOk{})
	})
	return nil
}
