package rabbitdiff

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Frame-level misbehaviour, sent with the raw client.

func framingWorkloads() []Workload {
	publish := func(c *RawClient) error {
		return c.SendMethod(1, &amqp091.BasicPublish{RoutingKey: []byte("nowhere")})
	}
	header := func(size uint64) []byte {
		h := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: size}
		return h.AppendTo(nil)
	}
	return []Workload{
		rawBad("raw-frame-too-large-body", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			if err := c.SendFrame(amqp091.FrameHeader, 1, header(140000)); err != nil {
				return err
			}
			return c.SendFrame(amqp091.FrameBody, 1, make([]byte, 140000))
		}),
		rawBad("raw-frame-too-large-method", func(c *RawClient) error {
			m := amqp091.QueueDeclare{Queue: []byte("q"), Arguments: amqp091.Table(nil).Append("pad", amqp091.StringValue(strings.Repeat("x", 140000)))}
			return c.SendMethod(1, &m)
		}),
		// RabbitMQ lets a payload exceed frame-max minus the frame's 8
		// octets by up to 8 more, since clients get the sum wrong.
		rawBad("raw-frame-at-frame-max-plus-fudge", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			if err := c.SendFrame(amqp091.FrameHeader, 1, header(131072)); err != nil {
				return err
			}
			return c.SendFrame(amqp091.FrameBody, 1, make([]byte, 131072))
		}),
		rawBad("raw-frame-one-over-fudge", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			if err := c.SendFrame(amqp091.FrameHeader, 1, header(131073)); err != nil {
				return err
			}
			return c.SendFrame(amqp091.FrameBody, 1, make([]byte, 131073))
		}),
		rawBad("raw-bad-frame-end", func(c *RawClient) error {
			f := amqp091.AppendMethodFrame(nil, 1, &amqp091.BasicQos{PrefetchCount: 1})
			f[len(f)-1] = 0
			return c.Write(f)
		}),
		rawBad("raw-heartbeat-on-channel", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameHeartbeat, 1, nil)
		}),
		rawBad("raw-heartbeat-with-payload", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameHeartbeat, 0, []byte("x"))
		}),
		rawBad("raw-method-on-unopened-channel", func(c *RawClient) error {
			return c.SendMethod(5, &amqp091.QueueDeclare{Queue: []byte("q"), Passive: true})
		}),
		rawBad("raw-second-channel-open", func(c *RawClient) error {
			return c.SendMethod(1, &amqp091.ChannelOpen{})
		}),
		rawBad("raw-channel-close-on-unopened-channel", func(c *RawClient) error {
			return c.SendMethod(7, &amqp091.ChannelClose{ReplyCode: 200, ReplyText: []byte("bye")})
		}),
		rawBad("raw-channel-open-above-channel-max", func(c *RawClient) error {
			return c.SendMethod(2048, &amqp091.ChannelOpen{})
		}),
		rawBad("raw-content-header-without-method", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameHeader, 1, header(5))
		}),
		rawBad("raw-body-without-method", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameBody, 1, []byte("hello"))
		}),
		rawBad("raw-body-without-header", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			return c.SendFrame(amqp091.FrameBody, 1, []byte("hello"))
		}),
		rawBad("raw-body-longer-than-header", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			if err := c.SendFrame(amqp091.FrameHeader, 1, header(5)); err != nil {
				return err
			}
			return c.SendFrame(amqp091.FrameBody, 1, []byte("hello world"))
		}),
		rawBad("raw-method-instead-of-header", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			return c.SendMethod(1, &amqp091.BasicQos{PrefetchCount: 1})
		}),
		rawBad("raw-method-instead-of-body", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			if err := c.SendFrame(amqp091.FrameHeader, 1, header(5)); err != nil {
				return err
			}
			return c.SendMethod(1, &amqp091.BasicQos{PrefetchCount: 1})
		}),
		rawBad("raw-content-header-wrong-class", func(c *RawClient) error {
			if err := publish(c); err != nil {
				return err
			}
			h := header(5)
			binary.BigEndian.PutUint16(h, amqp091.ClassQueue)
			return c.SendFrame(amqp091.FrameHeader, 1, h)
		}),
		rawBad("raw-content-on-channel-zero", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameHeader, 0, header(5))
		}),
		rawBad("raw-unknown-method", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameMethod, 1, []byte{0, 60, 3, 231})
		}),
		rawBad("raw-unknown-class", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameMethod, 1, []byte{0, 99, 0, 10})
		}),
		rawBad("raw-unknown-frame-type", func(c *RawClient) error {
			return c.SendFrame(9, 0, []byte("x"))
		}),
		rawBad("raw-truncated-method", func(c *RawClient) error {
			// queue.declare whose queue name runs past the payload.
			return c.SendFrame(amqp091.FrameMethod, 1, []byte{0, 50, 0, 10, 0, 0, 20, 'q'})
		}),
		rawBad("raw-method-too-short", func(c *RawClient) error {
			return c.SendFrame(amqp091.FrameMethod, 1, []byte{0, 50})
		}),
		rawBad("raw-channel-method-on-channel-zero", func(c *RawClient) error {
			return c.SendMethod(0, &amqp091.BasicQos{PrefetchCount: 1})
		}),
		rawBad("raw-connection-method-on-channel", func(c *RawClient) error {
			return c.SendMethod(1, &amqp091.ConnectionOpen{VirtualHost: []byte("/")})
		}),
		rawBad("raw-server-method-from-client", func(c *RawClient) error {
			return c.SendMethod(1, &amqp091.BasicDeliver{ConsumerTag: []byte("x"), DeliveryTag: 1})
		}),
		rawBad("raw-bad-table-in-arguments", func(c *RawClient) error {
			// A field of unknown type 'Z' in queue.declare's arguments.
			m := amqp091.QueueDeclare{Queue: []byte("q"), Exclusive: true, Arguments: amqp091.Table("\x01aZ")}
			return c.SendMethod(1, &m)
		}),
		{Name: "raw-frames-after-channel-close", Run: func(ctx context.Context, e *Env) error {
			c, err := rawOpen(e)
			if err != nil {
				return err
			}
			defer c.Close()
			// A soft error closes channel 1; until close-ok the server drops
			// what the client sends on it.
			if err := c.SendMethod(1, &amqp091.QueueDeclare{Queue: []byte(e.Prefix + "missing"), Passive: true}); err != nil {
				return err
			}
			if _, err := c.Expect("channel.close"); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.QueueDeclare{Queue: []byte(e.Prefix + "missing"), Passive: true}); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.BasicQos{PrefetchCount: 1}); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.ChannelCloseOk{}); err != nil {
				return err
			}
			if err := c.OpenChannel(1); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.BasicQos{PrefetchCount: 1}); err != nil {
				return err
			}
			if _, err := c.Expect("basic.qos-ok"); err != nil {
				return err
			}
			return c.CloseConnection()
		}},
		{Name: "raw-abrupt-disconnect-mid-frame", Run: func(ctx context.Context, e *Env) error {
			c, err := rawOpen(e)
			if err != nil {
				return err
			}
			f := amqp091.AppendMethodFrame(nil, 1, &amqp091.QueueDeclare{Queue: []byte("q"), Exclusive: true})
			if err := c.Write(f[:len(f)/2]); err != nil {
				return err
			}
			c.Close()
			// The server serves the next client as if nothing happened.
			c2, err := rawOpen(e)
			if err != nil {
				return err
			}
			defer c2.Close()
			return c2.CloseConnection()
		}},
		{Name: "raw-client-close-with-error", Run: func(ctx context.Context, e *Env) error {
			c, err := rawOpen(e)
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.SendMethod(1, &amqp091.ChannelClose{ReplyCode: 406, ReplyText: []byte("client says so"), ClassID: 50, MethodID: 10}); err != nil {
				return err
			}
			if _, err := c.Expect("channel.close-ok"); err != nil {
				return err
			}
			return c.CloseConnection()
		}},
	}
}

// rawOpen opens a raw connection (no heartbeats) with channel 1 open.
func rawOpen(e *Env) (*RawClient, error) {
	c, err := DialRaw(e.Addr)
	if err != nil {
		return nil, err
	}
	err = c.Handshake(Handshake{Tune: func(o amqp091.ConnectionTune) amqp091.ConnectionTuneOk {
		return amqp091.ConnectionTuneOk{ChannelMax: o.ChannelMax, FrameMax: o.FrameMax}
	}})
	if err == nil {
		err = c.OpenChannel(1)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// rawBad opens a connection and channel 1, lets send misbehave, and
// settles what follows.
func rawBad(name string, send func(c *RawClient) error) Workload {
	return Workload{Name: name, Run: func(ctx context.Context, e *Env) error {
		c, err := rawOpen(e)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := send(c); err != nil {
			return err
		}
		e.Note(settle(c))
		return nil
	}}
}

// probeChannel is opened when the server says nothing about a
// misbehaviour for silenceWait: its open-ok shows the connection survived.
// Sent only after the wait, since a probe racing a channel's error would
// make the order of the two answers vary.
const (
	probeChannel = 9
	silenceWait  = time.Second
)

// settle reads the server's answer to a misbehaviour and ends the
// connection. A connection error is drained to the end of the socket; a
// channel error is acknowledged and the connection closed politely.
func settle(c *RawClient) string {
	var seen []string
	end := func(s string) string { return strings.Join(append(seen, s), "; ") }
	probed := false
	for {
		if !probed {
			c.Timeout = silenceWait
		}
		m, ch, err := c.ReadMethod()
		c.Timeout = 0
		if err != nil && !probed && errors.Is(err, os.ErrDeadlineExceeded) {
			probed = true
			seen = append(seen, "silence")
			if err := c.SendMethod(probeChannel, &amqp091.ChannelOpen{}); err != nil {
				return end("probe not sent")
			}
			continue
		}
		if err != nil {
			return end("then " + handshakeOutcome(err))
		}
		switch m.(type) {
		case *amqp091.ConnectionClose:
			return end(c.Drain())
		case *amqp091.ChannelClose:
			seen = append(seen, "channel "+strconv.Itoa(int(ch))+" closed")
			if err := c.SendMethod(ch, &amqp091.ChannelCloseOk{}); err != nil {
				return end("close-ok not sent")
			}
			if err := c.CloseConnection(); err != nil {
				return end("connection close failed")
			}
			return end("connection still open")
		case *amqp091.ChannelOpenOk:
			if ch == probeChannel {
				if err := c.CloseConnection(); err != nil {
					return end("probe answered; connection close failed")
				}
				return end("probe answered")
			}
		}
		seen = append(seen, "got "+m.Name()+" on channel "+strconv.Itoa(int(ch)))
	}
}
