package rabbitdiff

import (
	"context"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Semantics only a raw client reaches: server-generated consumer tags,
// no-wait methods, clients without consumer_cancel_notify.

func errorWorkloads() []Workload {
	return []Workload{
		rawSession("raw-consume-server-tag", func(e *Env, c *RawClient) error {
			q := e.Queue("q")
			if err := c.SendMethod(1, &amqp091.QueueDeclare{Queue: []byte(q), Exclusive: true}); err != nil {
				return err
			}
			if _, err := c.Expect("queue.declare-ok"); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.BasicConsume{Queue: []byte(q), NoAck: true}); err != nil {
				return err
			}
			m, err := c.Expect("basic.consume-ok")
			if err != nil {
				return err
			}
			tag := append([]byte(nil), m.(*amqp091.BasicConsumeOk).ConsumerTag...)
			if err := c.SendMessage(1, &amqp091.BasicPublish{RoutingKey: []byte(q)}, nil, []byte("to the generated tag")); err != nil {
				return err
			}
			if _, err := c.Expect("basic.deliver"); err != nil {
				return err
			}
			// A second consumer gets another tag.
			if err := c.SendMethod(1, &amqp091.BasicConsume{Queue: []byte(q), NoAck: true}); err != nil {
				return err
			}
			if _, err := c.Expect("basic.consume-ok"); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.BasicCancel{ConsumerTag: tag}); err != nil {
				return err
			}
			_, err = c.Expect("basic.cancel-ok")
			return err
		}),
		rawSession("raw-no-wait", func(e *Env, c *RawClient) error {
			q, x := e.Queue("q"), e.Exchange("x")
			for _, m := range []amqp091.Method{
				&amqp091.ExchangeDeclare{Exchange: []byte(x), Type: []byte("direct"), NoWait: true},
				&amqp091.QueueDeclare{Queue: []byte(q), Exclusive: true, NoWait: true},
				&amqp091.QueueBind{Queue: []byte(q), Exchange: []byte(x), RoutingKey: []byte("k"), NoWait: true},
				&amqp091.BasicConsume{Queue: []byte(q), ConsumerTag: []byte("c"), NoAck: true, NoWait: true},
				&amqp091.BasicCancel{ConsumerTag: []byte("c"), NoWait: true},
				&amqp091.QueuePurge{Queue: []byte(q), NoWait: true},
				&amqp091.ConfirmSelect{Nowait: true},
			} {
				if err := c.SendMethod(1, m); err != nil {
					return err
				}
			}
			// Only this one is answered.
			if err := c.SendMethod(1, &amqp091.BasicQos{PrefetchCount: 1}); err != nil {
				return err
			}
			if _, err := c.Expect("basic.qos-ok"); err != nil {
				return err
			}
			// A no-wait method that fails still closes the channel.
			if err := c.SendMethod(1, &amqp091.QueueDeclare{Queue: []byte(e.Prefix + "missing"), Passive: true, NoWait: true}); err != nil {
				return err
			}
			if _, err := c.Expect("channel.close"); err != nil {
				return err
			}
			if err := c.SendMethod(1, &amqp091.ChannelCloseOk{}); err != nil {
				return err
			}
			if err := c.OpenChannel(1); err != nil {
				return err
			}
			for _, m := range []amqp091.Method{
				&amqp091.QueueDelete{Queue: []byte(q), NoWait: true},
				&amqp091.ExchangeDelete{Exchange: []byte(x), NoWait: true},
				&amqp091.BasicQos{PrefetchCount: 2},
			} {
				if err := c.SendMethod(1, m); err != nil {
					return err
				}
			}
			_, err := c.Expect("basic.qos-ok")
			return err
		}),
		{Name: "raw-no-consumer-cancel-notify", Run: func(ctx context.Context, e *Env) error {
			// A client that does not announce consumer_cancel_notify is not
			// told when its queue goes.
			c, err := DialRaw(e.Addr)
			if err != nil {
				return err
			}
			defer c.Close()
			err = c.Handshake(Handshake{
				Capabilities: amqp091.Table(nil).Append("publisher_confirms", amqp091.BoolValue(true)),
				Tune: func(o amqp091.ConnectionTune) amqp091.ConnectionTuneOk {
					return amqp091.ConnectionTuneOk{ChannelMax: o.ChannelMax, FrameMax: o.FrameMax}
				},
			})
			if err != nil {
				return err
			}
			if err := c.OpenChannel(1); err != nil {
				return err
			}
			q := e.Queue("q")
			steps := []struct {
				m      amqp091.Method
				expect string
			}{
				{&amqp091.QueueDeclare{Queue: []byte(q)}, "queue.declare-ok"},
				{&amqp091.BasicConsume{Queue: []byte(q), ConsumerTag: []byte("c"), NoAck: true}, "basic.consume-ok"},
				{&amqp091.QueueDelete{Queue: []byte(q)}, "queue.delete-ok"},
				{&amqp091.BasicQos{PrefetchCount: 1}, "basic.qos-ok"},
			}
			for _, s := range steps {
				if err := c.SendMethod(1, s.m); err != nil {
					return err
				}
				if _, err := c.Expect(s.expect); err != nil {
					return err
				}
			}
			return c.CloseConnection()
		}},
	}
}

// rawSession runs f on a raw connection with channel 1 open, then closes
// the connection politely.
func rawSession(name string, f func(e *Env, c *RawClient) error) Workload {
	return Workload{Name: name, Run: func(ctx context.Context, e *Env) error {
		c, err := rawOpen(e)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := f(e, c); err != nil {
			return err
		}
		return c.CloseConnection()
	}}
}
