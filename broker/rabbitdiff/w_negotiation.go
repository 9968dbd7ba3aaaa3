package rabbitdiff

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Connection negotiation: mechanisms, credentials, vhosts, tune.

func negotiationWorkloads() []Workload {
	return []Workload{
		{Name: "go-connect", Run: goConn(func(ctx context.Context, e *Env, c *amqp.Connection) error {
			ch, err := c.Channel()
			if err != nil {
				return err
			}
			return ch.Close()
		})},
		{Name: "go-bad-password", Run: func(ctx context.Context, e *Env) error {
			// amqp091-go does not announce authentication_failure_close:
			// RabbitMQ just closes the socket.
			c, err := e.DialURL("amqp://guest:wrong@" + e.Addr + "/")
			if err == nil {
				c.Close()
				return errors.New("login with a wrong password succeeded")
			}
			e.Note("dial failed, reply code " + strconv.Itoa(codeOf(err)))
			return nil
		}},
		{Name: "go-unknown-vhost", Run: func(ctx context.Context, e *Env) error {
			c, err := e.DialURL("amqp://guest:guest@" + e.Addr + "/nope")
			if err == nil {
				c.Close()
				return errors.New("opening vhost nope succeeded")
			}
			e.Note("dial failed, reply code " + strconv.Itoa(codeOf(err)))
			return nil
		}},
		rawLogin("raw-plain", Handshake{}),
		rawLogin("raw-amqplain", Handshake{Mechanism: "AMQPLAIN"}),
		rawLogin("raw-amqplain-bad-password", Handshake{Mechanism: "AMQPLAIN", Password: "wrong"}),
		rawLogin("raw-bad-password-afc", Handshake{Password: "wrong"}),
		rawLogin("raw-bad-password-no-afc", Handshake{Password: "wrong", NoAuthFailureClose: true}),
		rawLogin("raw-unknown-user-afc", Handshake{User: "nobody", Password: "guest"}),
		rawLogin("raw-unknown-mechanism", Handshake{Mechanism: "CRAM-MD5"}),
		rawLogin("raw-unknown-vhost", Handshake{VHost: "nope"}),
		rawLogin("raw-bad-protocol-header", Handshake{Header: []byte("AMQP\x00\x00\x09\x02")}),
		rawLogin("raw-http-request", Handshake{Header: []byte("GET / HTTP/1.1\r\n\r\n")}),
		rawTune("raw-tune-accept", 0, 0, 0, false),
		rawTune("raw-tune-frame-max-4096", 0, 4096, 0, true),
		rawTune("raw-tune-frame-max-zero", 0, 0, 0, false, zeroFrameMax),
		rawTune("raw-tune-frame-max-above", 0, 200000, 0, false),
		rawTune("raw-tune-frame-max-below-minimum", 0, 2048, 0, false),
		rawTune("raw-tune-channel-max-zero", 0, 0, 0, false, zeroChannelMax),
		rawTune("raw-tune-channel-max-above", 4000, 0, 0, false),
		rawTune("raw-tune-heartbeat-zero", 0, 0, 0, false, zeroHeartbeat),
		rawTune("raw-tune-heartbeat-above", 0, 0, 600, false),
		{Name: "raw-tune-channel-max-2", Run: func(ctx context.Context, e *Env) error {
			c, err := DialRaw(e.Addr)
			if err != nil {
				return err
			}
			defer c.Close()
			err = c.Handshake(Handshake{Tune: func(o amqp091.ConnectionTune) amqp091.ConnectionTuneOk {
				return amqp091.ConnectionTuneOk{ChannelMax: 2, FrameMax: o.FrameMax, Heartbeat: 0}
			}})
			if err != nil {
				return err
			}
			if err := c.OpenChannel(2); err != nil {
				return err
			}
			// Channel 3 is above the negotiated channel-max.
			if err := c.SendMethod(3, &amqp091.ChannelOpen{}); err != nil {
				return err
			}
			m, _, err := c.ReadMethod()
			if err != nil {
				return err
			}
			if _, ok := m.(*amqp091.ConnectionClose); ok {
				e.Note(c.Drain())
				return nil
			}
			return c.CloseConnection()
		}},
		{Name: "raw-heartbeat-missed", Timeout: 20 * time.Second, Run: func(ctx context.Context, e *Env) error {
			c, err := DialRaw(e.Addr)
			if err != nil {
				return err
			}
			defer c.Close()
			err = c.Handshake(Handshake{Tune: func(o amqp091.ConnectionTune) amqp091.ConnectionTuneOk {
				return amqp091.ConnectionTuneOk{ChannelMax: o.ChannelMax, FrameMax: o.FrameMax, Heartbeat: 1}
			}})
			if err != nil {
				return err
			}
			// Say nothing more: the server must send heartbeats and, missing
			// ours, close the connection.
			start := time.Now()
			beats := 0
			for {
				f, err := c.ReadFrame()
				if err != nil {
					break
				}
				if f.Type == amqp091.FrameHeartbeat {
					beats++
				}
			}
			e.Note("heartbeats received: " + strconv.FormatBool(beats > 0))
			e.Note("connection ended within 10s: " + strconv.FormatBool(time.Since(start) < 10*time.Second))
			return nil
		}},
	}
}

// rawLogin opens a connection with h and reports how it went.
func rawLogin(name string, h Handshake) Workload {
	return Workload{Name: name, Run: func(ctx context.Context, e *Env) error {
		c, err := DialRaw(e.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.Handshake(h); err != nil {
			e.Note("handshake: " + handshakeOutcome(err))
			e.Note(c.Drain())
			return nil
		}
		e.Note("handshake: open")
		if err := c.OpenChannel(1); err != nil {
			return err
		}
		return c.CloseConnection()
	}}
}

// handshakeOutcome says where a handshake stopped, in words that do not
// depend on the operating system's error texts.
func handshakeOutcome(err error) string {
	var ue *UnexpectedError
	switch {
	case errors.As(err, &ue):
		return "got " + ue.Method.Name() + " instead of " + ue.Want
	case strings.Contains(err.Error(), "timeout"):
		return "timed out"
	}
	return "connection ended"
}

// Tune-ok values that mean "send zero" (0 otherwise means "the server's").
const (
	zeroFrameMax = 1 << iota
	zeroChannelMax
	zeroHeartbeat
)

// rawTune answers connection.tune with the given values (0: the server's
// offer, unless a zero flag asks for 0) and, when it is accepted, declares
// a queue and fetches a message of 10,000 bytes through it so the body's
// framing shows the frame-max in force.
func rawTune(name string, channelMax uint16, frameMax uint32, heartbeat uint16, bigMessage bool, zero ...int) Workload {
	z := 0
	for _, f := range zero {
		z |= f
	}
	return Workload{Name: name, Run: func(ctx context.Context, e *Env) error {
		c, err := DialRaw(e.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		err = c.Handshake(Handshake{Tune: func(o amqp091.ConnectionTune) amqp091.ConnectionTuneOk {
			ok := amqp091.ConnectionTuneOk{ChannelMax: o.ChannelMax, FrameMax: o.FrameMax, Heartbeat: 0}
			if channelMax != 0 || z&zeroChannelMax != 0 {
				ok.ChannelMax = channelMax
			}
			if frameMax != 0 || z&zeroFrameMax != 0 {
				ok.FrameMax = frameMax
			}
			if heartbeat != 0 {
				ok.Heartbeat = heartbeat
			}
			return ok
		}})
		if err != nil {
			e.Note("handshake: " + handshakeOutcome(err))
			e.Note(c.Drain())
			return nil
		}
		e.Note("handshake: open")
		if err := c.OpenChannel(1); err != nil {
			return err
		}
		if bigMessage {
			q := e.Queue("tune")
			if err := c.SendMethod(1, &amqp091.QueueDeclare{Queue: []byte(q), Exclusive: true}); err != nil {
				return err
			}
			if _, err := c.Expect("queue.declare-ok"); err != nil {
				return err
			}
			body := []byte(strings.Repeat("0123456789", 1000))
			if err := c.SendMessage(1, &amqp091.BasicPublish{RoutingKey: []byte(q)}, nil, body); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.BasicGet{Queue: []byte(q), NoAck: true}); err != nil {
				return err
			}
			if _, err := c.Expect("basic.get-ok"); err != nil {
				return err
			}
		}
		return c.CloseConnection()
	}}
}
