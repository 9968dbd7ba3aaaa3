package rabbitdiff

import (
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Dead-lettering: reasons, x-death, routing keys, cycles.

func deadLetterWorkloads() []Workload {
	return []Workload{
		{Name: "go-dlx-rejected", Run: goScene(func(s *scene) error {
			dlq, q, err := dlxPair(s, amqp.Table{})
			if err != nil {
				return err
			}
			msg := text("reject me")
			msg.Headers = amqp.Table{"app": "v1"}
			msg.MessageId = "m-1"
			for range 3 {
				if err := s.send("", q, msg); err != nil {
					return err
				}
			}
			for _, how := range []string{"reject", "nack", "nack-requeue"} {
				d, ok, err := s.ch.Get(q, false)
				if err != nil || !ok {
					return errOr(err, "queue "+q+" empty")
				}
				switch how {
				case "reject":
					err = d.Reject(false)
				case "nack":
					err = d.Nack(false, false)
				default:
					// Requeued, not dead-lettered.
					err = d.Nack(false, true)
				}
				if err != nil {
					return err
				}
			}
			return drainEventually(s, dlq, 2)
		})},
		{Name: "go-dlx-expired", Run: goScene(func(s *scene) error {
			dlq, q, err := dlxPair(s, amqp.Table{"x-message-ttl": int32(50)})
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "expire me"); err != nil {
				return err
			}
			return drainEventually(s, dlq, 1)
		})},
		{Name: "go-dlx-per-message-expired", Run: goScene(func(s *scene) error {
			dlq, q, err := dlxPair(s, amqp.Table{})
			if err != nil {
				return err
			}
			msg := text("expire me per message")
			msg.Expiration = "50"
			if err := s.send("", q, msg); err != nil {
				return err
			}
			return drainEventually(s, dlq, 1)
		})},
		{Name: "go-dlx-maxlen", Run: goScene(func(s *scene) error {
			dlq, q, err := dlxPair(s, amqp.Table{"x-max-length": int32(1)})
			if err != nil {
				return err
			}
			for _, b := range []string{"pushed out", "stays"} {
				if err := s.sendText("", q, b); err != nil {
					return err
				}
			}
			if err := drainEventually(s, dlq, 1); err != nil {
				return err
			}
			return s.drain(q)
		})},
		{Name: "go-dlx-reject-publish-dlx", Run: goScene(func(s *scene) error {
			dlq, q, err := dlxPair(s, amqp.Table{"x-max-length": int32(1), "x-overflow": "reject-publish-dlx"})
			if err != nil {
				return err
			}
			for _, b := range []string{"stays", "refused"} {
				if err := s.sendText("", q, b); err != nil {
					return err
				}
			}
			if err := drainEventually(s, dlq, 1); err != nil {
				return err
			}
			return s.drain(q)
		})},
		{Name: "go-dlx-routing-key", Run: goScene(func(s *scene) error {
			dlx, err := s.exchange("dlx", "direct", nil)
			if err != nil {
				return err
			}
			dlq, err := s.queue("dlq", nil)
			if err != nil {
				return err
			}
			if err := s.ch.QueueBind(dlq, "dead", dlx, false, nil); err != nil {
				return err
			}
			x, err := s.exchange("x", "topic", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", amqp.Table{"x-dead-letter-exchange": dlx, "x-dead-letter-routing-key": "dead"})
			if err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "orig.#", x, false, nil); err != nil {
				return err
			}
			msg := text("with CC")
			msg.Headers = amqp.Table{"CC": []interface{}{"cc.key"}}
			if err := s.send(x, "orig.key", msg); err != nil {
				return err
			}
			d, ok, err := s.ch.Get(q, false)
			if err != nil || !ok {
				return errOr(err, "queue "+q+" empty")
			}
			if err := d.Reject(false); err != nil {
				return err
			}
			return drainEventually(s, dlq, 1)
		})},
		{Name: "go-dlx-cycle", Run: goScene(func(s *scene) error {
			// q rejects to the default exchange's "wait" queue, which expires
			// back to q: the x-death entries pile up and count.
			q := s.e.Queue("q")
			wait := s.e.Queue("wait")
			if err := declare(s.ch, q, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": wait}); err != nil {
				return err
			}
			if err := declare(s.ch, wait, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q, "x-message-ttl": int32(50)}); err != nil {
				return err
			}
			if err := s.sendText("", q, "round and round"); err != nil {
				return err
			}
			for range 2 {
				d, err := getEventually(s, q)
				if err != nil {
					return err
				}
				if err := d.Reject(false); err != nil {
					return err
				}
			}
			d, err := getEventually(s, q)
			if err != nil {
				return err
			}
			return d.Ack(false)
		})},
		{Name: "go-dlx-missing-exchange", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", amqp.Table{"x-dead-letter-exchange": s.e.Prefix + "missing", "x-message-ttl": int32(50)})
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "dropped"); err != nil {
				return err
			}
			sleep(s.ctx, 200*time.Millisecond)
			return s.drain(q)
		})},
		{Name: "go-dlx-consumer-channel-close", Run: goScene(func(s *scene) error {
			// Messages unacked when a channel closes are requeued, not
			// dead-lettered.
			dlq, q, err := dlxPair(s, amqp.Table{})
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "unacked"); err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if _, _, err := cch.Get(q, false); err != nil {
				return err
			}
			if err := cch.Close(); err != nil {
				return err
			}
			if err := s.drain(dlq); err != nil {
				return err
			}
			return s.drain(q)
		})},
	}
}

// dlxPair declares a fanout dead-letter exchange with a queue "dlq" and a
// queue "q" (with args) dead-lettering to it.
func dlxPair(s *scene, args amqp.Table) (dlq, q string, err error) {
	dlx, err := s.exchange("dlx", "fanout", nil)
	if err != nil {
		return "", "", err
	}
	dlq, err = s.queue("dlq", nil)
	if err != nil {
		return "", "", err
	}
	if err := s.ch.QueueBind(dlq, "", dlx, false, nil); err != nil {
		return "", "", err
	}
	a := amqp.Table{"x-dead-letter-exchange": dlx}
	for k, v := range args {
		a[k] = v
	}
	q, err = s.queue("q", a)
	return dlq, q, err
}

// getEventually waits until queue holds a message (dead-lettering is
// asynchronous), then takes it with basic.get (manual ack).
func getEventually(s *scene, queue string) (amqp.Delivery, error) {
	if err := s.e.WaitCount(s.ctx, queue, 1); err != nil {
		return amqp.Delivery{}, err
	}
	d, ok, err := s.ch.Get(queue, false)
	if err == nil && !ok {
		err = errors.New("queue " + queue + " emptied meanwhile")
	}
	return d, err
}

// drainEventually waits until queue holds n messages, then drains it.
func drainEventually(s *scene, queue string, n int) error {
	if err := s.e.WaitCount(s.ctx, queue, n); err != nil {
		return err
	}
	return s.drain(queue)
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}
